DROP TABLE decisions;
