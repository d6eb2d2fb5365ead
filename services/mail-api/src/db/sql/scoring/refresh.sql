-- The scores at $10 of the project's ($1) contacts, of one when $2 is not null: each
-- contribution's points by the rules ($3 open, $4 click, $5 conversion, $6 unsubscribe,
-- $7 bounce, $8 complaint) halved every $9 days of its age (0: never).
INSERT INTO contact_scores (project_id, contact_id, score, as_of, half_life_days)
SELECT $1::uuid, x.contact_id,
       sum(CASE x.kind WHEN 'opened' THEN $3::integer WHEN 'clicked' THEN $4::integer
                       WHEN 'converted' THEN $5::integer WHEN 'unsubscribed' THEN $6::integer
                       WHEN 'bounced' THEN $7::integer ELSE $8::integer END
           * CASE WHEN $9::integer = 0 THEN 1.0::float8
                  ELSE power(0.5::float8, greatest(0, extract(epoch FROM $10::timestamptz - x.at))::float8
                                          / 86400.0 / $9::integer)
             END),
       $10::timestamptz, $9::integer
  FROM ({SCORE_CONTRIBUTIONS}) x
 GROUP BY x.contact_id
    ON CONFLICT (project_id, contact_id) DO UPDATE
   SET score = EXCLUDED.score, as_of = EXCLUDED.as_of, half_life_days = EXCLUDED.half_life_days
