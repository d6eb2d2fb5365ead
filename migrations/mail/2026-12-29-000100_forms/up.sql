-- Signup forms: a site's hosted page and embeddable snippet, what they ask for, the tags a
-- confirmed signup gets, the consent text shown next to the button, and their counters.
CREATE TABLE forms (
    id                    uuid PRIMARY KEY,
    project_id            uuid NOT NULL,
    site_id               uuid NOT NULL,
    name                  text NOT NULL,
    -- The fields asked besides the address: [{"name", "label", "required"}].
    fields                jsonb NOT NULL,
    tags                  text[] NOT NULL,
    consent_text          text NOT NULL,
    views                 bigint NOT NULL DEFAULT 0 CHECK (views >= 0),
    -- Posts refused before anything was stored, by reason.
    refused_honeypot      bigint NOT NULL DEFAULT 0 CHECK (refused_honeypot >= 0),
    refused_too_fast      bigint NOT NULL DEFAULT 0 CHECK (refused_too_fast >= 0),
    refused_rate_limited  bigint NOT NULL DEFAULT 0 CHECK (refused_rate_limited >= 0),
    created_at            timestamptz NOT NULL,
    UNIQUE (project_id, id),
    CONSTRAINT forms_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);
CREATE INDEX forms_project_idx ON forms (project_id, id);

-- Signups waiting for (or past) the confirmation of their address: the consent given and
-- when; the contact exists and is subscribed only once `confirmed_at` is set.
CREATE TABLE form_submissions (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL,
    form_id       uuid NOT NULL,
    email         text NOT NULL,
    -- The form's other fields as submitted.
    answers       jsonb NOT NULL,
    consent_text  text NOT NULL,
    consented_at  timestamptz NOT NULL,
    confirmed_at  timestamptz,
    CONSTRAINT form_submissions_same_project_form
        FOREIGN KEY (project_id, form_id) REFERENCES forms (project_id, id) ON DELETE CASCADE
);
CREATE INDEX form_submissions_form_idx ON form_submissions (form_id);
CREATE INDEX form_submissions_email_idx ON form_submissions (project_id, email);

-- A contact created by a confirmed signup.
ALTER TABLE contacts DROP CONSTRAINT contacts_source_check;
ALTER TABLE contacts ADD CONSTRAINT contacts_source_check
    CHECK (source IN ('identify', 'api', 'contacts', 'import', 'form'));
