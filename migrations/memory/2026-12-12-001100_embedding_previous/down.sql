ALTER TABLE embedding_model DROP COLUMN previous_name;
DROP INDEX free_form_entries_embedding_previous_idx;
DROP INDEX product_states_embedding_previous_idx;
DROP INDEX decisions_embedding_previous_idx;
ALTER TABLE free_form_entries DROP COLUMN embedding_previous;
ALTER TABLE product_states DROP COLUMN embedding_previous;
ALTER TABLE decisions DROP COLUMN embedding_previous;
