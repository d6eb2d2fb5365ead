//! The tenant export as a stream: `json` (one JSON document) or `csv` (a ZIP of one CSV file per
//! table). A producer reads the tables a page at a time on a connection of its own, inside one
//! read-only snapshot, and hands the encoded bytes to the response through a bounded channel:
//! memory stays a few pages and chunks whatever the tenant's size, and a client that reads
//! slowly slows the producer down (or stops it by going away).

pub mod json;
pub mod limits;
pub mod zip;

use std::io;
use std::time::Duration;

use actix_web::web::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;

use crate::db::export::Scope;

/// Rows read per query.
pub const PAGE_ROWS: i64 = 1_000;
/// Encoded chunks waiting for the client, at most.
const CHUNKS_IN_FLIGHT: usize = 4;
/// Bytes gathered before a chunk is handed to the response.
const CHUNK_BYTES: usize = 64 * 1024;

pub type Chunk = Result<Bytes, io::Error>;

/// The export's connection: taken out of the pool for good (the snapshot transaction must
/// never go back to it, even when the client disconnects mid-stream); it closes when dropped.
pub type ExportConn = diesel_async::AsyncPgConnection;

/// What the export's header says.
#[derive(Debug, Clone)]
pub struct Meta {
    pub scope: Scope,
    /// RFC 3339 UTC time of the request.
    pub exported_at: String,
    /// Only this table (by name), when given.
    pub only: Option<&'static str>,
}

impl Meta {
    /// Whether the export holds `table` (all tables, or the one asked for).
    pub fn holds(&self, table: &crate::db::export::Table) -> bool {
        self.only.is_none_or(|only| only == table.name)
    }

    /// The tenant export's tables it holds, in their documented order.
    pub fn tables(&self) -> impl Iterator<Item = &'static crate::db::export::Table> + '_ {
        crate::db::export::TABLES.iter().filter(|t| self.holds(t))
    }
}

fn channel() -> (mpsc::Sender<Chunk>, mpsc::Receiver<Chunk>) {
    mpsc::channel(CHUNKS_IN_FLIGHT)
}

/// The response body: the chunks as they come.
pub fn body(rx: mpsc::Receiver<Chunk>) -> impl Stream<Item = Chunk> + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    })
}

/// Hands one chunk to the response. `false` when the stream must end: the client went away,
/// or did not take a chunk within `timeout` (its connection and snapshot are then released).
async fn send_within(tx: &mpsc::Sender<Chunk>, chunk: Chunk, timeout: Duration) -> bool {
    match tokio::time::timeout(timeout, tx.send(chunk)).await {
        Ok(sent) => sent.is_ok(),
        Err(_) => {
            tracing::warn!(
                timeout_secs = timeout.as_secs(),
                "export ended: the client took no data in time"
            );
            false
        }
    }
}

/// An error that ends the stream (the client sees a truncated body). Logged without the
/// tenant's data.
fn failed(what: &str, err: impl std::fmt::Display) -> io::Error {
    tracing::error!(error = %err, "export failed while {what}");
    io::Error::other(format!("export failed while {what}"))
}
