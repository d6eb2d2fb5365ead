DROP TABLE hygiene_audit;
DROP TABLE hygiene_configs;
DROP INDEX contacts_identity_idx;
DROP FUNCTION email_identity(text);
UPDATE contacts SET source = 'contacts' WHERE source = 'import';
ALTER TABLE contacts DROP CONSTRAINT contacts_source_check;
ALTER TABLE contacts ADD CONSTRAINT contacts_source_check
    CHECK (source IN ('identify', 'api', 'contacts'));
