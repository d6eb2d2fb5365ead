//! Running automations, as the scheduler does on every replica:
//!
//! 1. **entry**: active automations triggered by a tag, a segment or a date enter the contacts
//!    their trigger holds for (an event or a form enters its contact in the transaction that
//!    records the event: [`enter_on_event`]);
//! 2. **advance**: due enrollments (a batch, `FOR UPDATE SKIP LOCKED`) run their steps up to
//!    the next wait or the end, each step recorded under its unique (enrollment, step) key in
//!    the transaction that does what it does, so no step runs twice. The batch reads and
//!    writes once for all its enrollments ([`super::batch`]). A send writes the email with its
//!    outbox job (the send pipeline's path), published after the commit (or by the outbox
//!    relay); a webhook writes its call;
//! 3. **webhooks**: due calls are taken (a lease each) and delivered after that commit,
//!    outside any transaction, signed like the outbound webhooks.

use chrono::{DateTime, TimeDelta, Utc};
use delivery::safe_http::SafeClient;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::ApiError;
use secrets::Kek;
use serde_json::{Value, json};
use store::Pool;
use uuid::Uuid;

use super::batch::Batch;
use crate::db::automation_runs::{self as runs, Due, Move, StepRun};
use crate::db::automation_webhook_calls as calls;
use crate::db::automations::{self as db, Automation};
use crate::db::emails::NewEmail;
use crate::domain::automation::{
    AutomationCondition, AutomationStep, AutomationTrigger, FORM_SUBMITTED_EVENT, after_branch,
    date_occurrence, next_local_time, time_of, zone_of,
};
use crate::domain::personalize::has_tags;
use crate::sending::{Dispatcher, SendEmail};

/// Attempts of a webhook call before it is dead.
pub const WEBHOOK_ATTEMPTS: i32 = 5;
/// How long a taken webhook call is another replica's to leave alone.
const WEBHOOK_LEASE_SECS: f64 = 60.0;
/// The event type of a webhook step's body.
pub const WEBHOOK_EVENT: &str = "automation.step";

/// What one pass did.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutomationPass {
    /// Contacts entered by tag, segment and date triggers.
    pub entered: usize,
    /// Steps run.
    pub steps: usize,
    /// Webhook calls attempted.
    pub webhooks: usize,
}

impl AutomationPass {
    pub fn did_work(&self) -> bool {
        self.entered > 0 || self.steps > 0 || self.webhooks > 0
    }
}

/// Enters the contact in the project's active automations the event `name` triggers (a
/// `form.submitted` event: those of its form or of any form), in the caller's transaction:
/// the automations' ids it entered.
pub async fn enter_on_event(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    name: &str,
    data: &Value,
) -> Result<Vec<Uuid>, ApiError> {
    let form_id = data.get("form_id").and_then(Value::as_str);
    let mut entered = Vec::new();
    for id in db::entered_by_event(conn, project_id, name, form_id).await? {
        let new = db::enroll(
            conn,
            project_id,
            id,
            &[contact_id],
            &[String::new()],
            Utc::now(),
        )
        .await?;
        if !new.is_empty() {
            entered.push(id);
        }
    }
    Ok(entered)
}

