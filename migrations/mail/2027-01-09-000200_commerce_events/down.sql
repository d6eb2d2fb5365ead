DROP TABLE platform_events;
DROP TABLE platform_triggers;
DROP TABLE commerce_sources;
