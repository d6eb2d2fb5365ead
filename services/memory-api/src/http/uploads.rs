//! The two-step upload: `POST /ingest/upload` (a file in a multipart form: the preview) and
//! `POST /ingest/upload/confirm` (its rows into a dataset).
//!
//! The file is parsed as it arrives (a blocking reader fed chunk by chunk), so a file that is
//! not CSV, a JSON array or NDJSON is refused at its first bad row; its bytes are kept (at most
//! 10 MiB) with the upload and parsed again, row by row, at confirm, where the rows are coerced
//! and written in batches inside one transaction. An upload expires 24 hours after its preview
//! (then it is gone: 404), and expired uploads are purged by the background pass.

use http_kit::{Route, route};
use std::io::Read;

use actix_multipart::Multipart;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use auth::WriteAccess;
use futures_util::StreamExt as _;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, MAX_UPLOAD_BODY};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use crate::domain::datasets::{FileError, Format, Halt, Inference, NAME_MAX, read_rows};
use crate::http::datasets;
use crate::ops::datasets::DatasetIngestResult;
use crate::ops::uploads::{self as ops, ConfirmUpload, UploadPreview, check_name};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(upload), route!(confirm)];

/// Preview a file: its inferred schema, row count and first five rows; confirm it later.
#[utoipa::path(
    post,
    path = "/api/v1/ingest/upload",
    operation_id = "uploadDataset",
    tag = "ingest",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Parsed and kept for 24 hours: the preview", body = UploadPreview),
        (status = 400, description = "Not a multipart form, no `file` field (or two), a body over 10 MiB (the file) plus 64 KiB (the form), a file that cannot be read as CSV, a JSON array of objects or NDJSON (the message names the row, and the column where there is one), more than 500 columns, or an invalid `dataset_name`", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 409, description = "The owner already has 10 uploads waiting for their confirm (unconfirmed and under 24 hours old), the most allowed (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn upload(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body_max = MAX_UPLOAD_BODY + FORM_OVERHEAD;
    let declared_length = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared_length.is_some_and(|len| len > body_max as u64) {
        return Err(too_large());
    }
    let form = read_form(Multipart::new(req.headers(), payload)).await?;
    let received = form.file.ok_or_else(|| {
        ApiError::invalid_field(
            "file",
            "is required: send the file in the multipart field `file`",
        )
    })?;
    let Received {
        format,
        content,
        inference,
        file_name,
    } = received;
    let inference = inference.map_err(|e| ApiError::invalid_field("file", &e.to_string()))?;
    let dataset_name = form
        .dataset_name
        .or_else(|| file_name.as_deref().and_then(name_of_file))
        .unwrap_or_else(|| "upload".to_owned());
    let preview = ops::stage(
        &state.pool,
        &caller,
        dataset_name,
        format,
        &content,
        inference,
    )
    .await?;
    Ok(HttpResponse::Created().json(preview))
}

/// Confirm an upload: its rows, coerced to the inferred schema with the overrides, go into
/// the dataset.
#[utoipa::path(
    post,
    path = "/api/v1/ingest/upload/confirm",
    operation_id = "confirmUpload",
    tag = "ingest",
    request_body = ConfirmUpload,
    responses(
        (status = 201, description = "Written, all or nothing: every value was coerced to its column's type (see `ColumnSchema`); a row with an `id` replaces the dataset's row of that `id` (an upsert), the others are added; the dataset's schema widens by the written values. The upload is then confirmed and its file dropped.", body = DatasetIngestResult),
        (status = 200, description = "The upload was already confirmed: that confirm's result, `deduplicated: true`, nothing written again", body = DatasetIngestResult),
        (status = 400, description = "A field is invalid, or `schema_overrides` names a column the upload lacks (the message names the field); or values cannot be coerced to their column's type, or an `id` repeats: nothing is written, the upload stays (confirm again with other overrides), and the message names each problem's row (from 1, in file order; a CSV header is not a row) and column, at most 20 of them (`VALIDATION_ERROR`)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such upload of the caller, or its preview was more than 24 hours ago (uploads expire)", body = MemoryError),
        (status = 409, description = "The dataset would have more than 500 columns (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn confirm(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ConfirmUpload>,
) -> Result<HttpResponse, ApiError> {
    ops::confirm(&state.pool, &caller, body.into_inner())
        .await
        .map(datasets::respond)
}

/// What a multipart form may add around the file (its boundaries, part headers and the
/// `dataset_name` field): a body may be this much larger than [`MAX_UPLOAD_BODY`].
const FORM_OVERHEAD: usize = 64 * 1024;

/// Bytes of the form's other fields together.
const OTHER_FIELDS_MAX: usize = 16 * 1024;

/// The multipart form of `POST /ingest/upload`. Other fields are ignored.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file, at most 10 MiB: CSV (UTF-8, a header row naming the columns, comma
    /// separated, RFC 4180 quoting; an empty cell is null), a JSON array of objects, or NDJSON
    /// (one object per line). The format is the part's media type (`text/csv`,
    /// `application/json`, `application/x-ndjson`), else the file name's extension (`.csv`,
    /// `.json`, `.ndjson`/`.jsonl`), else the first character (`[` JSON, `{` NDJSON, anything
    /// else CSV). At most 500 columns (rows are bounded by the size only); column names of 1..=200 characters.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
    /// The dataset the rows are meant for, 1..=120 characters, not blank (confirm may name
    /// another). Default: the file name without its extension, else `upload`.
    #[schema(
        nullable = false,
        min_length = 1,
        max_length = 120,
        pattern = r"[^\s\x85\uFEFF]"
    )]
    pub dataset_name: Option<String>,
}

