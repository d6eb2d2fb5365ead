//! Stored draft replies for mail threads: reading and writing them.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::{IntoParams, ToSchema};

use crate::db::inbox_drafts::{self, NewThread, StoredThread};
use crate::db::owner::Owner;
use crate::domain::inbox::{self, MatchedOn, Stored, Verdict};

/// One drafted reply.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftAlternative {
    /// At most 120 characters.
    #[schema(max_length = 120)]
    pub tone: String,
    /// At most 50,000 characters.
    #[schema(max_length = 50000)]
    pub text: String,
}

/// Which of the query's ids the answer is about.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DraftMatch {
    ThreadPermId,
    LegacyThreadId,
}

impl From<MatchedOn> for DraftMatch {
    fn from(m: MatchedOn) -> Self {
        match m {
            MatchedOn::ThreadPermId => Self::ThreadPermId,
            MatchedOn::LegacyThreadId => Self::LegacyThreadId,
        }
    }
}

/// A stored set, as answers show it.
struct DraftSet {
    drafts: Vec<DraftAlternative>,
    why: String,
    latest_message_at: DateTime<Utc>,
    generated_at: DateTime<Utc>,
}

impl DraftSet {
    fn of(stored: StoredThread) -> Result<Self, ApiError> {
        Ok(Self {
            drafts: serde_json::from_value(stored.drafts)?,
            why: stored.why,
            latest_message_at: stored.latest_message_at,
            generated_at: stored.generated_at,
        })
    }
}

/// The lookup's answer, one of three shapes told apart by `state`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DraftLookup {
    /// A stored set whose latest message is not older than the query's `latest_message_at`.
    DraftAvailable {
        #[schema(inline)]
        matched_on: DraftMatch,
        /// 1..=5 alternatives.
        drafts: Vec<DraftAlternative>,
        why: String,
        /// The time of the thread's latest message when the drafts were generated.
        latest_message_at: DateTime<Utc>,
        generated_at: DateTime<Utc>,
    },
    /// No stored set for the thread, or one older than the query's latest message.
    NoDraft {
        #[schema(inline)]
        matched_on: DraftMatch,
    },
    /// The query gave no `latest_message_at` (the matched set is shown, for the caller to
    /// judge), or its two thread ids match different stored sets (`matched_on` null, nothing
    /// shown).
    Indeterminate {
        #[schema(inline, required = true)]
        matched_on: Option<DraftMatch>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        drafts: Option<Vec<DraftAlternative>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        why: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        latest_message_at: Option<DateTime<Utc>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        generated_at: Option<DateTime<Utc>>,
    },
}

impl DraftLookup {
    fn available(matched_on: MatchedOn, set: DraftSet) -> Self {
        Self::DraftAvailable {
            matched_on: matched_on.into(),
            drafts: set.drafts,
            why: set.why,
            latest_message_at: set.latest_message_at,
            generated_at: set.generated_at,
        }
    }

    fn indeterminate(matched_on: Option<MatchedOn>, set: Option<DraftSet>) -> Self {
        let (drafts, why, latest_message_at, generated_at) = match set {
            Some(s) => (
                Some(s.drafts),
                Some(s.why),
                Some(s.latest_message_at),
                Some(s.generated_at),
            ),
            None => (None, None, None, None),
        };
        Self::Indeterminate {
            matched_on: matched_on.map(DraftMatch::from),
            drafts,
            why,
            latest_message_at,
            generated_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DraftQuery {
    /// The mail account the drafts were stored for (compared case-insensitively).
    #[param(format = Email, max_length = 320)]
    pub account_email: String,
    /// The thread's permanent id, looked up first: Gmail's `thread-f:<decimal>` names the
    /// thread whose hexadecimal id is that number; a hexadecimal id names itself. At least
    /// one of `thread_perm_id` and `legacy_thread_id` is required (an empty one is absent).
    #[param(max_length = 256)]
    pub thread_perm_id: Option<String>,
    /// The thread's hexadecimal id, looked up when the permanent id finds nothing.
    #[param(max_length = 64)]
    pub legacy_thread_id: Option<String>,
    /// The thread's latest message id: accepted, never used (freshness is by message time).
    #[param(max_length = 256)]
    pub message_id: Option<String>,
    /// The time of the thread's latest message as the caller sees it: a stored set at least
    /// this recent is `draft_available`, an older one `no_draft`; absent, a match is
    /// `indeterminate`.
    pub latest_message_at: Option<DateTime<Utc>>,
}

impl Validate for DraftQuery {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.account_email = self.account_email.trim().to_lowercase();
        http_kit::request::trim_optional(&mut self.thread_perm_id);
        http_kit::request::trim_optional(&mut self.legacy_thread_id);
        if self.thread_perm_id.is_none() && self.legacy_thread_id.is_none() {
            return Err(ApiError::invalid_field(
                "thread_perm_id",
                "thread_perm_id or legacy_thread_id is required",
            ));
        }
        Ok(())
    }
}

/// The mail account the drafts belong to.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftAccount {
    /// Stored lowercase.
    #[schema(format = Email, max_length = 320)]
    pub email: String,
}

/// One thread's draft set.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadDraft {
    /// The thread's hexadecimal id (1..=64 digits, any case).
    #[schema(min_length = 1, max_length = 64, pattern = r"^[0-9a-fA-F]+$")]
    pub thread_id: String,
    /// The hexadecimal id of the thread's latest message when the drafts were generated.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[0-9a-fA-F]+$")]
    pub latest_message_id: String,
    /// The time of that message: what lookups compare freshness with.
    pub latest_message_at: DateTime<Utc>,
    pub generated_at: DateTime<Utc>,
    /// At most 2,000 characters.
    #[schema(max_length = 2000)]
    pub why: String,
    /// 1..=5 alternatives.
    #[schema(min_items = 1, max_items = 5)]
    pub drafts: Vec<DraftAlternative>,
}

