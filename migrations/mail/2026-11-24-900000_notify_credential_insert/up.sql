-- A key inserted must be usable at once even where a replica remembers it as unknown: the
-- credential caches forget every remembered miss on any notification.
CREATE FUNCTION notify_credential_insert() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('credential_changed', encode(NEW.key_hash, 'hex'));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER api_keys_inserted
    AFTER INSERT ON api_keys
    FOR EACH ROW EXECUTE FUNCTION notify_credential_insert();
