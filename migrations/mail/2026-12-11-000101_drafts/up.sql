-- Drafts: an email (subject and HTML) written for a site, typically by an agent, that a person
-- approves or rejects; an approved draft can be promoted to a campaign's step, once.
CREATE TABLE drafts (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    site_id      uuid NOT NULL,
    subject      text NOT NULL,
    body_html    text NOT NULL,
    text_body    text,
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'approved', 'rejected', 'promoted')),
    -- Why it was rejected (given with the rejection).
    reason       text,
    decided_at   timestamptz,
    -- The campaign and step it became (no foreign key: the campaign may be deleted later).
    campaign_id  uuid,
    step_id      uuid,
    promoted_at  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT drafts_project_id_id_key UNIQUE (project_id, id),
    CONSTRAINT drafts_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);

CREATE INDEX drafts_project_idx ON drafts (project_id, id);
