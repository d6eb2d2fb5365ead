-- A test's confidence is any level in 0.8..=0.999 (the normal quantile is computed), no longer
-- one of 0.9, 0.95, 0.99.
ALTER TABLE ab_tests DROP CONSTRAINT ab_tests_confidence_check;
ALTER TABLE ab_tests ADD CONSTRAINT ab_tests_confidence_check
    CHECK (confidence >= 0.8 AND confidence <= 0.999);
