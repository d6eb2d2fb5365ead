-- The scheduler's claim: up to $1 watches of every owner that are due, not paused and not
-- leased (or whose lease ran out), locked for the claiming transaction (other replicas skip
-- them, then find them no longer due), leased for $2 seconds, and their next run advanced by
-- their interval (from now when the schedule fell behind, so an outage is not caught up run
-- by run).
UPDATE competitor_watches w
SET lease_until = now() + $2 * interval '1 second',
    next_run_at = CASE
        WHEN w.next_run_at + w.interval_minutes * interval '1 minute' > now()
            THEN w.next_run_at + w.interval_minutes * interval '1 minute'
        ELSE now() + w.interval_minutes * interval '1 minute'
    END
FROM (
    SELECT id FROM competitor_watches
    WHERE NOT paused
      AND next_run_at <= now()
      AND (lease_until IS NULL OR lease_until < now())
    ORDER BY next_run_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
) due
WHERE w.id = due.id
RETURNING w.id, w.user_id, w.environment, w.workspace_id, w.definition
