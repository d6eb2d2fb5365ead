//! Free-form memory: entries recorded (as MIF corpus entries), listed, searched and deleted.

use std::time::Instant;

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Cursor, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db::embeddings;
use crate::db::free_form::{self, Entry, NewEntry};
use crate::db::owner::Owner;
use crate::domain::{mif, search};
use crate::embeddings::{PreviousVector, embed_passage, embed_previous_query, embed_query};
use crate::ops::scope;
use crate::state::AppState;

const LIST_DEFAULT: u32 = 50;

const SEARCH_DEFAULT: u32 = 10;

/// A free-form memory entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct FreeFormEntry {
    pub id: Uuid,
    pub content: String,
    pub tags: Vec<String>,
    pub source: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub created_at: DateTime<Utc>,
}

impl From<Entry> for FreeFormEntry {
    fn from(e: Entry) -> Self {
        Self {
            id: e.id,
            content: e.content,
            tags: e.tags,
            source: e.source,
            metadata: e.metadata,
            created_at: e.created_at,
        }
    }
}

/// The body of `POST /memory/free-form`. Unknown fields are refused (`id` and `created_at`
/// included: they are the service's).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateFreeForm {
    /// 1..=10,000 characters, not blank.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub content: String,
    /// At most 20 tags of 1..=50 characters, not blank (repeats dropped).
    #[schema(schema_with = tags_schema)]
    pub tags: Option<Vec<String>>,
    /// Where it came from, at most 200 characters.
    #[schema(max_length = 200)]
    pub source: Option<String>,
    /// Free-form object, at most 16 KiB as JSON.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FreeFormCreated {
    pub success: bool,
    #[serde(flatten)]
    pub entry: FreeFormEntry,
    /// Whether the embedding was stored in this request (a background pass embeds the others).
    pub embedded: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FreeFormDeleted {
    pub success: bool,
    pub id: Uuid,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FreeFormParams {
    /// Search for this (at most 1,000 characters, trimmed); without it (or blank), entries
    /// are listed oldest first.
    #[param(max_length = 1000)]
    pub q: Option<String>,
    /// 1..=100. Default 50 when listing, 10 when searching.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// Listing only: the `next_cursor` of the previous page; an empty `cursor=` is the first
    /// page.
    #[param(schema_with = http_kit::pagination::cursor_schema)]
    pub cursor: Option<String>,
}

impl Validate for FreeFormParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.q);
        http_kit::request::trim_optional(&mut self.cursor);
        Ok(())
    }
}

fn tags_schema() -> utoipa::openapi::schema::Array {
    http_kit::request::text_list(Some(mif::TAGS_MAX), mif::TAG_MAX)
}

impl Validate for CreateFreeForm {}

/// A page of entries, or search results.
#[derive(Debug, Serialize, ToSchema)]
pub struct FreeFormList {
    pub data: Vec<FreeFormEntry>,
    /// Listing: pass as `cursor` for the next page; null on the last page and when searching.
    pub next_cursor: Option<String>,
    /// Searching: `semantic` when an embedding provider answered, else `keyword`; null when
    /// listing.
    pub search_mode: Option<String>,
    /// Searching: the query; null when listing.
    pub query: Option<String>,
    /// Searching: the server's own measure; null when listing.
    pub latency_ms: Option<u64>,
}

fn fuse(semantic: Vec<Entry>, keyword: Vec<Entry>) -> Vec<Entry> {
    let order = search::fuse(&[
        semantic.iter().map(|e| e.id).collect(),
        keyword.iter().map(|e| e.id).collect(),
    ]);
    let mut by_id: std::collections::HashMap<Uuid, Entry> = semantic
        .into_iter()
        .chain(keyword)
        .map(|e| (e.id, e))
        .collect();
    order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .collect()
}

/// Delete an owned free-form entry.
pub async fn delete(pool: &Pool, caller: &Caller, id: Uuid) -> Result<FreeFormDeleted, ApiError> {
    let mut conn = store::conn(pool).await?;
    let view = scope::view(&mut conn, caller, None).await?;
    if !free_form::delete(&mut conn, view, id).await? {
        return Err(ApiError::not_found("no such free-form entry"));
    }
    Ok(FreeFormDeleted { success: true, id })
}

/// Records a free-form entry of the caller, read as a MIF corpus entry (embedded first, when
/// a provider answers).
pub async fn create(
    state: &AppState,
    caller: &Caller,
    body: CreateFreeForm,
) -> Result<FreeFormCreated, ApiError> {
    // The MIF corpus reading adds what a schema cannot say (the metadata's size in bytes)
    // and drops repeated tags, as an import does.
    let entry = mif::corpus_entry(&serde_json::to_value(body)?, "")
        .map_err(|e| ApiError::invalid_field(&e.path, &e.problem))?;
    // Embedded before a connection is taken (a remote provider may be slow).
    let embedding = embed_passage(state, Owner::of(caller), &entry.content)
        .await
        .map(|v| search::vector_literal(&v));
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, None).await?;
    let stored = free_form::insert(
        &mut conn,
        view,
        NewEntry {
            id: Uuid::now_v7(),
            content: &entry.content,
            tags: &entry.tags,
            source: entry.source.as_deref(),
            metadata: Value::Object(entry.metadata.clone()),
            created_at: Utc::now(),
        },
        embedding.as_deref(),
    )
    .await?;
    Ok(FreeFormCreated {
        success: true,
        entry: stored.into(),
        embedded: embedding.is_some(),
    })
}

/// A page of the caller's free-form entries, or (with `q`) the best matches of a search.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    params: &FreeFormParams,
) -> Result<FreeFormList, ApiError> {
    let started = Instant::now();
    let Some(query) = params.q.as_deref() else {
        let limit = params.limit.unwrap_or(LIST_DEFAULT);
        let after = params
            .cursor
            .as_deref()
            .map(Cursor::decode)
            .transpose()?
            .map(|c| c.0);
        let mut conn = store::conn(&state.pool).await?;
        let view = scope::view(&mut conn, caller, None).await?;
        let rows = free_form::page(&mut conn, view, after, i64::from(limit) + 1).await?;
        let page = http_kit::Page::from_rows(rows, limit, |e| e.id);
        return Ok(FreeFormList {
            data: page.data.into_iter().map(FreeFormEntry::from).collect(),
            next_cursor: page.next_cursor,
            search_mode: None,
            query: None,
            latency_ms: None,
        });
    };
    let limit = params.limit.unwrap_or(SEARCH_DEFAULT);
    let owner = Owner::of(caller);
    let (query_vector, previous) = tokio::join!(
        embed_query(state, owner, query),
        embed_previous_query(state, owner, query)
    );
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, None).await?;
    let candidates = i64::from(limit.max(10) * 2);
    let keyword = embeddings::search_keyword(&mut conn, view, query, None, candidates).await?;
    let (found, mode) = match query_vector {
        Some(vector) => {
            let previous = previous.as_ref().map(PreviousVector::query);
            let semantic =
                embeddings::search_semantic(&mut conn, view, &vector, previous, None, candidates)
                    .await?;
            (fuse(semantic, keyword), "semantic")
        }
        None => (keyword, "keyword"),
    };
    Ok(FreeFormList {
        data: found
            .into_iter()
            .take(limit as usize)
            .map(FreeFormEntry::from)
            .collect(),
        next_cursor: None,
        search_mode: Some(mode.to_owned()),
        query: Some(query.to_owned()),
        latency_ms: Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)),
    })
}
