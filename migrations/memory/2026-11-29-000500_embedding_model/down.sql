-- Back to 384-dimension columns: vectors of another dimension are dropped (the background
-- pass re-embeds those rows).
UPDATE decisions SET embedding = NULL WHERE vector_dims(embedding) <> 384;
UPDATE product_states SET embedding = NULL WHERE vector_dims(embedding) <> 384;
UPDATE free_form_entries SET embedding = NULL WHERE vector_dims(embedding) <> 384;
ALTER TABLE decisions ALTER COLUMN embedding TYPE vector(384);
ALTER TABLE product_states ALTER COLUMN embedding TYPE vector(384);
ALTER TABLE free_form_entries ALTER COLUMN embedding TYPE vector(384);
DROP TABLE embedding_model;
