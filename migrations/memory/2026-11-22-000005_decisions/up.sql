CREATE EXTENSION IF NOT EXISTS vector;

-- Recorded decisions of a user and environment. `search` drives keyword mode (full-text);
-- `embedding` (all-MiniLM-L6-v2 class, 384 dimensions) drives semantic mode once written.
CREATE TABLE decisions (
    id                uuid PRIMARY KEY,
    user_id           uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment       text NOT NULL CHECK (environment IN ('live', 'test')),
    decision          text NOT NULL CHECK (char_length(decision) BETWEEN 1 AND 2000),
    reasoning         text CHECK (char_length(reasoning) <= 5000),
    product_name      text NOT NULL CHECK (char_length(product_name) BETWEEN 1 AND 100),
    affects_products  text[] NOT NULL DEFAULT '{}',
    tags              text[] NOT NULL DEFAULT '{}',
    decided_at        timestamptz NOT NULL DEFAULT now(),
    embedding         vector(384),
    search            tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, decision), 'A')
        || setweight(to_tsvector('simple'::regconfig, product_name), 'A')
        || setweight(to_tsvector('english'::regconfig, coalesce(reasoning, '')), 'B')
    ) STORED
);
CREATE INDEX decisions_owner_idx ON decisions (user_id, environment, id);
CREATE INDEX decisions_search_idx ON decisions USING gin (search);
CREATE INDEX decisions_embedding_idx ON decisions USING hnsw (embedding vector_cosine_ops);