fn too_large() -> ApiError {
    let mut err = ApiError::payload_too_large(MAX_UPLOAD_BODY + FORM_OVERHEAD);
    err.message = format!(
        "file: exceeds the upload limit of {MAX_UPLOAD_BODY} bytes (10 MiB; the whole form at \
         most {} bytes)",
        MAX_UPLOAD_BODY + FORM_OVERHEAD
    )
    .into();
    err
}

/// A dataset name from a file name: the name without directories and extension, at most
/// 120 characters; `None` when that is blank.
fn name_of_file(file_name: &str) -> Option<String> {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    let stem = match base.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => base,
    };
    let name: String = stem
        .chars()
        .filter(|c| !c.is_control())
        .take(NAME_MAX)
        .collect();
    (!name.trim().is_empty()).then_some(name)
}

/// The received file: its format, bytes and what reading it found.
struct Received {
    format: Format,
    content: Vec<u8>,
    inference: Result<Inference, FileError>,
    file_name: Option<String>,
}

struct Form {
    file: Option<Received>,
    dataset_name: Option<String>,
}

fn form_error(err: &actix_multipart::MultipartError) -> ApiError {
    use actix_multipart::MultipartError as E;
    match err {
        E::ContentTypeMissing
        | E::ContentTypeParse
        | E::ContentTypeIncompatible
        | E::BoundaryMissing => ApiError::invalid_field(
            "body",
            "is required, as multipart/form-data with the file in the field `file`",
        ),
        E::Payload(actix_web::error::PayloadError::Overflow) => too_large(),
        other => {
            ApiError::invalid_field("body", &format!("is not a valid multipart form: {other}"))
        }
    }
}

