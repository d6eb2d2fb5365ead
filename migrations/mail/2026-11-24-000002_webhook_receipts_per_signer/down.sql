-- Of receipts sharing (provider, webhook-id), the first received stays.
DELETE FROM webhook_receipts r
USING webhook_receipts earlier
WHERE earlier.provider = r.provider
  AND earlier.webhook_id = r.webhook_id
  AND (earlier.received_at, earlier.id) < (r.received_at, r.id);
ALTER TABLE webhook_receipts DROP CONSTRAINT webhook_receipts_signer_key;
ALTER TABLE webhook_receipts ADD CONSTRAINT webhook_receipts_provider_webhook_id_key
    UNIQUE (provider, webhook_id);
ALTER TABLE webhook_receipts DROP COLUMN signer_project_id;
