-- A social post's media (at most 10 `{url, kind, alt}`, https addresses the platforms fetch)
-- and its per-platform settings (`{reddit: {subreddit, url}, pinterest: {board_id, link}}`),
-- both checked when the post is written.
ALTER TABLE social_posts
    ADD COLUMN media jsonb NOT NULL DEFAULT '[]'::jsonb
        CHECK (jsonb_typeof(media) = 'array' AND jsonb_array_length(media) <= 10),
    ADD COLUMN options jsonb NOT NULL DEFAULT '{}'::jsonb
        CHECK (jsonb_typeof(options) = 'object');
