ALTER TABLE feed_items DROP COLUMN evidence;
DROP TABLE competitor_snapshots;
