DELETE FROM workspace_scopes s WHERE NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = s.key_id);
ALTER TABLE workspace_scopes ADD CONSTRAINT workspace_scopes_key_id_fkey
    FOREIGN KEY (key_id) REFERENCES api_keys (id) ON DELETE CASCADE;
