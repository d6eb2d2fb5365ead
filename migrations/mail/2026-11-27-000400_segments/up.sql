-- Segments: a project's named rules over its contacts (tags, properties, events, sites,
-- engagement), evaluated when they are used, never materialized. `rules` is the group the API
-- checked, as it answers it.
CREATE TABLE segments (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text,
    rules        jsonb NOT NULL CHECK (jsonb_typeof(rules) = 'object'),
    -- How the rules were written: `rules` (by the caller) or `description` (by the model, from
    -- the description).
    origin       text NOT NULL DEFAULT 'rules' CHECK (origin IN ('rules', 'description')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    -- Lists page through (project_id, id); later rows may point at a segment of their project.
    CONSTRAINT segments_project_id_id_key UNIQUE (project_id, id)
);
