//! Leads: the intakes queued as leads (`lead_queued`), each waiting for a first-party
//! decision (accept or dismiss, once), and the producer signal that announces one.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::feed::{self, NewFeedItem};
use super::owner::Owner;
use super::schema::{connector_intakes as ci, leads as l};
use super::signals::{self, NewProducerSignal, SignalWorkspace};
use crate::domain::intake;

/// The lead of an intake just recorded.
pub struct NewLead<'a> {
    pub ledger_id: Uuid,
    /// The credential that sent the intake (its active workspace holds the signal when the
    /// intake names none).
    pub key_id: Uuid,
    pub ai_vendor: &'a str,
    pub workspace_id: Option<Uuid>,
    pub requested_capability: Option<&'a str>,
    pub raw_content: &'a str,
}

/// Writes the pending lead of an intake and its producer signal (inside the intake's
/// transaction); answers the lead's id.
pub async fn queue(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: NewLead<'_>,
) -> QueryResult<Uuid> {
    let id = Uuid::now_v7();
    let signal = intake::lead_signal(
        id,
        new.ledger_id,
        new.ai_vendor,
        new.requested_capability,
        new.raw_content,
    );
    let row = NewProducerSignal {
        id: Uuid::now_v7(),
        source: signal.source,
        entity_scope: "user".to_owned(),
        entity_id: None,
        signal_type: intake::LEAD_SIGNAL_TYPE.to_owned(),
        dedup_key: signal.dedup_key.clone(),
        severity: "info".to_owned(),
        title: signal.title,
        description: Some(signal.description),
        payload: signal.payload.to_string(),
        evidence: "[]".to_owned(),
        related_decisions: Vec::new(),
        confidence_score: None,
        collapse_window_minutes: 1,
        count: 1,
    };
    let workspace = match new.workspace_id {
        Some(id) => SignalWorkspace::Given(id),
        None => SignalWorkspace::ActiveOf(new.key_id),
    };
    let written = signals::record_producer_signals(conn, owner, workspace, &[row]).await?;
    let signal_id = written.get(&signal.dedup_key).copied();
    diesel::insert_into(l::table)
        .values((
            l::id.eq(id),
            l::user_id.eq(owner.user_id),
            l::environment.eq(owner.environment),
            l::intake_id.eq(new.ledger_id),
            l::signal_id.eq(signal_id),
        ))
        .execute(conn)
        .await?;
    Ok(id)
}

/// The lead of the intake `ledger_id`, if any (an idempotent replay's answer).
pub async fn of_intake(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    ledger_id: Uuid,
) -> QueryResult<Option<Uuid>> {
    l::table
        .filter(l::intake_id.eq(ledger_id))
        .filter(l::user_id.eq(owner.user_id))
        .filter(l::environment.eq(owner.environment))
        .select(l::id)
        .first(conn)
        .await
        .optional()
}

/// A lead with the intake it came from.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(check_for_backend(diesel::pg::Pg))]
pub struct Lead {
    #[diesel(select_expression = l::id)]
    pub id: Uuid,
    #[diesel(select_expression = l::status)]
    pub status: String,
    #[diesel(select_expression = l::decided_at)]
    pub decided_at: Option<DateTime<Utc>>,
    #[diesel(select_expression = l::signal_id)]
    pub signal_id: Option<Uuid>,
    #[diesel(select_expression = l::created_at)]
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
}

/// Up to `limit` leads after `after` (id order), of one `status` when given.
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    status: Option<&str>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Lead>> {
    let mut query = l::table
        .inner_join(ci::table)
        .filter(l::user_id.eq(owner.user_id))
        .filter(l::environment.eq(owner.environment))
        .order(l::id)
        .limit(limit)
        .select(Lead::as_select())
        .into_boxed();
    if let Some(status) = status {
        query = query.filter(l::status.eq(status));
    }
    if let Some(after) = after {
        query = query.filter(l::id.gt(after));
    }
    query.load(conn).await
}

/// An owned lead.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Lead>> {
    l::table
        .inner_join(ci::table)
        .filter(l::id.eq(id))
        .filter(l::user_id.eq(owner.user_id))
        .filter(l::environment.eq(owner.environment))
        .select(Lead::as_select())
        .first(conn)
        .await
        .optional()
}

/// A first-party decision on a pending lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Accept,
    Dismiss,
}

impl Resolution {
    pub fn status(self) -> &'static str {
        match self {
            Self::Accept => "accepted",
            Self::Dismiss => "dismissed",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such lead")]
    NotFound,
    /// The lead was resolved before (its status).
    #[error("this lead was already {0}")]
    Resolved(String),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Resolves a pending lead once (a conditional UPDATE from `pending`); accepting adds a
/// `decision` item to the feed in the same transaction. Nothing of the lead is executed.
pub async fn resolve(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    decider: Uuid,
    resolution: Resolution,
) -> Result<Lead, ResolveError> {
    conn.transaction(async |conn| {
        let resolved: Option<Uuid> = diesel::update(
            l::table
                .filter(l::id.eq(id))
                .filter(l::user_id.eq(owner.user_id))
                .filter(l::environment.eq(owner.environment))
                .filter(l::status.eq("pending")),
        )
        .set((
            l::status.eq(resolution.status()),
            l::decided_at.eq(diesel::dsl::now),
            l::decided_by.eq(decider),
        ))
        .returning(l::id)
        .get_result(conn)
        .await
        .optional()?;
        let found = find(conn, owner, id).await?;
        let lead = match (resolved, found) {
            (Some(_), Some(lead)) => lead,
            (None, Some(existing)) => return Err(ResolveError::Resolved(existing.status)),
            (_, None) => return Err(ResolveError::NotFound),
        };
        if resolution == Resolution::Accept {
            let summary = intake::lead_accepted_summary(
                &lead.ai_vendor,
                lead.requested_capability.as_deref(),
                &lead.raw_content,
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
        }
        Ok(lead)
    })
    .await
}
