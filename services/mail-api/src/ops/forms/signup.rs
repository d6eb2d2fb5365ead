//! What the public page of a form and its posts do (no API key: a form's id is public, its
//! signups' links are signed). A render counts a view and signs its time. A post is refused,
//! and counted, when the honeypot is filled, when it comes less than a second after its page
//! was rendered, or past the per-address or per-IP limit; otherwise the signup is stored with
//! its consent and a confirmation email is sent through the send path. The confirmation link
//! (signed, expiring) identifies the contact, subscribes it to the form's site, adds the
//! form's tags and fires `form.submitted`, once.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use diesel_async::AsyncConnection as _;
use http_kit::ApiError;
use rate_limit::Quota;
use rate_limit::policy::Plan;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{FormField, fields_of, form_not_found};
use crate::AppState;
use crate::db::forms::{self, NewSubmission, Refusal};
use crate::domain::email;
use crate::ops::contacts::{IdentifyRequest, identify_in};
use crate::sending::{self, Sender, Submission};

/// The address input.
pub const EMAIL: &str = "email";
/// The honeypot input: hidden from people, filled by form-filling bots.
pub const HONEYPOT: &str = "website";
/// The signed render time of the page.
pub const STAMP: &str = "rendered";
/// A post sooner than this after its page was rendered is a bot's.
pub const MIN_FILL_MILLIS: i64 = 1_000;
/// A render stamp older than this no longer vouches for the page: it is rendered again.
const STAMP_LIFETIME_MILLIS: i64 = 24 * 3_600 * 1_000;
/// How long a confirmation link works.
pub const CONFIRM_LIFETIME_HOURS: i64 = 48;
/// The event a confirmed signup fires (automations and triggered campaigns listen to it).
pub const SUBMITTED_EVENT: &str = "form.submitted";
/// Signups per address (per project) and per client address (all forms), per hour.
const PER_ADDRESS_PER_HOUR: u64 = 3;
const PER_IP_PER_HOUR: u64 = 20;
/// The longest answer a field keeps.
const ANSWER_MAX_CHARS: usize = 500;

/// A form as its public page shows it.
#[derive(Debug)]
pub struct PublicForm {
    pub id: Uuid,
    pub name: String,
    pub fields: Vec<FormField>,
    pub consent_text: String,
    /// The signed render time to post back.
    pub stamp: String,
}

/// What a post of the form came to.
#[derive(Debug)]
pub enum Outcome {
    /// Stored; the confirmation email is on its way.
    Accepted,
    /// The page again, with what was posted and why it was not taken (`None`: the post carried
    /// no valid render time, as the embedded snippet's do, so the person sends it again).
    Again {
        form: PublicForm,
        values: HashMap<String, String>,
        problem: Option<String>,
    },
    /// Refused and counted.
    Refused(Refusal),
}

fn now_millis() -> i64 {
    Utc::now().timestamp_millis()
}

async fn public_form(state: &AppState, id: Uuid) -> Result<forms::Form, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    forms::get_any(&mut conn, id)
        .await?
        .ok_or_else(form_not_found)
}

fn shown(state: &AppState, row: &forms::Form) -> PublicForm {
    PublicForm {
        id: row.id,
        name: row.name.clone(),
        fields: fields_of(row),
        consent_text: row.consent_text.clone(),
        stamp: state.form_links.stamp_at(row.id, now_millis()),
    }
}

/// The hosted page of form `id` (`GET /f/{id}`), counted as a view: 404 `FORM_NOT_FOUND`.
pub async fn view(state: &AppState, id: Uuid) -> Result<PublicForm, ApiError> {
    let row = public_form(state, id).await?;
    let mut conn = store::conn(&state.pool).await?;
    forms::count_view(&mut conn, row.id).await?;
    Ok(shown(state, &row))
}

async fn refuse(state: &AppState, id: Uuid, refusal: Refusal) -> Result<Outcome, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    forms::count_refusal(&mut conn, id, refusal).await?;
    Ok(Outcome::Refused(refusal))
}

/// Whether one more signup is allowed under `key` (counted when it is).
async fn within(state: &AppState, key: &str, per_hour: u64) -> Result<bool, ApiError> {
    let quota = service_kit::scale_quota(
        Quota::sliding(per_hour, Duration::from_secs(3_600)),
        state.rate_limit_scale,
    );
    let decision = state
        .limiter
        .check(key, &[quota])
        .await
        .map_err(|err| ApiError::internal(format!("rate limiter: {err}")))?;
    Ok(decision.allowed)
}

