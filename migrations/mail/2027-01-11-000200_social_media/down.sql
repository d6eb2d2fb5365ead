ALTER TABLE social_posts DROP COLUMN options, DROP COLUMN media;
