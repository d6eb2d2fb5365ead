//! `format=json`: one JSON document,
//! `{"project_id", "site_id", "exported_at", "contacts": [...], "email_log": [...],
//! "events": [...], "conversions": [...]}`, written as the pages arrive. PostgreSQL renders each
//! row as a JSON object; nothing here holds more than one page.

use actix_web::web::{Bytes, BytesMut};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::limits::ExportPermit;
use super::{CHUNK_BYTES, Chunk, ExportConn, Meta, PAGE_ROWS, channel, failed, send_within};
use crate::db::export::{self, ACCOUNT_TABLES, JsonRow, TABLES, Table};

/// Starts the producer on the current (actix) runtime; the receiver is the body. The
/// connection and the permit are released when the producer ends.
pub fn spawn(conn: ExportConn, meta: Meta, permit: ExportPermit) -> mpsc::Receiver<Chunk> {
    spawn_tables(conn, meta, permit, &[&TABLES])
}

/// [`spawn`] for the full export: the tenant export's tables and then the project's
/// configuration and records ([`ACCOUNT_TABLES`]).
pub fn spawn_full(conn: ExportConn, meta: Meta, permit: ExportPermit) -> mpsc::Receiver<Chunk> {
    spawn_tables(conn, meta, permit, &[&TABLES, &ACCOUNT_TABLES])
}

fn spawn_tables(
    conn: ExportConn,
    meta: Meta,
    permit: ExportPermit,
    tables: &'static [&'static [Table]],
) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = channel();
    actix_web::rt::spawn(async move {
        let out = Out {
            tx: &tx,
            timeout: permit.send_timeout(),
        };
        if let Err(err) = produce(conn, &meta, &permit, tables, out).await {
            // The client may be gone already; then nobody is left to tell.
            send_within(&tx, Err(err), permit.send_timeout()).await;
        }
    });
    rx
}

/// Where the chunks go, and how long each may wait for the client.
#[derive(Clone, Copy)]
struct Out<'a> {
    tx: &'a mpsc::Sender<Chunk>,
    timeout: std::time::Duration,
}

/// `Err` when the database failed; `Ok` also when the client went away or stalled (nothing
/// to do then).
async fn produce(
    mut conn: ExportConn,
    meta: &Meta,
    permit: &ExportPermit,
    tables: &[&[Table]],
    out: Out<'_>,
) -> Result<(), std::io::Error> {
    export::begin_snapshot(&mut conn, permit.idle_in_transaction_timeout())
        .await
        .map_err(|e| failed("starting the snapshot", e))?;
    // The header members in their documented order; the tables follow as members too.
    let head = format!(
        "{{\"project_id\":{},\"site_id\":{},\"exported_at\":{}",
        serde_json::to_string(&meta.scope.project_id)?,
        serde_json::to_string(&meta.scope.site_id)?,
        serde_json::to_string(&meta.exported_at)?,
    );
    let mut buf = BytesMut::with_capacity(CHUNK_BYTES * 2);
    buf.extend_from_slice(head.as_bytes());
    for table in tables.iter().copied().flatten().filter(|t| meta.holds(t)) {
        buf.extend_from_slice(format!(",\"{}\":[", table.name).as_bytes());
        let sql = table.json_sql();
        let mut after = Uuid::nil();
        let mut first = true;
        loop {
            let rows: Vec<JsonRow> = export::page(&mut conn, &sql, meta.scope, after, PAGE_ROWS)
                .await
                .map_err(|e| failed("reading a page", e))?;
            let full = rows.len() as i64 == PAGE_ROWS;
            for row in rows {
                if !first {
                    buf.extend_from_slice(b",");
                }
                first = false;
                buf.extend_from_slice(row.doc.as_bytes());
                after = row.id;
                if buf.len() >= CHUNK_BYTES && !send(out, &mut buf).await {
                    return Ok(());
                }
            }
            if !full {
                break;
            }
        }
        buf.extend_from_slice(b"]");
    }
    buf.extend_from_slice(b"}\n");
    export::end_snapshot(&mut conn)
        .await
        .map_err(|e| failed("ending the snapshot", e))?;
    send(out, &mut buf).await;
    Ok(())
}

/// Hands the buffered bytes to the response; `false` when the client went away or stalled.
async fn send(out: Out<'_>, buf: &mut BytesMut) -> bool {
    let chunk: Bytes = buf.split().freeze();
    send_within(out.tx, Ok(chunk), out.timeout).await
}
