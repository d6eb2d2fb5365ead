-- Monthly partitions of the event tables, `email_events` and `events`: each is partitioned by
-- RANGE on its id, a UUIDv7 whose first 48 bits are the Unix millisecond it was made, so that a
-- range of ids is a range of time. A month's partition holds the ids from the smallest UUIDv7
-- of its first millisecond (UTC) to that of the next month's; a DEFAULT partition takes any id
-- outside every month made (none, while the upkeep creates each month ahead of time).
-- The primary key (id) is the partition key itself, so it stays a key of the whole table, and
-- the foreign key of `enrollments.event_id` keeps pointing at it.

-- The smallest UUIDv7 of instant `t`: its Unix millisecond on 48 bits, then zeros. Every id
-- made from `t` on sorts at or after it. (The epoch of an instant does not depend on the time
-- zone.)
CREATE FUNCTION uuid_v7_floor(t timestamptz) RETURNS uuid AS $$
    SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0')
            || repeat('0', 20))::uuid
$$ LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE;

-- The instant a UUIDv7 was made (its first 48 bits, in milliseconds).
CREATE FUNCTION uuid_v7_time(id uuid) RETURNS timestamptz AS $$
    SELECT to_timestamp(('x' || lpad(substr(replace(id::text, '-', ''), 1, 12), 16, '0'))
                        ::bit(64)::bigint / 1000.0)
$$ LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE;

-- Creates the partition of `parent` (partitioned by RANGE on its UUIDv7 `id`, with a DEFAULT
-- partition named `<parent>_default`) for the month (UTC) of `month`, named
-- `<parent>_yYYYYmMM`. Returns its name, or null when it exists already: idempotent, and
-- serialized per table (replicas may run it at once).
-- Rows of that month already in the DEFAULT partition move into the new one, in the same
-- transaction. Deleting them from the DEFAULT partition would fire the ON DELETE actions of the
-- foreign keys pointing at `parent`, so those keys are dropped for the move and added back
-- (checked again) after it: the rows end up exactly as they were.
CREATE FUNCTION create_month_partition(parent regclass, month date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    first date := date_trunc('month', month)::date;
    low uuid := uuid_v7_floor(first::timestamp AT TIME ZONE 'UTC');
    high uuid := uuid_v7_floor((first + interval '1 month')::timestamp AT TIME ZONE 'UTC');
    schema_name text;
    base text;
    part text;
    fallback regclass;
    moving boolean := false;
    fk record;
    restore text[] := '{}';
    statement text;
BEGIN
    SELECT n.nspname, c.relname INTO schema_name, base
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = parent;
    part := format('%s_y%sm%s', base, to_char(first, 'YYYY'), to_char(first, 'MM'));
    PERFORM pg_advisory_xact_lock(hashtext('create_month_partition ' || parent::text));
    IF to_regclass(format('%I.%I', schema_name, part)) IS NOT NULL THEN
        RETURN NULL;
    END IF;
    fallback := to_regclass(format('%I.%I', schema_name, base || '_default'));
    IF fallback IS NOT NULL THEN
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE id >= $1 AND id < $2)', fallback)
            INTO moving USING low, high;
    END IF;
    IF NOT moving THEN
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                       schema_name, part, parent, low, high);
        RETURN part;
    END IF;
    FOR fk IN
        SELECT conrelid::regclass AS tbl, conname, pg_get_constraintdef(oid) AS def
          FROM pg_constraint
         WHERE contype = 'f' AND confrelid = parent AND conparentid = 0
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
        restore := restore || format('ALTER TABLE %s ADD CONSTRAINT %I %s',
                                     fk.tbl, fk.conname, fk.def);
    END LOOP;
    EXECUTE format('CREATE TABLE %I.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   schema_name, part, parent);
    EXECUTE format('WITH moved AS (DELETE FROM %s WHERE id >= $1 AND id < $2 RETURNING *) '
                   'INSERT INTO %I.%I SELECT * FROM moved', fallback, schema_name, part)
        USING low, high;
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                   parent, schema_name, part, low, high);
    FOREACH statement IN ARRAY restore LOOP
        EXECUTE statement;
    END LOOP;
    RETURN part;
END
$$;

-- email_events: the old table steps aside under other names, the partitioned one takes the
-- names (its key, index and check) and the rows.
ALTER TABLE email_events RENAME TO email_events_unpartitioned;
ALTER TABLE email_events_unpartitioned
    RENAME CONSTRAINT email_events_pkey TO email_events_unpartitioned_pkey;
