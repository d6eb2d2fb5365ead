DROP TABLE automation_webhook_calls;
DROP TABLE automation_step_runs;
DROP TABLE automation_enrollments;
DROP TABLE automations;
