//! Connector intake: the ledger of every intake call, and the proposals waiting for a
//! first-party decision. Approving applies the proposal in the same transaction as the
//! decision: its content becomes free-form memory and the feed records it.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use uuid::Uuid;

use super::action_proposals;
use super::feed::{self, NewFeedItem};
use super::free_form::{self, NewEntry};
use super::leads::{self, NewLead};
use super::owner::Owner;
use super::schema::{connector_intakes as ci, proposals as p};
use super::view::View;
use crate::domain::intake::{self, Outcome};

/// An intake call to record.
pub struct NewIntake<'a> {
    /// The credential that sent it.
    pub key_id: Uuid,
    pub ai_vendor: &'a str,
    pub workspace_id: Option<Uuid>,
    pub requested_capability: Option<&'a str>,
    pub raw_content: &'a str,
    pub idempotency_key: Option<&'a str>,
}

/// What an intake call answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub ledger_id: Uuid,
    pub outcome: String,
    pub proposal_id: Option<Uuid>,
    pub lead_id: Option<Uuid>,
    /// The `Idempotency-Key` was used before: this is the first call's answer.
    pub replayed: bool,
}

/// Writes the ledger row and, for a proposal, the pending proposal, in one transaction. A
/// repeated `idempotency_key` writes nothing and answers the first call's row (exact under
/// concurrent retries: the unique index makes the second insert wait for the first).
pub async fn record(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: NewIntake<'_>,
) -> QueryResult<Recorded> {
    let outcome = Outcome::of(new.requested_capability);
    conn.transaction(async |conn| {
        let inserted: Option<Uuid> = diesel::insert_into(ci::table)
            .values((
                ci::id.eq(Uuid::now_v7()),
                ci::user_id.eq(owner.user_id),
                ci::environment.eq(owner.environment),
                ci::key_id.eq(new.key_id),
                ci::ai_vendor.eq(new.ai_vendor),
                ci::workspace_id.eq(new.workspace_id),
                ci::requested_capability.eq(new.requested_capability),
                ci::raw_content.eq(new.raw_content),
                ci::outcome.eq(outcome.as_str()),
                ci::idempotency_key.eq(new.idempotency_key),
            ))
            .on_conflict((ci::user_id, ci::environment, ci::idempotency_key))
            .do_nothing()
            .returning(ci::id)
            .get_result(conn)
            .await
            .optional()?;
        let Some(ledger_id) = inserted else {
            return first_answer(conn, owner, new.idempotency_key.unwrap_or_default()).await;
        };
        let lead_id = match outcome {
            Outcome::Proposed => None,
            Outcome::LeadQueued => Some(
                leads::queue(
                    conn,
                    owner,
                    NewLead {
                        ledger_id,
                        key_id: new.key_id,
                        ai_vendor: new.ai_vendor,
                        workspace_id: new.workspace_id,
                        requested_capability: new.requested_capability,
                        raw_content: new.raw_content,
                    },
                )
                .await?,
            ),
        };
        let proposal_id = match outcome {
            Outcome::LeadQueued => None,
            Outcome::Proposed => Some(
                diesel::insert_into(p::table)
                    .values((
                        p::id.eq(Uuid::now_v7()),
                        p::user_id.eq(owner.user_id),
                        p::environment.eq(owner.environment),
                        p::intake_id.eq(ledger_id),
                    ))
                    .returning(p::id)
                    .get_result(conn)
                    .await?,
            ),
        };
        Ok(Recorded {
            ledger_id,
            outcome: outcome.as_str().to_owned(),
            proposal_id,
            lead_id,
            replayed: false,
        })
    })
    .await
}

/// The answer of the intake that first used `key`.
async fn first_answer(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    key: &str,
) -> QueryResult<Recorded> {
    let (ledger_id, outcome, proposal_id) = ci::table
        .left_join(p::table)
        .filter(ci::user_id.eq(owner.user_id))
        .filter(ci::environment.eq(owner.environment))
        .filter(ci::idempotency_key.eq(key))
        .select((ci::id, ci::outcome, p::id.nullable()))
        .first::<(Uuid, String, Option<Uuid>)>(conn)
        .await?;
    let lead_id = leads::of_intake(conn, owner, ledger_id).await?;
    Ok(Recorded {
        ledger_id,
        outcome,
        proposal_id,
        lead_id,
        replayed: true,
    })
}

/// A proposal with the intake it came from.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(check_for_backend(diesel::pg::Pg))]
pub struct Proposal {
    #[diesel(select_expression = p::id)]
    pub id: Uuid,
    #[diesel(select_expression = p::status)]
    pub status: String,
    #[diesel(select_expression = p::decided_at)]
    pub decided_at: Option<DateTime<Utc>>,
    #[diesel(select_expression = p::memory_entry_ids)]
    pub memory_entry_ids: Vec<Uuid>,
    #[diesel(select_expression = p::created_at)]
    pub created_at: DateTime<Utc>,
    #[diesel(select_expression = ci::id)]
    pub ledger_id: Uuid,
    #[diesel(select_expression = ci::ai_vendor)]
    pub ai_vendor: String,
    #[diesel(select_expression = ci::workspace_id)]
    pub workspace_id: Option<Uuid>,
    #[diesel(select_expression = ci::requested_capability)]
    pub requested_capability: Option<String>,
    #[diesel(select_expression = ci::raw_content)]
    pub raw_content: String,
    /// The autonomous marketing run whose plan proposed it (null: a connector's command).
    #[diesel(select_expression = p::run_id)]
    pub run_id: Option<Uuid>,
    #[diesel(select_expression = p::channel)]
    pub channel: Option<String>,
    #[diesel(select_expression = p::rationale)]
    pub rationale: Option<String>,
    #[diesel(select_expression = p::priority)]
    pub priority: Option<i32>,
    #[diesel(select_expression = p::decision_id)]
    pub decision_id: Option<Uuid>,
    #[diesel(select_expression = p::hook_id)]
    pub hook_id: Option<Uuid>,
}