/// Takes a post of form `id` (`POST /f/{id}`) from `client` (the caller's IP address).
pub async fn submit(
    state: &AppState,
    id: Uuid,
    client: &str,
    posted: HashMap<String, String>,
) -> Result<Outcome, ApiError> {
    let row = public_form(state, id).await?;
    if posted.get(HONEYPOT).is_some_and(|v| !v.trim().is_empty()) {
        return refuse(state, row.id, Refusal::Honeypot).await;
    }
    let rendered = posted
        .get(STAMP)
        .and_then(|stamp| state.form_links.rendered_at(row.id, stamp))
        .filter(|at| now_millis() - at < STAMP_LIFETIME_MILLIS);
    let Some(rendered) = rendered else {
        return Ok(again(state, &row, posted, None));
    };
    if now_millis() - rendered < MIN_FILL_MILLIS {
        return refuse(state, row.id, Refusal::TooFast).await;
    }
    let fields = fields_of(&row);
    let (address, answers) = match read_answers(&fields, &posted) {
        Ok(read) => read,
        Err(problem) => return Ok(again(state, &row, posted, Some(problem))),
    };
    let address_key = format!(
        "form-signup:address:{}:{}",
        row.project_id,
        data_encoding::HEXLOWER.encode(&store::sha256(address.as_bytes()))
    );
    if !within(state, &format!("form-signup:ip:{client}"), PER_IP_PER_HOUR).await?
        || !within(state, &address_key, PER_ADDRESS_PER_HOUR).await?
    {
        return refuse(state, row.id, Refusal::RateLimited).await;
    }
    take(state, &row, &address, &answers).await?;
    Ok(Outcome::Accepted)
}

fn again(
    state: &AppState,
    row: &forms::Form,
    mut values: HashMap<String, String>,
    problem: Option<String>,
) -> Outcome {
    values.remove(STAMP);
    values.remove(HONEYPOT);
    Outcome::Again {
        form: shown(state, row),
        values,
        problem,
    }
}

/// The normalized address and the other fields' answers, or what is wrong with them.
fn read_answers(
    fields: &[FormField],
    posted: &HashMap<String, String>,
) -> Result<(String, Map<String, Value>), String> {
    let address = posted
        .get(EMAIL)
        .and_then(|a| email::normalize(a))
        .ok_or_else(|| "Enter a valid email address.".to_owned())?;
    let mut answers = Map::new();
    for field in fields {
        let answer = posted.get(&field.name).map(|a| a.trim()).unwrap_or("");
        if answer.is_empty() {
            if field.required {
                return Err(format!("Fill in “{}”.", field.label));
            }
            continue;
        }
        if answer.chars().count() > ANSWER_MAX_CHARS {
            return Err(format!(
                "“{}” is longer than {ANSWER_MAX_CHARS} characters.",
                field.label
            ));
        }
        answers.insert(field.name.clone(), Value::String(answer.to_owned()));
    }
    Ok((address, answers))
}

async fn plan_of(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
) -> Result<Plan, ApiError> {
    let plan = crate::db::approvals::project_plan(conn, project_id).await?;
    Ok(plan.parse().unwrap_or(Plan::Free))
}

/// Stores the signup and sends its confirmation email; a signup whose email could not be
/// accepted is not kept.
async fn take(
    state: &AppState,
    row: &forms::Form,
    address: &str,
    answers: &Map<String, Value>,
) -> Result<(), ApiError> {
    let submission_id = Uuid::now_v7();
    let mut conn = store::conn(&state.pool).await?;
    let site = crate::db::sites::get(&mut conn, row.project_id, row.site_id)
        .await?
        .ok_or_else(form_not_found)?;
    let plan = plan_of(&mut conn, row.project_id).await?;
    forms::insert_submission(
        &mut conn,
        &NewSubmission {
            id: submission_id,
            project_id: row.project_id,
            form_id: row.id,
            email: address,
            answers: &Value::Object(answers.clone()),
            consent_text: &row.consent_text,
            consented_at: Utc::now(),
        },
    )
    .await?;
    drop(conn);
    let expires_at = (Utc::now() + chrono::Duration::hours(CONFIRM_LIFETIME_HOURS)).timestamp();
    let link = state.form_links.confirm_url(submission_id, expires_at);
    let sent = send_confirmation(state, row, plan, &site.name, address, &link, submission_id).await;
    if let Err(err) = sent {
        let mut conn = store::conn(&state.pool).await?;
        forms::delete_submission(&mut conn, submission_id).await?;
        return Err(err);
    }
    Ok(())
}

