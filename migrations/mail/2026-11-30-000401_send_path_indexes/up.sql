-- Fewer index entries on the send path. The insert of an email and each update of its status
-- (claim, outcome) write a new row version with an entry in every index whose predicate the
-- row matches: the status is indexed (analytics, claims), so none of these updates is HOT.
-- Indexes that transactional mail (no contact, status `sent`) need not enter:
--
-- The contact's emails: newest first (contact tools, hygiene) and attribution read a contact's
-- few rows; a key that never changes, and no entries for mail to addresses without a contact.
CREATE INDEX email_log_contact_idx ON email_log (contact_id, id) WHERE contact_id IS NOT NULL;
DROP INDEX email_log_contact_sent_idx;
-- The list filtered by status: the rare statuses only. The common ones are dense enough for a
-- backward scan of the project's newest emails; an email that is sent never enters this index.
CREATE INDEX email_log_project_trouble_idx ON email_log (project_id, status, id)
    WHERE status IN ('failed', 'bounced', 'complained', 'suppressed', 'cancelled');
DROP INDEX email_log_project_status_idx;
