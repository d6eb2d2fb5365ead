DROP TABLE bounce_rate_pending;
