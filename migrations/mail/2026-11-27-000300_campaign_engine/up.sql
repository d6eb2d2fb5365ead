-- The campaign engine: ordered steps, enrollments moving through them, campaign mail held by
-- the delivery policy of its site (send window, blackout dates, warmup, the plan's batch size
-- per minute), and the outbound events that outbound webhooks deliver.

-- Steps may name a template of their own project only.
ALTER TABLE templates ADD CONSTRAINT templates_project_id_id_key UNIQUE (project_id, id);
DROP INDEX templates_project_idx;

-- A campaign that accepts no new contacts completes once its last enrollment ends.
ALTER TABLE campaigns
    ADD COLUMN accepts_new_contacts boolean NOT NULL DEFAULT true,
    ADD COLUMN completed_at timestamptz;
CREATE INDEX campaigns_closing_idx ON campaigns (id)
    WHERE status = 'active' AND NOT accepts_new_contacts;

-- The steps of a campaign, in order (1, 2, …; kept dense). The order is unique at the end of
-- each statement (deferrable), so one UPDATE can renumber them.
CREATE TABLE campaign_steps (
    id             uuid PRIMARY KEY,
    project_id     uuid NOT NULL,
    campaign_id    uuid NOT NULL,
    step_order     integer NOT NULL CHECK (step_order >= 1),
    -- After the previous step's email left the queue (after enrollment for step 1).
    delay_minutes  double precision NOT NULL DEFAULT 0
                   CHECK (delay_minutes >= 0 AND delay_minutes <= 525600),
    subject        text NOT NULL,
    html           text,
    text_body      text,
    template_id    uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT campaign_steps_order_key UNIQUE (campaign_id, step_order)
        DEFERRABLE INITIALLY IMMEDIATE,
    CONSTRAINT campaign_steps_project_id_id_key UNIQUE (project_id, id),
    CONSTRAINT campaign_steps_same_project_campaign
        FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id)
        ON DELETE CASCADE,
    -- A template named by a step cannot be deleted.
    CONSTRAINT campaign_steps_same_project_template
        FOREIGN KEY (project_id, template_id) REFERENCES templates (project_id, id),
    CONSTRAINT campaign_steps_content_check CHECK ((html IS NULL) <> (template_id IS NULL))
);
CREATE INDEX campaign_steps_template_idx ON campaign_steps (template_id)
    WHERE template_id IS NOT NULL;

-- Where an enrollment stands: `current_step` steps handed to the send path so far; the next
-- is due at `next_step_at` (null while the previous step's email is on its way, and once the
-- enrollment ended).
ALTER TABLE enrollments
    ADD COLUMN current_step integer NOT NULL DEFAULT 0 CHECK (current_step >= 0),
    ADD COLUMN next_step_at timestamptz,
    ADD COLUMN exit_reason  text CHECK (exit_reason IN (
        'unsubscribed', 'bounced', 'complained', 'suppressed', 'unenrolled', 'campaign_ended')),
    ADD COLUMN ended_at     timestamptz,
    ADD CONSTRAINT enrollments_project_id_id_key UNIQUE (project_id, id),
    ADD CONSTRAINT enrollments_exit_check CHECK ((status = 'exited') = (exit_reason IS NOT NULL));
ALTER TABLE enrollments DROP CONSTRAINT enrollments_source_check;
ALTER TABLE enrollments ADD CONSTRAINT enrollments_source_check
    CHECK (source IN ('signup', 'event', 'manual', 'segment', 'launch'));
-- Enrollments made before steps existed start now.
UPDATE enrollments SET next_step_at = enrolled_at WHERE status = 'active';
-- What the scheduler reads on every pass.
CREATE INDEX enrollments_due_idx ON enrollments (next_step_at)
    WHERE status = 'active' AND next_step_at IS NOT NULL;
CREATE INDEX enrollments_campaign_status_idx ON enrollments (campaign_id, status);

-- Campaign mail in the email log: its enrollment and step, and while it waits for the
-- delivery policy, why and until when (`held_until` is null once handed to the send worker).
ALTER TABLE email_log
    ADD COLUMN enrollment_id  uuid,
    ADD COLUMN step_id        uuid,
    ADD COLUMN hold_reason    text CHECK (hold_reason IN (
        'scheduled', 'warmup_cap', 'batch_limit', 'send_window', 'blackout_date',
        'monthly_quota', 'campaign_paused')),
    ADD COLUMN held_until     timestamptz,
    ADD CONSTRAINT email_log_same_project_enrollment
        FOREIGN KEY (project_id, enrollment_id) REFERENCES enrollments (project_id, id)
        ON DELETE SET NULL (enrollment_id),
    ADD CONSTRAINT email_log_same_project_step
        FOREIGN KEY (project_id, step_id) REFERENCES campaign_steps (project_id, id)
        ON DELETE SET NULL (step_id),
    ADD CONSTRAINT email_log_hold_check CHECK ((held_until IS NULL) = (hold_reason IS NULL));
-- No step is ever sent twice to one enrollment.
CREATE UNIQUE INDEX email_log_enrollment_step_idx ON email_log (enrollment_id, step_id)
    WHERE enrollment_id IS NOT NULL;
CREATE INDEX email_log_held_idx ON email_log (site_id, held_until, id) WHERE held_until IS NOT NULL;
CREATE INDEX email_log_step_idx ON email_log (step_id) WHERE step_id IS NOT NULL;
ALTER TABLE email_log DROP CONSTRAINT email_log_status_check;
ALTER TABLE email_log ADD CONSTRAINT email_log_status_check CHECK (status IN (
    'accepted', 'queued', 'sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained',
    'failed', 'suppressed', 'cancelled'));
