//! The authenticated caller every handler works for.

use std::sync::Arc;

use http_kit::ApiError;
use rate_limit::policy::{Plan, Tier};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Read,
    Write,
    /// Submit approve-first proposals (memory connectors).
    Propose,
    /// Tenant-wide operations such as the export (mail).
    Admin,
}

impl Scope {
    fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Write => 2,
            Self::Propose => 4,
            Self::Admin => 8,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Propose => "propose",
            Self::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            "propose" => Some(Self::Propose),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn with(self, scope: Scope) -> Self {
        Self(self.0 | scope.bit())
    }

    /// Mail's single key scope, where admin ⊃ write ⊃ read.
    pub fn mail(scope: Scope) -> Self {
        match scope {
            Scope::Admin => Self::default()
                .with(Scope::Read)
                .with(Scope::Write)
                .with(Scope::Admin),
            Scope::Write => Self::default().with(Scope::Read).with(Scope::Write),
            other => Self::default().with(other),
        }
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        iter.into_iter().fold(Self::default(), Self::with)
    }
}

/// What the owner pays for: a memory tier or a mail plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    Tier(Tier),
    Plan(Plan),
}

/// First-party credentials (API keys, the dashboard) may approve; connector tokens may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    FirstParty,
    Connector,
}

/// Memory data is split into a live and a test environment by the credential used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Live,
    Test,
}

impl Environment {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Test => "test",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Caller {
    pub key_id: Uuid,
    /// The tenant: a memory user or a mail project.
    pub owner_id: Uuid,
    pub scopes: Scopes,
    pub grade: Grade,
    pub origin: Origin,
    pub environment: Environment,
    /// Mail keys limited to some MCP tool groups; `None` means all.
    pub tool_groups: Option<Arc<[String]>>,
    /// The path under which an OAuth access token may be used (`/mcp`, `/api/v1`): the RFC 8707
    /// resource its grant was issued for. `None`: any path.
    pub audience: Option<Arc<str>>,
}

impl Caller {
    /// Whether the credential may be used on `path`: within its audience, if it has one.
    pub fn may_use_on(&self, path: &str) -> bool {
        self.audience.as_deref().is_none_or(|audience| {
            let audience = audience.trim_end_matches('/');
            path.strip_prefix(audience)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    pub fn require_scope(&self, scope: Scope) -> Result<(), ApiError> {
        if self.scopes.contains(scope) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this credential lacks the {} scope",
                scope.as_str()
            )))
        }
    }

    /// Memory routes that need `pro` or above answer 403 `TIER_REQUIRED` otherwise.
    pub fn require_tier(&self, minimum: Tier) -> Result<(), ApiError> {
        match self.grade {
            Grade::Tier(tier) if tier_rank(tier) >= tier_rank(minimum) => Ok(()),
            _ => Err(ApiError::tier_required(format!(
                "this route needs the {} tier or above",
                minimum.as_str()
            ))),
        }
    }

    /// Approvals are for first-party surfaces only.
    pub fn require_first_party(&self) -> Result<(), ApiError> {
        match self.origin {
            Origin::FirstParty => Ok(()),
            Origin::Connector => Err(ApiError::forbidden(
                "connector tokens cannot approve or reject proposals: decide them with a \
                 first-party credential (an API key or the dashboard)",
            )),
        }
    }
}

fn tier_rank(tier: Tier) -> u8 {
    match tier {
        Tier::Free => 0,
        Tier::Pro => 1,
        Tier::Team => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_scopes_nest() {
        let admin = Scopes::mail(Scope::Admin);
        assert!(admin.contains(Scope::Read) && admin.contains(Scope::Write));
        let write = Scopes::mail(Scope::Write);
        assert!(write.contains(Scope::Read) && !write.contains(Scope::Admin));
        let read = Scopes::mail(Scope::Read);
        assert!(!read.contains(Scope::Write));
    }

    #[test]
    fn scopes_collect() {
        let s: Scopes = [Scope::Read, Scope::Propose].into_iter().collect();
        assert!(s.contains(Scope::Propose) && !s.contains(Scope::Write));
    }
}
