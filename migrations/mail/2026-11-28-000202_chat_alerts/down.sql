DROP TABLE chat_alerts;
