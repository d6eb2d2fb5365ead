-- Renamed slugs keep their new names: which site had which slug before is not recorded.
ALTER TABLE sites DROP CONSTRAINT sites_slug_key;
ALTER TABLE sites ADD CONSTRAINT sites_project_id_slug_key UNIQUE (project_id, slug);
