-- The contact tools: imported contacts, the identity duplicates are grouped by, and list
-- hygiene (a configuration per project and an audit entry per action).

ALTER TABLE contacts DROP CONSTRAINT contacts_source_check;
ALTER TABLE contacts ADD CONSTRAINT contacts_source_check
    CHECK (source IN ('identify', 'api', 'contacts', 'import'));

-- The address a mailbox provider delivers to: lowercased, a `+tag` dropped, and for Gmail
-- (gmail.com, googlemail.com) the dots of the local part dropped and the domain gmail.com.
-- Contacts of one project with the same identity are likely one person.
CREATE FUNCTION email_identity(email text) RETURNS text AS $$
    SELECT CASE
        WHEN d IN ('gmail.com', 'googlemail.com')
            THEN replace(split_part(l, '+', 1), '.', '') || '@gmail.com'
        ELSE split_part(l, '+', 1) || '@' || d
    END
    FROM (SELECT lower(split_part(email, '@', 1)) AS l,
                 lower(split_part(email, '@', 2)) AS d) AS parts
$$ LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE;
CREATE INDEX contacts_identity_idx ON contacts (project_id, email_identity(email));

-- What a list-hygiene run applies. No row: the defaults.
CREATE TABLE hygiene_configs (
    project_id               uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    inactive_days            integer NOT NULL DEFAULT 0 CHECK (inactive_days BETWEEN 0 AND 3650),
    remove_bounced           boolean NOT NULL DEFAULT true,
    remove_complained        boolean NOT NULL DEFAULT true,
    suppress_role_addresses  boolean NOT NULL DEFAULT false,
    updated_at               timestamptz NOT NULL DEFAULT now()
);

-- One row per subscription a hygiene run ended.
CREATE TABLE hygiene_audit (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    run_id      uuid NOT NULL,
    site_id     uuid NOT NULL,
    contact_id  uuid,
    email       text NOT NULL,
    action      text NOT NULL CHECK (action IN ('suppressed', 'unsubscribed')),
    reason      text NOT NULL CHECK (reason IN ('bounced', 'complained', 'role_address', 'inactive')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT hygiene_audit_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE,
    CONSTRAINT hygiene_audit_same_project_contact
        FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id)
        ON DELETE SET NULL (contact_id)
);
CREATE INDEX hygiene_audit_site_idx ON hygiene_audit (project_id, site_id, id);
CREATE INDEX hygiene_audit_contact_idx ON hygiene_audit (contact_id) WHERE contact_id IS NOT NULL;
