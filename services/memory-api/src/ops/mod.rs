//! The application layer: one module per capability, holding its use cases, their
//! transactions and rules. The HTTP routes ([`crate::http`]) are a thin door to these
//! functions; they call `db` and `domain`, never a door.