/// The contacts the automation's trigger holds for at `now` who are not in it for this
/// occurrence, with their occurrences (at most `limit`).
pub async fn entrants(
    conn: &mut AsyncPgConnection,
    automation: &Automation,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<(Vec<Uuid>, Vec<String>), ApiError> {
    let trigger: AutomationTrigger = serde_json::from_value(automation.trigger.clone())?;
    let (project_id, id) = (automation.project_id, automation.id);
    let ids = match trigger {
        AutomationTrigger::TagAdded { tag } => {
            db::tag_holders(conn, project_id, id, &tag, limit).await?
        }
        AutomationTrigger::SegmentEntry { segment_id } => {
            let Some(segment) = crate::db::segments::get(conn, project_id, segment_id).await?
            else {
                return Ok((Vec::new(), Vec::new()));
            };
            let rules: crate::domain::segment_schema::SegmentRules =
                serde_json::from_value(segment.rules)?;
            let compiled = rules.compile("rules")?;
            db::segment_members(conn, project_id, id, &compiled.predicate, limit).await?
        }
        AutomationTrigger::Date { property, at } => {
            let mds: Vec<String> = [-1, 0, 1]
                .iter()
                .map(|d| (now + TimeDelta::days(*d)).format("%m-%d").to_string())
                // A 29 February date fires on 28 February in other years.
                .chain(std::iter::once("02-29".to_owned()))
                .collect();
            let at = time_of(at.as_deref());
            let mut ids = Vec::new();
            let mut occurrences = Vec::new();
            for (contact, properties) in
                db::date_candidates(conn, project_id, &property, &mds).await?
            {
                let Some(value) = properties.get(&property) else {
                    continue;
                };
                if let Some(year) = date_occurrence(now, zone_of(&properties), value, at) {
                    ids.push(contact);
                    occurrences.push(year);
                }
            }
            let taken = db::occurrences_taken(conn, id, &ids, &occurrences).await?;
            let keep: Vec<(Uuid, String)> = ids
                .into_iter()
                .zip(occurrences)
                .filter(|(c, o)| !taken.contains(&(*c, o.clone())))
                .take(usize::try_from(limit).unwrap_or(usize::MAX))
                .collect();
            return Ok(keep.into_iter().unzip());
        }
        AutomationTrigger::Event { event } => {
            db::event_contacts(conn, project_id, id, &event, None, limit).await?
        }
        AutomationTrigger::FormSubmitted { form_id } => {
            db::event_contacts(
                conn,
                project_id,
                id,
                FORM_SUBMITTED_EVENT,
                form_id.map(|f| f.to_string()).as_deref(),
                limit,
            )
            .await?
        }
    };
    let occurrences = vec![String::new(); ids.len()];
    Ok((ids, occurrences))
}

/// The contact's address and the path it would take through `steps` now (nothing written).
pub async fn path_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    steps: &[AutomationStep],
) -> Result<(String, Vec<String>), ApiError> {
    let email = db::contact_email(conn, project_id, contact_id)
        .await?
        .unwrap_or_default();
    let mut path = Vec::new();
    let mut index = 0;
    while let Some(step) = steps.get(index) {
        match step {
            AutomationStep::Branch { condition, .. } => {
                let held = holds(conn, project_id, contact_id, None, condition).await?;
                path.push(format!(
                    "{index}:branch={}",
                    if held { "then" } else { "else" }
                ));
                index = after_branch(index, step, held);
            }
            AutomationStep::Exit => {
                path.push(format!("{index}:exit"));
                break;
            }
            other => {
                path.push(format!("{index}:{}", other.kind()));
                index += 1;
            }
        }
    }
    Ok((email, path))
}

/// Whether a branch's condition holds for the contact.
async fn holds(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    last_email: Option<Uuid>,
    condition: &AutomationCondition,
) -> Result<bool, ApiError> {
    Ok(match condition {
        AutomationCondition::SegmentRules { rules } => {
            let compiled = rules.compile("rules")?;
            db::contact_matches(conn, project_id, contact_id, &compiled.predicate).await?
        }
        AutomationCondition::OpenedPrevious | AutomationCondition::ClickedPrevious => {
            let clicked = matches!(condition, AutomationCondition::ClickedPrevious);
            match last_email {
                Some(email) => db::email_engaged(conn, project_id, email, clicked).await?,
                None => false,
            }
        }
    })
}

/// Runs the automations on one replica (see the module documentation).
#[derive(Clone)]
pub struct AutomationEngine {
    pub pool: Pool,
    pub kek: std::sync::Arc<Kek>,
    pub client: SafeClient,
    /// The send queue the emails' outbox jobs go to.
    pub send_queue: String,
    /// Publishes a pass's send jobs after its commit; without one, the outbox relay does.
    pub dispatcher: Option<Dispatcher>,
    /// Enrollments advanced per pass.
    pub batch: i64,
}

impl AutomationEngine {
    /// One pass at `now`.
    pub async fn run_once(&self, now: DateTime<Utc>) -> anyhow::Result<AutomationPass> {
        let entered = self.enter(now).await?;
        let steps = self.advance(now).await?;
        let webhooks = self.deliver_webhooks(now).await?;
        Ok(AutomationPass {
            entered,
            steps,
            webhooks,
        })
    }

    async fn enter(&self, now: DateTime<Utc>) -> anyhow::Result<usize> {
        let mut conn = store::conn(&self.pool).await?;
        let automations = db::scanned(&mut conn).await?;
        let mut entered = 0;
        for automation in automations {
            let n = conn
                .transaction::<_, ApiError, _>(async |conn| {
                    let (ids, occurrences) = entrants(conn, &automation, now, ENTRY).await?;
                    let new = db::enroll(
                        conn,
                        automation.project_id,
                        automation.id,
                        &ids,
                        &occurrences,
                        now,
                    )
                    .await?;
                    Ok(new.len())
                })
                .await?;
            entered += n;
        }
        Ok(entered)
    }

