DROP TABLE ai_cost_events;
DROP TABLE events;
