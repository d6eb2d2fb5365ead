DROP TABLE approvals;
DROP TABLE approval_policies;
ALTER TABLE api_keys DROP COLUMN agent, DROP COLUMN approve;
