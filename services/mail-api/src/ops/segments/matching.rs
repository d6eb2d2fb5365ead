//! What rules match: a saved segment's or rules not saved ([`Selection`]), counted and
//! sampled (`POST /segments/preview`), sized (`POST /segments/estimate`), and the contacts a
//! saved segment matches, a page at a time (`GET /segments/{id}/contacts`) or as ids for an
//! enrollment.

use std::borrow::Cow;

use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

use super::{compile_for, stored};
use crate::AppState;
use crate::db::segment_filter::Matches;
use crate::db::segments;
use crate::domain::segment_schema::{SegmentRules, exactly_one_of};
use crate::flows;
use crate::ops::contacts::{Contact, with_sites};

/// Which rules: a saved segment's, or rules not saved (exactly one of them).
pub enum Selection<'a> {
    Saved(Uuid),
    Rules(&'a SegmentRules),
}

/// The matching condition of a selection, checked against the project.
pub(crate) async fn matches_of(
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
