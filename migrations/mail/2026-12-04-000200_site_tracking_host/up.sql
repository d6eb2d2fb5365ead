-- A site's own tracking host (a name under its verified own domain): its open, click and
-- unsubscribe links are served under it instead of the shared tracking address, so that one
-- project's links do not ride on the reputation of the address every project shares.
ALTER TABLE sites ADD COLUMN tracking_host text;
