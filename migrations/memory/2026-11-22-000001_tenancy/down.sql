DROP TABLE products;
DROP TRIGGER users_tier_changed ON users;
DROP FUNCTION notify_all_credentials();
DROP TRIGGER api_keys_changed ON api_keys;
DROP FUNCTION notify_credential_change();
DROP TABLE api_keys;
DROP TABLE users;
