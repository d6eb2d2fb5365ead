DROP TABLE content_seen_items;
DROP TABLE content_sources;
DROP TABLE content_blocks;