async fn send_confirmation(
    state: &AppState,
    row: &forms::Form,
    plan: Plan,
    site_name: &str,
    address: &str,
    link: &str,
    submission_id: Uuid,
) -> Result<(), ApiError> {
    crate::ops::abuse_monitor::check_transactional(state, row.project_id, row.site_id).await?;
    let subject = format!("Confirm your subscription to {site_name}");
    let html = maud::html! {
        p { "Please confirm that you want to receive emails from " (site_name) "." }
        p { a href=(link) { "Confirm my subscription" } }
        p { "If you did not sign up, ignore this email: nothing happens without the confirmation." }
    }
    .into_string();
    let text = format!(
        "Please confirm that you want to receive emails from {site_name}:\n{link}\n\nIf you \
         did not sign up, ignore this email: nothing happens without the confirmation.\n"
    );
    let submission = Submission {
        site_id: row.site_id,
        to: address,
        subject: &subject,
        html: &html,
        text: Some(&text),
        reply_to: None,
        headers: Vec::new(),
        tags: &[],
        // The link is the confirmation itself: never rewritten into a tracked redirect.
        tracking: false,
        idempotency_key: None,
        request_hash: store::sha256(submission_id.as_bytes()),
        template_data: None,
    };
    let sender = Sender {
        project_id: row.project_id,
        plan,
    };
    sending::accept(&state.pool, &state.send, sender, &submission).await?;
    Ok(())
}

/// What a confirmation link came to.
#[derive(Debug)]
pub enum Confirmation {
    /// The contact is subscribed now.
    Confirmed { site_name: String },
    /// It was, by an earlier click.
    AlreadyConfirmed,
    /// The link is too old.
    Expired,
}

/// Confirms the signup of the link's `token` (`GET /f/confirm/{token}`): 404 unless signed
/// and its signup exists.
pub async fn confirm(state: &AppState, token: &str) -> Result<Confirmation, ApiError> {
    let not_found = || ApiError::not_found("no such confirmation link");
    let (submission_id, expires_at) = state.form_links.confirmation(token).ok_or_else(not_found)?;
    let mut conn = store::conn(&state.pool).await?;
    if !forms::submission_exists(&mut conn, submission_id).await? {
        return Err(not_found());
    }
    if Utc::now().timestamp() > expires_at {
        return Ok(Confirmation::Expired);
    }
    conn.transaction::<_, ApiError, _>(async |conn| {
        let Some(signup) = forms::confirm(conn, submission_id).await? else {
            return Ok(Confirmation::AlreadyConfirmed);
        };
        let form = forms::get(conn, signup.project_id, signup.form_id)
            .await?
            .ok_or_else(not_found)?;
        let site = crate::db::sites::get(conn, form.project_id, form.site_id)
            .await?
            .ok_or_else(not_found)?;
        let plan = plan_of(conn, form.project_id).await?;
        let mut properties = match signup.answers {
            Value::Object(answers) => answers,
            _ => Map::new(),
        };
        let first_name = take_text(&mut properties, "first_name");
        let last_name = take_text(&mut properties, "last_name");
        let request = IdentifyRequest {
            email: signup.email.clone(),
            first_name,
            last_name,
            properties: (!properties.is_empty()).then_some(Value::Object(properties)),
            tags: form.tags.clone(),
            site_id: Some(form.site_id),
        };
        let identified = identify_in(conn, form.project_id, plan, "form", &request).await?;
        let data = json!({
            "form_id": form.id,
            "site_id": form.site_id,
            "submission_id": signup.id,
            "consent_text": signup.consent_text,
            "consented_at": signup.consented_at,
        });
        crate::ops::events::fire(
            conn,
            form.project_id,
            identified.contact_id,
            SUBMITTED_EVENT,
            &data,
        )
        .await?;
        Ok(Confirmation::Confirmed {
            site_name: site.name,
        })
    })
    .await
}

fn take_text(answers: &mut Map<String, Value>, name: &str) -> Option<String> {
    match answers.remove(name) {
        Some(Value::String(text)) => Some(text.chars().take(200).collect()),
        _ => None,
    }
}
