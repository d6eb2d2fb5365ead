-- The send worker's claim (`claimed_at = now()`) becomes a HOT update: no index holds
-- `claimed_at` any more, and email_log pages keep room for the new row version, so a claim
-- writes one heap tuple instead of an entry in every index (it was 0.7 ms and 149 buffers a
-- claim under the send bench, none of them HOT).
--
-- Expired claims are found among the unsent emails instead: few in steady state (those in
-- flight), and a claim never changes which of them an email is.
CREATE INDEX email_log_unsent_idx ON email_log (id) WHERE status IN ('accepted', 'queued');
DROP INDEX email_log_claims_idx;
ALTER TABLE email_log SET (fillfactor = 80);
