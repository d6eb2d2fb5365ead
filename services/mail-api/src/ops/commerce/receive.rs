//! A commerce platform's webhook (`POST /api/webhooks/stripe/{source_id}`,
//! `POST /api/webhooks/shopify/{source_id}`): the signature is checked over the raw body with
//! the source's sealed secret (missing, wrong or stale: 401), the event is read from its
//! documented shape, then recorded and applied in one transaction: the `platform_events` row
//! (unique per project, platform and event id, so a replay does nothing) and every matching
//! trigger's action on the contact the event names, found or created on the source's site.
//! An event that cannot be applied (no address, the plan's contact limit, a campaign that no
//! longer enrolls) is recorded `failed` with nothing applied; a database failure records
//! nothing and answers 500, so the platform delivers it again.

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Validate as _};
use rate_limit::policy::Plan;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::events::{AppliedAction, EventOutcome};
use super::payload::{self, CommerceEvent, Malformed};
use super::signature::{self, Refused};
use super::triggers::TriggerAction;
use super::{CommercePlatform, source_not_found};
use crate::AppState;
use crate::db::commerce::{self, PlatformEvent, Source, Trigger};
use crate::db::enrollments::EnrollSource;
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::contacts::create::{IdentifyRequest, identify_in};
use crate::ops::conversions::{ConversionRequest, record_conversion_in};

/// The headers a platform's webhook carries (absent ones are `None`).
pub struct WebhookHeaders<'a> {
    /// `Stripe-Signature` or `X-Shopify-Hmac-Sha256`.
    pub signature: Option<&'a str>,
    /// Shopify's `X-Shopify-Topic`.
    pub topic: Option<&'a str>,
    /// Shopify's `X-Shopify-Webhook-Id`.
    pub webhook_id: Option<&'a str>,
}

/// What became of a webhook received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptStatus {
    Applied,
    NoTrigger,
    Failed,
    /// This event id was received before: nothing was done.
    Duplicate,
}

impl From<EventOutcome> for ReceiptStatus {
    fn from(outcome: EventOutcome) -> Self {
        match outcome {
            EventOutcome::Applied => Self::Applied,
            EventOutcome::NoTrigger => Self::NoTrigger,
            EventOutcome::Failed => Self::Failed,
        }
    }
}

/// The answer to a verified webhook (200 whatever it did: the platform need not retry).
#[derive(Debug, Serialize, ToSchema)]
pub struct CommerceWebhookAnswer {
    pub status: ReceiptStatus,
    /// The platform's event id.
    pub event_id: String,
}

fn invalid_signature(why: &'static str) -> ApiError {
    ApiError::unauthorized(why).with_code(MailErrorCode::InvalidSignature)
}

/// Verifies, reads and applies one webhook of `platform` for the source `source_id`.
pub async fn receive_commerce_webhook(
    state: &AppState,
    platform: CommercePlatform,
    source_id: &str,
    headers: &WebhookHeaders<'_>,
    body: &[u8],
) -> Result<CommerceWebhookAnswer, ApiError> {
    let Some(signature) = headers.signature else {
        return Err(invalid_signature("missing signature header"));
    };
    // A source id that is not a UUID names no source.
    let source_id = Uuid::parse_str(source_id).map_err(|_| source_not_found())?;
    let mut conn = store::conn(&state.pool).await?;
    let source = commerce::find_source(&mut conn, source_id)
        .await?
        .filter(|s| s.platform == platform.as_str())
        .ok_or_else(source_not_found)?;
    let secret = commerce::open_secret(&state.kek, &source).map_err(ApiError::internal)?;
    let verified = match platform {
        CommercePlatform::Stripe => {
            signature::verify_stripe(&secret, signature, body, chrono::Utc::now().timestamp())
        }
        CommercePlatform::Shopify => signature::verify_shopify(&secret, signature, body),
    };
    match verified {
        Ok(()) => {}
        Err(Refused::Wrong) => return Err(invalid_signature("wrong signature")),
        Err(Refused::Stale) => {
            return Err(invalid_signature(
                "stale signature: its timestamp is older than 300 seconds",
            ));
        }
    }
    let json: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::bad_request("the body is not JSON"))?;
    let event = match platform {
        CommercePlatform::Stripe => payload::stripe(&json),
        CommercePlatform::Shopify => payload::shopify(headers.topic, headers.webhook_id, &json),
    }
    .map_err(|Malformed { field, problem }| ApiError::invalid_field(field, problem))?;
    let status = record_and_apply(&mut conn, &source, platform, &event).await?;
    tracing::info!(
        platform = platform.as_str(),
        event_type = %event.event_type,
        status = ?status,
        "commerce webhook received"
    );
    Ok(CommerceWebhookAnswer {
        status,
        event_id: event.event_id,
    })
}

