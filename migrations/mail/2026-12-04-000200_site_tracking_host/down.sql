ALTER TABLE sites DROP COLUMN tracking_host;
