-- Automations: flows a contact moves through. The trigger and the steps are the API's JSON
-- (checked by the service); a webhook step's requests are signed with the automation's
-- secret, sealed.
CREATE TABLE automations (
    id                     uuid PRIMARY KEY,
    project_id             uuid NOT NULL,
    site_id                uuid NOT NULL,
    name                   text NOT NULL,
    status                 text NOT NULL DEFAULT 'draft'
                           CHECK (status IN ('draft', 'active', 'paused')),
    trigger                jsonb NOT NULL,
    steps                  jsonb NOT NULL,
    webhook_secret_sealed  bytea NOT NULL,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    UNIQUE (project_id, id),
    CONSTRAINT automations_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);
CREATE INDEX automations_project_idx ON automations (project_id, id);
CREATE INDEX automations_active_idx ON automations (status) WHERE status = 'active';

-- A contact's way through an automation. `occurrence` is empty for a one-time entry and the
-- local year for an annual date trigger: a contact enters once per occurrence.
CREATE TABLE automation_enrollments (
    id             uuid PRIMARY KEY,
    project_id     uuid NOT NULL,
    automation_id  uuid NOT NULL,
    contact_id     uuid NOT NULL,
    occurrence     text NOT NULL DEFAULT '',
    -- The index of the next step to run in the automation's steps.
    step_index     integer NOT NULL DEFAULT 0 CHECK (step_index >= 0),
    status         text NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'completed', 'exited')),
    -- When the next step is due (null once ended).
    next_run_at    timestamptz,
    -- The last email a send step of this enrollment wrote: what an opened/clicked branch reads.
    last_email_id  uuid,
    exit_reason    text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    UNIQUE (project_id, id),
    UNIQUE (automation_id, contact_id, occurrence),
    CONSTRAINT automation_enrollments_same_project_automation
        FOREIGN KEY (project_id, automation_id) REFERENCES automations (project_id, id)
        ON DELETE CASCADE,
    CONSTRAINT automation_enrollments_same_project_contact
        FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id)
        ON DELETE CASCADE
);
CREATE INDEX automation_enrollments_due_idx ON automation_enrollments (next_run_at)
    WHERE status = 'active';
CREATE INDEX automation_enrollments_contact_idx ON automation_enrollments (contact_id);

-- Each step an enrollment ran, once: the key (enrollment, step) makes a retry or a second
-- replica a no-op.
CREATE TABLE automation_step_runs (
    enrollment_id  uuid NOT NULL REFERENCES automation_enrollments (id) ON DELETE CASCADE,
    step_index     integer NOT NULL,
    project_id     uuid NOT NULL,
    -- What the step did (`sent`, `waited`, `then`, `else`, `tagged`, …).
    outcome        text NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (enrollment_id, step_index)
);

-- Webhook steps' requests: written with the step, delivered after the commit (never inside
-- the scheduler's transaction), retried until delivered or dead.
CREATE TABLE automation_webhook_calls (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL,
    automation_id    uuid NOT NULL,
    enrollment_id    uuid NOT NULL REFERENCES automation_enrollments (id) ON DELETE CASCADE,
    step_index       integer NOT NULL,
    url              text NOT NULL,
    body             jsonb NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         integer NOT NULL DEFAULT 0,
    -- When it may be tried (again); a claim moves it ahead by the claim's lease.
    next_attempt_at  timestamptz NOT NULL,
    last_status      integer,
    created_at       timestamptz NOT NULL,
    UNIQUE (enrollment_id, step_index),
    CONSTRAINT automation_webhook_calls_same_project_automation
        FOREIGN KEY (project_id, automation_id) REFERENCES automations (project_id, id)
        ON DELETE CASCADE
);
CREATE INDEX automation_webhook_calls_due_idx ON automation_webhook_calls (next_attempt_at)
    WHERE status = 'pending';
