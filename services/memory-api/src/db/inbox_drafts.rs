//! Stored draft replies of mail threads: one set per thread of one mail account of an owner.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::inbox_draft_threads as t;
use super::sql;

/// A stored draft set.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = t)]
pub struct StoredThread {
    pub id: Uuid,
    pub thread_id: String,
    pub latest_message_at: DateTime<Utc>,
    pub generated_at: DateTime<Utc>,
    pub why: String,
    /// An array of `{tone, text}`.
    pub drafts: Value,
}

/// The account's stored sets among `thread_ids` (normalized hexadecimal ids).
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    account_email: &str,
    thread_ids: &[&str],
) -> QueryResult<Vec<StoredThread>> {
    t::table
        .filter(t::user_id.eq(owner.user_id))
        .filter(t::environment.eq(owner.environment))
        .filter(t::account_email.eq(account_email))
        .filter(t::thread_id.eq_any(thread_ids))
        .select(StoredThread::as_select())
        .load(conn)
        .await
}

/// A thread's draft set to store (ids normalized).
pub struct NewThread {
    pub thread_id: String,
    pub latest_message_id: String,
    pub latest_message_at: DateTime<Utc>,
    pub generated_at: DateTime<Utc>,
    pub why: String,
    pub drafts: Value,
}

/// Stores `threads` for the account in one transaction; with `replace`, deletes the account's
/// stored threads absent from `threads`. Returns (threads written, threads deleted).
pub async fn store(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    account_email: &str,
    threads: &[NewThread],
    replace: bool,
) -> QueryResult<(usize, usize)> {
    conn.transaction(async |conn| {
        let mut written = 0;
        for thread in threads {
            written += diesel::sql_query(sql::inbox_drafts::UPSERT)
                .bind::<SqlUuid, _>(Uuid::now_v7())
                .bind::<SqlUuid, _>(owner.user_id)
                .bind::<Text, _>(owner.environment)
                .bind::<Text, _>(account_email)
                .bind::<Text, _>(&thread.thread_id)
                .bind::<Text, _>(&thread.latest_message_id)
                .bind::<Timestamptz, _>(thread.latest_message_at)
                .bind::<Timestamptz, _>(thread.generated_at)
                .bind::<Text, _>(&thread.why)
                .bind::<Jsonb, _>(&thread.drafts)
                .execute(conn)
                .await?;
        }
        let deleted = if replace {
            let kept: Vec<&str> = threads.iter().map(|t| t.thread_id.as_str()).collect();
            diesel::delete(
                t::table
                    .filter(t::user_id.eq(owner.user_id))
                    .filter(t::environment.eq(owner.environment))
                    .filter(t::account_email.eq(account_email))
                    .filter(t::thread_id.ne_all(kept)),
            )
            .execute(conn)
            .await?
        } else {
            0
        };
        Ok((written, deleted))
    })
    .await
}
