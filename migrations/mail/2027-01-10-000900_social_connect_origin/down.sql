ALTER TABLE social_connect_states DROP COLUMN started_by;
