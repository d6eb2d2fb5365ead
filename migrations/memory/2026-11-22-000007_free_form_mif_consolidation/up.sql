-- Decisions are keyed per owner: a MIF export imported into another account (or the test
-- environment) keeps its ids, so the same id may exist once per user and environment.
ALTER TABLE decisions DROP CONSTRAINT decisions_pkey;
ALTER TABLE decisions ADD PRIMARY KEY (user_id, environment, id);
DROP INDEX decisions_owner_idx;

-- Free-form memory: the `user_corpus` of MIF. Keyed per owner like decisions.
CREATE TABLE free_form_entries (
    id           uuid NOT NULL,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment  text NOT NULL CHECK (environment IN ('live', 'test')),
    content      text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 10000),
    tags         text[] NOT NULL DEFAULT '{}',
    source       text CHECK (char_length(source) <= 200),
    metadata     jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    embedding    vector(384),
    search       tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    PRIMARY KEY (user_id, environment, id)
);
CREATE INDEX free_form_entries_search_idx ON free_form_entries USING gin (search);
CREATE INDEX free_form_entries_embedding_idx ON free_form_entries USING hnsw (embedding vector_cosine_ops);
CREATE INDEX free_form_entries_unembedded_idx ON free_form_entries (id) WHERE embedding IS NULL;

-- MIF imports: staged ones wait here for `POST /memory/imports/{id}/apply`; applied ones stay
-- as a record (applying twice answers 409).
CREATE TABLE mif_imports (
    id              uuid PRIMARY KEY,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment     text NOT NULL CHECK (environment IN ('live', 'test')),
    merge_strategy  text NOT NULL CHECK (merge_strategy IN ('merge', 'replace', 'append')),
    document        jsonb NOT NULL CHECK (jsonb_typeof(document) = 'object'),
    workspace_id    uuid,
    status          text NOT NULL CHECK (status IN ('staged', 'applied')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    applied_at      timestamptz
);
CREATE INDEX mif_imports_owner_idx ON mif_imports (user_id, environment, id);

-- Consolidation runs and the candidates they recorded (never acted upon by the service).
CREATE TABLE consolidation_runs (
    id                       uuid PRIMARY KEY,
    user_id                  uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment              text NOT NULL CHECK (environment IN ('live', 'test')),
    workspace_id             uuid,
    status                   text NOT NULL CHECK (status IN ('completed', 'budget_exhausted')),
    compute_budget_tokens    integer NOT NULL CHECK (compute_budget_tokens BETWEEN 1 AND 5000),
    tokens_read              integer NOT NULL CHECK (tokens_read >= 0),
    items_read               integer NOT NULL CHECK (items_read >= 0),
    corpus_deduplicated      integer NOT NULL CHECK (corpus_deduplicated >= 0),
    stale_decisions_flagged  integer NOT NULL CHECK (stale_decisions_flagged >= 0),
    redundancy_score         double precision NOT NULL CHECK (redundancy_score BETWEEN 0 AND 1),
    created_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consolidation_runs_owner_idx ON consolidation_runs (user_id, environment, id);

CREATE TABLE consolidation_candidates (
    run_id      uuid NOT NULL REFERENCES consolidation_runs (id) ON DELETE CASCADE,
    position    integer NOT NULL CHECK (position >= 0),
    kind        text NOT NULL CHECK (kind IN ('duplicate', 'stale')),
    rule        text NOT NULL CHECK (rule IN ('same_normalized_text', 'embedding_similarity',
                                              'superseded', 'old_unreferenced')),
    item_type   text NOT NULL CHECK (item_type IN ('decision', 'corpus')),
    item_id     uuid NOT NULL,
    other_type  text CHECK (other_type IN ('decision', 'corpus')),
    other_id    uuid,
    similarity  double precision,
    PRIMARY KEY (run_id, position)
);
