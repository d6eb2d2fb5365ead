ALTER TABLE email_log DROP COLUMN template_data;
