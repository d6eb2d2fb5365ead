//! One transactional email, from a request already read to its answer. The checks come in
//! this order: the site (404), the suppression list (422 `SUPPRESSED_CONTACT`) and the plan's
//! monthly quota (422 `PLAN_LIMIT`).
//!
//! - Without an idempotency key, the checks, the count and the email log row with its event
//!   and outbox job are one statement, shared by the emails written at the same time (see
//!   [`super::EmailWriter`]).
//! - With one, a key already used answers at once; the checks and the count are a statement
//!   of their own, so that the project's counter row is not locked for the rest of the
//!   request; then the row, its event and its job are written in a transaction serialised on
//!   the key.
//!
//! After the commit the job is published to the send worker and the answer waits a
//! bounded time for the provider's: `sent`, else `queued` (the email is still sent, exactly
//! once).

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::ApiError;
use rate_limit::policy::Plan;
use store::Pool;
use uuid::Uuid;

use super::answer::suppressed;
use super::writer::Unwritten;
use super::{Dispatched, SendContext, SendEmail, SendResponse};
use crate::db::emails::{self, Email, NewEmail, Reserved, Verdict};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// The project sending, and its plan (for the monthly quota).
#[derive(Debug, Clone, Copy)]
pub struct Sender {
    pub project_id: Uuid,
    pub plan: Plan,
}

/// A send request as read and checked by the route.
#[derive(Debug)]
pub struct Submission<'a> {
    pub site_id: Uuid,
    /// Normalised recipient.
    pub to: &'a str,
    pub subject: &'a str,
    pub html: &'a str,
    pub text: Option<&'a str>,
    pub reply_to: Option<&'a str>,
    /// Custom headers, as `[name, value]` pairs.
    pub headers: Vec<(String, String)>,
    pub tags: &'a [String],
    pub tracking: bool,
    pub idempotency_key: Option<&'a str>,
    /// SHA-256 of the request without its key: a retry of the same request hashes the same.
    pub request_hash: [u8; 32],
    /// The `data` of a subject, HTML or text holding template syntax (rendered per recipient
    /// by the send worker); `None`: sent as written.
    pub template_data: Option<serde_json::Value>,
}

/// What [`accept`] answers: the email was sent or queued, for the first time or again.
#[derive(Debug)]
pub struct Accepted {
    pub answer: SendResponse,
    /// The answer of an earlier request with the same idempotency key.
    pub replayed: bool,
}

/// Takes one email from the checks to its answer (see the module documentation).
pub async fn accept(
    pool: &Pool,
    ctx: &SendContext,
    sender: Sender,
    email: &Submission<'_>,
) -> Result<Accepted, ApiError> {
    let id = Uuid::now_v7();
    match email.idempotency_key {
        None => write(pool, ctx, sender, id, email).await?,
        Some(key) => {
            if let Some(replayed) = write_keyed(pool, ctx, sender, key, id, email).await? {
                return Ok(replayed);
            }
        }
    }
    let answer = dispatch(pool, ctx, sender.project_id, id, email).await?;
    Ok(Accepted {
        answer,
        replayed: false,
    })
}

/// The earlier answer to the same idempotency key, or 409 when the request differs.
fn replay(first: &Email, request_hash: &[u8]) -> Result<Accepted, ApiError> {
    if first.request_hash.as_deref() != Some(request_hash) {
        return Err(ApiError::conflict(
            "this idempotency_key was already used with a different request",
        )
        .with_code(MailErrorCode::IdempotencyKeyReused));
    }
    Ok(Accepted {
        answer: SendResponse::first_for(first)?,
        replayed: true,
    })
}

/// The site is the project's and the recipient is not suppressed (else nothing is counted),
/// and the send is counted against the plan's monthly quota (422 `PLAN_LIMIT` when it is used
/// up); returns the recipient's contact, if the project has one, and the send counted.
async fn admit(
    conn: &mut AsyncPgConnection,
    ctx: &SendContext,
    sender: Sender,
    email: &Submission<'_>,
) -> Result<(Option<Uuid>, Reserved), ApiError> {
    let quota = monthly_quota(ctx, sender);
    let admission = emails::admit(conn, sender.project_id, email.site_id, email.to, quota).await?;
    if !admission.site_exists {
        return Err(flows::site_not_found(email.site_id));
    }
    if admission.suppressed {
        return Err(suppressed(email.to, None));
    }
    let reserved = admission.reserved().ok_or_else(|| {
        ApiError::unprocessable(format!(
            "monthly send quota reached: the {} plan allows {} emails a month",
            sender.plan,
            quota.unwrap_or(i64::MAX)
        ))
        .with_code(MailErrorCode::PlanLimit)
        .with_details(serde_json::json!({
            "limit": "monthly_sends",
            "plan": sender.plan.as_str(),
            "max": quota,
        }))
    })?;
    Ok((admission.contact_id, reserved))
}

