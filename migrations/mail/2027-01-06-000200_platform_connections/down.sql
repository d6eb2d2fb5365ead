DROP TABLE platform_connections;
