DROP TABLE notifications;
DROP TABLE team_members;
DROP TABLE gdpr_deletion_log;

-- Conversions whose contact was erased cannot point at a contact again.
DELETE FROM conversions WHERE contact_id IS NULL;
ALTER TABLE conversions DROP CONSTRAINT conversions_same_project_contact;
ALTER TABLE conversions ALTER COLUMN contact_id SET NOT NULL;
ALTER TABLE conversions ADD CONSTRAINT conversions_contact_id_fkey
    FOREIGN KEY (contact_id) REFERENCES contacts (id) ON DELETE CASCADE;
ALTER TABLE conversions ADD CONSTRAINT conversions_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE;

DROP TABLE brand_voices;
