DROP TABLE render_jobs;
