-- Every change of what `GET /sites` answers (a site, or which own domain of a site is
-- verified), whatever writes it, tells each replica's cache of site pages which project to
-- forget (its id). A notification is delivered on commit only, so a replica never forgets too
-- early to read the new rows.
CREATE FUNCTION notify_project_row_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify(TG_ARGV[0], OLD.project_id::text);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify(TG_ARGV[0], NEW.project_id::text);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- A truncation names no row: every replica forgets the whole table.
CREATE FUNCTION notify_project_rows_truncated() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], '*');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER sites_changed
    AFTER INSERT OR UPDATE OR DELETE ON sites
    FOR EACH ROW EXECUTE FUNCTION notify_project_row_change('site_changed');
CREATE TRIGGER sites_truncated
    AFTER TRUNCATE ON sites
    FOR EACH STATEMENT EXECUTE FUNCTION notify_project_rows_truncated('site_changed');

-- The periodic DNS check updates `checked_at` on every pass; only what a site's address
-- depends on notifies.
CREATE TRIGGER sending_domains_added_or_removed
    AFTER INSERT OR DELETE ON sending_domains
    FOR EACH ROW EXECUTE FUNCTION notify_project_row_change('site_changed');
CREATE TRIGGER sending_domains_changed
    AFTER UPDATE ON sending_domains
    FOR EACH ROW
    WHEN ((OLD.project_id, OLD.site_id, OLD.domain, OLD.status)
          IS DISTINCT FROM (NEW.project_id, NEW.site_id, NEW.domain, NEW.status))
    EXECUTE FUNCTION notify_project_row_change('site_changed');
CREATE TRIGGER sending_domains_truncated
    AFTER TRUNCATE ON sending_domains
    FOR EACH STATEMENT EXECUTE FUNCTION notify_project_rows_truncated('site_changed');
