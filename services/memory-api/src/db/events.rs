//! Business events and the AI cost telemetry read from `ai_cost` events.

use chrono::{DateTime, Utc};
use diesel::dsl::exists;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::{ai_cost_events as c, events as e, products};
use super::sql;
use crate::domain::ai_cost::AiCost;

/// An event to record.
pub struct NewEvent<'a> {
    pub event_type: &'a str,
    pub severity: &'a str,
    pub external_id: Option<&'a str>,
    pub idempotency_key: Option<&'a str>,
    pub occurred_at: DateTime<Utc>,
    pub worker_type: Option<&'a str>,
    pub payload: &'a Value,
    /// The typed payload of an `ai_cost` event.
    pub cost: Option<&'a AiCost>,
}

/// What an ingest did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingested {
    /// Recorded under this new id.
    Inserted(Uuid),
    /// The owner's `idempotency_key` or `external_id` was taken: the first event's id.
    Duplicate(Uuid),
}

/// Records an event (and its cost row) unless the owner already has one with its
/// `idempotency_key` or `external_id`. The insert is `ON CONFLICT DO NOTHING` on the unique
/// indexes, so concurrent repeats wait for the first one and then find it: one row, whatever
/// the timing.
pub async fn ingest(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    event: NewEvent<'_>,
) -> QueryResult<Ingested> {
    conn.transaction(async |conn| {
        let id = Uuid::now_v7();
        let inserted: Option<Uuid> = diesel::insert_into(e::table)
            .values((
                e::id.eq(id),
                e::user_id.eq(owner.user_id),
                e::environment.eq(owner.environment),
                e::event_type.eq(event.event_type),
                e::severity.eq(event.severity),
                e::external_id.eq(event.external_id),
                e::idempotency_key.eq(event.idempotency_key),
                e::occurred_at.eq(event.occurred_at),
                e::worker_type.eq(event.worker_type),
                e::payload.eq(event.payload),
            ))
            .on_conflict_do_nothing()
            .returning(e::id)
            .get_result(conn)
            .await
            .optional()?;
        if let Some(id) = inserted {
            if let Some(cost) = event.cost {
                insert_cost(conn, owner, id, event.occurred_at, cost).await?;
            }
            return Ok(Ingested::Inserted(id));
        }
        // Each statement reads a fresh snapshot (read committed): the conflicting row was
        // committed before the insert gave up.
        for (column, value) in [
            (KeyColumn::Idempotency, event.idempotency_key),
            (KeyColumn::External, event.external_id),
        ] {
            let Some(value) = value else { continue };
            let query = e::table
                .filter(e::user_id.eq(owner.user_id))
                .filter(e::environment.eq(owner.environment))
                .select(e::id)
                .into_boxed();
            let query = match column {
                KeyColumn::Idempotency => query.filter(e::idempotency_key.eq(value)),
                KeyColumn::External => query.filter(e::external_id.eq(value)),
            };
            if let Some(first) = query.first::<Uuid>(conn).await.optional()? {
                return Ok(Ingested::Duplicate(first));
            }
        }
        Err(diesel::result::Error::NotFound)
    })
    .await
}

enum KeyColumn {
    Idempotency,
    External,
}

async fn insert_cost(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    event_id: Uuid,
    occurred_at: DateTime<Utc>,
    cost: &AiCost,
) -> QueryResult<()> {
    // The cost goes in as decimal text and is cast by PostgreSQL: never a float.
    diesel::sql_query(
        "INSERT INTO ai_cost_events (event_id, user_id, environment, product, model, \
         input_tokens, output_tokens, cost_usd, occurred_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::numeric, $9)",
    )
    .bind::<SqlUuid, _>(event_id)
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Text, _>(&cost.product)
    .bind::<Text, _>(&cost.model)
    .bind::<BigInt, _>(cost.input_tokens)
    .bind::<BigInt, _>(cost.output_tokens)
    .bind::<Text, _>(&cost.cost_usd)
    .bind::<Timestamptz, _>(occurred_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// One line of a cost summary: the whole window (`total`), one model, or one UTC day.
#[derive(Debug, Clone, QueryableByName)]
pub struct CostLine {
    /// `total`, `model` or `day`.
    #[diesel(sql_type = Text)]
    pub kind: String,
    /// The model, or the day as `YYYY-MM-DD`; null for the total.
    #[diesel(sql_type = Nullable<Text>)]
    pub key: Option<String>,
    /// The exact sum, as PostgreSQL renders a `numeric` (trailing zeros trimmed).
    #[diesel(sql_type = Text)]
    pub cost_usd: String,
    #[diesel(sql_type = BigInt)]
    pub input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub event_count: i64,
}

/// The owner's costs with `from <= occurred_at < to` (of one product when given), summed in
/// `numeric` by PostgreSQL in one pass: the total first (always present), then each model
/// (costliest first, then by name), then each UTC day that has events (oldest first).
pub async fn summary(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    product: Option<&str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Vec<CostLine>> {
    diesel::sql_query(sql::events::SUMMARY)
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<Text>, _>(product)
        .load(conn)
        .await
}

/// Whether `product` names one of the owner's products, or the product of any of the owner's
/// `ai_cost` events (at any time).
pub async fn product_known(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    product: &str,
) -> QueryResult<bool> {
    let registered = exists(
        products::table
            .filter(products::user_id.eq(owner.user_id))
            .filter(products::environment.eq(owner.environment))
            .filter(products::name.eq(product)),
    );
    let reported = exists(
        c::table
            .filter(c::user_id.eq(owner.user_id))
            .filter(c::environment.eq(owner.environment))
            .filter(c::product.eq(product)),
    );
    diesel::select(registered.or(reported))
        .get_result(conn)
        .await
}
