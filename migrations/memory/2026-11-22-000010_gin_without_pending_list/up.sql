-- Full-text indexes without a pending list: with `fastupdate` on, new rows wait in an
-- unsorted list that every search scans until VACUUM merges it (measured: 7 ms of a keyword
-- search over 10,000 fresh decisions, 0.07 ms after the merge). Writes pay the index update
-- instead; searches stay fast between vacuums.
ALTER INDEX decisions_search_idx SET (fastupdate = off);
ALTER INDEX free_form_entries_search_idx SET (fastupdate = off);
