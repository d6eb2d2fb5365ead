//! Provider webhook receipts and their effect on the email log (the document's "States and
//! transitions"): delivered, opened, clicked, bounced (→ suppression), complained
//! (→ suppression, contact unsubscribed). Applied inline by the receiver; retried by the send
//! worker from the `webhook.inbound` queue when that failed.

use diesel::prelude::*;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::outbound_events;
use super::schema::webhook_receipts;
use super::{emails, notifications, suppressions};
use crate::domain::email_status::EmailStatus;

/// The provider of the events learnt over SMTP (`crate::bounces`): delivery status
/// notifications and feedback reports at the bounce receiver, and refusals in the send
/// worker's own SMTP conversation. Their `data.email_log_id` names the email.
pub const SMTP: &str = "smtp";

/// Whether the project exists (a project route names one).
pub async fn project_exists(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<bool> {
    use super::schema::projects;
    diesel::select(diesel::dsl::exists(projects::table.find(project_id)))
        .get_result(conn)
        .await
}

/// Which secret verified a delivery: receipts are deduplicated per signer, so an id one
/// signer used never pre-empts another signer's event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    Deployment,
    /// The project whose own secret verified it.
    Project(Uuid),
}

impl Signer {
    fn project_id(self) -> Option<Uuid> {
        match self {
            Signer::Deployment => None,
            Signer::Project(id) => Some(id),
        }
    }
}

/// Records a receipt; `Err((id, status))` of the earlier receipt when this signer sent this
/// (provider, webhook-id) before.
async fn insert(
    conn: &mut AsyncPgConnection,
    provider: &str,
    webhook_id: &str,
    signer: Signer,
    project_id: Option<Uuid>,
    payload: &Value,
) -> QueryResult<Result<Uuid, (Uuid, String)>> {
    let signer = signer.project_id();
    let id = Uuid::now_v7();
    let event_type = crate::domain::provider_events::event_type(provider, payload);
    let inserted = diesel::insert_into(webhook_receipts::table)
        .values((
            webhook_receipts::id.eq(id),
            webhook_receipts::provider.eq(provider),
            webhook_receipts::webhook_id.eq(webhook_id),
            webhook_receipts::project_id.eq(project_id),
            webhook_receipts::event_type.eq(event_type),
            webhook_receipts::payload.eq(payload),
            webhook_receipts::signer_project_id.eq(signer),
        ))
        .on_conflict((
            webhook_receipts::provider,
            webhook_receipts::webhook_id,
            webhook_receipts::signer_project_id,
        ))
        .do_nothing()
        .execute(conn)
        .await?;
    if inserted == 1 {
        return Ok(Ok(id));
    }
    let earlier: (Uuid, String) = webhook_receipts::table
        .filter(webhook_receipts::provider.eq(provider))
        .filter(webhook_receipts::webhook_id.eq(webhook_id))
        .filter(webhook_receipts::signer_project_id.is_not_distinct_from(signer))
        .select((webhook_receipts::id, webhook_receipts::status))
        .first(conn)
        .await?;
    Ok(Err(earlier))
}

/// The payload a receipt recorded.
async fn payload_of(conn: &mut AsyncPgConnection, receipt_id: Uuid) -> QueryResult<Option<Value>> {
    webhook_receipts::table
        .find(receipt_id)
        .select(webhook_receipts::payload)
        .first(conn)
        .await
        .optional()
}

/// What applying a receipt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The event changed (or confirmed) the email's state.
    Applied { email_log_id: Uuid, kind: String },
    /// Not an event we act on, or a message we do not know: recorded as ignored.
    Ignored(String),
    /// Done before.
    AlreadyDone,
}

/// Applies one receipt in one transaction (locking it, so two appliers cannot both act).
pub async fn apply(conn: &mut AsyncPgConnection, receipt_id: Uuid) -> QueryResult<Applied> {
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        let Some((status, provider, project_id, payload)) = webhook_receipts::table
            .find(receipt_id)
            .for_update()
            .select((
                webhook_receipts::status,
                webhook_receipts::provider,
                webhook_receipts::project_id,
                webhook_receipts::payload,
            ))
            .first::<(String, String, Option<Uuid>, Value)>(conn)
            .await
            .optional()?
        else {
            return Ok(Applied::Ignored("no such receipt".into()));
        };
        if status == "applied" || status == "ignored" {
            return Ok(Applied::AlreadyDone);
        }
        let outcome = apply_payload(conn, &provider, project_id, &payload).await?;
        mark_done(conn, receipt_id, &outcome).await?;
        Ok(outcome)
    })
    .await
}

