//! Segments: named rules over a project's contacts, evaluated when used, never stored as
//! lists. Here a segment as answered and its creation, reading, update and deletion; what
//! rules match in [`matching`], the win-back draft in [`win_back`], and segments the
//! language model writes from a description in [`description`].

pub mod description;
pub mod matching;
pub mod win_back;

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::request::{trim, trim_optional};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

pub use description::{DescribeSegment, create_segment_from_description, describe_segment};
pub use matching::{
    EstimateFields, EstimateSegmentSize, OneSegment, PreviewFields, PreviewSegment, SegmentPreview,
    SegmentSize, Selection, estimate_segment_size, preview_segment, segment_contact_ids,
    segment_contacts,
};
pub use win_back::{WinBackDraft, WinBackQuery, win_back_draft};

use crate::AppState;
use crate::db::segments::{self, NewSegment, SegmentChanges};
use crate::db::sites;
use crate::domain::error_code::MailErrorCode;
use crate::domain::segment_rules::Compiled;
use crate::domain::segment_schema::SegmentRules;
use crate::flows;

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
    ApiError::not_found(format!("segment {id} not found")).with_code(MailErrorCode::SegmentNotFound)
}

/// A site a rule names that is not the project's: where the rule's value is, and the site.
#[derive(Debug, Clone)]
pub struct ForeignSite {
    pub path: String,
    pub site_id: Uuid,
}

impl From<ForeignSite> for ApiError {
    fn from(foreign: ForeignSite) -> Self {
        flows::site_not_found(foreign.site_id).with_details(json!({ "field": foreign.path }))
    }
}

/// The first site the compiled rules name that is not the project's, if any.
pub(crate) async fn foreign_site(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    compiled: &Compiled,
) -> Result<Option<ForeignSite>, ApiError> {
    for (path, site) in &compiled.sites {
        if !sites::exists(conn, project_id, *site).await? {
            return Ok(Some(ForeignSite {
                path: path.clone(),
                site_id: *site,
            }));
        }
    }
    Ok(None)
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
    if let Some(foreign) = foreign_site(conn, project_id, &compiled).await? {
        return Err(foreign.into());
    }
    Ok(compiled)
}

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

/// `create_segment`: [`insert_segment`] (origin `rules`) on a connection of its own.
pub async fn create_segment(
    state: &AppState,
    project_id: Uuid,
    req: &CreateSegment,
) -> Result<Segment, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    insert_segment(&mut conn, project_id, req, SegmentOrigin::Rules).await
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

/// The project's segment `id` on `conn`: 404 `SEGMENT_NOT_FOUND` otherwise.
pub(crate) async fn stored(
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
