//! The uploaded file as the job reads it: its CSV files (one, or the entries of a ZIP), each
//! with its [`Columns`], read a page at a time by a blocking task that streams the rows (the
//! `csv` crate's reader over the stored bytes or the ZIP entry's decompressor) and hands each
//! page over a channel of one: at most three pages (one read, one waiting, one written) are in
//! memory whatever the file's size.

use std::io::{Cursor as IoCursor, Read};
use std::sync::Arc;

use csv::StringRecord;
use tokio::sync::mpsc;
use uuid::Uuid;
use zip::ZipArchive;

use super::columns::{Columns, HeaderError};
use super::{CsvLayout, CsvMapping};
use crate::ops::platforms::migrate::records::{Cursor, Fetched, Records, Rejected, Stage};

/// Most bytes a CSV file of a ZIP may decompress to.
pub const MAX_ENTRY_BYTES: u64 = 100 * 1024 * 1024;
/// Most CSV files a ZIP may hold.
pub const MAX_ENTRIES: usize = 20;

/// How the stored bytes are packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Csv,
    Zip,
}

/// An upload: its layout, mapping and bytes.
#[derive(Debug)]
pub struct Upload {
    pub layout: CsvLayout,
    pub packing: Packing,
    pub mapping: Option<CsvMapping>,
    pub content: Vec<u8>,
}

/// One CSV file of an upload.
#[derive(Debug, Clone)]
pub struct Part {
    /// Its index in the ZIP (none for a single CSV).
    entry: Option<usize>,
    /// Its name in the ZIP, as per-record errors name it.
    name: Option<String>,
    pub columns: Columns,
}

impl Part {
    /// Where row `line` is, for a per-record error (never the row's content).
    fn at(&self, line: u64) -> String {
        match &self.name {
            Some(name) => format!("{name} line {line}"),
            None => format!("line {line}"),
        }
    }
}

/// Why an upload cannot be read: the field at fault (`mapping.…`, or empty for the file's
/// own) and what is wrong, naming the ZIP entry.
pub type UploadError = HeaderError;

fn file_error(name: Option<&str>, problem: impl std::fmt::Display) -> UploadError {
    HeaderError {
        field: String::new(),
        problem: match name {
            Some(name) => format!("{name:?} {problem}"),
            None => problem.to_string(),
        },
    }
}

fn reader<R: Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(input)
}

fn columns<R: Read>(
    upload: &Upload,
    name: Option<&str>,
    csv: &mut csv::Reader<R>,
) -> Result<Columns, UploadError> {
    let header = csv
        .headers()
        .map_err(|e| file_error(name, format!("has no readable header row: {e}")))?
        .clone();
    if header.iter().all(|h| h.trim().is_empty()) {
        return Err(file_error(name, "has no header row"));
    }
    let read = match (&upload.layout, &upload.mapping) {
        (CsvLayout::Generic, Some(mapping)) => Columns::generic(&header, mapping),
        (CsvLayout::Generic, None) => Err(HeaderError {
            field: "mapping".to_owned(),
            problem: "is required with the generic layout".to_owned(),
        }),
        (CsvLayout::Mailchimp, _) => Columns::mailchimp(&header),
    };
    read.map_err(|mut e| {
        if e.field.is_empty() {
            e = file_error(name, e.problem);
        } else if let Some(name) = name {
            e.problem = format!("{} in {name:?}", e.problem);
        }
        e
    })
}

fn zip_error(e: zip::result::ZipError) -> UploadError {
    file_error(None, format!("is not a readable ZIP archive: {e}"))
}

impl Upload {
    /// Its CSV files, each header read and checked (a ZIP's entries in their order, those
    /// whose names do not end in `.csv` left out).
    pub fn parts(&self) -> Result<Vec<Part>, UploadError> {
        match self.packing {
            Packing::Csv => {
                let mut csv = reader(self.content.as_slice());
                Ok(vec![Part {
                    entry: None,
                    name: None,
                    columns: columns(self, None, &mut csv)?,
                }])
            }
            Packing::Zip => {
                let mut archive =
                    ZipArchive::new(IoCursor::new(&self.content)).map_err(zip_error)?;
                let mut parts = Vec::new();
                for entry in 0..archive.len() {
                    let file = archive.by_index(entry).map_err(zip_error)?;
                    let name = file.name().map_err(zip_error)?.into_owned();
                    let base = name.rsplit('/').next().unwrap_or_default();
                    if !file.is_file()
                        || !base.to_ascii_lowercase().ends_with(".csv")
                        || base.starts_with("._")
                    {
                        continue;
                    }
                    if parts.len() == MAX_ENTRIES {
                        return Err(file_error(
                            None,
                            format!("holds more than {MAX_ENTRIES} CSV files"),
                        ));
                    }
                    if file.size() > MAX_ENTRY_BYTES {
                        return Err(file_error(
                            Some(&name),
                            format!("decompresses to more than {MAX_ENTRY_BYTES} bytes"),
                        ));
                    }
                    let mut csv = reader(file.take(MAX_ENTRY_BYTES));
                    let columns = columns(self, Some(&name), &mut csv)?;
                    parts.push(Part {
                        entry: Some(entry),
                        name: Some(name),
                        columns,
                    });
                }
                if parts.is_empty() {
                    return Err(file_error(
                        None,
                        "holds no CSV file (no entry ends in .csv)",
                    ));
                }
                Ok(parts)
            }
        }
    }
}

/// What the page reader needs: the upload, its parts, the run (for attribution), its source
/// name (`mailchimp` or `csv`) and the page size.
pub struct Pages {
    pub upload: Arc<Upload>,
    pub parts: Arc<Vec<Part>>,
    pub import_id: Uuid,
    pub source: &'static str,
    pub page_size: usize,
}

