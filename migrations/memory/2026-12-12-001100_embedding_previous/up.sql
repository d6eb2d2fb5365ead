-- Upgrading the embedding model keeps search answering on the old vectors: memory-api moves
-- each row's vector to `embedding_previous` (of the previous model, any dimension) when the
-- configured previous model is the one the vectors were made with, and writing a row's new
-- vector clears it. `embedding_model.previous_name` records whose vectors those are until
-- none remain.
ALTER TABLE decisions ADD COLUMN embedding_previous vector;
ALTER TABLE product_states ADD COLUMN embedding_previous vector;
ALTER TABLE free_form_entries ADD COLUMN embedding_previous vector;
-- Counting the rows still to re-embed reads these alone.
CREATE INDEX decisions_embedding_previous_idx ON decisions (id)
    WHERE embedding_previous IS NOT NULL;
CREATE INDEX product_states_embedding_previous_idx ON product_states (product_id, version)
    WHERE embedding_previous IS NOT NULL;
CREATE INDEX free_form_entries_embedding_previous_idx ON free_form_entries (id)
    WHERE embedding_previous IS NOT NULL;
ALTER TABLE embedding_model ADD COLUMN previous_name text NULL;
