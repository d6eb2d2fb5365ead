DROP TABLE feed_items;
DROP TABLE product_states;
