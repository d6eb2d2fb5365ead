-- The account tools: a brand voice per site, GDPR erasures and their log, team members and
-- their invitations, and the project's notifications.

-- How a site's mail should sound; one per site, gone with the site.
CREATE TABLE brand_voices (
    site_id         uuid PRIMARY KEY,
    project_id      uuid NOT NULL,
    tone            text,
    audience        text,
    guidelines      text,
    words_to_avoid  text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);

-- An erasure keeps what was sent and converted as anonymous rows: a conversion outlives its
-- contact (its contact_id cleared) instead of going with it, so revenue totals do not change.
ALTER TABLE conversions DROP CONSTRAINT conversions_contact_id_fkey;
ALTER TABLE conversions DROP CONSTRAINT conversions_same_project_contact;
ALTER TABLE conversions ALTER COLUMN contact_id DROP NOT NULL;
ALTER TABLE conversions ADD CONSTRAINT conversions_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id)
    ON DELETE SET NULL (contact_id);

-- One row per erasure: no personal data, only a salted hash of the address (SHA-256 of
-- "<project id>:<email>", hex) and how many rows of each kind were erased or scrubbed.
CREATE TABLE gdpr_deletion_log (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    contact_id    uuid NOT NULL,
    email_sha256  text NOT NULL CHECK (email_sha256 ~ '^[0-9a-f]{64}$'),
    erased        jsonb NOT NULL CHECK (jsonb_typeof(erased) = 'object'),
    key_id        uuid,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gdpr_deletion_log_project_idx ON gdpr_deletion_log (project_id, id);

-- People invited to the project. The invitation token is stored as its SHA-256 only.
CREATE TABLE team_members (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email              text NOT NULL,
    role               text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    status             text NOT NULL DEFAULT 'invited' CHECK (status IN ('invited', 'active')),
    invitation_hash    bytea CHECK (octet_length(invitation_hash) = 32),
    invited_by_key_id  uuid,
    invited_at         timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz,
    accepted_at        timestamptz,
    UNIQUE (project_id, email)
);
CREATE UNIQUE INDEX team_members_project_id_idx ON team_members (project_id, id);
CREATE UNIQUE INDEX team_members_invitation_idx ON team_members (invitation_hash)
    WHERE invitation_hash IS NOT NULL;

-- What happened that the project should know about (API keys created or revoked, bounces and
-- complaints, invitations, erasures), until marked read.
CREATE TABLE notifications (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind        text NOT NULL,
    title       text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    read_at     timestamptz
);
CREATE INDEX notifications_project_idx ON notifications (project_id, id);
CREATE INDEX notifications_unread_idx ON notifications (project_id, id) WHERE read_at IS NULL;