/// Stores what applying a receipt did.
async fn mark_done(
    conn: &mut AsyncPgConnection,
    receipt_id: Uuid,
    outcome: &Applied,
) -> QueryResult<()> {
    let (status, email_log_id, note) = match outcome {
        Applied::Applied { email_log_id, .. } => ("applied", Some(*email_log_id), None),
        Applied::Ignored(why) => ("ignored", None, Some(why.clone())),
        Applied::AlreadyDone => ("applied", None, None),
    };
    diesel::update(webhook_receipts::table.find(receipt_id))
        .set((
            webhook_receipts::status.eq(status),
            webhook_receipts::email_log_id.eq(email_log_id),
            webhook_receipts::last_error.eq(note),
            webhook_receipts::attempts.eq(webhook_receipts::attempts + 1),
            webhook_receipts::processed_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// One provider event as it arrives, before it is recorded.
pub struct Incoming<'a> {
    pub provider: &'a str,
    pub webhook_id: &'a str,
    pub signer: Signer,
    pub project_id: Option<Uuid>,
    pub payload: &'a Value,
    /// The provider's id is a single-use token its signature does not bind to the body
    /// (Mailgun): the same id with another payload is a replay, not a duplicate.
    pub id_binds_payload: bool,
}

/// What [`record_and_apply`] did with an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    Applied,
    Ignored(String),
    /// Recorded and applied before.
    Duplicate,
    /// The id of an earlier event with another payload (see [`Incoming::id_binds_payload`]).
    Replayed,
    /// Recorded, but applying it failed (noted on the receipt): the caller queues it for
    /// `webhook.inbound`.
    Owed {
        receipt_id: Uuid,
        error: String,
    },
}

/// Records an event's receipt and applies it. A new event (the common case) is recorded and
/// applied in one transaction, so it costs one commit. One seen before is applied if its
/// application is still owed. When applying fails the receipt is still recorded, and the
/// answer says it is owed; `Err` only when the event could not even be recorded.
pub async fn record_and_apply(
    conn: &mut AsyncPgConnection,
    event: &Incoming<'_>,
) -> QueryResult<Taken> {
    let at_once = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            let receipt_id = match insert_incoming(conn, event).await? {
                Ok(id) => id,
                Err(earlier) => return Ok(Err(earlier)),
            };
            let outcome =
                apply_payload(conn, event.provider, event.project_id, event.payload).await?;
            mark_done(conn, receipt_id, &outcome).await?;
            Ok(Ok(outcome))
        })
        .await;
    let receipt_id = match at_once {
        Ok(Ok(outcome)) => return Ok(taken(outcome)),
        Ok(Err((earlier, status))) => {
            if event.id_binds_payload
                && payload_of(conn, earlier).await?.as_ref() != Some(event.payload)
            {
                return Ok(Taken::Replayed);
            }
            if status != "received" && status != "failed" {
                return Ok(Taken::Duplicate);
            }
            earlier
        }
        // Applying failed and took the receipt with it: record it alone.
        Err(_) => match insert_incoming(conn, event).await? {
            Ok(id) => id,
            Err((earlier, status)) if status == "received" || status == "failed" => earlier,
            Err(_) => return Ok(Taken::Duplicate),
        },
    };
    match apply(conn, receipt_id).await {
        Ok(outcome) => Ok(taken(outcome)),
        Err(err) => {
            let error = err.to_string();
            let _ = note_failure(conn, receipt_id, &error).await;
            Ok(Taken::Owed { receipt_id, error })
        }
    }
}

async fn insert_incoming(
    conn: &mut AsyncPgConnection,
    event: &Incoming<'_>,
) -> QueryResult<Result<Uuid, (Uuid, String)>> {
    let Incoming {
        provider,
        webhook_id,
        signer,
        project_id,
        payload,
        ..
    } = *event;
    insert(conn, provider, webhook_id, signer, project_id, payload).await
}

