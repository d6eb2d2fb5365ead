//! `format=json`: one JSON document,
//! `{"project_id", "site_id", "exported_at", "contacts": [...], "email_log": [...],
//! "events": [...], "conversions": [...]}`, written as the pages arrive. PostgreSQL renders each
//! row as a JSON object; nothing here holds more than one page.

use actix_web::web::{Bytes, BytesMut};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::{CHUNK_BYTES, Chunk, ExportConn, Meta, PAGE_ROWS, channel, failed};
use crate::db::export::{self, JsonRow, TABLES};

/// Starts the producer on the current (actix) runtime; the receiver is the body.
pub fn spawn(conn: ExportConn, meta: Meta) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = channel();
    actix_web::rt::spawn(async move {
        if let Err(err) = produce(conn, &meta, &tx).await {
            // The client may be gone already; then nobody is left to tell.
            let _ = tx.send(Err(err)).await;
        }
    });
    rx
}

/// `Err` when the database failed; `Ok` also when the client went away (nothing to do then).
async fn produce(
    mut conn: ExportConn,
    meta: &Meta,
    tx: &mpsc::Sender<Chunk>,
) -> Result<(), std::io::Error> {
    export::begin_snapshot(&mut conn)
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
    for table in &TABLES {
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
                if buf.len() >= CHUNK_BYTES && !send(tx, &mut buf).await {
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
    send(tx, &mut buf).await;
    Ok(())
}

/// Hands the buffered bytes to the response; `false` when the client went away.
async fn send(tx: &mpsc::Sender<Chunk>, buf: &mut BytesMut) -> bool {
    let chunk: Bytes = buf.split().freeze();
    tx.send(Ok(chunk)).await.is_ok()
}
