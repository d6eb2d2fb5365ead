ALTER TABLE ab_tests DROP CONSTRAINT ab_tests_confidence_check;
UPDATE ab_tests SET confidence = 0.95 WHERE confidence NOT IN (0.9, 0.95, 0.99);
ALTER TABLE ab_tests ADD CONSTRAINT ab_tests_confidence_check
    CHECK (confidence IN (0.9, 0.95, 0.99));
