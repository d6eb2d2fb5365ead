DROP TRIGGER agents_revoke_unbound_token ON agents;
DROP FUNCTION revoke_unbound_agent_token();
