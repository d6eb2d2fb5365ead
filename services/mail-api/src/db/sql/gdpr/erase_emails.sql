UPDATE email_log SET to_email = '{ERASED}', subject = '{ERASED}', html = NULL,
  text_body = NULL, reply_to = NULL, headers = '[]',
  clicked_urls = ARRAY(SELECT '{ERASED}'::text FROM unnest(clicked_urls)),
  idempotency_key = NULL, request_hash = NULL, last_error = NULL,
  provider_message_id = NULL, contact_id = NULL,
  status = CASE WHEN status IN ('accepted', 'queued') THEN 'failed'
                ELSE status END,
  hold_reason = NULL, held_until = NULL,
  updated_at = now()
WHERE id IN ({EMAILS}) RETURNING id
