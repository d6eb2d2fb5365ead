//! Rules of the mail domain that need no HTTP and no database.

pub mod email;
pub mod email_status;
pub mod health;
pub mod plans;
pub mod sender;
pub mod template_check;
