-- The abuse monitor: per site, the rolling bounce and complaint rates the scheduler last
-- measured and the state they put the site in. `paused` holds the site's campaign mail;
-- `suspended` (the hard threshold) refuses its transactional mail too.
CREATE TABLE abuse_monitor (
    site_id      uuid PRIMARY KEY,
    project_id   uuid NOT NULL,
    state        text NOT NULL CHECK (state IN ('ok', 'warning', 'paused', 'suspended')),
    -- Emails sent in the window, and how many of them hard-bounced or drew a complaint.
    sends        bigint NOT NULL CHECK (sends >= 0),
    bounces      bigint NOT NULL CHECK (bounces >= 0),
    complaints   bigint NOT NULL CHECK (complaints >= 0),
    checked_at   timestamptz NOT NULL,
    -- When `state` last changed.
    changed_at   timestamptz NOT NULL,
    CONSTRAINT abuse_monitor_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);

-- Overrides: a person lets a paused site's mail flow again until `expires_at`; kept as the
-- audit of who (the API key), when and why.
CREATE TABLE abuse_monitor_overrides (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL,
    site_id      uuid NOT NULL,
    reason       text NOT NULL,
    created_by   uuid NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL CHECK (expires_at > created_at),
    CONSTRAINT abuse_monitor_overrides_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);
CREATE INDEX abuse_monitor_overrides_site_idx
    ON abuse_monitor_overrides (site_id, expires_at DESC);

-- Periodic checks the scheduler runs once per interval whichever replica gets there first.
CREATE TABLE scheduler_leases (
    name         text PRIMARY KEY,
    last_run_at  timestamptz NOT NULL
);
INSERT INTO scheduler_leases (name, last_run_at) VALUES ('abuse_monitor', '-infinity');

-- Campaign mail of a site the abuse monitor paused waits with its own reason.
ALTER TABLE email_log DROP CONSTRAINT email_log_hold_reason_check;
ALTER TABLE email_log ADD CONSTRAINT email_log_hold_reason_check CHECK (hold_reason IN (
    'scheduled', 'warmup_cap', 'batch_limit', 'send_window', 'blackout_date',
    'monthly_quota', 'campaign_paused', 'abuse_paused')) NOT VALID;
ALTER TABLE email_log VALIDATE CONSTRAINT email_log_hold_reason_check;
