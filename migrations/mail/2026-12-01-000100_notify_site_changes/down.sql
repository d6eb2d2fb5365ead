DROP TRIGGER sending_domains_truncated ON sending_domains;
DROP TRIGGER sending_domains_changed ON sending_domains;
DROP TRIGGER sending_domains_added_or_removed ON sending_domains;
DROP TRIGGER sites_truncated ON sites;
DROP TRIGGER sites_changed ON sites;
DROP FUNCTION notify_project_rows_truncated();
DROP FUNCTION notify_project_row_change();
