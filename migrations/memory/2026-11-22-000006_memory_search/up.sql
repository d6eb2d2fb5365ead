-- Semantic search over product states: each version's embedding (only the current version is
-- searched; older ones keep theirs as history).
ALTER TABLE product_states ADD COLUMN embedding vector(384);

-- The background embedding pass finds what is still to embed without scanning everything.
CREATE INDEX decisions_unembedded_idx ON decisions (id) WHERE embedding IS NULL;
CREATE INDEX product_states_unembedded_idx ON product_states (id) WHERE embedding IS NULL;
