DROP TABLE platform_import_files;
DELETE FROM platform_imports WHERE kind = 'csv';
ALTER TABLE platform_imports DROP CONSTRAINT platform_imports_kind_check;
ALTER TABLE platform_imports ADD CONSTRAINT platform_imports_kind_check
    CHECK (kind IN ('full', 'campaigns'));
ALTER TABLE platform_imports DROP CONSTRAINT platform_imports_platform_check;
ALTER TABLE platform_imports ADD CONSTRAINT platform_imports_platform_check
    CHECK (platform IN ('mailchimp', 'brevo', 'kit', 'mailerlite'));
