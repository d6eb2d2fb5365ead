//! Campaigns: `GET /api/v1/campaigns` and `POST /api/v1/campaigns` (draft shells; steps,
//! activation and sending come with later routes).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::db::campaigns::{self, Filter, NewCampaign};
use crate::flows;

const ROUTE: &str = "POST /api/v1/campaigns";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/campaigns")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    );
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignType {
    /// A sequence; a site's active drip campaigns are its signup campaigns.
    #[default]
    Drip,
    /// Started by a named event (`trigger_event_name`) fired at `/events`.
    Triggered,
}

impl CampaignType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Drip => "drip",
            Self::Triggered => "triggered",
        }
    }
}

/// `draft` at creation; `active` campaigns enroll contacts; then `paused`, `completed` or
/// `archived`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignStatus {
    Draft,
    Active,
    Paused,
    Completed,
    Archived,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Campaign {
    pub id: Uuid,
    pub name: String,
    pub site_id: Uuid,
    #[serde(rename = "type")]
    pub kind: CampaignType,
    pub status: CampaignStatus,
    /// The event that enrolls contacts in a triggered campaign; null for drip campaigns.
    pub trigger_event_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl TryFrom<campaigns::Campaign> for Campaign {
    type Error = ApiError;

    fn try_from(row: campaigns::Campaign) -> Result<Self, ApiError> {
        Ok(Self {
            kind: parse_name(&row.kind)?,
            status: parse_name(&row.status)?,
            id: row.id,
            name: row.name,
            site_id: row.site_id,
            trigger_event_name: row.trigger_event_name,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

/// A stored type or status as its enum.
fn parse_name<T: serde::de::DeserializeOwned>(name: &str) -> Result<T, ApiError> {
    Ok(serde_json::from_value(Value::String(name.to_owned()))?)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CampaignFilter {
    /// Only this site's campaigns (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only campaigns in this status.
    #[param(inline)]
    pub status: Option<CampaignStatus>,
}

impl Validate for CampaignFilter {}

impl CampaignStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Archived => "archived",
        }
    }
}

/// List the project's campaigns, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns",
    operation_id = "listCampaigns",
    tag = "campaigns",
    params(CampaignFilter, PageParams),
    responses(
        (status = 200, description = "A page of campaigns", body = Page<Campaign>),
        (status = 400, description = "Invalid limit, cursor, site_id or status", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<CampaignFilter>,
) -> Result<web::Json<Page<Campaign>>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let site_id = filter.site_id;
    let status = filter.status.map(CampaignStatus::as_str);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, caller.owner_id, site_id).await?;
    }
    let filter = Filter { site_id, status };
    let rows = campaigns::list(
        &mut conn,
        caller.owner_id,
        &filter,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(Campaign::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(web::Json(Page::from_rows(rows, limit, |c| c.id)))
}

/// The body of `POST /campaigns`: [`CampaignFields`], whose schema says that
/// `trigger_event_name` belongs to triggered campaigns only (ruled: drip campaigns are entered
/// on signup or by enrollment, triggered ones by their event).
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CreateCampaign(pub CampaignFields);

impl utoipa::PartialSchema for CreateCampaign {
    fn schema() -> RefOr<Schema> {
        AllOfBuilder::new()
            .item(CampaignFields::schema())
            .item(trigger_rules())
            .into()
    }
}

impl ToSchema for CreateCampaign {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        CampaignFields::schemas(schemas);
    }
}

/// `drip` (the default) takes no `trigger_event_name`; `triggered` requires one.
fn trigger_rules() -> Schema {
    let drip = ObjectBuilder::new()
        .title(Some("drip"))
        .property("type", enum_of("drip"))
        .property(
            "trigger_event_name",
            ObjectBuilder::new().schema_type(Type::Null),
        );
    let triggered = ObjectBuilder::new()
        .title(Some("triggered"))
        .property("type", enum_of("triggered"))
        .property(
            "trigger_event_name",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(TRIGGER_EVENT_MAX)),
        )
        .required("type")
        .required("trigger_event_name");
    Schema::OneOf(OneOfBuilder::new().item(drip).item(triggered).build())
}

fn enum_of(value: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([value]))
}

const TRIGGER_EVENT_MAX: usize = 200;

/// Unknown fields are ignored.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CampaignFields {
    /// Required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Required: a site of the project (404 otherwise).
    pub site_id: Uuid,
    /// Default `drip`.
    #[serde(rename = "type", default)]
    #[schema(required = false)]
    pub kind: CampaignType,
    /// Required for `triggered` (1..=200 characters, not blank, stored trimmed, matched
    /// exactly by `/events`); must be absent for `drip`.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub trigger_event_name: Option<String>,
}

/// The type rules are the schema's ([`trigger_rules`]), checked before this.
impl Validate for CreateCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        let fields = &mut self.0;
        http_kit::request::trim(&mut fields.name);
        if let Some(event) = &mut fields.trigger_event_name {
            http_kit::request::trim(event);
        }
        Ok(())
    }
}

/// Create a campaign as a draft shell.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns",
    operation_id = "createCampaign",
    tag = "campaigns",
    request_body = CreateCampaign,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed), status `draft`", body = Campaign,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateCampaign>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner().0;
    let project_id = caller.owner_id;
    Idempotent::new(project_id, ROUTE, &key, &req)?
        .create_once(&state.pool, async |conn| {
            flows::require_site(conn, project_id, req.site_id).await?;
            let row = campaigns::insert(
                conn,
                NewCampaign {
                    id: Uuid::now_v7(),
                    project_id,
                    site_id: req.site_id,
                    name: &req.name,
                    kind: req.kind.as_str(),
                    trigger_event_name: req.trigger_event_name.as_deref(),
                },
            )
            .await?;
            Campaign::try_from(row)
        })
        .await
}
