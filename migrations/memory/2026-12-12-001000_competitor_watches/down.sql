DROP TABLE competitor_watches;
