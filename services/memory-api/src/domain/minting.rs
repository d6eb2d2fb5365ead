//! What a credential may mint (an agent's token): never more than itself. Its scopes are the
//! creator's, narrowed to a connector's (`read`, and `propose`, which `write` implies); it
//! expires after [`LIFETIME_DAYS`], or with its creator if that is sooner; and it is revoked
//! with its creator (the `api_keys` triggers).

use auth::{Scope, Scopes};
use chrono::{DateTime, Duration, Utc};

/// How long a minted credential lives when its creator does not expire sooner.
pub const LIFETIME_DAYS: i64 = 90;

/// The scopes of a token minted by a credential holding `creator`: `read` (required: an
/// agent's token reads its context, so without it nothing useful is left: `None`), and
/// `propose` when the creator may propose (`propose`, or `write`, which implies it).
pub fn scopes(creator: Scopes) -> Option<Vec<Scope>> {
    if !creator.contains(Scope::Read) {
        return None;
    }
    let mut granted = vec![Scope::Read];
    if creator.contains(Scope::Propose) || creator.contains(Scope::Write) {
        granted.push(Scope::Propose);
    }
    Some(granted)
}

/// When a token minted `now` by a creator expiring at `creator` expires, in whole seconds (as
/// answered), never after the creator.
pub fn expires_at(now: DateTime<Utc>, creator: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let default = now + Duration::days(LIFETIME_DAYS);
    let at = creator.map_or(default, |c| c.min(default));
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(scopes: &[Scope]) -> Scopes {
        scopes.iter().copied().collect()
    }

    #[test]
    fn never_broader_than_the_creator() {
        assert_eq!(scopes(set(&[Scope::Write])), None);
        assert_eq!(scopes(set(&[Scope::Write, Scope::Propose])), None);
        assert_eq!(scopes(set(&[Scope::Read])), Some(vec![Scope::Read]));
        assert_eq!(
            scopes(set(&[Scope::Read, Scope::Write])),
            Some(vec![Scope::Read, Scope::Propose])
        );
        assert_eq!(
            scopes(set(&[Scope::Read, Scope::Propose])),
            Some(vec![Scope::Read, Scope::Propose])
        );
    }

    #[test]
    fn expires_by_default_and_never_after_the_creator() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        assert_eq!(expires_at(now, None), now + Duration::days(LIFETIME_DAYS));
        let soon = now + Duration::hours(1);
        assert_eq!(expires_at(now, Some(soon)), soon);
        let late = now + Duration::days(400);
        assert_eq!(
            expires_at(now, Some(late)),
            now + Duration::days(LIFETIME_DAYS)
        );
        let fraction = soon + Duration::milliseconds(999);
        assert_eq!(expires_at(now, Some(fraction)), soon);
    }
}
