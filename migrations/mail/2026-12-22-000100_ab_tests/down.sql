ALTER TABLE email_log DROP COLUMN ab_variant, DROP COLUMN from_name;
DROP TABLE ab_assignments;
DROP TABLE ab_tests;
