-- Vectors of any dimension stay inside their row when the row has room (STORAGE MAIN), for the
-- reason of 2026-11-22-000009: the exact scans of /memory/search read every vector of an owner,
-- and fetching each from the TOAST table made them several times slower. PLAIN (that
-- migration's choice for 384 dimensions) would refuse a row a large model's vector does not
-- fit in; MAIN moves it out of line only then. `embedding_previous` (added since with the
-- type's own storage, out of line) is kept inline the same way. Rows written before keep their
-- stored form until rewritten; a model upgrade rewrites every row (memory-api also sets this
-- storage again after it changes a column's dimension, which resets it).
ALTER TABLE decisions ALTER COLUMN embedding SET STORAGE MAIN,
    ALTER COLUMN embedding_previous SET STORAGE MAIN;
ALTER TABLE product_states ALTER COLUMN embedding SET STORAGE MAIN,
    ALTER COLUMN embedding_previous SET STORAGE MAIN;
ALTER TABLE free_form_entries ALTER COLUMN embedding SET STORAGE MAIN,
    ALTER COLUMN embedding_previous SET STORAGE MAIN;
