//! The owner every memory query is scoped to.

use uuid::Uuid;

/// Whose rows a query sees: one user, one environment.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub user_id: Uuid,
    pub environment: &'a str,
}

impl Owner<'static> {
    /// The owner and environment a credential acts for.
    pub fn of(caller: &auth::Caller) -> Self {
        Self {
            user_id: caller.owner_id,
            environment: caller.environment.as_str(),
        }
    }
}
