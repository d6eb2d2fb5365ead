DROP TABLE cron_run_counts;
DROP TABLE cron_runs;
