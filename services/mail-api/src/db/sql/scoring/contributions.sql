-- The contributions to the score of the contact $2 of the project $1, newest first.
SELECT x.kind, x.at, x.email_log_id, x.conversion_id
  FROM ({SCORE_CONTRIBUTIONS}) x
 ORDER BY x.at DESC, x.kind
