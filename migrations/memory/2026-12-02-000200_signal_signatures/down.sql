DROP TABLE signal_signatures;
