DROP TRIGGER api_keys_delete_minted ON api_keys;
DROP TRIGGER api_keys_revoke_minted ON api_keys;
DROP FUNCTION revoke_minted_credentials();
DROP INDEX api_keys_created_by_idx;
ALTER TABLE api_keys DROP COLUMN created_by;
