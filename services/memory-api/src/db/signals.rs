//! Signals: project signals of a product (`POST /ingest/{project_id}`) and producer signals
//! (`POST /signals/ingest`), and which decisions signals reference.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, Bytea, Double, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

use super::feed::{self, NewFeedItem};
use super::owner::Owner;
use super::sql;

/// A project signal to record.
#[derive(Debug)]
pub struct NewProjectSignal<'a> {
    pub product_id: Uuid,
    pub product_name: &'a str,
    pub event_type: &'a str,
    pub title: &'a str,
    pub severity: &'a str,
    pub body: Option<&'a Value>,
    pub external_id: Option<&'a str>,
    /// `signature` or `bearer`.
    pub received_via: &'a str,
    /// Whether a new signal adds an `anomaly` item to the intelligence feed.
    pub anomaly: bool,
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// An accepted signature of a signed project signal, kept until `expires_at` (its timestamp
/// out of the tolerance).
pub struct Signature<'a> {
    pub tag: &'a [u8; 32],
    pub expires_at: DateTime<Utc>,
}

/// [`record_project_signal`] for a signed request, at most once per signature: a replay of an
/// accepted signature (the same request sent again within the tolerance) records nothing and
/// answers the first signal's id as a duplicate. Exact under concurrent replays (the replay
/// cache's primary key and `ON CONFLICT`, in the signal's transaction).
pub async fn record_signed_project_signal(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: &NewProjectSignal<'_>,
    signature: Signature<'_>,
) -> QueryResult<(Uuid, bool)> {
    conn.transaction(async |conn| {
        diesel::sql_query(
            "DELETE FROM signal_signatures WHERE product_id = $1 AND expires_at < now()",
        )
        .bind::<SqlUuid, _>(new.product_id)
        .execute(conn)
        .await?;
        // Claimed with a placeholder id, replaced below in this transaction: a concurrent
        // replay waits for the commit, then reads the real one.
        let claimed = diesel::sql_query(
            "INSERT INTO signal_signatures (product_id, signature, signal_id, expires_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind::<SqlUuid, _>(new.product_id)
        .bind::<Bytea, _>(&signature.tag[..])
        .bind::<SqlUuid, _>(Uuid::nil())
        .bind::<Timestamptz, _>(signature.expires_at)
        .execute(conn)
        .await?;
        if claimed == 0 {
            let first: IdRow = diesel::sql_query(
                "SELECT signal_id AS id FROM signal_signatures \
                 WHERE product_id = $1 AND signature = $2",
            )
            .bind::<SqlUuid, _>(new.product_id)
            .bind::<Bytea, _>(&signature.tag[..])
            .get_result(conn)
            .await?;
            return Ok((first.id, true));
        }
        let (id, duplicate) = record_project_signal(conn, owner, new).await?;
        diesel::sql_query(
            "UPDATE signal_signatures SET signal_id = $3 WHERE product_id = $1 AND signature = $2",
        )
        .bind::<SqlUuid, _>(new.product_id)
        .bind::<Bytea, _>(&signature.tag[..])
        .bind::<SqlUuid, _>(id)
        .execute(conn)
        .await?;
        Ok((id, duplicate))
    })
    .await
}

/// Records a project signal (and its anomaly feed item) in one transaction. A repeated
/// `external_id` of the product records nothing and answers the first signal's id:
/// `(id, duplicate)`. Exact under concurrent repeats (a unique index and `ON CONFLICT`).
pub async fn record_project_signal(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: &NewProjectSignal<'_>,
) -> QueryResult<(Uuid, bool)> {
    conn.transaction(async |conn| {
        let id = Uuid::now_v7();
        let inserted: Option<IdRow> = diesel::sql_query(sql::signals::RECORD_PROJECT_SIGNAL)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(owner.user_id)
            .bind::<Text, _>(owner.environment)
            .bind::<SqlUuid, _>(new.product_id)
            .bind::<Text, _>(new.event_type)
            .bind::<Text, _>(new.title)
            .bind::<Text, _>(new.severity)
            .bind::<Nullable<Jsonb>, _>(new.body)
            .bind::<Nullable<Text>, _>(new.external_id)
            .bind::<Text, _>(new.received_via)
            .get_result(conn)
            .await
            .optional()?;
        if inserted.is_none() {
            // The conflicting insert has committed (ON CONFLICT waited for it): this
            // statement's snapshot sees it.
            let first: IdRow = diesel::sql_query(
                "SELECT id FROM project_signals \
                 WHERE product_id = $1 AND external_id = $2 AND user_id = $3 AND environment = $4",
            )
            .bind::<SqlUuid, _>(new.product_id)
            .bind::<Nullable<Text>, _>(new.external_id)
            .bind::<SqlUuid, _>(owner.user_id)
            .bind::<Text, _>(owner.environment)
            .get_result(conn)
            .await?;
            return Ok((first.id, true));
        }
        if new.anomaly {
            let summary = format!("{}: {}", new.event_type, new.title);
            feed::add(
                conn,
                owner,
                NewFeedItem {
                    kind: "anomaly",
                    product_name: Some(new.product_name),
                    summary: &summary,
                    severity: new.severity,
                    workspace_id: None,
                },
            )
            .await?;
        }
        Ok((id, false))
    })
    .await
}

/// One producer signal row to write: the first signal of its `dedup_key` in the request, and
/// how many signals of the request carry that key.
#[derive(Debug, Clone)]
pub struct NewProducerSignal {
    pub id: Uuid,
    pub source: String,
    pub entity_scope: String,
    pub entity_id: Option<String>,
    pub signal_type: String,
    pub dedup_key: String,
    pub severity: String,
    pub title: String,
    pub description: Option<String>,
    /// JSON text of an object.
    pub payload: String,
    /// JSON text of an array of objects.
    pub evidence: String,
    pub related_decisions: Vec<Uuid>,
    pub confidence_score: Option<f64>,
    pub collapse_window_minutes: i32,
    pub count: i32,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    dedup_key: String,
}

/// How many times [`record_producer_signals`] closes expired signals and tries again before
/// giving up (each round settles every key some other request did not touch in between).
const ROUNDS: usize = 5;

/// The workspace producer signals are written to.
#[derive(Debug, Clone, Copy)]
pub enum SignalWorkspace {
    /// A workspace the caller named (and owns).
    Given(Uuid),
    /// The active workspace of this credential, if any: read by the write itself, so the
    /// common request costs one statement.
    ActiveOf(Uuid),
}

/// Writes producer signals (distinct `dedup_key`s): one multi-row `INSERT ... ON CONFLICT`
/// collapses each into the open signal of its key when that was last seen within the
/// signal's window (count and last-seen grow), and opens a new one otherwise. Keys whose open
/// signal's window has passed are closed and written again. Answers the id each key's signal
/// now has.
///
/// Each signal is written on its own (as the route documents), so the statements run without
/// an enclosing transaction: a request that fails half-way has written some signals, and its
/// retry collapses into them. Rows are sorted by key, so concurrent statements lock in one
/// order and do not deadlock.
pub async fn record_producer_signals(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: SignalWorkspace,
    rows: &[NewProducerSignal],
) -> QueryResult<HashMap<String, Uuid>> {
    let mut pending: Vec<&NewProducerSignal> = rows.iter().collect();
    pending.sort_by(|a, b| a.dedup_key.cmp(&b.dedup_key));
    let mut ids = HashMap::with_capacity(pending.len());
    for _ in 0..ROUNDS {
        let written = upsert(conn, owner, workspace, &pending).await?;
        ids.extend(written.into_iter().map(|r| (r.dedup_key, r.id)));
        pending.retain(|r| !ids.contains_key(&r.dedup_key));
        if pending.is_empty() {
            return Ok(ids);
        }
        close_expired(conn, owner, &pending).await?;
    }
    Err(diesel::result::Error::RollbackTransaction)
}

/// The multi-row upsert. Rows whose open signal is outside the window return nothing.
async fn upsert(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: SignalWorkspace,
    rows: &[&NewProducerSignal],
) -> QueryResult<Vec<KeyRow>> {
    let (given, key_id) = match workspace {
        SignalWorkspace::Given(id) => (Some(id), None),
        SignalWorkspace::ActiveOf(key_id) => (None, Some(key_id)),
    };
    let text = |f: fn(&NewProducerSignal) -> &str| rows.iter().map(|r| f(r)).collect::<Vec<_>>();
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let sources = text(|r| &r.source);
    let scopes = text(|r| &r.entity_scope);
    let entity_ids: Vec<Option<&str>> = rows.iter().map(|r| r.entity_id.as_deref()).collect();
    let types = text(|r| &r.signal_type);
    let keys = text(|r| &r.dedup_key);
    let severities = text(|r| &r.severity);
    let titles = text(|r| &r.title);
    let descriptions: Vec<Option<&str>> = rows.iter().map(|r| r.description.as_deref()).collect();
    let payloads = text(|r| &r.payload);
    let evidence = text(|r| &r.evidence);
    let related: Vec<String> = rows
        .iter()
        .map(|r| uuid_array_literal(&r.related_decisions))
        .collect();
    let confidence: Vec<Option<f64>> = rows.iter().map(|r| r.confidence_score).collect();
    let windows: Vec<i32> = rows.iter().map(|r| r.collapse_window_minutes).collect();
    let counts: Vec<i32> = rows.iter().map(|r| r.count).collect();
    // The text never changes and PostgreSQL would otherwise parse and plan it at every
    // request: kept prepared.
    Prepared(
        diesel::sql_query(sql::signals::UPSERT)
            .bind::<SqlUuid, _>(owner.user_id)
            .bind::<Text, _>(owner.environment)
            .bind::<Nullable<SqlUuid>, _>(given)
            .bind::<Array<SqlUuid>, _>(ids)
            .bind::<Array<Text>, _>(sources)
            .bind::<Array<Text>, _>(scopes)
            .bind::<Array<Nullable<Text>>, _>(entity_ids)
            .bind::<Array<Text>, _>(types)
            .bind::<Array<Text>, _>(keys)
            .bind::<Array<Text>, _>(severities)
            .bind::<Array<Text>, _>(titles)
            .bind::<Array<Nullable<Text>>, _>(descriptions)
            .bind::<Array<Text>, _>(payloads)
            .bind::<Array<Text>, _>(evidence)
            .bind::<Array<Text>, _>(related)
            .bind::<Array<Nullable<Double>>, _>(confidence)
            .bind::<Array<Integer>, _>(windows)
            .bind::<Array<Integer>, _>(counts)
            .bind::<Nullable<SqlUuid>, _>(key_id),
    )
    .load(conn)
    .await
}

/// Closes the open signals of `rows`' keys whose window (the incoming signal's) has passed.
async fn close_expired(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    rows: &[&NewProducerSignal],
) -> QueryResult<usize> {
    let keys: Vec<&str> = rows.iter().map(|r| r.dedup_key.as_str()).collect();
    let windows: Vec<i32> = rows.iter().map(|r| r.collapse_window_minutes).collect();
    diesel::sql_query(
        "UPDATE producer_signals s SET open = false \
         FROM unnest($3::text[], $4::int4[]) AS e(dedup_key, win) \
         WHERE s.user_id = $1 AND s.environment = $2 AND s.open AND s.dedup_key = e.dedup_key \
           AND s.last_seen_at < now() - make_interval(mins => e.win)",
    )
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Array<Text>, _>(keys)
    .bind::<Array<Integer>, _>(windows)
    .execute(conn)
    .await
}

/// `{id,id}`: a PostgreSQL array literal of uuids (they hold no character to escape).
fn uuid_array_literal(ids: &[Uuid]) -> String {
    let inner: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    format!("{{{}}}", inner.join(","))
}

/// Which of `ids` are decisions of the owner.
pub async fn owned_decisions(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    ids: &[Uuid],
) -> QueryResult<HashSet<Uuid>> {
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let rows: Vec<IdRow> = diesel::sql_query(
        "SELECT id FROM decisions WHERE user_id = $1 AND environment = $2 AND id = ANY($3)",
    )
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Array<SqlUuid>, _>(ids)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}
