-- Analytics and export read paths.
--
-- Analytics aggregates the email log of a site (overview) or of a campaign (campaign
-- performance) over a time window, and conversions by time. The covering indexes hold every
-- column those aggregates read, so PostgreSQL answers them from the index alone (an index-only
-- scan of the window's entries) instead of visiting the heap row of every email.
CREATE INDEX email_log_site_window_idx ON email_log (site_id, created_at)
    INCLUDE (project_id, status, open_count, last_clicked_at);
-- The plain (site_id, created_at) index is a prefix of the covering one.
DROP INDEX email_log_site_time_idx;
CREATE INDEX email_log_campaign_window_idx ON email_log (campaign_id, created_at)
    INCLUDE (project_id, status, open_count, last_clicked_at)
    WHERE campaign_id IS NOT NULL;
DROP INDEX email_log_campaign_idx;
CREATE INDEX conversions_project_window_idx ON conversions (project_id, attributed_at)
    INCLUDE (revenue, currency, attribution, campaign_id, email_log_id);
DROP INDEX conversions_project_time_idx;
CREATE INDEX conversions_campaign_window_idx ON conversions (campaign_id, attributed_at)
    INCLUDE (project_id, revenue, currency)
    WHERE campaign_id IS NOT NULL;
DROP INDEX conversions_campaign_idx;
-- A site's subscriber counts (total, joined and left in the window).
CREATE INDEX contact_sites_site_status_idx ON contact_sites (site_id, contact_id)
    INCLUDE (status, created_at, updated_at);
DROP INDEX contact_sites_site_idx;

-- The export pages through each table in (project_id, id) order (keyset pagination). contacts
-- and email_log have such a key already (000003); events and conversions get one.
CREATE INDEX events_project_id_idx ON events (project_id, id);
CREATE INDEX conversions_project_id_idx ON conversions (project_id, id);

-- Timestamps in exports: RFC 3339, UTC, with `Z` (as the API writes them).
CREATE FUNCTION export_ts(t timestamptz) RETURNS text AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$ LANGUAGE sql STABLE STRICT PARALLEL SAFE;
