//! A person signed in on the first-party pages (the dashboard): the project of their sign-in,
//! their role on it, and the credential their session stands for when they act.
//!
//! The role is the team's: a person who joined through an invitation has the role they were
//! invited with; a sign-in an operator made (`admin mail create-sign-in`) is the project's
//! owner, an admin. A session acts as a first-party credential with the role's scopes: a
//! viewer reads, an editor also writes (drafts), an admin also manages keys and the team and
//! decides approvals. A person's session is never an agent: the approval policy does not hold
//! their actions back.

use std::sync::Arc;

use auth::{Caller, Environment, Grade, Origin, Scope, Scopes};
use http_kit::ApiError;
use rate_limit::policy::Plan;
use uuid::Uuid;

use crate::AppState;
use crate::db::{team, tenants};
use crate::ops::team::Role;

/// The signed-in person.
#[derive(Debug, Clone)]
pub struct Person {
    /// Their sign-in account's id: what records them as the one who decided.
    pub account_id: Uuid,
    pub project_id: Uuid,
    pub email: String,
    pub role: Role,
    plan: Plan,
}

impl Person {
    /// The credential the session stands for: first-party, with the role's scopes.
    pub fn caller(&self) -> Caller {
        let scope = match self.role {
            Role::Admin => Scope::Admin,
            Role::Editor => Scope::Write,
            Role::Viewer => Scope::Read,
        };
        Caller {
            key_id: self.account_id,
            owner_id: self.project_id,
            scopes: Scopes::mail(scope),
            grade: Grade::Plan(self.plan),
            origin: Origin::FirstParty,
            environment: Environment::Live,
            tool_groups: None,
            audience: Some(Arc::from("/dashboard")),
        }
    }

    /// 403 unless the person's role is at least `needed`.
    pub fn require(&self, needed: Role, what: &str) -> Result<(), ApiError> {
        if self.role.rank() >= needed.rank() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "a {} of the project cannot {what}: ask an {}",
                self.role.as_str(),
                needed.as_str()
            )))
        }
    }
}

/// The person of the sign-in `account` (`owner_id` is its project).
pub async fn person_of(state: &AppState, account: &oauth::db::Account) -> Result<Person, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let project = tenants::find_project(&mut conn, account.owner_id)
        .await?
        .ok_or_else(|| ApiError::not_found("the project of this sign-in no longer exists"))?;
    let plan: Plan = project
        .plan
        .parse()
        .map_err(|_| ApiError::internal("a project's plan is not one of the plans"))?;
    let role = match team::active_role(&mut conn, project.id, &account.email).await? {
        Some(role) => crate::ops::campaigns::parse_name(&role)?,
        None => Role::Admin,
    };
    Ok(Person {
        account_id: account.id,
        project_id: project.id,
        email: account.email.clone(),
        role,
        plan,
    })
}
