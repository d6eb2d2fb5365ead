//! `format=csv`: a ZIP holding `contacts.csv`, `email_log.csv`, `events.csv` and
//! `conversions.csv` (each with a header row; objects and arrays as JSON text), written as a
//! stream: entries carry data descriptors, so nothing is ever seeked back to.
//!
//! The zip writer is synchronous: it runs on a blocking thread fed by an async reader task,
//! which turns each page of rows into CSV records, through bounded channels both ways.

use std::io::{self, Write};

use actix_web::web::Bytes;
use producible::spreadsheet::neutralise_formula;
use tokio::sync::mpsc;
use uuid::Uuid;
use zip::CompressionMethod;
use zip::write::{SimpleFileOptions, ZipWriter};

use super::limits::ExportPermit;
use super::{CHUNK_BYTES, Chunk, ExportConn, Meta, PAGE_ROWS, channel, failed, send_within};
use crate::db::export::{self, CsvRow};

/// Rows read per query: half the JSON export's, since this export also holds a compressor on
/// a thread of its own (docs/BENCHMARKS.md: the exports' peak memory).
const CSV_PAGE_ROWS: i64 = PAGE_ROWS / 2;

/// What the reader hands the writer.
enum Part {
    /// The next file starts.
    File {
        name: &'static str,
        header: Vec<&'static str>,
    },
    /// A page of rows, already CSV: a page's records take a fraction of its cells' memory.
    Rows(Vec<u8>),
    /// The reader failed; the archive must not look complete.
    Failed(io::Error),
}

/// Starts the reader on the current (actix) runtime and the writer on a blocking thread; the
/// receiver is the body. The reader holds the connection and the permit: when the writer
/// ends (done, client gone, or client stalled past the send timeout) the reader ends too.
pub fn spawn(conn: ExportConn, meta: Meta, permit: ExportPermit) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = channel();
    // One page waits while the writer compresses the one before.
    let (parts_tx, parts_rx) = mpsc::channel::<Part>(1);
    let send_timeout = permit.send_timeout();
    actix_web::rt::spawn(async move {
        if let Err(err) = read(conn, &meta, &permit, &parts_tx).await {
            let _ = parts_tx.send(Part::Failed(err)).await;
        }
    });
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let out = ChannelWriter {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK_BYTES),
            runtime: runtime.clone(),
            send_timeout,
        };
        if let Err(err) = write(parts_rx, out) {
            // BrokenPipe: the client went away or stalled; otherwise tell it the body is
            // broken.
            if err.kind() != io::ErrorKind::BrokenPipe {
                runtime.block_on(send_within(&tx, Err(err), send_timeout));
            }
        }
    });
    rx
}

async fn read(
    mut conn: ExportConn,
    meta: &Meta,
    permit: &ExportPermit,
    parts: &mpsc::Sender<Part>,
) -> Result<(), io::Error> {
    export::begin_snapshot(&mut conn, permit.idle_in_transaction_timeout())
        .await
        .map_err(|e| failed("starting the snapshot", e))?;
    for table in meta.tables() {
        let file = Part::File {
            name: table.name,
            header: table.header(),
        };
        if parts.send(file).await.is_err() {
            return Ok(());
        }
        let sql = table.csv_sql();
        let mut after = Uuid::nil();
        loop {
            let rows: Vec<CsvRow> = export::page(&mut conn, &sql, meta.scope, after, CSV_PAGE_ROWS)
                .await
                .map_err(|e| failed("reading a page", e))?;
            let full = rows.len() as i64 == CSV_PAGE_ROWS;
            if let Some(last) = rows.last() {
                after = last.id;
            }
            let mut cells: Vec<_> = rows.into_iter().map(|r| r.cells).collect();
            cells
                .iter_mut()
                .flatten()
                .flatten()
                .for_each(neutralise_formula);
            if parts.send(Part::Rows(csv_bytes(&cells)?)).await.is_err() {
                return Ok(());
            }
            if !full {
                break;
            }
        }
    }
    export::end_snapshot(&mut conn)
        .await
        .map_err(|e| failed("ending the snapshot", e))?;
    Ok(())
}

/// Runs on the blocking thread until the reader is done (its sender dropped).
fn write(mut parts: mpsc::Receiver<Part>, out: ChannelWriter) -> io::Result<()> {
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        // A table may pass 4 GiB: Zip64 sizes from the start (entries are streamed, their
        // size unknown when their header is written).
        .large_file(true);
    let mut zip = ZipWriter::new_stream(out);
    while let Some(part) = parts.blocking_recv() {
        match part {
            Part::File { name, header } => {
                zip.start_file(format!("{name}.csv"), options)
                    .map_err(io::Error::other)?;
                let header = header.into_iter().map(|h| Some(h.to_owned())).collect();
                zip.write_all(&csv_bytes(&[header])?)?;
            }
            Part::Rows(records) => zip.write_all(&records)?,
            Part::Failed(err) => return Err(err),
        }
    }
    let mut out = zip.finish().map_err(io::Error::other)?.into_inner();
    out.flush()
}

/// CSV records (RFC 4180 quoting; an absent cell is empty).
fn csv_bytes(rows: &[Vec<Option<String>>]) -> io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::with_capacity(CHUNK_BYTES));
    for row in rows {
        w.write_record(row.iter().map(|cell| cell.as_deref().unwrap_or("")))?;
    }
    w.into_inner().map_err(|e| io::Error::other(e.to_string()))
}

/// `Write` into the response: gathers `CHUNK_BYTES` and hands them over, waiting while the
/// client is behind (at most the send timeout). BrokenPipe once the client is gone or stalled.
struct ChannelWriter {
    tx: mpsc::Sender<Chunk>,
    buf: Vec<u8>,
    /// The actix worker's runtime, which drives the timer of the bounded wait.
    runtime: tokio::runtime::Handle,
    send_timeout: std::time::Duration,
}

impl ChannelWriter {
    fn hand_over(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(CHUNK_BYTES),
        ));
        let sent = self
            .runtime
            .block_on(send_within(&self.tx, Ok(chunk), self.send_timeout));
        if sent {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.hand_over()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_quoting_and_leaves_absent_cells_empty() {
        let rows = vec![vec![
            Some("plain".to_owned()),
            None,
            Some("a,b".to_owned()),
            Some("say \"hi\"\nthere".to_owned()),
        ]];
        let text = String::from_utf8(csv_bytes(&rows).unwrap()).unwrap();
        assert_eq!(text, "plain,,\"a,b\",\"say \"\"hi\"\"\nthere\"\n");
    }
}
