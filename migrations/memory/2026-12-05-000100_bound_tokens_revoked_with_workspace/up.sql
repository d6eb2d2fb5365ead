-- An agent's token bound to a workspace is never widened: deleting the workspace nulls the
-- agent's `workspace_id` (ON DELETE SET NULL), which would leave its token account-wide, so
-- the token is revoked instead (and with it what it minted), each replica's cache told at
-- once through the api_keys_changed trigger. Reconnecting the agent mints a new token.
CREATE FUNCTION revoke_unbound_agent_token() RETURNS trigger AS $$
BEGIN
    UPDATE api_keys SET revoked_at = now() WHERE id = OLD.key_id AND revoked_at IS NULL;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER agents_revoke_unbound_token
    AFTER UPDATE ON agents
    FOR EACH ROW WHEN (OLD.workspace_id IS NOT NULL AND NEW.workspace_id IS NULL
                       AND OLD.key_id IS NOT NULL)
    EXECUTE FUNCTION revoke_unbound_agent_token();
