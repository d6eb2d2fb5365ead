DROP INDEX email_events_bounced_idx;
