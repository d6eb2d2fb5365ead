DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['decisions', 'free_form_entries'] LOOP
        EXECUTE format('DROP INDEX %I', t || '_embedding_idx');
        EXECUTE format('CREATE INDEX %I ON %I USING hnsw (embedding vector_cosine_ops)',
            t || '_embedding_idx', t);
    END LOOP;
END
$$;
