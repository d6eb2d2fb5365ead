-- The bounce-rate watch (db/sql/outbound_events/check_bounce_rate.sql) counts a site's hard
-- bounces of the last 24 hours: this partial index holds only hard-bounce events, so the count
-- reads the window's hard bounces instead of scanning every event of the month. Its predicate
-- is the watch's own test of a hard bounce, so no other query can use it: with `kind =
-- 'bounced'` alone, statistics taken before a burst of bounces led the planner to count one
-- email's events (the duplicate check of every applied event) through it, reading every bounce
-- of the project each time.
CREATE INDEX email_events_hard_bounce_idx ON email_events (project_id, created_at)
    WHERE kind = 'bounced'
      AND coalesce(lower(data #>> '{bounce,type}'), 'permanent')
          NOT IN ('transient', 'soft', 'temporary');
