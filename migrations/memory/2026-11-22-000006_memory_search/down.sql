DROP INDEX product_states_unembedded_idx;
DROP INDEX decisions_unembedded_idx;
ALTER TABLE product_states DROP COLUMN embedding;
