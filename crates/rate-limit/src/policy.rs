//! Quota tables of the public APIs.
//!
//! * memory-api: per credential, a minute and a (UTC) day fixed window,
//!   checked together.
//! * mail-api: per project and route class, one exact sliding window of five
//!   minutes.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Quota, Window};

pub const MINUTE: Duration = Duration::from_secs(60);
pub const DAY: Duration = Duration::from_secs(86_400);
/// Window of every mail-api quota.
pub const MAIL_WINDOW: Duration = Duration::from_secs(5 * 60);

/// An unknown tier, plan or route class name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what}: {value:?}")]
pub struct ParseError {
    pub what: &'static str,
    pub value: String,
}

macro_rules! named_enum {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl FromStr for $ty {
            type Err = ParseError;

            fn from_str(s: &str) -> Result<Self, ParseError> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(ParseError { what: $what, value: s.to_owned() }),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// memory-api credential tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Free,
    Pro,
    Team,
}

named_enum!(Tier, "tier", { Free => "free", Pro => "pro", Team => "team" });

/// memory-api quotas of a tier: `[per minute, per UTC day]`.
pub const fn memory_quotas(tier: Tier) -> [Quota; 2] {
    let (per_minute, per_day) = match tier {
        Tier::Free => (60, Some(2_000)),
        Tier::Pro => (600, Some(100_000)),
        Tier::Team => (3_000, None),
    };
    [
        Quota::fixed(per_minute, MINUTE),
        Quota {
            limit: per_day,
            window: Window::Fixed(DAY),
        },
    ]
}

/// Rate-limit key of a memory-api credential.
pub fn memory_key(credential_id: &str) -> String {
    format!("memory:{credential_id}")
}

/// mail-api project plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    Free,
    Byod,
    Managed,
    AgencyPlus,
    Enterprise,
}

named_enum!(Plan, "plan", {
    Free => "free",
    Byod => "byod",
    Managed => "managed",
    AgencyPlus => "agency_plus",
    Enterprise => "enterprise",
});

/// mail-api route class; each has its own budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteClass {
    Send,
    Read,
    Write,
}

named_enum!(RouteClass, "route class", { Send => "send", Read => "read", Write => "write" });

/// mail-api quota of a plan and route class: requests per sliding five
/// minutes.
pub const fn mail_quota(plan: Plan, class: RouteClass) -> Quota {
    let (send, read, write) = match plan {
        Plan::Free => (10, 60, 30),
        Plan::Byod => (100, 300, 150),
        Plan::Managed => (500, 600, 200),
        Plan::AgencyPlus | Plan::Enterprise => (1_000, 1_200, 400),
    };
    let limit = match class {
        RouteClass::Send => send,
        RouteClass::Read => read,
        RouteClass::Write => write,
    };
    Quota::sliding(limit, MAIL_WINDOW)
}

/// Rate-limit key of a mail-api project and route class.
pub fn mail_key(project_id: &str, class: RouteClass) -> String {
    format!("mail:{project_id}:{class}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_table() {
        let expect = [
            (Tier::Free, 60, Some(2_000)),
            (Tier::Pro, 600, Some(100_000)),
            (Tier::Team, 3_000, None),
        ];
        for (tier, minute, day) in expect {
            let [m, d] = memory_quotas(tier);
            assert_eq!(m, Quota::fixed(minute, Duration::from_secs(60)), "{tier}");
            assert_eq!(d.window, Window::Fixed(Duration::from_secs(86_400)));
            assert_eq!(d.limit, day, "{tier}");
        }
    }

    #[test]
    fn mail_table() {
        let expect = [
            (Plan::Free, [10, 60, 30]),
            (Plan::Byod, [100, 300, 150]),
            (Plan::Managed, [500, 600, 200]),
            (Plan::AgencyPlus, [1_000, 1_200, 400]),
            (Plan::Enterprise, [1_000, 1_200, 400]),
        ];
        for (plan, limits) in expect {
            for (class, limit) in [RouteClass::Send, RouteClass::Read, RouteClass::Write]
                .into_iter()
                .zip(limits)
            {
                assert_eq!(
                    mail_quota(plan, class),
                    Quota::sliding(limit, Duration::from_secs(300)),
                    "{plan} {class}"
                );
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for t in Tier::ALL {
            assert_eq!(t.as_str().parse::<Tier>().unwrap(), *t);
        }
        for p in Plan::ALL {
            assert_eq!(p.as_str().parse::<Plan>().unwrap(), *p);
        }
        for c in RouteClass::ALL {
            assert_eq!(c.as_str().parse::<RouteClass>().unwrap(), *c);
        }
        let names: Vec<_> = Tier::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(names, ["free", "pro", "team"]);
        assert_eq!(Plan::AgencyPlus.as_str(), "agency_plus");
        let err = "gold".parse::<Plan>().unwrap_err();
        assert_eq!(err.to_string(), "unknown plan: \"gold\"");
        assert!("Free".parse::<Tier>().is_err(), "names are case-sensitive");
    }

    #[test]
    fn serde_names_match_as_str() {
        use serde::de::IntoDeserializer;
        use serde::de::value::{Error, StrDeserializer};
        for p in Plan::ALL {
            let de: StrDeserializer<'_, Error> = p.as_str().into_deserializer();
            assert_eq!(Plan::deserialize(de).unwrap(), *p);
        }
        for t in Tier::ALL {
            let de: StrDeserializer<'_, Error> = t.as_str().into_deserializer();
            assert_eq!(Tier::deserialize(de).unwrap(), *t);
        }
        for c in RouteClass::ALL {
            let de: StrDeserializer<'_, Error> = c.as_str().into_deserializer();
            assert_eq!(RouteClass::deserialize(de).unwrap(), *c);
        }
    }

    #[test]
    fn keys() {
        assert_eq!(memory_key("cred_1"), "memory:cred_1");
        assert_eq!(mail_key("p1", RouteClass::Send), "mail:p1:send");
    }
}
