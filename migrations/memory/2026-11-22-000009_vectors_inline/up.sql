-- Embeddings stay inside their row (1.5 kB each) instead of in the TOAST table: the exact
-- scans of /memory/search and consolidation read every vector of an owner, and fetching each
-- one from TOAST made those scans several times slower. Existing vectors are rewritten in
-- place (the text round trip forces a fresh, untoasted value).
ALTER TABLE decisions ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE product_states ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE free_form_entries ALTER COLUMN embedding SET STORAGE PLAIN;
UPDATE decisions SET embedding = embedding::text::vector WHERE embedding IS NOT NULL;
UPDATE product_states SET embedding = embedding::text::vector WHERE embedding IS NOT NULL;
UPDATE free_form_entries SET embedding = embedding::text::vector WHERE embedding IS NOT NULL;
