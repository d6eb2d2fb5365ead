-- Content blocks: reusable HTML of a project that templates and campaign steps include by
-- name (`{{ blocks.<name> }}`).
CREATE TABLE content_blocks (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL,
    name        text NOT NULL,
    html        text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    CONSTRAINT content_blocks_name_unique UNIQUE (project_id, name)
);

-- Content sources: the RSS and Atom feeds a site follows; the content pipeline reads them
-- and drafts a digest of the items it has not seen before.
CREATE TABLE content_sources (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL,
    site_id          uuid NOT NULL,
    url              text NOT NULL,
    created_at       timestamptz NOT NULL,
    -- The last read: when, and why it failed (null when it did not).
    last_fetched_at  timestamptz,
    last_error       text,
    UNIQUE (project_id, id),
    CONSTRAINT content_sources_url_unique UNIQUE (project_id, site_id, url),
    CONSTRAINT content_sources_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);
CREATE INDEX content_sources_site_idx ON content_sources (project_id, site_id);

-- The items of a source already put in a digest (by the feed's item id, or its link).
CREATE TABLE content_seen_items (
    project_id  uuid NOT NULL,
    source_id   uuid NOT NULL,
    item_id     text NOT NULL,
    seen_at     timestamptz NOT NULL,
    PRIMARY KEY (source_id, item_id),
    CONSTRAINT content_seen_items_same_project_source
        FOREIGN KEY (project_id, source_id) REFERENCES content_sources (project_id, id)
        ON DELETE CASCADE
);
