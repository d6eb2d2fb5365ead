//! Templates: `GET /api/v1/templates` and `POST /api/v1/templates`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::body::{Fields, check_text};
use super::idempotency::{IdempotencyKey, Idempotent};
use crate::AppState;
use crate::db::templates::{self, Filter, NewTemplate};

const ROUTE: &str = "POST /api/v1/templates";
const NAME_MAX: usize = 200;
const BRIEF_MAX: usize = 10_000;
const SUBJECT_MAX: usize = 998;
const CATEGORY_MAX: usize = 100;
const SEARCH_MAX: usize = 200;
const DEFAULT_CATEGORY: &str = "general";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/templates")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    );
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Template {
    pub id: Uuid,
    pub name: String,
    pub brief: String,
    pub subject_hint: Option<String>,
    pub category: String,
    pub tags: Vec<String>,
    pub html: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<templates::Template> for Template {
    fn from(t: templates::Template) -> Self {
        Self {
            id: t.id,
            name: t.name,
            brief: t.brief,
            subject_hint: t.subject_hint,
            category: t.category,
            tags: t.tags,
            html: t.html,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplateFilter {
    /// Only templates of this category (exact match).
    pub category: Option<String>,
    /// Case-insensitive substring of the name or the brief (at most 200 characters).
    pub search: Option<String>,
}

/// List the project's templates, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/templates",
    operation_id = "listTemplates",
    tag = "templates",
    params(TemplateFilter, PageParams),
    responses(
        (status = 200, description = "A page of templates", body = Page<Template>),
        (status = 400, description = "Invalid limit, cursor or search", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: web::Query<PageParams>,
    filter: web::Query<TemplateFilter>,
) -> Result<web::Json<Page<Template>>, ApiError> {
    let limit = page.limit()?;
    let after = page.cursor()?.map(|c| c.0);
    let search = match filter.search.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => Some(check_text("search", s, SEARCH_MAX)?),
    };
    let category = filter
        .category
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let mut conn = store::conn(&state.pool).await?;
    let rows = templates::list(
        &mut conn,
        caller.owner_id,
        &Filter { category, search },
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows: Vec<Template> = rows.into_iter().map(Template::from).collect();
    Ok(web::Json(Page::from_rows(rows, limit, |t| t.id)))
}

/// Unknown fields are ignored.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreateTemplate {
    /// Required, 1..=200 characters.
    pub name: String,
    /// Required, 1..=10,000 characters: what the email is for.
    pub brief: String,
    /// At most 998 characters (the subject limit).
    pub subject_hint: Option<String>,
    /// 1..=100 characters; default `general`.
    #[schema(required = false, default = "general")]
    pub category: String,
    /// Each 1..=100 characters, at most 100; duplicates dropped.
    #[schema(required = false)]
    pub tags: Vec<String>,
    /// The template's HTML, if already written.
    pub html: Option<String>,
}

impl CreateTemplate {
    fn read(body: Value) -> Result<Self, ApiError> {
        let f = Fields::new(body)?;
        Ok(Self {
            name: f.text("name", NAME_MAX)?,
            brief: f.text("brief", BRIEF_MAX)?,
            subject_hint: f.optional_text("subject_hint", SUBJECT_MAX)?,
            category: f
                .optional_text("category", CATEGORY_MAX)?
                .unwrap_or_else(|| DEFAULT_CATEGORY.to_owned()),
            tags: f.tags("tags")?,
            html: f.string("html")?.filter(|h| !h.trim().is_empty()),
        })
    }
}

/// Create a template.
///
/// With an `Idempotency-Key` header, a retry with the same key and body answers the first
/// answer again (header `Idempotent-Replayed: true`); the same key with another body answers
/// 409 `IDEMPOTENCY_KEY_REUSED`. Keys are kept 24 hours.
#[utoipa::path(
    post,
    path = "/api/v1/templates",
    operation_id = "createTemplate",
    tag = "templates",
    request_body = CreateTemplate,
    params(("Idempotency-Key" = Option<String>, Header, description = "1..=255 visible ASCII characters")),
    responses(
        (status = 201, description = "Created (or replayed)", body = Template,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let req = CreateTemplate::read(body.into_inner())?;
    let project_id = caller.owner_id;
    let idempotent = Idempotent::new(project_id, ROUTE, &key, &req)?;
    let mut conn = store::conn(&state.pool).await?;
    let answer = conn
        .transaction::<_, ApiError, _>(async |conn| {
            if let Some(replay) = idempotent.replay(conn).await? {
                return Ok(replay);
            }
            let row = templates::insert(
                conn,
                NewTemplate {
                    id: Uuid::now_v7(),
                    project_id,
                    name: &req.name,
                    brief: &req.brief,
                    subject_hint: req.subject_hint.as_deref(),
                    category: &req.category,
                    tags: &req.tags,
                    html: req.html.as_deref(),
                },
            )
            .await?;
            idempotent
                .answer(conn, StatusCode::CREATED, &Template::from(row))
                .await
        })
        .await?;
    Ok(answer.into_response())
}
