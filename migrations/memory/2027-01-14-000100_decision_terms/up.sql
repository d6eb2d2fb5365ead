-- Keyword search's postings with their scores: one row per (decision, lexeme of its `search`)
-- holding `ts_rank_cd(search, <that lexeme>)`. A one-word search then reads its best `limit`
-- decisions in index order, instead of ranking every decision that holds the word (a word in
-- 2,500 of 100,000 decisions took ~9 ms; in every decision, ~100 ms).
-- Searches of more than one lexeme keep ranking `search @@ q` matches.
CREATE TABLE decision_terms (
    user_id     uuid NOT NULL,
    environment text NOT NULL,
    -- The one-lexeme query `websearch_to_tsquery` makes of the word.
    term        tsquery NOT NULL,
    rank        real NOT NULL,
    id          uuid NOT NULL,
    FOREIGN KEY (user_id, environment, id) REFERENCES decisions (user_id, environment, id)
        ON DELETE CASCADE ON UPDATE CASCADE
);

-- A lexeme of a tsvector as the one-lexeme query that finds it (quoted, escaped).
CREATE FUNCTION decision_term(lexeme text) RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT AS $f$
    SELECT ('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''')::tsquery
$f$;

-- Kept in step with `search` (a generated column) on every write of the texts it is made of.
CREATE FUNCTION decision_terms_sync() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.search IS NOT DISTINCT FROM OLD.search THEN
            RETURN NULL;
        END IF;
        DELETE FROM decision_terms
        WHERE user_id = NEW.user_id AND environment = NEW.environment AND id = NEW.id;
    END IF;
    INSERT INTO decision_terms (user_id, environment, term, rank, id)
    SELECT NEW.user_id, NEW.environment, t.term, ts_rank_cd(NEW.search, t.term), NEW.id
    FROM (SELECT decision_term(u.lexeme) AS term FROM unnest(NEW.search) u) t;
    RETURN NULL;
END
$f$;

CREATE TRIGGER decision_terms_sync AFTER INSERT OR UPDATE OF decision, reasoning, product_name
    ON decisions FOR EACH ROW EXECUTE FUNCTION decision_terms_sync();

INSERT INTO decision_terms (user_id, environment, term, rank, id)
SELECT d.user_id, d.environment, t.term, ts_rank_cd(d.search, t.term), d.id
FROM decisions d, LATERAL (SELECT decision_term(u.lexeme) AS term FROM unnest(d.search) u) t;

-- Best first, newest first among equals: the order of keyword search.
CREATE INDEX decision_terms_rank_idx
    ON decision_terms (user_id, environment, term, rank DESC, id DESC);
-- For the foreign key's cascades.
CREATE INDEX decision_terms_decision_idx ON decision_terms (user_id, environment, id);
