//! Rules of the mail domain that need no HTTP and no database.

pub mod email;
pub mod health;
pub mod plans;
pub mod sender;
