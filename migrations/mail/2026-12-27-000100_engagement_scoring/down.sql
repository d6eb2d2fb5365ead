DROP INDEX conversions_project_contact_idx;
DROP INDEX email_log_project_contact_idx;
DROP TABLE contact_scores;
DROP TABLE scoring_rules;
