-- Personalization: set when the email's subject, HTML or text holds template syntax. The send
-- worker then renders them for the recipient (the contact, the site, the campaign and step,
-- the event that enrolled the contact, the unsubscribe link) with this object as `data`
-- (`POST /send`'s `data`; `{}` for campaign mail). NULL: sent as written.
ALTER TABLE email_log ADD COLUMN template_data jsonb;
