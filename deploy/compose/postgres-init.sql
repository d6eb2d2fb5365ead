-- Runs once, when the postgres volume is first initialised. POSTGRES_DB creates "memory";
-- each service owns its own database, so mail gets a second one.
CREATE DATABASE mail;
