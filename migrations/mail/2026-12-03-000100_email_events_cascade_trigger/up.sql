-- An email's events go with it by a trigger instead of a foreign key. Every event is written
-- by a statement that holds its email's row: inserted by the same statement, or locked by it
-- (the outcome's UPDATE, `FOR UPDATE` before a tracking or provider event), so the key's check
-- proved nothing, at a cost on the hottest path: one lookup and one row lock per event, run at
-- the end of the send statements while they hold the month's counter row. Its plan is chosen
-- once per connection, and while `email_log` has no statistics yet (a new deployment, before
-- the first ANALYZE) it could pick (project_id, created_at) and filter a project's every email
-- on each check, so each send cost more than the one before.
ALTER TABLE email_events DROP CONSTRAINT email_events_project_id_email_log_id_fkey;

CREATE FUNCTION delete_events_of_deleted_emails() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM email_events e USING gone g
    WHERE e.email_log_id = g.id AND e.project_id = g.project_id;
    RETURN NULL;
END
$$;

-- Fires for every delete, those cascaded from a site or a project included.
CREATE TRIGGER email_log_deleted AFTER DELETE ON email_log
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION delete_events_of_deleted_emails();
