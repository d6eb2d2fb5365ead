-- Own sending domains: a site's domain of its own, with the DKIM key made for it (the private
-- key sealed with the deployment's key), and what the last DNS check found of each record.
-- A site has at most one; it sends from it while `status` is `verified`.
CREATE TABLE sending_domains (
    id                uuid PRIMARY KEY,
    project_id        uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    site_id           uuid NOT NULL,
    domain            text NOT NULL CHECK (domain = lower(domain) AND length(domain) BETWEEN 3 AND 253),
    dkim_selector     text NOT NULL,
    -- The public key as published in the DKIM record (`p=`, base64 of the DER SubjectPublicKeyInfo).
    dkim_public_key   text NOT NULL,
    -- The PKCS#1 PEM private key, sealed (AES-256-GCM) with the deployment's key.
    dkim_private_key  bytea NOT NULL,
    -- `pending` (never verified), `verified` (every record found), `lost` (verified once, a
    -- record has gone since).
    status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'lost')),
    -- What the last check found, by record (`spf`, `dkim`, `dmarc`, `return_path`): true or false.
    records           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(records) = 'object'),
    verified_at       timestamptz,
    checked_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE,
    CONSTRAINT sending_domains_site_key UNIQUE (site_id)
);
CREATE INDEX sending_domains_project_idx ON sending_domains (project_id, id);
-- The periodic check walks the domains that were verified (or lost), oldest check first.
CREATE INDEX sending_domains_checked_idx ON sending_domains (checked_at NULLS FIRST)
    WHERE status <> 'pending';
