-- CSV exports imported through the migration machinery (`import_platform_csv`): a run's
-- `platform` is `mailchimp` for Mailchimp's export layout and `csv` for a generic file, its
-- `kind` is `csv`.
ALTER TABLE platform_imports DROP CONSTRAINT platform_imports_platform_check;
ALTER TABLE platform_imports ADD CONSTRAINT platform_imports_platform_check
    CHECK (platform IN ('mailchimp', 'brevo', 'kit', 'mailerlite', 'csv'));
ALTER TABLE platform_imports DROP CONSTRAINT platform_imports_kind_check;
ALTER TABLE platform_imports ADD CONSTRAINT platform_imports_kind_check
    CHECK (kind IN ('full', 'campaigns', 'csv'));

-- The uploaded file of a CSV run, kept until the run ends (deleted with its `finish`): the
-- job reads it a page at a time from the cursor the run saves.
CREATE TABLE platform_import_files (
    import_id   uuid PRIMARY KEY,
    project_id  uuid NOT NULL,
    -- `mailchimp` or `generic`.
    layout      text NOT NULL CHECK (layout IN ('mailchimp', 'generic')),
    -- `csv`: the bytes are one CSV file; `zip`: a ZIP archive of CSV files.
    format      text NOT NULL CHECK (format IN ('csv', 'zip')),
    -- The generic layout's column mapping (null for Mailchimp's).
    mapping     jsonb,
    content     bytea NOT NULL,
    FOREIGN KEY (project_id, import_id) REFERENCES platform_imports (project_id, id)
        ON DELETE CASCADE
);
