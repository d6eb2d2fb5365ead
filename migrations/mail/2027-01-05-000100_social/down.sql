DROP TABLE social_publish_outbox;
DROP TABLE social_publications;
DROP TABLE social_posts;
DROP TABLE social_campaigns;
DROP TABLE social_connect_states;
DROP TABLE social_accounts;
