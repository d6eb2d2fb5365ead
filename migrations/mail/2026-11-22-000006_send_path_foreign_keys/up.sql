-- Foreign keys that every send checks against one hot row. A foreign-key check locks the
-- referenced row (FOR KEY SHARE); concurrent sends of a project all lock its `projects` row
-- and their site's row, and PostgreSQL records each such shared lock as a new multixact
-- holding every concurrent locker, which made these checks the costliest part of a send.
-- The constraints dropped here are redundant: each is covered by a composite tenant key
-- with the same delete action.
--
-- email_log: (project_id, site_id) → sites (project_id, id) ON DELETE CASCADE covers the
-- site and, through the site's own key, the project; the composite contact and campaign
-- keys clear their column on delete, as the single-column ones did.
ALTER TABLE email_log DROP CONSTRAINT email_log_project_id_fkey;
ALTER TABLE email_log DROP CONSTRAINT email_log_site_id_fkey;
ALTER TABLE email_log DROP CONSTRAINT email_log_contact_id_fkey;
ALTER TABLE email_log DROP CONSTRAINT email_log_campaign_id_fkey;
-- email_events: (project_id, email_log_id) → email_log (project_id, id) ON DELETE CASCADE
-- goes when its email goes, and the email when its project goes.
ALTER TABLE email_events DROP CONSTRAINT email_events_project_id_fkey;
-- outbox: a job lives for seconds; one left by a deleted project names an email that no
-- longer exists, which the worker refuses for good (dead-lettered).
ALTER TABLE outbox DROP CONSTRAINT outbox_project_id_fkey;
