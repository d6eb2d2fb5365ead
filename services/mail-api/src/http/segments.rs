//! Segments: `GET|POST /api/v1/segments`, `GET|PATCH|DELETE /api/v1/segments/{id}`, the
//! contacts a segment matches (`GET /api/v1/segments/{id}/contacts`), what rules would match
//! before they are saved (`POST /api/v1/segments/preview`, `POST /api/v1/segments/estimate`)
//! and the win-back draft (`GET /api/v1/segments/win-back`). Segments written by the language
//! model from a description are in [`super::segment_description`]. Rules are evaluated when
//! used, never stored as lists, so a segment always reflects the contacts as they are.

use std::borrow::Cow;

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::openapi::MailError;
use http_kit::request::{trim, trim_optional};
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr};
use utoipa::{IntoParams, PartialSchema, ToSchema};
use uuid::Uuid;

use super::contacts::{Contact, with_sites};
use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::db::segment_filter::Matches;
use crate::db::segments::{self, NewSegment, SegmentChanges};
use crate::db::sites;
use crate::domain::segment_rules::Compiled;
use crate::domain::segment_schema::{SegmentRules, exactly_one_of};
use crate::flows;

const ROUTE: &str = "POST /api/v1/segments";

pub fn configure(cfg: &mut web::ServiceConfig) {
    // The fixed paths first: `/segments/{id}` would take them.
    cfg.service(
        web::resource("/segments")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource("/segments/preview").route(web::post().to(preview)))
    .service(web::resource("/segments/estimate").route(web::post().to(estimate)))
    .service(web::resource("/segments/win-back").route(web::get().to(win_back)))
    .service(
        web::resource("/segments/from-description")
            .route(web::post().to(super::segment_description::create)),
    )
    .service(
        web::resource("/segments/{id}")
            .route(web::get().to(get))
            .route(web::patch().to(update))
            .route(web::delete().to(delete)),
    )
    .service(web::resource("/segments/{id}/contacts").route(web::get().to(contacts)));
}

/// How a segment's rules were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SegmentOrigin {
    /// By the caller.
    Rules,
    /// By the language model, from `description` (`POST /segments/from-description`).
    Description,
}

impl SegmentOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rules => "rules",
            Self::Description => "description",
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Segment {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub rules: SegmentRules,
    pub origin: SegmentOrigin,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl TryFrom<segments::Segment> for Segment {
    type Error = ApiError;

    fn try_from(row: segments::Segment) -> Result<Self, ApiError> {
        Ok(Self {
            rules: serde_json::from_value(row.rules)?,
            origin: serde_json::from_value(serde_json::Value::String(row.origin))?,
            id: row.id,
            name: row.name,
            description: row.description,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

fn segment_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("segment {id} not found")).with_code("SEGMENT_NOT_FOUND")
}

/// Rules checked against the project: every site they name must be its own (404
/// `SITE_NOT_FOUND` naming the rule's value otherwise). `at` is where they are in the request.
pub(crate) async fn compile_for(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    rules: &SegmentRules,
    at: &str,
) -> Result<Compiled, ApiError> {
    let compiled = rules.compile(at)?;
    for (path, site) in &compiled.sites {
        if !sites::exists(conn, project_id, *site).await? {
            return Err(flows::site_not_found(*site).with_details(json!({ "field": path })));
        }
    }
    Ok(compiled)
}

// ---- Create, read, update, delete --------------------------------------------------------

/// Unknown fields are refused, here and inside `rules`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateSegment {
    /// Required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// What the segment is for, at most 2,000 characters, trimmed; blank is absent.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    pub rules: SegmentRules,
}

impl Validate for CreateSegment {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        trim_optional(&mut self.description);
        self.rules.compile("rules").map(drop)
    }
}

/// Creates a segment (`POST /segments`, `create_segment`; with `origin` description, the
/// model's segments).
pub async fn insert_segment(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &CreateSegment,
    origin: SegmentOrigin,
) -> Result<Segment, ApiError> {
    compile_for(conn, project_id, &req.rules, "rules").await?;
    let row = segments::insert(
        conn,
        NewSegment {
            id: Uuid::now_v7(),
            project_id,
            name: &req.name,
            description: req.description.as_deref(),
            rules: &req.rules.to_json(),
            origin: origin.as_str(),
        },
    )
    .await?;
    Segment::try_from(row)
}

/// Create a segment: named rules over the project's contacts.
#[utoipa::path(
    post,
    path = "/api/v1/segments",
    operation_id = "createSegment",
    tag = "segments",
    request_body = CreateSegment,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed)", body = Segment,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "A missing or invalid field or rule, named by its path in the message and in `details.field` (`rules.any[1].op`); more than 100 conditions (`rules`); a bad Idempotency-Key; or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "A `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`, `details.field` names the rule's value)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateSegment>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    Idempotent::new(project_id, ROUTE, &key, &req)?
        .create_once(&state.pool, async |conn| {
            insert_segment(conn, project_id, &req, SegmentOrigin::Rules).await
        })
        .await
}

