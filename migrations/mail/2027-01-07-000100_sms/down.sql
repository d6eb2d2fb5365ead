DROP TABLE sms_inbound;
DROP TABLE sms_messages;
DROP TABLE sms_campaigns;
DROP TABLE contact_sms;
DROP TABLE sms_providers;
