DROP TRIGGER contact_sites_unsubscribed ON contact_sites;
DROP FUNCTION contact_unsubscribed_event();
DROP TRIGGER outbound_events_fan_out ON outbound_events;
DROP FUNCTION outbound_event_fan_out();
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
