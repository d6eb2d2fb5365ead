//! Templates: a name, a brief and the HTML an email or a campaign step sends; their creation
//! (once per idempotency key), reading, changes and deletion.

use chrono::{DateTime, Utc};
use http_kit::request::{trim, trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::templates::{self, Filter, NewTemplate, TemplateChanges};
use crate::domain::error_code::MailErrorCode;
// The tag list's schema is shared with the contacts' bodies, still with their routes.
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};
use crate::ops::input::{check_template_syntax, tags_schema};

const ROUTE: &str = "POST /api/v1/templates";
const DEFAULT_CATEGORY: &str = "general";

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
    /// Only templates of this category (exact match, trimmed; blank is no filter).
    pub category: Option<String>,
    /// Case-insensitive substring of the name or the brief (at most 200 characters, trimmed;
    /// blank is no filter).
    #[param(max_length = 200)]
    pub search: Option<String>,
}

impl Validate for TemplateFilter {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim_optional(&mut self.category);
        trim_optional(&mut self.search);
        Ok(())
    }
}

/// A page of the project's templates (`GET /templates`, `list_templates`).
pub async fn list_templates(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &TemplateFilter,
) -> Result<Page<Template>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let search = filter.search.as_deref();
    let category = filter.category.as_deref();
    let mut conn = store::conn(&state.pool).await?;
    let rows = templates::list(
        &mut conn,
        project_id,
        &Filter { category, search },
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows: Vec<Template> = rows.into_iter().map(Template::from).collect();
    Ok(Page::from_rows(rows, limit, |t| t.id))
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateTemplate {
    /// Required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Required, 1..=10,000 characters, not blank (stored trimmed): what the email is for.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub brief: String,
    /// At most 998 characters (the subject limit), trimmed; blank is absent. May hold template
    /// syntax (see Personalization): a syntax error is 400 `TEMPLATE_SYNTAX`.
    #[schema(max_length = 998)]
    pub subject_hint: Option<String>,
    /// At most 100 characters, trimmed; default (also when blank) `general`.
    #[serde(default)]
    #[schema(value_type = Option<String>, default = "general", max_length = 100)]
    pub category: String,
    /// Each 1..=100 characters, at most 100; duplicates dropped.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// The template's HTML, if already written (blank is absent). May hold template syntax
    /// (`{{ first_name | default("there") }}`, see Personalization): a syntax error is 400
    /// `TEMPLATE_SYNTAX` naming the line and column.
    pub html: Option<String>,
}

impl Validate for CreateTemplate {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        trim(&mut self.brief);
        trim_optional(&mut self.subject_hint);
        trim(&mut self.category);
        if self.category.is_empty() {
            DEFAULT_CATEGORY.clone_into(&mut self.category);
        }
        trim_and_dedupe(&mut self.tags);
        if self.html.as_deref().is_some_and(|h| h.trim().is_empty()) {
            self.html = None;
        }
        check_template_syntax(&[
            ("subject_hint", self.subject_hint.as_deref()),
            ("html", self.html.as_deref()),
        ])
    }
}

/// Creates a template, once per idempotency key (`POST /templates`, `create_template`).
pub async fn create_template(
    state: &AppState,
    project_id: Uuid,
    key: &IdempotencyKey,
    req: &CreateTemplate,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, ROUTE, key, req)?
        .create(&state.pool, async |conn| {
            insert_template(conn, project_id, req).await
        })
        .await
}

/// [`create_template`] in the caller's transaction.
pub(crate) async fn insert_template(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    req: &CreateTemplate,
) -> Result<Template, ApiError> {
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
    Ok(Template::from(row))
}

pub(crate) fn template_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("template {id} not found"))
        .with_code(MailErrorCode::TemplateNotFound)
}

/// The project's template `id` (`GET /templates/{id}`, `get_template`): 404
/// `TEMPLATE_NOT_FOUND` when it has none of this id (another project's included).
pub async fn get_template(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Template, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    templates::get(&mut conn, project_id, id)
        .await?
        .map(Template::from)
        .ok_or_else(|| template_not_found(id))
}

/// What to change; an absent (or null) field is unchanged. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateTemplate {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// 1..=10,000 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub brief: Option<String>,
    /// At most 998 characters, trimmed; blank clears it.
    #[schema(max_length = 998)]
    pub subject_hint: Option<String>,
    /// At most 100 characters, trimmed; blank sets `general`.
    #[schema(max_length = 100)]
    pub category: Option<String>,
    /// Replaces the tags: each 1..=100 characters, at most 100; duplicates dropped.
    #[schema(schema_with = tags_schema)]
    pub tags: Option<Vec<String>>,
    /// The template's HTML; blank clears it. A template syntax error is 400 `TEMPLATE_SYNTAX`.
    pub html: Option<String>,
}

impl Validate for UpdateTemplate {
    fn validate(&mut self) -> Result<(), ApiError> {
        for text in [
            &mut self.name,
            &mut self.brief,
            &mut self.subject_hint,
            &mut self.category,
        ]
        .into_iter()
        .flatten()
        {
            trim(text);
        }
        if self.category.as_deref() == Some("") {
            self.category = Some(DEFAULT_CATEGORY.to_owned());
        }
        if let Some(tags) = &mut self.tags {
            trim_and_dedupe(tags);
        }
        check_template_syntax(&[
            ("subject_hint", self.subject_hint.as_deref()),
            ("html", self.html.as_deref()),
        ])
    }
}

/// Blank clears an optional text: `Some(None)`.
fn clearing(value: Option<&str>) -> Option<Option<&str>> {
    value.map(|v| Some(v).filter(|v| !v.trim().is_empty()))
}

/// Updates the project's template `id` (`PATCH /templates/{id}`, `update_template`).
pub async fn update_template(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &UpdateTemplate,
) -> Result<Template, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let changes = TemplateChanges {
        name: req.name.as_deref(),
        brief: req.brief.as_deref(),
        subject_hint: clearing(req.subject_hint.as_deref()),
        category: req.category.as_deref(),
        tags: req.tags.as_deref(),
        html: clearing(req.html.as_deref()),
        updated_at: Utc::now(),
    };
    templates::update(&mut conn, project_id, id, changes)
        .await?
        .map(Template::from)
        .ok_or_else(|| template_not_found(id))
}

/// Deletes the project's template `id` (`DELETE /templates/{id}`, `delete_template`); the
/// deleted template. Emails already sent keep what they were sent with (in the email log); a
/// template a campaign step names answers 409 `TEMPLATE_IN_USE`.
pub async fn delete_template(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Template, ApiError> {
    use diesel::result::{DatabaseErrorKind, Error};
    let mut conn = store::conn(&state.pool).await?;
    match templates::delete(&mut conn, project_id, id).await {
        Err(Error::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _)) => Err(
            ApiError::conflict("a campaign step sends this template: change the step first")
                .with_code(MailErrorCode::TemplateInUse),
        ),
        deleted => deleted?
            .map(Template::from)
            .ok_or_else(|| template_not_found(id)),
    }
}