/// Reads the form: the file (parsed while it arrives) and `dataset_name`. After the first
/// problem the rest of the body is read and dropped (up to its limit), so that the client
/// receives the answer rather than a closed connection.
async fn read_form(mut form: Multipart) -> Result<Form, ApiError> {
    let body_max = MAX_UPLOAD_BODY + FORM_OVERHEAD;
    let mut total = 0usize;
    let mut other = 0usize;
    let mut problem: Option<ApiError> = None;
    let mut out = Form {
        file: None,
        dataset_name: None,
    };
    while let Some(field) = form.next().await {
        let mut field = match field {
            Ok(field) => field,
            Err(e) => return Err(problem.unwrap_or_else(|| form_error(&e))),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let mut file = (name == "file" && problem.is_none()).then(|| FileReader::new(&field));
        if name == "file" && out.file.is_some() {
            file = None;
            problem.get_or_insert_with(|| ApiError::invalid_field("file", "is given twice"));
        }
        let mut text = Vec::new();
        while let Some(chunk) = field.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => return Err(problem.unwrap_or_else(|| form_error(&e))),
            };
            total += chunk.len();
            if total > body_max {
                return Err(too_large());
            }
            if problem.is_some() {
                continue;
            }
            if let Some(reader) = &mut file {
                if let Err(e) = reader.push(chunk).await {
                    problem = Some(e);
                }
                continue;
            }
            other += chunk.len();
            if other > OTHER_FIELDS_MAX {
                problem = Some(ApiError::invalid_field(
                    &name,
                    &format!("the form's fields other than `file` exceed {OTHER_FIELDS_MAX} bytes"),
                ));
            } else if name == "dataset_name" {
                text.extend_from_slice(&chunk);
            }
        }
        if problem.is_some() {
            continue;
        }
        if let Some(reader) = file {
            out.file = Some(reader.finish().await?);
        } else if name == "dataset_name" {
            let value = String::from_utf8(text)
                .map_err(|_| ApiError::invalid_field("dataset_name", "is not UTF-8"));
            match value.and_then(|v| check_name("dataset_name", &v).map(|()| v)) {
                Ok(v) => out.dataset_name = Some(v),
                Err(e) => problem = Some(e),
            }
        }
    }
    match problem {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The file part: its bytes, kept, and handed to a parser on a blocking thread as they come.
struct FileReader {
    declared: Option<Format>,
    file_name: Option<String>,
    content: Vec<u8>,
    parser: Option<Parser>,
}

struct Parser {
    format: Format,
    /// `None` once the parser stopped reading (it found a problem).
    chunks: Option<mpsc::Sender<Bytes>>,
    done: tokio::task::JoinHandle<Result<Inference, FileError>>,
}

impl FileReader {
    fn new(field: &actix_multipart::Field) -> Self {
        let file_name = field
            .content_disposition()
            .and_then(|cd| cd.get_filename())
            .map(str::to_owned);
        let declared = field
            .content_type()
            .and_then(|m| Format::of_media_type(m.essence_str()))
            .or_else(|| file_name.as_deref().and_then(Format::of_file_name));
        Self {
            declared,
            file_name,
            content: Vec::new(),
            parser: None,
        }
    }

    async fn push(&mut self, chunk: Bytes) -> Result<(), ApiError> {
        if self.content.len() + chunk.len() > MAX_UPLOAD_BODY {
            return Err(too_large());
        }
        self.content.extend_from_slice(&chunk);
        let chunk = match &self.parser {
            Some(_) => chunk,
            None => {
                // Until the format is known (sniffed from the first character that is not
                // white space or a byte-order mark), the bytes only wait in `content`.
                let Some(format) = self.declared.or_else(|| sniff(&self.content)) else {
                    return Ok(());
                };
                self.parser = Some(Parser::start(format));
                Bytes::copy_from_slice(&self.content)
            }
        };
        let parser = self.parser.as_mut().expect("started above");
        if let Some(chunks) = &parser.chunks
            && chunks.send(chunk).await.is_err()
        {
            // The parser stopped at a problem: its answer says which.
            parser.chunks = None;
        }
        Ok(())
    }

    async fn finish(mut self) -> Result<Received, ApiError> {
        if self.parser.is_none() {
            // Empty, or only white space: read as what it declares, else as CSV (no rows).
            let format = self.declared.unwrap_or(Format::Csv);
            let mut parser = Parser::start(format);
            if let Some(chunks) = &parser.chunks
                && chunks
                    .send(Bytes::copy_from_slice(&self.content))
                    .await
                    .is_err()
            {
                parser.chunks = None;
            }
            self.parser = Some(parser);
        }
        let Parser {
            format,
            chunks,
            done,
        } = self.parser.expect("started above");
        drop(chunks);
        let inference = done.await.map_err(ApiError::internal)?;
        Ok(Received {
            format,
            content: self.content,
            inference,
            file_name: self.file_name,
        })
    }
}

/// The format the first significant byte names (white space and a UTF-8 byte-order mark
/// skipped); `None` while there is none yet.
fn sniff(content: &[u8]) -> Option<Format> {
    let content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
    content
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .map(|&b| Format::sniff(b))
}

impl Parser {
    fn start(format: Format) -> Self {
        let (tx, rx) = mpsc::channel::<Bytes>(8);
        let done = tokio::task::spawn_blocking(move || {
            let mut inference = Inference::new(format);
            match read_rows(format, ChannelReader::new(rx), &mut inference) {
                Ok(_) => Ok(inference),
                Err(Halt::Invalid(e)) => Err(e),
                Err(Halt::Stop) => Err(FileError::new("could not be read")),
            }
        });
        Self {
            format,
            chunks: Some(tx),
            done,
        }
    }
}

/// A blocking reader of the chunks an async task sends (the end when the sender is dropped).
struct ChannelReader {
    chunks: mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl ChannelReader {
    fn new(chunks: mpsc::Receiver<Bytes>) -> Self {
        Self {
            chunks,
            current: Bytes::new(),
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}
