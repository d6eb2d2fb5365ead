//! The use cases of outbound webhook subscriptions and their secrets.
//!
//! Outbound webhook subscriptions: `GET`/`POST /api/v1/webhook-subscriptions`,
//! `GET`/`PATCH`/`DELETE /api/v1/webhook-subscriptions/{id}`. A subscription names a URL and
//! the events it wants; its `whsec_` secret is shown once, at creation and at each rotation
//! (the secret before a rotation keeps signing for 24 hours, next to the new one).

use chrono::{DateTime, Utc};
use http_kit::request::trim_optional;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::webhook_subscriptions::{self as subscriptions, Changes, NewSubscription};
use crate::domain::error_code::MailErrorCode;

/// An event kind a subscription can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum WebhookEvent {
    #[serde(rename = "campaign.completed")]
    CampaignCompleted,
    #[serde(rename = "email.bounced")]
    EmailBounced,
    #[serde(rename = "email.complained")]
    EmailComplained,
    #[serde(rename = "contact.unsubscribed")]
    ContactUnsubscribed,
    #[serde(rename = "bounce_rate.warning")]
    BounceRateWarning,
    #[serde(rename = "domain.dns_lost")]
    DomainDnsLost,
    #[serde(rename = "approval.requested")]
    ApprovalRequested,
    #[serde(rename = "approval.decided")]
    ApprovalDecided,
}

impl WebhookEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CampaignCompleted => "campaign.completed",
            Self::EmailBounced => "email.bounced",
            Self::EmailComplained => "email.complained",
            Self::ContactUnsubscribed => "contact.unsubscribed",
            Self::BounceRateWarning => "bounce_rate.warning",
            Self::DomainDnsLost => "domain.dns_lost",
            Self::ApprovalRequested => "approval.requested",
            Self::ApprovalDecided => "approval.decided",
        }
    }
}

