DROP TABLE byok_credentials;
