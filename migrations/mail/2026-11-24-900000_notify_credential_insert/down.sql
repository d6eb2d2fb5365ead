DROP TRIGGER api_keys_inserted ON api_keys;
DROP FUNCTION notify_credential_insert();
