//! What a migration reads from a platform, one page at a time, and where it stands: the
//! [`Cursor`] saved in the run row with each page's writes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The stages of a migration, in order: the platform's lists first (their names become tags),
/// then the opted-out addresses (suppressed before any contact lands), the contacts, the
/// templates and the campaigns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    #[default]
    Lists,
    Suppressions,
    Contacts,
    Templates,
    Campaigns,
    Done,
}

impl Stage {
    /// The stage after this one; a `campaigns` run skips from the lists to the templates.
    pub fn next(self, campaigns_only: bool) -> Self {
        match self {
            Self::Lists if campaigns_only => Self::Templates,
            Self::Lists => Self::Suppressions,
            Self::Suppressions => Self::Contacts,
            Self::Contacts => Self::Templates,
            Self::Templates => Self::Campaigns,
            Self::Campaigns | Self::Done => Self::Done,
        }
    }
}

/// A list (Mailchimp audience, Brevo list, Kit tag, MailerLite group): imported as a tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteList {
    pub id: String,
    pub name: String,
}

/// Where a run stands. `pass` counts the sub-passes of a stage (one per list, or per status
/// asked); `offset` or `after` is the page within it, as the platform pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub stage: Stage,
    #[serde(default)]
    pub lists: Vec<RemoteList>,
    #[serde(default)]
    pub pass: usize,
    #[serde(default)]
    pub offset: u64,
    #[serde(default)]
    pub after: Option<String>,
}

impl Cursor {
    /// The next page of the same pass, by offset.
    pub fn at_offset(&self, offset: u64) -> Self {
        Self {
            offset,
            after: None,
            ..self.clone()
        }
    }

    /// The next page of the same pass, by the platform's cursor.
    pub fn after(&self, after: String) -> Self {
        Self {
            after: Some(after),
            offset: 0,
            ..self.clone()
        }
    }

    /// The first page of the next pass.
    pub fn next_pass(&self) -> Self {
        Self {
            pass: self.pass + 1,
            offset: 0,
            after: None,
            ..self.clone()
        }
    }

    /// The first page of the next stage.
    pub fn next_stage(&self, campaigns_only: bool) -> Self {
        Self {
            stage: self.stage.next(campaigns_only),
            lists: self.lists.clone(),
            pass: 0,
            offset: 0,
            after: None,
        }
    }
}

/// An address the platform says opted out (`unsubscribed`) or bounced (`bounced`).
#[derive(Debug, Clone)]
pub struct RemoteSuppression {
    pub email: String,
    pub reason: &'static str,
}

/// A contact with its consent state, merge fields and tags.
#[derive(Debug, Clone)]
pub struct RemoteContact {
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub properties: Map<String, Value>,
    pub tags: Vec<String>,
    pub subscribed: bool,
}

#[derive(Debug, Clone)]
pub struct RemoteTemplate {
    pub remote_id: String,
    pub name: String,
    pub subject: Option<String>,
    pub html: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RemoteCampaign {
    pub remote_id: String,
    pub name: String,
    pub subject: String,
    pub html: Option<String>,
}

/// A record of the platform that cannot be imported (its address is not a valid one): its id
/// there and why, kept in the run's `errors`.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub remote_id: String,
    pub why: String,
}

/// A record as read: importable, or rejected.
pub type Read<T> = Result<T, Rejected>;

/// One page of one stage.
#[derive(Debug)]
pub enum Records {
    Lists(Vec<RemoteList>),
    Suppressions(Vec<Read<RemoteSuppression>>),
    Contacts(Vec<Read<RemoteContact>>),
    Templates(Vec<RemoteTemplate>),
    Campaigns(Vec<RemoteCampaign>),
}

/// A page and the cursor after it.
#[derive(Debug)]
pub struct Fetched {
    pub records: Records,
    pub next: Cursor,
}

/// A JSON string member, trimmed, `None` when absent or blank.
pub fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A JSON id (a string or a number) as text.
pub fn id(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