impl Pages {
    fn reads(&self, stage: Stage, part: usize) -> bool {
        let columns = &self.parts[part].columns;
        match stage {
            Stage::Suppressions => columns.has_suppressions(),
            Stage::Contacts => columns.has_contacts(),
            _ => false,
        }
    }

    /// The first page to read at or after `cursor`: its part, or the next part this stage
    /// reads, or the next stage's first (suppressions, then contacts, then done).
    fn settle(&self, cursor: Cursor) -> Cursor {
        let mut cursor = cursor;
        loop {
            if !matches!(cursor.stage, Stage::Suppressions | Stage::Contacts) {
                return Cursor {
                    stage: Stage::Done,
                    ..Cursor::default()
                };
            }
            if cursor.pass < self.parts.len() {
                if self.reads(cursor.stage, cursor.pass) {
                    return cursor;
                }
                cursor = cursor.next_pass();
                continue;
            }
            cursor = Cursor {
                stage: if cursor.stage == Stage::Suppressions {
                    Stage::Contacts
                } else {
                    Stage::Done
                },
                ..Cursor::default()
            };
        }
    }

    /// Reads pages from `start` on, in a blocking task: each page and the cursor after it, the
    /// last one's cursor `done`. The task ends when the receiver is dropped; a file that can
    /// no longer be read ends it with the error.
    pub fn spawn(self: Arc<Self>, start: Cursor) -> mpsc::Receiver<Result<Fetched, String>> {
        let (tx, rx) = mpsc::channel(1);
        tokio::task::spawn_blocking(move || {
            if let Err(why) = self.read(start, &tx) {
                let _ = tx.blocking_send(Err(why));
            }
        });
        rx
    }

    /// `Err` for a file that cannot be read; `Ok` when done, or when the receiver is gone.
    fn read(
        &self,
        start: Cursor,
        tx: &mpsc::Sender<Result<Fetched, String>>,
    ) -> Result<(), String> {
        let mut archive = match self.upload.packing {
            Packing::Zip => Some(
                ZipArchive::new(IoCursor::new(self.upload.content.as_slice()))
                    .map_err(|e| format!("the uploaded archive: {e}"))?,
            ),
            Packing::Csv => None,
        };
        let mut cursor = self.settle(start);
        while cursor.stage != Stage::Done {
            let part = &self.parts[cursor.pass];
            let sent = match (&mut archive, part.entry) {
                (Some(archive), Some(entry)) => {
                    let file = archive
                        .by_index(entry)
                        .map_err(|e| format!("the uploaded archive: {e}"))?;
                    self.read_part(part, reader(file.take(MAX_ENTRY_BYTES)), &cursor, tx)?
                }
                _ => self.read_part(part, reader(self.upload.content.as_slice()), &cursor, tx)?,
            };
            match sent {
                Some(next) => cursor = next,
                None => return Ok(()),
            }
        }
        let last = Fetched {
            records: Records::Contacts(Vec::new()),
            next: cursor,
        };
        let _ = tx.blocking_send(Ok(last));
        Ok(())
    }

    /// Sends the pages of one part from `cursor` (its offset: the rows already read); the
    /// cursor after the part, or none when the receiver is gone.
    fn read_part<R: Read>(
        &self,
        part: &Part,
        mut csv: csv::Reader<R>,
        cursor: &Cursor,
        tx: &mpsc::Sender<Result<Fetched, String>>,
    ) -> Result<Option<Cursor>, String> {
        let unreadable = |e: csv::Error| format!("the uploaded file could not be read: {e}");
        let mut skip = csv::ByteRecord::new();
        for _ in 0..cursor.offset {
            if !csv.read_byte_record(&mut skip).map_err(unreadable)? {
                break;
            }
        }
        let mut cursor = cursor.clone();
        let mut row = StringRecord::new();
        loop {
            let mut read = 0usize;
            let mut suppressions = Vec::new();
            let mut contacts = Vec::new();
            let mut ended = false;
            while read < self.page_size {
                let line = csv.position().line();
                match csv.read_record(&mut row) {
                    Ok(true) => {}
                    Ok(false) => {
                        ended = true;
                        break;
                    }
                    Err(e) if matches!(e.kind(), csv::ErrorKind::Utf8 { .. }) => {
                        read += 1;
                        let at = part.at(line);
                        let rejected = Rejected {
                            remote_id: at,
                            why: "not valid UTF-8".to_owned(),
                        };
                        // Counted once, in the stage that reads the row's kind.
                        match cursor.stage {
                            Stage::Contacts if part.columns.has_contacts() => {
                                contacts.push(Err(rejected));
                            }
                            Stage::Suppressions if !part.columns.has_contacts() => {
                                suppressions.push(Err(rejected));
                            }
                            _ => {}
                        }
                        continue;
                    }
                    Err(e) => return Err(unreadable(e)),
                }
                read += 1;
                let line = row.position().map_or(line, csv::Position::line);
                let at = part.at(line);
                match cursor.stage {
                    Stage::Suppressions => {
                        suppressions.extend(part.columns.suppression(&row, &at));
                    }
                    _ => contacts.extend(part.columns.contact(
                        &row,
                        &at,
                        self.source,
                        self.import_id,
                    )),
                }
            }
            let next = if ended {
                self.settle(cursor.next_pass())
            } else {
                cursor.at_offset(cursor.offset + read as u64)
            };
            let records = match cursor.stage {
                Stage::Suppressions => Records::Suppressions(suppressions),
                _ => Records::Contacts(contacts),
            };
            let page = Fetched {
                records,
                next: next.clone(),
            };
            if tx.blocking_send(Ok(page)).is_err() {
                return Ok(None);
            }
            if ended {
                return Ok(Some(next));
            }
            cursor = next;
        }
    }
}
