DROP TRIGGER decision_terms_sync ON decisions;
DROP FUNCTION decision_terms_sync();
DROP TABLE decision_terms;
DROP FUNCTION decision_term(text);
