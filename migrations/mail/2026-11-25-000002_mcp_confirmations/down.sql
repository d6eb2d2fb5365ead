DROP TABLE mcp_confirmations;
