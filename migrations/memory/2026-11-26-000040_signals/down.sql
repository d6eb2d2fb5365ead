DROP TABLE producer_signals;
DROP TABLE project_signals;
ALTER TABLE products DROP COLUMN previous_signing_secret;
