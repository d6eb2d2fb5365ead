-- The event tables back to plain tables, with their rows, keys and indexes as before.
ALTER TABLE enrollments DROP CONSTRAINT enrollments_event_id_fkey;

ALTER TABLE email_events RENAME TO email_events_partitioned;
ALTER TABLE email_events_partitioned
    RENAME CONSTRAINT email_events_pkey TO email_events_partitioned_pkey;
ALTER TABLE email_events_partitioned
    RENAME CONSTRAINT email_events_source_check TO email_events_partitioned_source_check;
ALTER INDEX email_events_email_idx RENAME TO email_events_partitioned_email_idx;

CREATE TABLE email_events (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL,
    email_log_id  uuid NOT NULL,
    kind          text NOT NULL,
    source        text NOT NULL CONSTRAINT email_events_source_check
        CHECK (source IN ('api', 'worker', 'tracking', 'webhook', 'scheduler')),
    data          jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now()
);
INSERT INTO email_events (id, project_id, email_log_id, kind, source, data, created_at)
SELECT id, project_id, email_log_id, kind, source, data, created_at
  FROM email_events_partitioned;
DROP TABLE email_events_partitioned;
CREATE INDEX email_events_email_idx ON email_events (email_log_id, created_at);

ALTER TABLE events RENAME TO events_partitioned;
ALTER TABLE events_partitioned RENAME CONSTRAINT events_pkey TO events_partitioned_pkey;
ALTER TABLE events_partitioned DROP CONSTRAINT events_project_id_fkey;
ALTER TABLE events_partitioned DROP CONSTRAINT events_contact_id_fkey;
ALTER TABLE events_partitioned DROP CONSTRAINT events_same_project_contact;
DROP INDEX events_project_name_time_idx, events_project_time_idx, events_contact_time_idx,
    events_project_id_idx;

CREATE TABLE events (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    contact_id  uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO events (id, project_id, contact_id, name, data, created_at)
SELECT id, project_id, contact_id, name, data, created_at FROM events_partitioned;
DROP TABLE events_partitioned;
ALTER TABLE events ADD CONSTRAINT events_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE;
CREATE INDEX events_project_name_time_idx ON events (project_id, name, created_at);
CREATE INDEX events_project_time_idx ON events (project_id, created_at);
CREATE INDEX events_contact_time_idx ON events (contact_id, created_at);
CREATE INDEX events_project_id_idx ON events (project_id, id);

ALTER TABLE enrollments ADD CONSTRAINT enrollments_event_id_fkey
    FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE SET NULL;

DROP FUNCTION create_month_partition(regclass, date);
DROP FUNCTION uuid_v7_time(uuid);
DROP FUNCTION uuid_v7_floor(timestamptz);
