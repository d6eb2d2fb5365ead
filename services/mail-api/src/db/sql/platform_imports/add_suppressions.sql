-- One page of a migration's opted-out addresses ($2: a JSON array of {email, reason}), added
-- to the project's suppressions ($3: the note naming the platform); an address already
-- suppressed is left as it is.
INSERT INTO suppressions (id, project_id, email, reason, note, created_at)
SELECT r.id, $1, r.email, r.reason, $3, now()
  FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, email text, reason text)
ON CONFLICT (project_id, email) DO NOTHING