/// A page of the project's segments, oldest first (`GET /segments`, `list_segments`).
pub async fn list_segments(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<Segment>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = segments::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(Segment::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// List the project's segments, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/segments",
    operation_id = "listSegments",
    tag = "segments",
    params(PageParams),
    responses(
        (status = 200, description = "A page of segments", body = Page<Segment>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Segment>>, ApiError> {
    list_segments(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

async fn stored(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> Result<Segment, ApiError> {
    segments::get(conn, project_id, id)
        .await?
        .ok_or_else(|| segment_not_found(id))
        .and_then(Segment::try_from)
}

/// The project's segment `id` (`GET /segments/{id}`): 404 `SEGMENT_NOT_FOUND` otherwise.
pub async fn get_segment(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Segment, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    stored(&mut conn, project_id, id).await
}

/// One segment, with its rules.
#[utoipa::path(
    get,
    path = "/api/v1/segments/{id}",
    operation_id = "getSegment",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id")),
    responses(
        (status = 200, description = "The segment", body = Segment),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a segment of this project (`SEGMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Segment>, ApiError> {
    get_segment(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// What to change; an absent (or null) field is unchanged. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateSegment {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// At most 2,000 characters, trimmed; blank clears it.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Replaces the rules (the segment's origin becomes `rules`).
    pub rules: Option<SegmentRules>,
}

impl Validate for UpdateSegment {
    fn validate(&mut self) -> Result<(), ApiError> {
        for text in [&mut self.name, &mut self.description]
            .into_iter()
            .flatten()
        {
            trim(text);
        }
        match &self.rules {
            Some(rules) => rules.compile("rules").map(drop),
            None => Ok(()),
        }
    }
}

/// Updates the project's segment `id` (`PATCH /segments/{id}`, `update_segment`).
pub async fn update_segment(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &UpdateSegment,
) -> Result<Segment, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let rules = match &req.rules {
        Some(rules) => {
            compile_for(&mut conn, project_id, rules, "rules").await?;
            Some(rules.to_json())
        }
        None => None,
    };
    let changes = SegmentChanges {
        name: req.name.as_deref(),
        description: req
            .description
            .as_deref()
            .map(|d| Some(d).filter(|d| !d.is_empty())),
        rules: rules.as_ref(),
        origin: rules.as_ref().map(|_| SegmentOrigin::Rules.as_str()),
        updated_at: Utc::now(),
    };
    segments::update(&mut conn, project_id, id, changes)
        .await?
        .ok_or_else(|| segment_not_found(id))
        .and_then(Segment::try_from)
}

/// Change a segment's name, description or rules.
#[utoipa::path(
    patch,
    path = "/api/v1/segments/{id}",
    operation_id = "updateSegment",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id")),
    request_body = UpdateSegment,
    responses(
        (status = 200, description = "The segment as updated", body = Segment),
        (status = 400, description = "`id` is not a UUID, an invalid field or rule (`details.field` names its path), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a segment of this project (`SEGMENT_NOT_FOUND`), or a `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateSegment>,
) -> Result<web::Json<Segment>, ApiError> {
    update_segment(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Deletes the project's segment `id` (`DELETE /segments/{id}`, `delete_segment`): the
/// deleted segment. Its contacts are not touched.
pub async fn delete_segment(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Segment, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    segments::delete(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| segment_not_found(id))
        .and_then(Segment::try_from)
}

/// Delete a segment. Only the rules go: no contact is changed.
#[utoipa::path(
    delete,
    path = "/api/v1/segments/{id}",
    operation_id = "deleteSegment",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a segment of this project, or deleted already (`SEGMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_segment(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

// ---- The contacts rules match ------------------------------------------------------------

/// Which rules: a saved segment's, or rules not saved (exactly one of them).
pub enum Selection<'a> {
    Saved(Uuid),
    Rules(&'a SegmentRules),
}

/// The matching condition of a selection, checked against the project.
async fn matches_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    selection: Selection<'_>,
) -> Result<Matches, ApiError> {
    let compiled = match selection {
        Selection::Saved(id) => stored(conn, project_id, id).await?.rules.compile("rules")?,
        Selection::Rules(rules) => compile_for(conn, project_id, rules, "rules").await?,
    };
    Ok(Matches::new(project_id, &compiled.predicate))
}

/// A body naming a saved segment (`segment_id`) or rules (`rules`), exactly one of them,
/// with the other fields of `T`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OneSegment<T>(pub T);

impl<T: ToSchema> PartialSchema for OneSegment<T> {
    fn schema() -> RefOr<Schema> {
        let id = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)));
        let rules = ObjectBuilder::new().schema_type(Type::Object);
        exactly_one_of(T::schema(), ("segment_id", id), ("rules", rules)).into()
    }
}

impl<T: ToSchema> ToSchema for OneSegment<T> {
    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        T::schemas(schemas);
    }
}

impl<T: Validate> Validate for OneSegment<T> {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.0.validate()
    }
}

/// A saved segment or rules (the schema of [`OneSegment`] lets exactly one through).
fn selection(
    segment_id: Option<Uuid>,
    rules: Option<&SegmentRules>,
) -> Result<Selection<'_>, ApiError> {
    match (segment_id, rules) {
        (Some(id), None) => Ok(Selection::Saved(id)),
        (None, Some(rules)) => Ok(Selection::Rules(rules)),
        _ => Err(ApiError::invalid_field(
            "segment_id",
            "give exactly one of segment_id and rules",
        )),
    }
}

fn segment_id_schema() -> Schema {
    http_kit::request::nullable_format(
        KnownFormat::Uuid,
        "A segment of the project (404 `SEGMENT_NOT_FOUND` otherwise); or give `rules`.",
    )
}

fn check_rules(rules: Option<&SegmentRules>) -> Result<(), ApiError> {
    rules.map_or(Ok(()), |r| r.compile("rules").map(drop))
}

const SAMPLE_DEFAULT: u32 = 10;

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[schema(as = PreviewSegment)]
pub struct PreviewFields {
    #[schema(schema_with = segment_id_schema)]
    pub segment_id: Option<Uuid>,
    /// Rules not saved; or give `segment_id`.
    pub rules: Option<SegmentRules>,
    /// Matching contacts shown, oldest first, 0..=50 (default 10).
    #[schema(minimum = 0, maximum = 50)]
    pub sample_size: Option<u32>,
}

impl Validate for PreviewFields {
    fn validate(&mut self) -> Result<(), ApiError> {
        check_rules(self.rules.as_ref())
    }
}

pub type PreviewSegment = OneSegment<PreviewFields>;

#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentPreview {
    /// The project's contacts the rules match now.
    pub count: i64,
    /// The first of them, oldest first.
    pub sample: Vec<Contact>,
}

/// How many contacts a segment or rules match, and the first of them (`POST
/// /segments/preview`, `preview_segment`).
pub async fn preview_segment(
    state: &AppState,
    project_id: Uuid,
    req: &PreviewFields,
) -> Result<SegmentPreview, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let matches = matches_of(
        &mut conn,
        project_id,
        selection(req.segment_id, req.rules.as_ref())?,
    )
    .await?;
    let (count, _) = segments::sizes(&mut conn, matches.clone(), None).await?;
    let size = req.sample_size.unwrap_or(SAMPLE_DEFAULT);
    let rows = if size == 0 {
        Vec::new()
    } else {
        segments::contacts_page(&mut conn, matches, None, i64::from(size)).await?
    };
    Ok(SegmentPreview {
        count,
        sample: with_sites(&mut conn, rows).await?,
    })
}

/// Preview a segment, saved or not: how many contacts it matches and the first of them.
/// Nothing is stored.
#[utoipa::path(
    post,
    path = "/api/v1/segments/preview",
    operation_id = "previewSegment",
    tag = "segments",
    request_body = PreviewSegment,
    responses(
        (status = 200, description = "The count and a sample", body = SegmentPreview),
        (status = 400, description = "Neither or both of `segment_id` and `rules`, or an invalid field or rule (`details.field` names its path)", body = MailError),
        (status = 404, description = "`segment_id` is not a segment of this project (`SEGMENT_NOT_FOUND`), or a `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn preview(
    caller: Caller,
    state: web::Data<AppState>,
    body: http_kit::Json<PreviewSegment>,
) -> Result<web::Json<SegmentPreview>, ApiError> {
    preview_segment(&state, caller.owner_id, &body.0.0)
        .await
        .map(web::Json)
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[schema(as = EstimateSegmentSize)]
pub struct EstimateFields {
    #[schema(schema_with = segment_id_schema)]
    pub segment_id: Option<Uuid>,
    /// Rules not saved; or give `segment_id`.
    pub rules: Option<SegmentRules>,
    #[schema(schema_with = estimate_site_schema)]
    pub site_id: Option<Uuid>,
}

fn estimate_site_schema() -> Schema {
    http_kit::request::nullable_format(
        KnownFormat::Uuid,
        "The site a campaign would send from (404 `SITE_NOT_FOUND` when not the project's): \
         `sendable` then counts only contacts subscribed to it.",
    )
}

impl Validate for EstimateFields {
    fn validate(&mut self) -> Result<(), ApiError> {
        check_rules(self.rules.as_ref())
    }
}

pub type EstimateSegmentSize = OneSegment<EstimateFields>;

#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentSize {
    /// The project's contacts the rules match now.
    pub contacts: i64,
    /// Of those, the ones mail could go to: not suppressed (bounced, complained,
    /// unsubscribed or suppressed by hand), and subscribed to `site_id` when it is given.
    pub sendable: i64,
    pub site_id: Option<Uuid>,
}

/// The size of a segment or of rules (`POST /segments/estimate`, `estimate_segment_size`).
pub async fn estimate_segment_size(
    state: &AppState,
    project_id: Uuid,
    req: &EstimateFields,
) -> Result<SegmentSize, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site) = req.site_id {
        flows::require_site(&mut conn, project_id, site).await?;
    }
    let matches = matches_of(
        &mut conn,
        project_id,
        selection(req.segment_id, req.rules.as_ref())?,
    )
    .await?;
    let (contacts, sendable) = segments::sizes(&mut conn, matches, req.site_id).await?;
    Ok(SegmentSize {
        contacts,
        sendable,
        site_id: req.site_id,
    })
}

/// How many contacts a segment (saved or not) matches, and how many of them mail could go
/// to. Counted exactly, now. Nothing is stored.
#[utoipa::path(
    post,
    path = "/api/v1/segments/estimate",
    operation_id = "estimateSegmentSize",
    tag = "segments",
    request_body = EstimateSegmentSize,
    responses(
        (status = 200, description = "The counts", body = SegmentSize),
        (status = 400, description = "Neither or both of `segment_id` and `rules`, or an invalid field or rule (`details.field` names its path)", body = MailError),
        (status = 404, description = "`segment_id` is not a segment of this project (`SEGMENT_NOT_FOUND`), or `site_id` or a `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn estimate(
    caller: Caller,
    state: web::Data<AppState>,
    body: http_kit::Json<EstimateSegmentSize>,
) -> Result<web::Json<SegmentSize>, ApiError> {
    estimate_segment_size(&state, caller.owner_id, &body.0.0)
        .await
        .map(web::Json)
}

/// A page of the contacts a saved segment matches now, oldest first (`GET
/// /segments/{id}/contacts`, `list_subscribers_by_segment`).
pub async fn segment_contacts(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    page: &PageParams,
) -> Result<Page<Contact>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let matches = matches_of(&mut conn, project_id, Selection::Saved(id)).await?;
    let rows = segments::contacts_page(&mut conn, matches, after, i64::from(limit) + 1).await?;
    let rows = with_sites(&mut conn, rows).await?;
    Ok(Page::from_rows(rows, limit, |c| c.contact_id))
}

/// The contacts a segment matches now, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/segments/{id}/contacts",
    operation_id = "listSegmentContacts",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id"), PageParams),
    responses(
        (status = 200, description = "A page of contacts", body = Page<Contact>),
        (status = 400, description = "`id` is not a UUID, or an invalid limit or cursor", body = MailError),
        (status = 404, description = "Not a segment of this project (`SEGMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn contacts(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Contact>>, ApiError> {
    segment_contacts(&state, caller.owner_id, *id, &page)
        .await
        .map(web::Json)
}

/// Up to `limit` ids of the contacts the project's segment `segment_id` matches now, after
/// `after`, in id order: the audience a campaign enrolls, a page at a time (the last page is
/// shorter than `limit`). 404 `SEGMENT_NOT_FOUND` when it is not the project's.
pub async fn segment_contact_ids(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    segment_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<Uuid>, ApiError> {
    let matches = matches_of(conn, project_id, Selection::Saved(segment_id)).await?;
    Ok(segments::contact_ids(conn, matches, after, limit).await?)
}

// ---- Win-back ----------------------------------------------------------------------------

const WIN_BACK_DAYS: i64 = 90;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WinBackQuery {
    /// The site whose lapsed subscribers to win back (404 `SITE_NOT_FOUND` when not the
    /// project's).
    pub site_id: Uuid,
    /// Engagement older than this many days counts as lapsed, 1..=3650 (default 90).
    #[param(minimum = 1, maximum = 3650)]
    pub inactive_days: Option<i64>,
}

impl Validate for WinBackQuery {}

/// What a win-back segment of a site targets: subscribers of the site who opened or clicked
/// an email once, but not within `inactive_days`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WinBackDraft {
    pub site_id: Uuid,
    pub inactive_days: i64,
    /// The segment's rules, ready for `POST /segments` (nothing is saved here).
    pub rules: SegmentRules,
    /// The contacts they match now.
    pub total: i64,
    /// A page of them, oldest first.
    pub data: Vec<Contact>,
    pub next_cursor: Option<String>,
}

/// The rules of a site's win-back segment.
fn win_back_rules(site_id: Uuid, days: i64) -> Result<SegmentRules, ApiError> {
    Ok(serde_json::from_value(json!({"all": [
        {"field": "site_id", "op": "eq", "value": site_id},
        {"field": "opened_within_days", "op": "exists", "value": true},
        {"field": "opened_within_days", "op": "neq", "value": days},
    ]}))?)
}

/// The win-back draft of a site (`GET /segments/win-back`, `list_win_back_draft`).
pub async fn win_back_draft(
    state: &AppState,
    project_id: Uuid,
    query: &WinBackQuery,
    page: &PageParams,
) -> Result<WinBackDraft, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let days = query.inactive_days.unwrap_or(WIN_BACK_DAYS);
    let rules = win_back_rules(query.site_id, days)?;
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, query.site_id).await?;
    let matches = matches_of(&mut conn, project_id, Selection::Rules(&rules)).await?;
    let (total, _) = segments::sizes(&mut conn, matches.clone(), None).await?;
    let rows = segments::contacts_page(&mut conn, matches, after, i64::from(limit) + 1).await?;
    let page = Page::from_rows(with_sites(&mut conn, rows).await?, limit, |c| c.contact_id);
    Ok(WinBackDraft {
        site_id: query.site_id,
        inactive_days: days,
        rules,
        total,
        data: page.data,
        next_cursor: page.next_cursor,
    })
}

/// The contacts a site's win-back segment would target (subscribers who opened or clicked
/// once, but not within `inactive_days`), with the segment's rules to save it.
#[utoipa::path(
    get,
    path = "/api/v1/segments/win-back",
    operation_id = "winBackDraft",
    tag = "segments",
    params(WinBackQuery, PageParams),
    responses(
        (status = 200, description = "The draft: rules, total and a page of contacts", body = WinBackDraft),
        (status = 400, description = "A missing or invalid site_id, inactive_days, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn win_back(
    caller: Caller,
    state: web::Data<AppState>,
    query: Query<WinBackQuery>,
    page: Query<PageParams>,
) -> Result<web::Json<WinBackDraft>, ApiError> {
    win_back_draft(&state, caller.owner_id, &query, &page)
        .await
        .map(web::Json)
}
