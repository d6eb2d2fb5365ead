DROP TABLE model_runs;
