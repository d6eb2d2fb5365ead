DROP TABLE segments;
