-- A hard bounce leaves a row here (an insert, nothing locked) instead of counting the site's
-- 24 hours of sends in its own transaction; the bounce-rate watch takes a site's rows and
-- checks the site's rate once for all of them (see db/outbound_events.rs). No foreign keys:
-- a row of a deleted site checks nothing and is deleted with the next round.
CREATE TABLE bounce_rate_pending (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id uuid NOT NULL,
    site_id uuid NOT NULL
);
CREATE INDEX bounce_rate_pending_site ON bounce_rate_pending (site_id);
