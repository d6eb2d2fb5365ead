DROP TABLE consolidation_candidates;
DROP TABLE consolidation_runs;
DROP TABLE mif_imports;
DROP TABLE free_form_entries;

CREATE INDEX decisions_owner_idx ON decisions (user_id, environment, id);
ALTER TABLE decisions DROP CONSTRAINT decisions_pkey;
ALTER TABLE decisions ADD PRIMARY KEY (id);
