-- The active workspace belongs to whichever credential the caller presents: an API key, an
-- OAuth access token or the dashboard's JWT (its user), not only an API key. Rows are written
-- only under the caller's own credential id, so no foreign key is needed for isolation.
ALTER TABLE workspace_scopes DROP CONSTRAINT workspace_scopes_key_id_fkey;