fn taken(outcome: Applied) -> Taken {
    match outcome {
        Applied::Applied { .. } => Taken::Applied,
        Applied::Ignored(why) => Taken::Ignored(why),
        Applied::AlreadyDone => Taken::Duplicate,
    }
}

/// Notes a failed attempt (outside the failed transaction).
pub async fn note_failure(
    conn: &mut AsyncPgConnection,
    receipt_id: Uuid,
    error: &str,
) -> QueryResult<()> {
    diesel::update(webhook_receipts::table.find(receipt_id))
        .set((
            webhook_receipts::status.eq("failed"),
            webhook_receipts::last_error.eq(error),
            webhook_receipts::attempts.eq(webhook_receipts::attempts + 1),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

async fn apply_payload(
    conn: &mut AsyncPgConnection,
    provider: &str,
    project_id: Option<Uuid>,
    payload: &Value,
) -> QueryResult<Applied> {
    let event = match crate::domain::provider_events::normalize(provider, payload) {
        Ok(event) => event,
        Err(why) => return Ok(Applied::Ignored(why)),
    };
    let kind = event.kind;
    let effect = match kind {
        "email.delivered" => EmailStatus::Delivered,
        "email.opened" => EmailStatus::Opened,
        "email.clicked" => EmailStatus::Clicked,
        "email.bounced" => EmailStatus::Bounced,
        _ => EmailStatus::Complained,
    };
    let message_id = event.message_id.as_str();
    let found = if provider == SMTP {
        // Ours: the email log id the VERP token (or the send worker) named.
        match Uuid::parse_str(message_id) {
            Ok(id) => emails::find_by_id(conn, id).await?,
            Err(_) => None,
        }
    } else {
        emails::find_by_provider_id(conn, message_id).await?
    };
    let Some(email) = found else {
        return Ok(Applied::Ignored(format!("unknown message {message_id}")));
    };
    if project_id.is_some_and(|p| p != email.project_id) {
        // Routed to another project: as unknown as a message that does not exist.
        return Ok(Applied::Ignored(format!("unknown message {message_id}")));
    }
    let (project, id) = (email.project_id, email.id);
    let changed = match effect {
        EmailStatus::Delivered => emails::record_delivered(conn, project, id).await?,
        EmailStatus::Opened => emails::record_open(conn, project, id).await?,
        EmailStatus::Clicked => {
            let link = event.link.as_deref().unwrap_or_default();
            emails::record_click(conn, project, id, link).await?
        }
        EmailStatus::Bounced | EmailStatus::Complained => {
            emails::record_terminal(conn, project, id, effect).await?;
            suppressions::add(
                conn,
                project,
                &email.to_email,
                effect.as_str(),
                Some(&format!("provider event {kind}")),
            )
            .await?;
            if effect == EmailStatus::Complained {
                emails::unsubscribe_contact(conn, project, &email.to_email).await?;
            }
            let (kind, title) = if effect == EmailStatus::Complained {
                (
                    notifications::kind::EMAIL_COMPLAINED,
                    "A recipient marked an email as spam; the address is suppressed",
                )
            } else {
                (
                    notifications::kind::EMAIL_BOUNCED,
                    "An email bounced; the address is suppressed",
                )
            };
            notifications::add(
                conn,
                project,
                kind,
                title,
                serde_json::json!({"email_log_id": id, "site_id": email.site_id}),
            )
            .await?;
            true
        }
        _ => false,
    };
    let mut recorded = serde_json::json!({"type": kind, "changed": changed});
    if let Some(link) = &event.link {
        recorded["url"] = Value::String(link.clone());
    }
    if let Some(bounce) = &event.bounce {
        recorded["bounce"] = bounce.clone();
    }
    emails::add_event(conn, project, id, effect.as_str(), "webhook", recorded).await?;
    if changed && matches!(effect, EmailStatus::Bounced | EmailStatus::Complained) {
        // The project's outbound webhooks, in this transaction.
        let details = event.bounce.as_ref().map_or_else(
            || serde_json::json!({}),
            |b| serde_json::json!({"bounce": b}),
        );
        outbound_events::email_event(conn, project, id, kind, details).await?;
        if effect == EmailStatus::Bounced {
            outbound_events::note_bounce(conn, project, email.site_id).await?;
        }
    }
    Ok(Applied::Applied {
        email_log_id: id,
        kind: effect.as_str().to_owned(),
    })
}
