DROP TABLE inbox_draft_threads;
