DROP TABLE sites;
DROP TRIGGER projects_plan_changed ON projects;
DROP FUNCTION notify_all_credentials();
DROP TRIGGER api_keys_changed ON api_keys;
DROP FUNCTION notify_credential_change();
DROP TABLE api_keys;
DROP TABLE projects;
DROP TABLE accounts;
