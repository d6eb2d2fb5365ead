DROP TABLE action_hooks;
DROP INDEX proposals_run_action_idx;
ALTER TABLE proposals
    DROP COLUMN run_id,
    DROP COLUMN action_index,
    DROP COLUMN channel,
    DROP COLUMN rationale,
    DROP COLUMN priority,
    DROP COLUMN decision_id,
    DROP COLUMN hook_id;
DELETE FROM connector_intakes WHERE key_id IS NULL;
ALTER TABLE connector_intakes DROP CONSTRAINT connector_intakes_key_or_run;
ALTER TABLE connector_intakes ALTER COLUMN key_id SET NOT NULL;
ALTER TABLE connector_intakes DROP COLUMN run_id;
