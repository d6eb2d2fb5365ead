UPDATE contacts SET source = 'identify' WHERE source = 'form';
ALTER TABLE contacts DROP CONSTRAINT contacts_source_check;
ALTER TABLE contacts ADD CONSTRAINT contacts_source_check
    CHECK (source IN ('identify', 'api', 'contacts', 'import'));
DROP TABLE form_submissions;
DROP TABLE forms;
