-- The replay cache of signed project signals: every accepted signature, per product, until its
-- timestamp leaves the tolerance (and a margin for replicas' clocks). A signature seen again
-- answers the first signal's id as a duplicate. In PostgreSQL, like every other duplicate
-- check of the service, so it holds across replicas without Redis.
CREATE TABLE signal_signatures (
    product_id  uuid NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    signature   bytea NOT NULL CHECK (octet_length(signature) = 32),
    signal_id   uuid NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (product_id, signature)
);
CREATE INDEX signal_signatures_expiry_idx ON signal_signatures (expires_at);
