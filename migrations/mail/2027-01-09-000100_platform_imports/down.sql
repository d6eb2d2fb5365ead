DROP TABLE platform_import_records;
DROP TABLE platform_imports;
