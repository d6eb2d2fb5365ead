DROP TABLE sending_domains;
