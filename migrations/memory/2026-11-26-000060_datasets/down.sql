DROP TABLE dataset_uploads;
DROP TABLE dataset_ingest_keys;
DROP TABLE dataset_rows;
DROP TABLE datasets;