/// The sender's plan's monthly quota (`None`: unlimited).
fn monthly_quota(ctx: &SendContext, sender: Sender) -> Option<i64> {
    ctx.quotas
        .monthly_sends(sender.plan)
        .map(|q| i64::try_from(q).unwrap_or(i64::MAX))
}

/// Gives back the send a request reserved but did not use (should that fail, the month's
/// count stays one too high: the error is on the safe side of the quota).
async fn release(pool: &Pool, project_id: Uuid, reserved: Reserved) {
    let released = async {
        let mut conn = store::conn(pool).await?;
        emails::release_monthly_send(&mut conn, project_id, reserved).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(err) = released {
        tracing::warn!(%project_id, error = %err, "a reserved send was not given back");
    }
}

/// The email as written, with the job that sends it.
fn new_email(
    project_id: Uuid,
    id: Uuid,
    contact_id: Option<Uuid>,
    email: &Submission<'_>,
) -> Result<NewEmail, ApiError> {
    Ok(NewEmail {
        id,
        project_id,
        site_id: email.site_id,
        contact_id,
        to_email: email.to.to_owned(),
        subject: email.subject.to_owned(),
        html: Some(email.html.to_owned()),
        text_body: email.text.map(str::to_owned),
        reply_to: email.reply_to.map(str::to_owned),
        headers: serde_json::to_value(&email.headers)?,
        tags: email.tags.to_vec(),
        tracking: email.tracking,
        idempotency_key: email.idempotency_key.map(str::to_owned),
        request_hash: email.idempotency_key.map(|_| email.request_hash.to_vec()),
        task: queue::to_value(&SendEmail {
            email_log_id: id,
            project_id,
        }),
        template_data: email.template_data.clone(),
    })
}

/// Checks, counts and writes an email without a key, with its event and its outbox job, in a
/// batch of the emails written at the same time ([`super::EmailWriter`]), or alone (as a
/// keyed one is, without the key's lock) if the batch handed it back.
async fn write(
    pool: &Pool,
    ctx: &SendContext,
    sender: Sender,
    id: Uuid,
    email: &Submission<'_>,
) -> Result<(), ApiError> {
    let new = new_email(sender.project_id, id, None, email)?;
    let mut new = match ctx.writer.write(new, monthly_quota(ctx, sender)).await {
        Ok(Verdict::Written) => return Ok(()),
        Ok(Verdict::SiteNotFound) => return Err(flows::site_not_found(email.site_id)),
        Ok(Verdict::Suppressed) => return Err(suppressed(email.to, None)),
        Ok(Verdict::QuotaShort) => {
            return Err(ApiError::internal("a batch answered for its quota"));
        }
        Err(Unwritten::HandedBack(new)) => new,
        // Only when the worker's runtime is stopping (which drops this request too).
        Err(Unwritten::Unknown) => return Err(ApiError::internal("the email's batch was dropped")),
    };
    let mut conn = store::conn(pool).await?;
    let (contact_id, reserved) = admit(&mut conn, ctx, sender, email).await?;
    new.contact_id = contact_id;
    if let Err(err) = emails::insert(&mut conn, &[*new], &ctx.dispatcher.queue_name()).await {
        drop(conn);
        release(pool, sender.project_id, reserved).await;
        return Err(err.into());
    }
    Ok(())
}

/// Checks, counts and writes an email with a key, its event and its outbox job; the earlier
/// answer instead when the key was used first (nothing is written or counted then).
async fn write_keyed(
    pool: &Pool,
    ctx: &SendContext,
    sender: Sender,
    key: &str,
    id: Uuid,
    email: &Submission<'_>,
) -> Result<Option<Accepted>, ApiError> {
    let project_id = sender.project_id;
    let mut conn = store::conn(pool).await?;
    // A replay answers before anything is checked or counted.
    if let Some(first) = emails::find_by_key(&mut conn, project_id, key).await? {
        return replay(&first, &email.request_hash).map(Some);
    }
    let (contact_id, reserved) = admit(&mut conn, ctx, sender, email).await?;
    let new = new_email(project_id, id, contact_id, email)?;
    let written = insert_keyed(&mut conn, ctx, key, new).await;
    drop(conn);
    match written {
        Ok(None) => Ok(None),
        Ok(Some(first)) => {
            release(pool, project_id, reserved).await;
            replay(&first, &email.request_hash).map(Some)
        }
        Err(err) => {
            release(pool, project_id, reserved).await;
            Err(err)
        }
    }
}

/// Writes a keyed email, its event and its outbox job; `Some(first)` when another request
/// with the same key wrote its email first (nothing is written).
async fn insert_keyed(
    conn: &mut AsyncPgConnection,
    ctx: &SendContext,
    key: &str,
    new: NewEmail,
) -> Result<Option<Email>, ApiError> {
    let queue_name = ctx.dispatcher.queue_name();
    let project_id = new.project_id;
    conn.transaction::<_, ApiError, _>(async |conn| {
        // Another request with this key may have got here first.
        emails::lock_key(conn, project_id, key).await?;
        if let Some(first) = emails::find_by_key(conn, project_id, key).await? {
            return Ok(Some(first));
        }
        emails::insert(conn, &[new], &queue_name).await?;
        Ok(None)
    })
    .await
}

/// Checks, counts and writes an email, its event and its outbox job in `conn`'s transaction
/// (an approved send: the approval and the email commit together), without handing it to the
/// worker: the outbox relay publishes it. A key used already writes nothing and answers the
/// first email's id. Returns the email's id.
pub async fn write_in(
    conn: &mut AsyncPgConnection,
    ctx: &SendContext,
    sender: Sender,
    email: &Submission<'_>,
) -> Result<Uuid, ApiError> {
    let project_id = sender.project_id;
    if let Some(key) = email.idempotency_key {
        emails::lock_key(conn, project_id, key).await?;
        if let Some(first) = emails::find_by_key(conn, project_id, key).await? {
            return replay(&first, &email.request_hash).map(|_| first.id);
        }
    }
    let (contact_id, _reserved) = admit(conn, ctx, sender, email).await?;
    let id = Uuid::now_v7();
    let new = new_email(project_id, id, contact_id, email)?;
    emails::insert(conn, &[new], &ctx.dispatcher.queue_name()).await?;
    Ok(id)
}

/// Hands the job to the worker and makes the answer of what came of it.
async fn dispatch(
    pool: &Pool,
    ctx: &SendContext,
    project_id: Uuid,
    id: Uuid,
    email: &Submission<'_>,
) -> Result<SendResponse, ApiError> {
    let task = SendEmail {
        email_log_id: id,
        project_id,
    };
    let answer = match ctx.dispatcher.call(&task).await {
        Dispatched::Answered(result) => {
            ctx.published.forget(id).await;
            result.into_answer()?
        }
        Dispatched::Queued => {
            ctx.published.forget(id).await;
            SendResponse::queued(id, email.to)
        }
        // The outbox row stays: the relay publishes it.
        Dispatched::NotPublished => SendResponse::queued(id, email.to),
    };
    if !answer.is_sent() {
        remember_queued(pool, project_id, id, email.idempotency_key.is_some()).await?;
    }
    Ok(answer)
}

/// The answer says `queued`: so does the log (unless the worker got further meanwhile), and a
/// replay of the key will say it again. With a key, an answer that could not be remembered is
/// not given (the client retries and gets the email's state); without one, it is.
async fn remember_queued(
    pool: &Pool,
    project_id: Uuid,
    id: Uuid,
    keyed: bool,
) -> Result<(), ApiError> {
    let marked = async {
        let mut conn = store::conn(pool).await?;
        emails::mark_answered_queued(&mut conn, project_id, id, keyed).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    match marked {
        Err(err) if keyed => Err(err),
        Err(err) => {
            tracing::warn!(%id, error = %err, "email not marked queued");
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}
