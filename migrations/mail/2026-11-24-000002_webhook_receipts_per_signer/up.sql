-- A provider webhook receipt is deduplicated per secret that verified it: the project whose own
-- secret verified it, or NULL for the deployment's secret. Keyed on (provider, webhook-id)
-- alone, a project could sign an event with its own secret under the id of a coming
-- deployment-signed event and have the real one dropped as a duplicate.
ALTER TABLE webhook_receipts
    ADD COLUMN signer_project_id uuid REFERENCES projects (id) ON DELETE CASCADE;

-- Which secret verified an earlier receipt was not recorded: a project route's receipt counts
-- as the project's own when the project has a secret of its own now.
UPDATE webhook_receipts r
SET signer_project_id = r.project_id
FROM project_delivery d
WHERE d.project_id = r.project_id AND d.webhook_secret IS NOT NULL;

ALTER TABLE webhook_receipts DROP CONSTRAINT webhook_receipts_provider_webhook_id_key;
ALTER TABLE webhook_receipts ADD CONSTRAINT webhook_receipts_signer_key
    UNIQUE NULLS NOT DISTINCT (provider, webhook_id, signer_project_id);
