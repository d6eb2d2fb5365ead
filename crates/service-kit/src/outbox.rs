//! The transactional outbox's relay, one loop for every outbox of the services.
//!
//! A job is written in the transaction that makes it necessary (an outbox row, or a row of
//! its own table not yet marked published), published right after the commit, and recorded
//! published once the broker confirmed it. The relay publishes what a crash or a broker outage
//! left behind: each pass takes a batch of due rows `FOR UPDATE SKIP LOCKED` (so any number of
//! replicas relay at once, never the same row), publishes them with confirms, and records the
//! confirmed ones in the same transaction; a publish that fails leaves its row for a later
//! pass. Delivery is at least once: consumers recognise a job they already did.
//!
//! An outbox is a small [`Outbox`] impl: which rows are due, how one is published, how the
//! published ones are recorded.

use std::future::Future;
use std::time::Duration;

use diesel::QueryResult;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use futures_util::future::join_all;
use store::Pool;

/// What came of one row's publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relayed {
    /// The broker confirmed it.
    Published,
    /// Not a job any more (unreadable): recorded as done without a publish.
    Dropped,
}

/// One outbox: a table of jobs to publish.
pub trait Outbox: Send + Sync {
    /// One row to publish.
    type Row: Send + Sync;

    /// For the log.
    fn name(&self) -> &'static str;

    /// Up to `limit` due rows, locked `FOR UPDATE SKIP LOCKED` until the transaction ends.
    fn claim(
        &self,
        conn: &mut AsyncPgConnection,
        limit: i64,
    ) -> impl Future<Output = QueryResult<Vec<Self::Row>>> + Send;

    /// Publishes one row's job; resolves once the broker confirmed it.
    fn publish(&self, row: &Self::Row) -> impl Future<Output = Result<Relayed, String>> + Send;

    /// In the pass's transaction: records that `rows` are done (published or dropped), by
    /// deleting or marking them.
    fn done(
        &self,
        conn: &mut AsyncPgConnection,
        rows: &[&Self::Row],
    ) -> impl Future<Output = QueryResult<()>> + Send;

    /// In the pass's transaction: `row`'s publish failed (by default nothing: the next pass
    /// takes it again).
    fn failed(
        &self,
        conn: &mut AsyncPgConnection,
        row: &Self::Row,
    ) -> impl Future<Output = QueryResult<()>> + Send {
        let _ = (conn, row);
        async { Ok(()) }
    }
}

/// One pass: publishes up to `batch` due rows (all at once) and records them; returns the
/// rows published.
pub async fn relay_once<O: Outbox>(
    pool: &Pool,
    outbox: &O,
    batch: i64,
) -> anyhow::Result<Vec<O::Row>> {
    let mut conn = store::conn(pool).await?;
    let published = conn
        .transaction::<_, anyhow::Error, _>(async |conn| {
            let rows = outbox.claim(conn, batch).await?;
            if rows.is_empty() {
                return Ok(Vec::new());
            }
            let outcomes = join_all(rows.iter().map(|row| outbox.publish(row))).await;
            let mut done = Vec::with_capacity(rows.len());
            let mut published = Vec::with_capacity(rows.len());
            for (index, outcome) in outcomes.into_iter().enumerate() {
                match outcome {
                    Ok(Relayed::Published) => {
                        done.push(index);
                        published.push(index);
                    }
                    Ok(Relayed::Dropped) => done.push(index),
                    Err(error) => {
                        tracing::warn!(outbox = outbox.name(), %error, "job not published");
                        outbox.failed(conn, &rows[index]).await?;
                    }
                }
            }
            let done_rows: Vec<&O::Row> = done.iter().map(|&i| &rows[i]).collect();
            outbox.done(conn, &done_rows).await?;
            Ok(rows
                .into_iter()
                .enumerate()
                .filter(|(i, _)| published.contains(i))
                .map(|(_, row)| row)
                .collect())
        })
        .await?;
    Ok(published)
}

/// How often a relay runs.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// The pause after a pass that published less than a full batch.
    pub period: Duration,
    /// Rows taken per pass (and transaction); after a full batch the next pass starts at once.
    pub batch: i64,
}

/// Runs `pass` (which answers how many jobs it published) for as long as the process runs:
/// at once, again at once after a full batch, else after the schedule's period.
pub fn spawn_loop<F, Fut>(name: &'static str, schedule: Schedule, mut pass: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<usize>> + Send,
{
    let full = usize::try_from(schedule.batch).unwrap_or(usize::MAX);
    tokio::spawn(async move {
        loop {
            match pass().await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(outbox = name, published = n, "relay published jobs");
                    if n >= full {
                        continue;
                    }
                }
                Err(err) => tracing::warn!(outbox = name, error = %err, "relay pass failed"),
            }
            tokio::time::sleep(schedule.period).await;
        }
    });
}

/// [`spawn_loop`] of [`relay_once`] over `outbox`.
pub fn spawn_relay<O: Outbox + 'static>(pool: Pool, outbox: O, schedule: Schedule) {
    let outbox = std::sync::Arc::new(outbox);
    let name = outbox.name();
    spawn_loop(name, schedule, move || {
        let (pool, outbox) = (pool.clone(), std::sync::Arc::clone(&outbox));
        async move {
            relay_once(&pool, outbox.as_ref(), schedule.batch)
                .await
                .map(|rows| rows.len())
        }
    });
}