ALTER TABLE email_events_unpartitioned
    RENAME CONSTRAINT email_events_source_check TO email_events_unpartitioned_source_check;
ALTER INDEX email_events_email_idx RENAME TO email_events_unpartitioned_email_idx;

CREATE TABLE email_events (
    id            uuid NOT NULL,
    project_id    uuid NOT NULL,
    email_log_id  uuid NOT NULL,
    kind          text NOT NULL,
    source        text NOT NULL CONSTRAINT email_events_source_check
        CHECK (source IN ('api', 'worker', 'tracking', 'webhook', 'scheduler')),
    data          jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT email_events_pkey PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE INDEX email_events_email_idx ON email_events (email_log_id, created_at);
CREATE TABLE email_events_default PARTITION OF email_events DEFAULT;

-- events: the same, its foreign keys made again on the partitioned table, and the one of
-- `enrollments.event_id` moved over to it.
ALTER TABLE enrollments DROP CONSTRAINT enrollments_event_id_fkey;
ALTER TABLE events RENAME TO events_unpartitioned;
ALTER TABLE events_unpartitioned RENAME CONSTRAINT events_pkey TO events_unpartitioned_pkey;
ALTER TABLE events_unpartitioned DROP CONSTRAINT events_project_id_fkey;
ALTER TABLE events_unpartitioned DROP CONSTRAINT events_contact_id_fkey;
ALTER TABLE events_unpartitioned DROP CONSTRAINT events_same_project_contact;
DROP INDEX events_project_name_time_idx, events_project_time_idx, events_contact_time_idx,
    events_project_id_idx;

CREATE TABLE events (
    id          uuid NOT NULL,
    project_id  uuid NOT NULL CONSTRAINT events_project_id_fkey
        REFERENCES projects (id) ON DELETE CASCADE,
    contact_id  uuid NOT NULL CONSTRAINT events_contact_id_fkey
        REFERENCES contacts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_pkey PRIMARY KEY (id),
    CONSTRAINT events_same_project_contact FOREIGN KEY (project_id, contact_id)
        REFERENCES contacts (project_id, id) ON DELETE CASCADE
) PARTITION BY RANGE (id);
CREATE INDEX events_project_name_time_idx ON events (project_id, name, created_at);
CREATE INDEX events_project_time_idx ON events (project_id, created_at);
CREATE INDEX events_contact_time_idx ON events (contact_id, created_at);
CREATE INDEX events_project_id_idx ON events (project_id, id);
CREATE TABLE events_default PARTITION OF events DEFAULT;

-- A partition for every month the existing rows were made in (their ids are UUIDv7: version
-- digit 7), and for this month and the next; then the rows move in.
SELECT create_month_partition(t.parent, t.month)
  FROM (SELECT DISTINCT parent, date_trunc('month', at)::date AS month
          FROM (SELECT 'email_events'::regclass AS parent, uuid_v7_time(id) AT TIME ZONE 'UTC' AS at
                  FROM email_events_unpartitioned WHERE substr(id::text, 15, 1) = '7'
                UNION ALL
                SELECT 'events'::regclass, uuid_v7_time(id) AT TIME ZONE 'UTC'
                  FROM events_unpartitioned WHERE substr(id::text, 15, 1) = '7'
                UNION ALL
                SELECT p.parent, now() AT TIME ZONE 'UTC' + m.ahead
                  FROM (VALUES ('email_events'::regclass), ('events'::regclass)) AS p(parent),
                       (VALUES (interval '0 months'), (interval '1 month')) AS m(ahead)) AS x
       ) AS t
 ORDER BY t.parent::text, t.month;

INSERT INTO email_events (id, project_id, email_log_id, kind, source, data, created_at)
SELECT id, project_id, email_log_id, kind, source, data, created_at
  FROM email_events_unpartitioned;
DROP TABLE email_events_unpartitioned;

INSERT INTO events (id, project_id, contact_id, name, data, created_at)
SELECT id, project_id, contact_id, name, data, created_at FROM events_unpartitioned;
DROP TABLE events_unpartitioned;

ALTER TABLE enrollments ADD CONSTRAINT enrollments_event_id_fkey
    FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE SET NULL;

ANALYZE email_events;
ANALYZE events;
