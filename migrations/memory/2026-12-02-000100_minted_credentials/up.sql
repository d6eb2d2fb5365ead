-- A credential minted by another one (an agent's token, minted by the key that connected the
-- agent) names its creator, and goes with it: revoking or deleting the creator revokes what it
-- minted (and what that minted), each revocation telling every replica's cache through the
-- api_keys_changed trigger. No foreign key: the creator row may be deleted, its minted rows
-- stay (revoked) for the record.
ALTER TABLE api_keys ADD COLUMN created_by uuid;
CREATE INDEX api_keys_created_by_idx ON api_keys (created_by) WHERE created_by IS NOT NULL;

CREATE FUNCTION revoke_minted_credentials() RETURNS trigger AS $$
BEGIN
    UPDATE api_keys SET revoked_at = now() WHERE created_by = OLD.id AND revoked_at IS NULL;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER api_keys_revoke_minted
    AFTER UPDATE OF revoked_at ON api_keys
    FOR EACH ROW WHEN (NEW.revoked_at IS NOT NULL)
    EXECUTE FUNCTION revoke_minted_credentials();
CREATE TRIGGER api_keys_delete_minted
    AFTER DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION revoke_minted_credentials();
