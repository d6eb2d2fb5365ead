DROP TABLE agents;
DROP TABLE bridge_runs;