/// The body of `PUT /inbox/drafts`: no extra keys anywhere.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceDrafts {
    pub account: DraftAccount,
    /// Default true: the account's stored threads absent from `drafts` are deleted.
    pub replace: Option<bool>,
    /// At most 50 threads, each thread id once. A thread whose stored set is newer (by
    /// message time, then generation time) keeps it and is not counted in `upserted`.
    #[schema(max_items = 50)]
    pub drafts: Vec<ThreadDraft>,
}

impl Validate for ReplaceDrafts {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.account.email = self.account.email.trim().to_lowercase();
        let mut seen: Vec<String> = Vec::with_capacity(self.drafts.len());
        for (i, thread) in self.drafts.iter().enumerate() {
            let id = inbox::normalize_hex(&thread.thread_id).unwrap_or_default();
            if let Some(first) = seen.iter().position(|s| *s == id) {
                return Err(ApiError::invalid_field(
                    &format!("drafts[{i}].thread_id"),
                    &format!("repeats drafts[{first}].thread_id"),
                ));
            }
            seen.push(id);
        }
        Ok(())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DraftsReplaced {
    /// Threads written (created or replaced).
    pub upserted: u64,
    /// Threads deleted (`replace: true`).
    pub deleted: u64,
}

/// Look up the newest stored draft set of one mail thread (no inference is run).
pub async fn get(
    pool: &Pool,
    caller: &Caller,
    query: &DraftQuery,
) -> Result<DraftLookup, ApiError> {
    let perm = query
        .thread_perm_id
        .as_deref()
        .and_then(inbox::thread_of_perm_id);
    let legacy = query
        .legacy_thread_id
        .as_deref()
        .and_then(inbox::normalize_hex);
    let wanted: Vec<&str> = perm
        .iter()
        .chain(legacy.iter())
        .map(String::as_str)
        .collect();
    let mut conn = store::conn(pool).await?;
    let mut found =
        inbox_drafts::find(&mut conn, Owner::of(caller), &query.account_email, &wanted).await?;
    drop(conn);
    let by = |id: &Option<String>| {
        found
            .iter()
            .find(|t| Some(&t.thread_id) == id.as_ref())
            .map(|t| Stored {
                id: t.id,
                latest_message_at: t.latest_message_at,
            })
    };
    let (by_perm, by_legacy) = (by(&perm), by(&legacy));
    let verdict = inbox::decide(
        query.thread_perm_id.is_some(),
        by_perm,
        by_legacy,
        query.latest_message_at,
    );
    let mut take = |matched: MatchedOn| {
        let id = match matched {
            MatchedOn::ThreadPermId => by_perm,
            MatchedOn::LegacyThreadId => by_legacy,
        }
        .map(|s| s.id);
        found
            .iter()
            .position(|t| Some(t.id) == id)
            .map(|i| DraftSet::of(found.swap_remove(i)))
            .transpose()
    };
    Ok(match verdict {
        Verdict::DraftAvailable(matched) => DraftLookup::available(
            matched,
            take(matched)?.ok_or_else(|| ApiError::internal("the matched set vanished"))?,
        ),
        Verdict::NoDraft(matched) => DraftLookup::NoDraft {
            matched_on: matched.into(),
        },
        Verdict::Indeterminate { matched_on, show } => {
            let set = match matched_on {
                Some(matched) if show => take(matched)?,
                _ => None,
            };
            DraftLookup::indeterminate(matched_on, set)
        }
    })
}

/// Store draft sets of an account's threads; by default (`replace: true`) the account's other
pub async fn put(
    pool: &Pool,
    caller: &Caller,
    body: ReplaceDrafts,
) -> Result<DraftsReplaced, ApiError> {
    let threads = body
        .drafts
        .into_iter()
        .map(|t| {
            Ok(NewThread {
                thread_id: inbox::normalize_hex(&t.thread_id).unwrap_or_default(),
                latest_message_id: inbox::normalize_hex(&t.latest_message_id).unwrap_or_default(),
                latest_message_at: t.latest_message_at,
                generated_at: t.generated_at,
                why: t.why,
                drafts: serde_json::to_value(t.drafts)?,
            })
        })
        .collect::<Result<Vec<NewThread>, serde_json::Error>>()?;
    let mut conn = store::conn(pool).await?;
    let (upserted, deleted) = inbox_drafts::store(
        &mut conn,
        Owner::of(caller),
        &body.account.email,
        &threads,
        body.replace.unwrap_or(true),
    )
    .await?;
    Ok(DraftsReplaced {
        upserted: upserted as u64,
        deleted: deleted as u64,
    })
}
