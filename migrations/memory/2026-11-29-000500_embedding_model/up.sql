-- The model every stored vector was made with (provider/model name, as the embedder names
-- itself) and its dimension. memory-api compares it with its configured embedder at start-up:
-- on a change it clears every vector (resizing the embedding columns to the new dimension)
-- and the background pass re-embeds every row with the new model. Vectors stored before this
-- table existed were made by all-MiniLM-L6-v2, the only 384-dimension model of the service.
CREATE TABLE embedding_model (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    name       text NOT NULL,
    dimensions integer NOT NULL CHECK (dimensions > 0),
    changed_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO embedding_model (name, dimensions) VALUES ('local/all-MiniLM-L6-v2', 384);
