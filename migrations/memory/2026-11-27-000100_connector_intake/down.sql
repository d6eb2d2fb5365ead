DROP TABLE proposals;
DROP TABLE connector_intakes;
