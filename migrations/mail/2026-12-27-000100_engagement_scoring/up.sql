-- Engagement scoring: a project's rules (points per kind of engagement, and how fast points
-- fade), and each contact's score as last computed. A score is the sum of its contributions,
-- each worth `points * 0.5 ^ (age / half_life_days)`; the stored one was exact at `as_of` and
-- fades by the same factor from there, so a read needs no recomputation.
CREATE TABLE scoring_rules (
    project_id          uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    open_points         integer NOT NULL CHECK (open_points BETWEEN -100 AND 100),
    click_points        integer NOT NULL CHECK (click_points BETWEEN -100 AND 100),
    conversion_points   integer NOT NULL CHECK (conversion_points BETWEEN -100 AND 100),
    unsubscribe_points  integer NOT NULL CHECK (unsubscribe_points BETWEEN -100 AND 100),
    bounce_points       integer NOT NULL CHECK (bounce_points BETWEEN -100 AND 100),
    complaint_points    integer NOT NULL CHECK (complaint_points BETWEEN -100 AND 100),
    -- 0: points never fade.
    half_life_days      integer NOT NULL CHECK (half_life_days BETWEEN 0 AND 3650),
    updated_at          timestamptz NOT NULL
);

CREATE TABLE contact_scores (
    project_id      uuid NOT NULL,
    contact_id      uuid NOT NULL,
    score           double precision NOT NULL,
    -- When `score` was exact, and the half-life it fades by from then (the rules' then).
    as_of           timestamptz NOT NULL,
    half_life_days  integer NOT NULL CHECK (half_life_days BETWEEN 0 AND 3650),
    PRIMARY KEY (project_id, contact_id),
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE
);

-- The events of a contact's emails, found from the contact.
CREATE INDEX email_log_project_contact_idx ON email_log (project_id, contact_id)
    WHERE contact_id IS NOT NULL;
CREATE INDEX conversions_project_contact_idx ON conversions (project_id, contact_id);

-- The engagement recorded before scoring existed, scored by the default rules (open 1, click 3,
-- conversion 10, unsubscribe -10, bounce -5, complaint -20, half-life 30 days).
INSERT INTO contact_scores (project_id, contact_id, score, as_of, half_life_days)
SELECT x.project_id, x.contact_id,
       sum(CASE x.kind WHEN 'opened' THEN 1 WHEN 'clicked' THEN 3 WHEN 'converted' THEN 10
                       WHEN 'unsubscribed' THEN -10 WHEN 'bounced' THEN -5 ELSE -20 END
           * power(0.5::float8, greatest(0, extract(epoch FROM now() - x.at))::float8 / 86400.0 / 30)),
       now(), 30
  FROM (SELECT e.project_id, e.contact_id, ev.kind, min(ev.created_at) AS at
          FROM email_log e
          JOIN email_events ev ON ev.project_id = e.project_id AND ev.email_log_id = e.id
         WHERE e.contact_id IS NOT NULL
           AND ev.kind IN ('opened', 'clicked', 'unsubscribed', 'bounced', 'complained')
         GROUP BY e.project_id, e.contact_id, e.id, ev.kind
        UNION ALL
        SELECT c.project_id, c.contact_id, 'converted', c.attributed_at FROM conversions c) x
 GROUP BY x.project_id, x.contact_id;