/// Claims the event id and applies the matching triggers, in one transaction; an action
/// refused (a 4xx) rolls its savepoint back and records the event `failed`.
async fn record_and_apply(
    conn: &mut AsyncPgConnection,
    source: &Source,
    platform: CommercePlatform,
    event: &CommerceEvent,
) -> Result<ReceiptStatus, ApiError> {
    let project_id = source.project_id;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let row = PlatformEvent {
            id: Uuid::now_v7(),
            project_id,
            source_id: source.id,
            platform: platform.as_str().to_owned(),
            event_type: event.event_type.clone(),
            event_id: event.event_id.clone(),
            contact_id: None,
            outcome: EventOutcome::NoTrigger.as_str().to_owned(),
            actions: json!([]),
            error: None,
            received_at: chrono::Utc::now(),
        };
        if !commerce::insert_event(conn, &row).await? {
            return Ok(ReceiptStatus::Duplicate);
        }
        let triggers =
            commerce::matching_triggers(conn, project_id, platform.as_str(), &event.event_type)
                .await?;
        if triggers.is_empty() {
            return Ok(ReceiptStatus::NoTrigger);
        }
        let applied = conn
            .transaction::<_, ApiError, _>(async |conn| {
                apply(conn, source, platform, event, &triggers).await
            })
            .await;
        match applied {
            Ok((contact_id, actions)) => {
                let actions = serde_json::to_value(actions).map_err(ApiError::internal)?;
                commerce::set_event_outcome(
                    conn,
                    project_id,
                    row.id,
                    Some(contact_id),
                    EventOutcome::Applied.as_str(),
                    &actions,
                    None,
                )
                .await?;
                Ok(ReceiptStatus::Applied)
            }
            Err(refused) if refused.kind.status().is_client_error() => {
                commerce::set_event_outcome(
                    conn,
                    project_id,
                    row.id,
                    None,
                    EventOutcome::Failed.as_str(),
                    &json!([]),
                    Some(refused.message.as_ref()),
                )
                .await?;
                Ok(ReceiptStatus::Failed)
            }
            Err(failure) => Err(failure),
        }
    })
    .await
}

async fn plan_of(conn: &mut AsyncPgConnection, project_id: Uuid) -> Result<Plan, ApiError> {
    let plan = crate::db::approvals::project_plan(conn, project_id).await?;
    Ok(plan.parse().unwrap_or(Plan::Free))
}

/// The event's contact (found or created on the source's site, with the triggers' tags) and
/// what each trigger did to it.
async fn apply(
    conn: &mut AsyncPgConnection,
    source: &Source,
    platform: CommercePlatform,
    event: &CommerceEvent,
    triggers: &[Trigger],
) -> Result<(Uuid, Vec<AppliedAction>), ApiError> {
    let project_id = source.project_id;
    let email = event
        .email
        .clone()
        .ok_or_else(|| ApiError::unprocessable("the event names no customer email address"))?;
    let mut identify = IdentifyRequest {
        email,
        first_name: None,
        last_name: None,
        properties: None,
        tags: triggers.iter().filter_map(|t| t.tag.clone()).collect(),
        site_id: Some(source.site_id),
    };
    identify.validate()?;
    let plan = plan_of(conn, project_id).await?;
    let contact_id = identify_in(conn, project_id, plan, "api", &identify)
        .await?
        .contact_id;
    let mut actions = Vec::with_capacity(triggers.len());
    for trigger in triggers {
        let kind = TriggerAction::parse(&trigger.action)?;
        let mut done = AppliedAction::new(trigger.id, kind);
        match kind {
            TriggerAction::FireEvent => {
                let name = trigger.event_name.clone().unwrap_or_default();
                let data = json!({
                    "platform": platform.as_str(),
                    "event_type": event.event_type,
                    "event_id": event.event_id,
                });
                let fired =
                    crate::ops::events::fire(conn, project_id, contact_id, &name, &data).await?;
                done.enrolled = Some(!fired.enrolled_campaigns.is_empty());
                done.event_name = Some(name);
            }
            TriggerAction::Tag => done.tag.clone_from(&trigger.tag),
            TriggerAction::Enroll => {
                let campaign_id = trigger
                    .campaign_id
                    .ok_or_else(|| ApiError::internal("an enroll trigger without campaign"))?;
                let new = flows::enroll(
                    conn,
                    project_id,
                    campaign_id,
                    &[contact_id],
                    EnrollSource::Manual,
                )
                .await?;
                done.campaign_id = Some(campaign_id);
                done.enrolled = Some(!new.is_empty());
            }
            TriggerAction::RecordConversion => {
                if let Some(total) = &event.total {
                    done.revenue = Some(total.revenue);
                    done.currency = Some(total.currency.clone());
                    done.conversion_id =
                        record_conversion(conn, project_id, &identify.email, platform, event)
                            .await?;
                }
            }
        }
        actions.push(done);
    }
    Ok((contact_id, actions))
}

/// The order's conversion; `None` when this order's was recorded already (another trigger or
/// topic of the same order).
async fn record_conversion(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
    platform: CommercePlatform,
    event: &CommerceEvent,
) -> Result<Option<Uuid>, ApiError> {
    let Some(total) = &event.total else {
        return Ok(None);
    };
    let req = ConversionRequest {
        email: email.to_owned(),
        event: "purchase".to_owned(),
        revenue: total.revenue,
        currency: total.currency.clone(),
        order_id: total.order_id.clone(),
        metadata: Some(json!({
            "platform": platform.as_str(),
            "event_type": event.event_type,
            "event_id": event.event_id,
        })),
    };
    match record_conversion_in(conn, project_id, &req).await {
        Ok(conversion) => Ok(Some(conversion.id)),
        Err(e) if e.has_code(MailErrorCode::DuplicateOrderId) => Ok(None),
        Err(e) => Err(e),
    }
}
