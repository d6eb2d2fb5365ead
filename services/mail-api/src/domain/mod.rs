//! Rules of the mail domain that need no HTTP and no database.

pub mod ab_test;
pub mod abuse;
pub mod advice;
pub mod automation;
pub mod campaign;
pub mod canonical;
pub mod dnsbl;
pub mod email;
pub mod email_status;
pub mod error_code;
pub mod health;
pub mod insights;
pub mod personalize;
pub mod plans;
pub mod provider_events;
pub mod segment_rules;
pub mod segment_schema;
pub mod send_policy;
pub mod sender;
pub mod sms;
pub mod template_check;
pub mod tool_group;
pub mod translation;
