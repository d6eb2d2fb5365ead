//! Conversions: recording one and attributing it to email (`POST /conversion`), and a
//! conversion as answered (also in a contact's export).

use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::request::trim_optional;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::contacts;
use crate::db::conversions::{self, NewConversion};
use crate::db::scoring;
use crate::domain::error_code::MailErrorCode;
use crate::ops::input::normalize_email;

const DEFAULT_EVENT: &str = "purchase";
const DEFAULT_CURRENCY: &str = "USD";

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ConversionRequest {
    /// Required: a contact of the project (404 `CONTACT_NOT_FOUND` otherwise; conversions do
    /// not create contacts).
    #[schema(format = Email)]
    pub email: String,
    /// Default `purchase` (also when blank); at most 200 characters, trimmed.
    #[serde(default)]
    #[schema(value_type = Option<String>, default = "purchase", max_length = 200)]
    pub event: String,
    /// Default 0; a number from 0 to 1,000,000,000,000 (so that the analytics sums stay within
    /// a double).
    #[serde(default)]
    #[schema(value_type = Option<f64>, default = 0.0, minimum = 0.0, maximum = 1_000_000_000_000.0)]
    pub revenue: f64,
    /// ISO 4217 code, three letters (uppercased); default `USD`.
    #[serde(default)]
    #[schema(value_type = Option<String>, default = "USD", pattern = "^[A-Za-z]{3}$")]
    pub currency: String,
    /// Deduplication key, 1..=200 characters, not blank (trimmed): a second conversion with
    /// the same `order_id` in the project answers 409 `DUPLICATE_ORDER_ID`.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub order_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

impl Validate for ConversionRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        http_kit::request::trim(&mut self.event);
        if self.event.is_empty() {
            DEFAULT_EVENT.clone_into(&mut self.event);
        }
        if self.currency.is_empty() {
            DEFAULT_CURRENCY.clone_into(&mut self.currency);
        }
        self.currency.make_ascii_uppercase();
        trim_optional(&mut self.order_id);
        Ok(())
    }
}

/// Which rule of the cascade attributed the conversion.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttributionRule {
    /// The contact's most recent click within 72 hours.
    Click,
    /// No click: the most recent open within 72 hours.
    Open,
    /// Neither: the most recent email sent to the contact within 7 days.
    Send,
    /// None of them: `email_log_id` and `campaign_id` are null.
    Unattributed,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Conversion {
    pub id: Uuid,
    pub contact_id: Uuid,
    /// The attributed email, null when unattributed.
    pub email_log_id: Option<Uuid>,
    /// The attributed email's campaign, null when unattributed or when that email was
    /// transactional.
    pub campaign_id: Option<Uuid>,
    pub event: String,
    pub revenue: f64,
    pub currency: String,
    pub order_id: Option<String>,
    pub attribution: AttributionRule,
    /// When the conversion was recorded; the attribution windows end here.
    pub attributed_at: DateTime<Utc>,
}

impl From<conversions::Conversion> for Conversion {
    fn from(c: conversions::Conversion) -> Self {
        let attribution = match c.attribution.as_str() {
            "click" => AttributionRule::Click,
            "open" => AttributionRule::Open,
            "send" => AttributionRule::Send,
            _ => AttributionRule::Unattributed,
        };
        Self {
            id: c.id,
            contact_id: c.contact_id,
            email_log_id: c.email_log_id,
            campaign_id: c.campaign_id,
            event: c.event,
            revenue: c.revenue,
            currency: c.currency,
            order_id: c.order_id,
            attribution,
            attributed_at: c.attributed_at,
        }
    }
}

/// Records a conversion of the contact of `req.email` and attributes it to email
/// (`POST /conversion`): 404 `CONTACT_NOT_FOUND` when the project has no such contact, 409
/// `DUPLICATE_ORDER_ID` when its `order_id` was recorded already.
pub async fn record_conversion(
    pool: &Pool,
    project_id: Uuid,
    req: &ConversionRequest,
) -> Result<Conversion, ApiError> {
    let mut conn = store::conn(pool).await?;
    let conversion = conn
        .transaction::<_, ApiError, _>(async |conn| {
            record_conversion_in(conn, project_id, req).await
        })
        .await?;
    Ok(conversion.into())
}

/// [`record_conversion`] in the caller's transaction (a commerce platform's order).
pub async fn record_conversion_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &ConversionRequest,
) -> Result<conversions::Conversion, ApiError> {
    let empty = Value::Object(Default::default());
    let contact = contacts::find_by_email(conn, project_id, &req.email)
        .await?
        .ok_or_else(|| {
            ApiError::not_found("no contact with this email in the project")
                .with_code(MailErrorCode::ContactNotFound)
        })?;
    let at = Utc::now();
    let (rule, touch) = conversions::attribute(conn, project_id, contact.id, at).await?;
    let new = NewConversion {
        project_id,
        contact_id: contact.id,
        email_log_id: touch.map(|(id, _)| id),
        campaign_id: touch.and_then(|(_, campaign)| campaign),
        event: &req.event,
        revenue: req.revenue,
        currency: &req.currency,
        order_id: req.order_id.as_deref(),
        metadata: req.metadata.as_ref().unwrap_or(&empty),
        rule,
        at,
    };
    let conversion = conversions::insert(conn, new).await?.ok_or_else(|| {
        ApiError::conflict("a conversion with this order_id was already recorded")
            .with_code(MailErrorCode::DuplicateOrderId)
            .with_details(serde_json::json!({"field": "order_id"}))
    })?;
    scoring::refresh_contact(conn, project_id, contact.id).await?;
    Ok(conversion)
}
