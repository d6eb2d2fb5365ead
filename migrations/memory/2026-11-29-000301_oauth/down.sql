DROP TABLE oauth_tokens;
DROP TABLE oauth_codes;
DROP TABLE oauth_grants;
DROP TABLE oauth_sessions;
DROP TABLE oauth_clients;
DROP TABLE oauth_accounts;
