-- The send worker claims an email before calling the provider, so a second delivery of the
-- same job (a relay duplicate, a redelivery) sends nothing while the claim holds. A claim
-- expires: the email of a worker killed after claiming is published again and retaken.
ALTER TABLE email_log ADD COLUMN claimed_at timestamptz;
CREATE INDEX email_log_claims_idx ON email_log (claimed_at)
    WHERE claimed_at IS NOT NULL AND status IN ('accepted', 'queued');
