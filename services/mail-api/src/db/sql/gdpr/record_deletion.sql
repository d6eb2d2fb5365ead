INSERT INTO gdpr_deletion_log (id, project_id, contact_id, email_sha256, erased,
                               key_id)
VALUES ($1, $2, $3, encode(sha256(convert_to($2::uuid::text || ':' || $4, 'UTF8')), 'hex'),
        $5, $6)
RETURNING id, contact_id, email_sha256, erased, key_id, created_at
