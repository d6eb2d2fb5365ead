-- Every change of an identity kernel or a product, whatever writes it (a route, an import, a
-- cascaded user deletion), tells each replica's cache of that table which owner to forget
-- ('<user id> <environment>'). A notification is delivered on commit only, so a replica
-- never forgets too early to read the new row.
CREATE FUNCTION notify_owner_row_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify(TG_ARGV[0], OLD.user_id::text || ' ' || OLD.environment);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify(TG_ARGV[0], NEW.user_id::text || ' ' || NEW.environment);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- A truncation names no row: every replica forgets the whole table.
CREATE FUNCTION notify_owner_rows_truncated() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], '*');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER identity_kernels_changed
    AFTER INSERT OR UPDATE OR DELETE ON identity_kernels
    FOR EACH ROW EXECUTE FUNCTION notify_owner_row_change('identity_kernel_changed');
CREATE TRIGGER identity_kernels_truncated
    AFTER TRUNCATE ON identity_kernels
    FOR EACH STATEMENT EXECUTE FUNCTION notify_owner_rows_truncated('identity_kernel_changed');

CREATE TRIGGER products_changed
    AFTER INSERT OR UPDATE OR DELETE ON products
    FOR EACH ROW EXECUTE FUNCTION notify_owner_row_change('product_changed');
CREATE TRIGGER products_truncated
    AFTER TRUNCATE ON products
    FOR EACH STATEMENT EXECUTE FUNCTION notify_owner_rows_truncated('product_changed');