    /// Advances a batch of due enrollments in one transaction (the steps run), then
    /// publishes the send jobs it wrote.
    async fn advance(&self, now: DateTime<Utc>) -> anyhow::Result<usize> {
        let mut conn = store::conn(&self.pool).await?;
        let (ran, jobs) = conn
            .transaction::<_, ApiError, _>(async |conn| {
                let due = runs::take_due(conn, now, self.batch).await?;
                if due.is_empty() {
                    return Ok((0, Vec::new()));
                }
                let mut batch = Batch::read(conn, &due).await?;
                let mut ran = 0;
                for enrollment in &due {
                    ran += self.run_steps(conn, &mut batch, enrollment, now).await?;
                }
                let jobs = batch.write(conn, &self.send_queue, now).await?;
                Ok((ran, jobs))
            })
            .await?;
        drop(conn);
        if let Some(dispatcher) = &self.dispatcher {
            dispatcher.publish_committed(&self.pool, jobs).await;
        }
        Ok(ran)
    }

    /// Runs the enrollment's steps from its place up to the next wait or its end.
    async fn run_steps(
        &self,
        conn: &mut AsyncPgConnection,
        batch: &mut Batch,
        due: &Due,
        now: DateTime<Utc>,
    ) -> Result<usize, ApiError> {
        let steps = batch.steps_of(due)?;
        let mut index = usize::try_from(due.step_index).unwrap_or(0);
        let mut last_email = due.last_email_id;
        let mut ran = 0;
        let as_i32 = |i: usize| i32::try_from(i).unwrap_or(i32::MAX);
        let to = |index: usize, status, next_run_at, last_email_id, exit_reason| Move {
            enrollment_id: due.id,
            step_index: as_i32(index),
            status,
            next_run_at,
            last_email_id,
            exit_reason,
        };
        loop {
            let Some(step) = steps.get(index) else {
                batch
                    .moves
                    .push(to(index, "completed", None, last_email, None));
                return Ok(ran);
            };
            if batch.ran.contains(&(due.id, as_i32(index))) {
                // Ran before (a step list edited under the enrollment): never again.
                index += 1;
                continue;
            }
            let (outcome, next, wait_until, exit) = self
                .effect(conn, batch, due, index, step, last_email, now)
                .await?;
            if let Some(email) = outcome.strip_prefix("sent:") {
                last_email = Uuid::parse_str(email).ok();
            }
            batch.step_runs.push(StepRun {
                enrollment_id: due.id,
                step_index: as_i32(index),
                project_id: due.project_id,
                outcome,
            });
            ran += 1;
            if let Some(reason) = exit {
                batch
                    .moves
                    .push(to(index, "exited", None, last_email, Some(reason)));
                return Ok(ran);
            }
            index = next;
            if let Some(at) = wait_until {
                batch
                    .moves
                    .push(to(index, "active", Some(at), last_email, None));
                return Ok(ran);
            }
        }
    }

