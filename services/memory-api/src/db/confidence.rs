//! The memories `GET /memory/confidence` scores: decisions and the current state of each
//! product, newest first.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::view::{View, visible};

#[derive(Debug, QueryableByName)]
pub struct Memory {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    /// `decision` or `product_state`.
    #[diesel(sql_type = Text)]
    pub kind: String,
    /// The decision's text, or the product's name.
    #[diesel(sql_type = Text)]
    pub text: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub reasoning: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub state: Option<Value>,
    #[diesel(sql_type = Timestamptz)]
    pub written_at: DateTime<Utc>,
}

/// Up to `limit` memories, newest first (by id), older than `before` when given: the
/// decisions the view sees and every product's current state.
pub async fn page(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Memory>> {
    let owner = view.owner;
    diesel::sql_query(format!(
        "(SELECT id, 'decision' AS kind, decision AS text, reasoning, NULL::jsonb AS state, \
                 decided_at AS written_at \
          FROM decisions \
          WHERE user_id = $1 AND environment = $2 AND ($3::uuid IS NULL OR id < $3) \
            AND {} \
          ORDER BY id DESC LIMIT $4) \
         UNION ALL \
         (SELECT s.id, 'product_state', p.name, NULL, s.state, s.created_at \
          FROM products p \
          JOIN LATERAL ( \
              SELECT id, state, created_at FROM product_states \
              WHERE product_id = p.id ORDER BY version DESC LIMIT 1 \
          ) s ON true \
          WHERE p.user_id = $1 AND p.environment = $2 AND ($3::uuid IS NULL OR s.id < $3)) \
         ORDER BY id DESC LIMIT $4",
        visible("workspace_id", 5)
    ))
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Nullable<SqlUuid>, _>(before)
    .bind::<BigInt, _>(limit)
    .bind::<Nullable<SqlUuid>, _>(view.workspace)
    .load(conn)
    .await
}