/// Up to `limit` proposals after `after` (id order), of one `status` when given.
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    status: Option<&str>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Proposal>> {
    let mut query = p::table
        .inner_join(ci::table)
        .filter(p::user_id.eq(owner.user_id))
        .filter(p::environment.eq(owner.environment))
        .order(p::id)
        .limit(limit)
        .select(Proposal::as_select())
        .into_boxed();
    if let Some(status) = status {
        query = query.filter(p::status.eq(status));
    }
    if let Some(after) = after {
        query = query.filter(p::id.gt(after));
    }
    query.load(conn).await
}

/// An owned proposal.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Proposal>> {
    p::table
        .inner_join(ci::table)
        .filter(p::id.eq(id))
        .filter(p::user_id.eq(owner.user_id))
        .filter(p::environment.eq(owner.environment))
        .select(Proposal::as_select())
        .first(conn)
        .await
        .optional()
}

/// A first-party decision on a pending proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Reject,
}

impl Verdict {
    fn status(self) -> &'static str {
        match self {
            Self::Approve => "approved",
            Self::Reject => "rejected",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no such proposal")]
    NotFound,
    /// The proposal was decided before (its status).
    #[error("this proposal was already {0}")]
    Decided(String),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Decides a pending proposal once: the conditional UPDATE from `pending` makes a second
/// decision, concurrent or later, [`DecideError::Decided`]. Approving applies the proposal
/// in the same transaction: a connector's command becomes free-form memory; a marketing
/// run's action becomes a decision, and its hook's delivery when `hook` is on.
pub async fn decide(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    key_id: Uuid,
    verdict: Verdict,
    hook: bool,
) -> Result<Proposal, DecideError> {
    conn.transaction(async |conn| {
        let decided: Option<Uuid> = diesel::update(
            p::table
                .filter(p::id.eq(id))
                .filter(p::user_id.eq(owner.user_id))
                .filter(p::environment.eq(owner.environment))
                .filter(p::status.eq("pending")),
        )
        .set((
            p::status.eq(verdict.status()),
            p::decided_at.eq(diesel::dsl::now),
            p::decided_by.eq(key_id),
        ))
        .returning(p::id)
        .get_result(conn)
        .await
        .optional()?;
        if decided.is_none() {
            return Err(match find(conn, owner, id).await? {
                Some(existing) => DecideError::Decided(existing.status),
                None => DecideError::NotFound,
            });
        }
        let proposal = find(conn, owner, id).await?.ok_or(DecideError::NotFound)?;
        match (verdict, proposal.run_id) {
            (Verdict::Reject, _) => Ok(proposal),
            (Verdict::Approve, Some(run_id)) => {
                let approved = action_proposals::Approved {
                    proposal_id: proposal.id,
                    run_id,
                    workspace_id: proposal.workspace_id,
                    channel: proposal.channel.as_deref(),
                    action: &proposal.raw_content,
                    rationale: proposal.rationale.as_deref(),
                    priority: proposal.priority,
                    approved_at: proposal.decided_at,
                };
                let (decision_id, hook_id) =
                    action_proposals::apply(conn, owner, approved, hook).await?;
                Ok(Proposal {
                    decision_id: Some(decision_id),
                    hook_id,
                    ..proposal
                })
            }
            (Verdict::Approve, None) => apply(conn, owner, proposal)
                .await
                .map_err(DecideError::from),
        }
    })
    .await
}

/// Tags of the free-form entries an approval writes (besides the vendor).
const ENTRY_TAGS: [&str; 2] = ["connector", "proposal"];

/// Records the proposal's content verbatim as free-form memory (in parts when it is longer
/// than an entry holds; the background pass embeds them) and adds a `decision` item to the
/// feed.
async fn apply(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    mut proposal: Proposal,
) -> QueryResult<Proposal> {
    let parts = intake::memory_parts(&proposal.raw_content);
    let tags: Vec<String> = ENTRY_TAGS
        .iter()
        .map(|t| (*t).to_owned())
        .chain([proposal.ai_vendor.clone()])
        .collect();
    let source = format!("connector:{}", proposal.ai_vendor);
    let now = Utc::now();
    let entries: Vec<NewEntry<'_>> = parts
        .iter()
        .enumerate()
        .map(|(i, part)| NewEntry {
            id: Uuid::now_v7(),
            content: part,
            tags: &tags,
            source: Some(&source),
            metadata: json!({
                "proposal_id": proposal.id,
                "ledger_id": proposal.ledger_id,
                "requested_capability": proposal.requested_capability,
                "workspace_id": proposal.workspace_id,
                "part": i + 1,
                "parts": parts.len(),
            }),
            created_at: now,
        })
        .collect();
    free_form::insert_many(conn, View::whole(owner), &entries).await?;
    let ids: Vec<Uuid> = entries.iter().map(|e| e.id).collect();
    diesel::update(p::table.filter(p::id.eq(proposal.id)))
        .set(p::memory_entry_ids.eq(&ids))
        .execute(conn)
        .await?;
    let summary = intake::approval_summary(
        &proposal.ai_vendor,
        proposal.requested_capability.as_deref(),
        &proposal.raw_content,
    );
    feed::add(
        conn,
        owner,
        NewFeedItem {
            kind: "decision",
            product_name: None,
            summary: &summary,
            severity: "info",
            workspace_id: None,
        },
    )
    .await?;
    proposal.memory_entry_ids = ids;
    Ok(proposal)
}