    /// Does what step `index` does: (its outcome, the next index, a time to wait until, an
    /// exit reason). An email is written with the batch, at its end.
    #[allow(clippy::too_many_arguments)]
    async fn effect(
        &self,
        conn: &mut AsyncPgConnection,
        batch: &mut Batch,
        due: &Due,
        index: usize,
        step: &AutomationStep,
        last_email: Option<Uuid>,
        now: DateTime<Utc>,
    ) -> Result<(String, usize, Option<DateTime<Utc>>, Option<&'static str>), ApiError> {
        let next = index + 1;
        Ok(match step {
            AutomationStep::Wait { minutes } => {
                let ms = (minutes * 60_000.0).round() as i64;
                (
                    "waited".into(),
                    next,
                    Some(now + TimeDelta::milliseconds(ms)),
                    None,
                )
            }
            AutomationStep::WaitUntil { time } => {
                let at = next_local_time(now, zone_of(&due.properties), time_of(Some(time)));
                ("waited".into(), next, Some(at), None)
            }
            AutomationStep::Branch { condition, .. } => {
                let held =
                    holds(conn, due.project_id, due.contact_id, last_email, condition).await?;
                let outcome = if held { "then" } else { "else" };
                (outcome.into(), after_branch(index, step, held), None, None)
            }
            AutomationStep::SendEmail {
                subject,
                html,
                text,
                template_id,
            } => {
                if let Some(reason) = batch.blocked.get(&due.id) {
                    let reason: &'static str = if reason == "suppressed" {
                        "suppressed"
                    } else {
                        "unsubscribed"
                    };
                    return Ok((format!("blocked:{reason}"), next, None, Some(reason)));
                }
                let html = match (html, template_id) {
                    (Some(html), _) => Some(html.clone()),
                    (None, Some(id)) => batch.template_html(conn, due.project_id, *id).await?,
                    (None, None) => None,
                };
                let id = Uuid::now_v7();
                let templated = has_tags(subject)
                    || html.as_deref().is_some_and(has_tags)
                    || text.as_deref().is_some_and(has_tags);
                batch.emails.push(NewEmail {
                    id,
                    project_id: due.project_id,
                    site_id: due.site_id,
                    contact_id: Some(due.contact_id),
                    to_email: due.email.clone(),
                    subject: subject.clone(),
                    html: Some(html.unwrap_or_default()),
                    text_body: text.clone(),
                    reply_to: None,
                    headers: json!([]),
                    tags: vec!["automation".to_owned()],
                    tracking: true,
                    idempotency_key: Some(format!("automation:{}:{index}", due.id)),
                    request_hash: None,
                    task: queue::to_value(&SendEmail {
                        email_log_id: id,
                        project_id: due.project_id,
                    }),
                    template_data: templated.then(|| json!({})),
                });
                (format!("sent:{id}"), next, None, None)
            }
            AutomationStep::AddTag { tag } => {
                db::add_tag(conn, due.contact_id, tag).await?;
                ("tagged".into(), next, None, None)
            }
            AutomationStep::RemoveTag { tag } => {
                db::remove_tag(conn, due.contact_id, tag).await?;
                ("untagged".into(), next, None, None)
            }
            AutomationStep::SetProperty { name, value } => {
                db::set_property(conn, due.contact_id, name, value).await?;
                ("property_set".into(), next, None, None)
            }
            AutomationStep::Webhook { url } => {
                let body = json!({
                    "automation_id": due.automation_id,
                    "enrollment_id": due.id,
                    "step_index": index,
                    "contact": {"id": due.contact_id, "email": due.email},
                });
                let step = i32::try_from(index).unwrap_or(i32::MAX);
                calls::insert_webhook_call(
                    conn,
                    due.project_id,
                    due.automation_id,
                    due.id,
                    step,
                    url,
                    &body,
                    now,
                )
                .await?;
                ("webhook_recorded".into(), next, None, None)
            }
            AutomationStep::Exit => ("exit".into(), next, None, Some("exit_step")),
        })
    }

    /// Takes the due webhook calls (committed with their lease), then delivers each with no
    /// transaction open: the calls attempted.
    async fn deliver_webhooks(&self, now: DateTime<Utc>) -> anyhow::Result<usize> {
        let calls = {
            let mut conn = store::conn(&self.pool).await?;
            calls::claim_webhook_calls(&mut conn, now, WEBHOOK_LEASE_SECS, self.batch).await?
        };
        let n = calls.len();
        for call in calls {
            let status = self.attempt(&call).await;
            let delivered = status.is_some_and(|s| (200..300).contains(&s));
            let state = if delivered {
                "delivered"
            } else if call.attempts >= WEBHOOK_ATTEMPTS {
                "dead"
            } else {
                "pending"
            };
            let backoff = TimeDelta::seconds(5 * (1 << call.attempts.clamp(0, 10)));
            let mut conn = store::conn(&self.pool).await?;
            calls::record_webhook_attempt(&mut conn, call.id, state, status, now + backoff).await?;
        }
        Ok(n)
    }

    /// One signed POST: the answer's status, if any.
    async fn attempt(&self, call: &calls::WebhookCall) -> Option<i32> {
        let secret = self
            .kek
            .open_text(
                &call.secret_sealed,
                &super::seal_context(call.automation_id),
            )
            .ok()?;
        let body = crate::outbound::body_of(WEBHOOK_EVENT, call.created_at, &call.body);
        let id = call.id.to_string();
        let t = Utc::now().timestamp();
        let key = webhook_signature::Secret::parse(&secret).ok()?;
        let headers = vec![
            ("webhook-id", id.clone()),
            ("webhook-timestamp", t.to_string()),
            ("webhook-signature", key.sign(&id, t, &body)),
            (
                "x-mail-signature",
                webhook_signature::mail_signature(&[secret.as_str()], t, &body),
            ),
        ];
        match self.client.post(&call.url, &headers, body).await {
            Ok(answer) => Some(i32::from(answer.status)),
            Err(err) => {
                tracing::debug!(call = %call.id, error = %err, "automation webhook not delivered");
                None
            }
        }
    }
}

/// Contacts one pass enters into one automation at most.
const ENTRY: i64 = super::ENTRY_BATCH;
