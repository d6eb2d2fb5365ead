-- Every change of a project's approval policy tells each replica's cache of policies which
-- project to forget (its id), on commit: the gates read the policy without a query of their
-- own, and a policy changed anywhere holds the next action everywhere.
CREATE TRIGGER approval_policies_changed
    AFTER INSERT OR UPDATE OR DELETE ON approval_policies
    FOR EACH ROW EXECUTE FUNCTION notify_project_row_change('approval_policy_changed');
CREATE TRIGGER approval_policies_truncated
    AFTER TRUNCATE ON approval_policies
    FOR EACH STATEMENT EXECUTE FUNCTION notify_project_rows_truncated('approval_policy_changed');
