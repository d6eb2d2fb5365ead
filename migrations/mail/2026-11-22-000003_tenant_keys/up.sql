-- Tenancy in the schema, not only in the queries: a row may only point at rows of its own
-- project. Composite keys (project_id, id) on the referenced tables, and foreign keys through
-- them (nullable references clear only their own column on delete, a PostgreSQL 15 feature).

ALTER TABLE sites ADD CONSTRAINT sites_project_id_id_key UNIQUE (project_id, id);
ALTER TABLE contacts ADD CONSTRAINT contacts_project_id_id_key UNIQUE (project_id, id);
ALTER TABLE campaigns ADD CONSTRAINT campaigns_project_id_id_key UNIQUE (project_id, id);
ALTER TABLE email_log ADD CONSTRAINT email_log_project_id_id_key UNIQUE (project_id, id);
-- The unique keys index (project_id, id) already: the plain indexes would be duplicates.
DROP INDEX sites_project_id_idx;
DROP INDEX contacts_project_id_idx;
DROP INDEX campaigns_project_idx;

ALTER TABLE campaigns ADD CONSTRAINT campaigns_same_project_site
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE;

ALTER TABLE events ADD CONSTRAINT events_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE;

ALTER TABLE enrollments ADD CONSTRAINT enrollments_same_project_campaign
    FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id) ON DELETE CASCADE;
ALTER TABLE enrollments ADD CONSTRAINT enrollments_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE;

ALTER TABLE email_log ADD CONSTRAINT email_log_same_project_site
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE;
ALTER TABLE email_log ADD CONSTRAINT email_log_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id)
    ON DELETE SET NULL (contact_id);
ALTER TABLE email_log ADD CONSTRAINT email_log_same_project_campaign
    FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id)
    ON DELETE SET NULL (campaign_id);

ALTER TABLE conversions ADD CONSTRAINT conversions_same_project_contact
    FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE;
ALTER TABLE conversions ADD CONSTRAINT conversions_same_project_email
    FOREIGN KEY (project_id, email_log_id) REFERENCES email_log (project_id, id)
    ON DELETE SET NULL (email_log_id);
ALTER TABLE conversions ADD CONSTRAINT conversions_same_project_campaign
    FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id)
    ON DELETE SET NULL (campaign_id);