ALTER TABLE email_events DROP CONSTRAINT email_events_source_check;
ALTER TABLE email_events ADD CONSTRAINT email_events_source_check
    CHECK (source IN ('api', 'worker', 'tracking', 'webhook', 'scheduler'));

-- A site's send window (local "HH:MM" to "HH:MM" on ISO weekdays 1..7, in its IANA time zone)
-- and blackout dates (local days). No row: any time.
CREATE TABLE site_send_policies (
    site_id         uuid PRIMARY KEY,
    project_id      uuid NOT NULL,
    timezone        text NOT NULL DEFAULT 'UTC',
    window_start    time,
    window_end      time,
    window_days     smallint[] NOT NULL DEFAULT '{1,2,3,4,5,6,7}',
    blackout_dates  date[] NOT NULL DEFAULT '{}',
    updated_at      timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE,
    CHECK ((window_start IS NULL) = (window_end IS NULL))
);

-- A site's warmup: the daily caps of its schedule (day 1, 2, …; none after the last), the
-- local day it started, and the days it spent paused (the schedule does not move on while
-- paused); and the provider's daily cap. No row: no cap.
CREATE TABLE site_warmups (
    site_id             uuid PRIMARY KEY,
    project_id          uuid NOT NULL,
    enabled             boolean NOT NULL DEFAULT true,
    daily_limits        integer[] NOT NULL,
    started_on          date NOT NULL,
    paused_on           date,
    paused_days         integer NOT NULL DEFAULT 0 CHECK (paused_days >= 0),
    provider_daily_cap  integer CHECK (provider_daily_cap >= 0),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);

-- Campaign emails handed to the send worker per site and local day (the warmup cap) and per
-- project and minute (the plan's batch size), counted in the transaction that releases them.
CREATE TABLE site_daily_sends (
    site_id  uuid NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    day      date NOT NULL,
    sends    integer NOT NULL DEFAULT 0 CHECK (sends >= 0),
    PRIMARY KEY (site_id, day)
);
CREATE TABLE project_minute_sends (
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute      timestamptz NOT NULL,
    sends       integer NOT NULL DEFAULT 0 CHECK (sends >= 0),
    PRIMARY KEY (project_id, minute)
);

-- Events for the project's outbound webhooks (`campaign.completed`, …), in order.
CREATE TABLE outbound_events (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    type        text NOT NULL,
    data        jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbound_events_project_idx ON outbound_events (project_id, id);

-- A UUID version 7 (RFC 9562: Unix milliseconds, then random bits), for rows written by SQL.
CREATE FUNCTION uuid_v7() RETURNS uuid AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
        substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$ LANGUAGE sql VOLATILE;

-- The delay before the step after `after_step` of a campaign (null: there is none).
CREATE FUNCTION next_step_delay(campaign uuid, after_step integer) RETURNS double precision AS $$
    SELECT delay_minutes FROM campaign_steps WHERE campaign_id = campaign AND step_order = after_step + 1
$$ LANGUAGE sql STABLE;

-- However an address comes to be suppressed (bounce, complaint, unsubscribe, by hand), its
-- contact's enrollments in progress end.
CREATE FUNCTION end_enrollments_of_suppressed() RETURNS trigger AS $$
BEGIN
    UPDATE enrollments e
    SET status = 'exited', next_step_at = NULL, ended_at = now(), updated_at = now(),
        exit_reason = CASE NEW.reason WHEN 'manual' THEN 'suppressed' ELSE NEW.reason END
    FROM contacts c
    WHERE c.project_id = NEW.project_id AND c.email = NEW.email
      AND e.contact_id = c.id AND e.status = 'active';
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER suppressions_end_enrollments AFTER INSERT ON suppressions
    FOR EACH ROW EXECUTE FUNCTION end_enrollments_of_suppressed();

-- A contact unsubscribed from a site leaves the site's campaigns.
CREATE FUNCTION end_enrollments_of_unsubscribed() RETURNS trigger AS $$
BEGIN
    UPDATE enrollments e
    SET status = 'exited', exit_reason = 'unsubscribed', next_step_at = NULL, ended_at = now(),
        updated_at = now()
    FROM campaigns c
    WHERE e.contact_id = NEW.contact_id AND e.status = 'active'
      AND c.id = e.campaign_id AND c.site_id = NEW.site_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER contact_sites_end_enrollments AFTER UPDATE OF status ON contact_sites
    FOR EACH ROW WHEN (NEW.status = 'unsubscribed' AND OLD.status <> 'unsubscribed')
    EXECUTE FUNCTION end_enrollments_of_unsubscribed();

-- An enrollment that ends takes its campaign mail still held by the policy with it.
CREATE FUNCTION cancel_held_mail_of_ended_enrollment() RETURNS trigger AS $$
BEGIN
    WITH cancelled AS (
        UPDATE email_log SET status = 'cancelled', hold_reason = NULL, held_until = NULL,
            updated_at = now()
        WHERE enrollment_id = NEW.id AND held_until IS NOT NULL AND status = 'queued'
        RETURNING id, project_id)
    INSERT INTO email_events (id, project_id, email_log_id, kind, source, data)
    SELECT uuid_v7(), project_id, id, 'cancelled', 'scheduler',
           jsonb_build_object('reason', NEW.exit_reason)
    FROM cancelled;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER enrollments_end_cancels_mail AFTER UPDATE OF status ON enrollments
    FOR EACH ROW WHEN (NEW.status = 'exited' AND OLD.status <> 'exited')
    EXECUTE FUNCTION cancel_held_mail_of_ended_enrollment();
