-- The sign-in account that started a connection on the dashboard (null: started with the API's
-- connect route). Its callback must come back to a browser signed in as that account, and then
-- returns to the dashboard's social page.
ALTER TABLE social_connect_states ADD COLUMN started_by uuid;