fn event_names(events: &[WebhookEvent]) -> Vec<String> {
    let mut names: Vec<String> = events.iter().map(|e| e.as_str().to_owned()).collect();
    names.sort();
    names.dedup();
    names
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSubscription {
    pub id: Uuid,
    pub url: String,
    /// The events delivered to it (sorted).
    pub events: Vec<String>,
    pub description: Option<String>,
    /// A disabled subscription gets no new deliveries.
    pub enabled: bool,
    /// Until when the secret before the last rotation still signs (null: no rotation pending).
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The signing secret (`whsec_…`): only in the answer that made it (creation or rotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl From<subscriptions::Subscription> for WebhookSubscription {
    fn from(s: subscriptions::Subscription) -> Self {
        Self {
            id: s.id,
            url: s.url,
            events: s.events,
            description: s.description,
            enabled: s.enabled,
            previous_secret_expires_at: s.previous_expires_at.filter(|at| *at > Utc::now()),
            created_at: s.created_at,
            updated_at: s.updated_at,
            secret: None,
        }
    }
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SubscribeWebhook {
    /// The endpoint: an absolute `http` or `https` URL on the public internet (loopback,
    /// private, link-local and metadata addresses are refused), at most 2,000 characters.
    #[schema(min_length = 1, max_length = 2000)]
    pub url: String,
    /// The events to deliver: 1 to 6 of the six kinds (duplicates ignored).
    #[schema(min_items = 1, max_items = 6)]
    pub events: Vec<WebhookEvent>,
    /// Optional free text, at most 500 characters (trimmed; blank is absent).
    #[schema(max_length = 500)]
    pub description: Option<String>,
}

impl Validate for SubscribeWebhook {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.url = self.url.trim().to_owned();
        trim_optional(&mut self.description);
        Ok(())
    }
}

/// What to change; an absent (or null) field is unchanged. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateWebhookSubscription {
    /// A new endpoint (the rules of creation apply).
    #[schema(min_length = 1, max_length = 2000)]
    pub url: Option<String>,
    /// Replaces the events: 1 to 6 of the six kinds.
    #[schema(min_items = 1, max_items = 6)]
    pub events: Option<Vec<WebhookEvent>>,
    /// At most 500 characters, trimmed; blank clears it.
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// `false` stops new deliveries; `true` resumes them.
    pub enabled: Option<bool>,
    /// `true`: a new secret, shown in this answer once; the current one keeps signing (a
    /// second signature on each request) for 24 hours.
    pub rotate_secret: Option<bool>,
}

impl Validate for UpdateWebhookSubscription {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(url) = &mut self.url {
            *url = url.trim().to_owned();
        }
        if let Some(description) = &mut self.description {
            *description = description.trim().to_owned();
        }
        Ok(())
    }
}

/// A URL a subscription may name, under the deployment's target policy: 400 naming `url`.
fn check_target(state: &AppState, url: &str) -> Result<(), ApiError> {
    delivery::safe_http::check_url(url, state.outbound.target_policy())
        .map(drop)
        .map_err(|e| ApiError::invalid_field("url", &e.to_string()))
}

pub fn subscription_not_found() -> ApiError {
    ApiError::not_found("no such webhook subscription")
        .with_code(MailErrorCode::WebhookSubscriptionNotFound)
}

/// A new secret and its sealed form, bound to the subscription.
fn new_secret(state: &AppState, id: Uuid) -> (String, Vec<u8>) {
    let secret = webhook_signature::Secret::generate();
    let sealed = state
        .kek
        .seal(secret.as_bytes(), &subscriptions::seal_context(id));
    (secret, sealed)
}

/// A page of subscriptions (`GET /webhook-subscriptions`, `list_webhook_subscriptions`).
pub async fn list_subscriptions(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<WebhookSubscription>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = subscriptions::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows.into_iter().map(WebhookSubscription::from).collect();
    Ok(Page::from_rows(rows, limit, |s: &WebhookSubscription| s.id))
}

/// Creates a subscription (`POST /webhook-subscriptions`, `subscribe_webhook`).
pub async fn subscribe(
    state: &AppState,
    project_id: Uuid,
    req: &SubscribeWebhook,
) -> Result<WebhookSubscription, ApiError> {
    check_target(state, &req.url)?;
    let id = Uuid::now_v7();
    let (secret, sealed) = new_secret(state, id);
    let events = event_names(&req.events);
    let mut conn = store::conn(&state.pool).await?;
    let row = subscriptions::insert(
        &mut conn,
        project_id,
        NewSubscription {
            id,
            url: &req.url,
            events: &events,
            description: req.description.as_deref(),
            secret_sealed: sealed,
        },
    )
    .await?;
    let mut answer = WebhookSubscription::from(row);
    answer.secret = Some(secret);
    Ok(answer)
}

pub async fn get_subscription(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<WebhookSubscription, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    subscriptions::get(&mut conn, project_id, id)
        .await?
        .map(WebhookSubscription::from)
        .ok_or_else(subscription_not_found)
}

/// Applies the changes, then the rotation, in one transaction
/// (`PATCH /webhook-subscriptions/{id}`, `update_webhook_subscription`).
pub async fn update_subscription(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &UpdateWebhookSubscription,
) -> Result<WebhookSubscription, ApiError> {
    if let Some(url) = &req.url {
        check_target(state, url)?;
    }
    let changes = Changes {
        url: req.url.clone(),
        events: req.events.as_deref().map(event_names),
        description: req
            .description
            .clone()
            .map(|d| Some(d).filter(|d| !d.is_empty())),
        enabled: req.enabled,
    };
    let rotation = (req.rotate_secret == Some(true)).then(|| new_secret(state, id));
    let row = crate::db::transaction::run(&state.pool, async |conn| {
        if let Some((_, sealed)) = &rotation
            && !subscriptions::rotate(conn, project_id, id, sealed).await?
        {
            return Ok(None);
        }
        let row = if changes_nothing(&changes) {
            subscriptions::get(conn, project_id, id).await?
        } else {
            subscriptions::update(conn, project_id, id, &changes).await?
        };
        Ok::<_, ApiError>(row)
    })
    .await?
    .ok_or_else(subscription_not_found)?;
    let mut answer = WebhookSubscription::from(row);
    answer.secret = rotation.map(|(secret, _)| secret);
    Ok(answer)
}

fn changes_nothing(changes: &Changes) -> bool {
    changes.url.is_none()
        && changes.events.is_none()
        && changes.description.is_none()
        && changes.enabled.is_none()
}

pub async fn delete_subscription(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if subscriptions::delete(&mut conn, project_id, id).await? {
        Ok(())
    } else {
        Err(subscription_not_found())
    }
}
