//! Commerce platforms (Stripe, Shopify) whose signed webhooks become contact events: the
//! project's sources (`POST`/`GET /platforms/commerce`, `DELETE /platforms/commerce/{id}`;
//! the endpoint secret stored sealed, never answered), the triggers mapping a platform event
//! type to an action ([`triggers`]), the webhooks received ([`receive`]) and their log
//! ([`events`]).

pub mod events;
mod payload;
pub mod receive;
mod signature;
pub mod triggers;

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Page, PageParams, Validate};
use secrets::Kek;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::commerce::{self, Source};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// A commerce platform whose webhooks a project receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommercePlatform {
    /// Stripe: `Stripe-Signature` over `{t}.{body}`, events by their `evt_…` id.
    Stripe,
    /// Shopify: `X-Shopify-Hmac-Sha256` over the body, events by `X-Shopify-Webhook-Id`.
    Shopify,
}

impl CommercePlatform {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::Shopify => "shopify",
        }
    }

    pub(crate) fn parse(stored: &str) -> Result<Self, ApiError> {
        [Self::Stripe, Self::Shopify]
            .into_iter()
            .find(|p| p.as_str() == stored)
            .ok_or_else(|| ApiError::internal(format!("stored commerce platform {stored:?}")))
    }
}

pub fn source_not_found() -> ApiError {
    ApiError::not_found("no such commerce source").with_code(MailErrorCode::CommerceSourceNotFound)
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AddCommerceSource {
    pub platform: CommercePlatform,
    /// The webhook endpoint's signing secret (Stripe's `whsec_…`, Shopify's app client
    /// secret); stored sealed, never answered. 1..=500 characters without spaces.
    #[schema(min_length = 1, max_length = 500, pattern = r"^[^\s\x85\uFEFF]+$")]
    pub signing_secret: String,
    /// The site the events' contacts are found or created on (404 `SITE_NOT_FOUND` when it
    /// is not a site of the project).
    pub site_id: Uuid,
}

impl Validate for AddCommerceSource {}

/// A commerce source (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct CommerceSource {
    pub id: Uuid,
    pub platform: CommercePlatform,
    pub site_id: Uuid,
    /// Where the platform posts its webhooks, relative to the API's address:
    /// `/api/webhooks/{platform}/{id}`.
    pub webhook_path: String,
    pub created_at: DateTime<Utc>,
}

impl CommerceSource {
    fn new(row: Source) -> Result<Self, ApiError> {
        let platform = CommercePlatform::parse(&row.platform)?;
        Ok(Self {
            webhook_path: format!("/api/webhooks/{}/{}", platform.as_str(), row.id),
            id: row.id,
            platform,
            site_id: row.site_id,
            created_at: row.created_at,
        })
    }
}

/// Registers a commerce source (`POST /platforms/commerce`, run once per `Idempotency-Key`):
/// its secret sealed.
pub async fn add_commerce_source(
    conn: &mut AsyncPgConnection,
    kek: &Kek,
    project_id: Uuid,
    req: &AddCommerceSource,
) -> Result<CommerceSource, ApiError> {
    flows::require_site(conn, project_id, req.site_id).await?;
    let id = Uuid::now_v7();
    let row = Source {
        id,
        project_id,
        platform: req.platform.as_str().to_owned(),
        site_id: req.site_id,
        signing_secret_sealed: commerce::seal_secret(kek, project_id, id, &req.signing_secret),
        created_at: Utc::now(),
    };
    commerce::insert_source(conn, &row).await?;
    CommerceSource::new(row)
}

/// A page of the project's commerce sources, oldest first (`GET /platforms/commerce`).
pub async fn list_commerce_sources(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<CommerceSource>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = commerce::list_sources(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(CommerceSource::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// Forgets a commerce source and its sealed secret (`DELETE /platforms/commerce/{id}`): its
/// webhooks are refused from then on; its logged events stay.
pub async fn delete_commerce_source(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if !commerce::delete_source(&mut conn, project_id, id).await? {
        return Err(source_not_found());
    }
    Ok(())
}
