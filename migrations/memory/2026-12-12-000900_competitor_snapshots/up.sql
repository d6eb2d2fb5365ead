-- Competitor watch: the readable text of each watched URL as last read, per owner. A run
-- diffs a new read against it and replaces it only if it is still the one it read (so a
-- retried or concurrent run never records one change twice).
CREATE TABLE competitor_snapshots (
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment  text NOT NULL CHECK (environment IN ('live', 'test')),
    url          text NOT NULL,
    competitor   text NOT NULL,
    content      text NOT NULL,
    -- SHA-256 of `content`, hex.
    sha256       text NOT NULL,
    fetched_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, environment, url)
);

-- What a feed item rests on (a competitor change: the URL and before/after excerpts).
ALTER TABLE feed_items ADD COLUMN evidence jsonb;
