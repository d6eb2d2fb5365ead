//! What the tracking links record: the signature of the token is the credential. An open or
//! a click is counted once per email (with its event); an expired link counts nothing; the
//! unsubscribe link suppresses the address for the project and unsubscribes its contact.

use delivery::tracking::{Link, Verified};
use diesel_async::AsyncConnection as _;
use http_kit::ApiError;
use uuid::Uuid;

use crate::AppState;
use crate::db::emails;
use crate::flows;

/// Where a click goes.
#[derive(Debug)]
pub enum Click {
    /// To the signed destination (the click counted).
    Redirect(String),
    /// Nowhere: the link has expired.
    Expired,
}

fn not_found() -> ApiError {
    ApiError::not_found("no such link")
}

/// Whether a verified link has expired now. A version-1 token (made before links carried
/// their expiry) lasts the configured lifetime from its email's creation; without its email
/// it counts as expired.
fn expired(state: &AppState, verified: &Verified, email: Option<&emails::Email>) -> bool {
    let now = chrono::Utc::now();
    if verified.expires_at.is_some() {
        return verified.expired_at(now.timestamp());
    }
    let lifetime =
        chrono::TimeDelta::from_std(state.tracker.lifetime()).unwrap_or(chrono::TimeDelta::MAX);
    email.is_none_or(|e| e.created_at + lifetime < now)
}

/// The email a token stands for (the signature proves we issued it), with its project.
async fn email_of(
    conn: &mut diesel_async::AsyncPgConnection,
    id: Uuid,
) -> Result<Option<emails::Email>, ApiError> {
    Ok(emails::get_any(conn, id).await?)
}

/// Counts the open of the open pixel's `token` (`GET /t/o/{token}`): 404 unless signed; an
/// expired one counts nothing.
pub async fn record_open(state: &AppState, token: &str) -> Result<(), ApiError> {
    let Some(verified) = state.tracker.verify_token(token) else {
        return Err(not_found());
    };
    let Link::Open { email_id } = verified.link else {
        return Err(not_found());
    };
    let mut conn = store::conn(&state.pool).await?;
    let email = email_of(&mut conn, email_id).await?;
    if let Some(email) = email.filter(|e| !expired(state, &verified, Some(e))) {
        conn.transaction::<_, ApiError, _>(async |conn| {
            if emails::record_open(conn, email.project_id, email.id).await? {
                emails::add_event(
                    conn,
                    email.project_id,
                    email.id,
                    "opened",
                    "tracking",
                    serde_json::Value::Null,
                )
                .await?;
            }
            Ok(())
        })
        .await?;
    }
    Ok(())
}

/// Counts the click of a tracked link's `token` and answers where it goes
/// (`GET /t/c/{token}`): 404 unless signed with an `http`/`https` destination.
pub async fn record_click(state: &AppState, token: &str) -> Result<Click, ApiError> {
    let Some(verified) = state.tracker.verify_token(token) else {
        return Err(not_found());
    };
    let Link::Click { email_id, url } = &verified.link else {
        return Err(not_found());
    };
    let (email_id, url) = (*email_id, url.clone());
    if !delivery::tracking::is_web_url(&url) {
        return Err(not_found());
    }
    let mut conn = store::conn(&state.pool).await?;
    let email = email_of(&mut conn, email_id).await?;
    if expired(state, &verified, email.as_ref()) {
        return Ok(Click::Expired);
    }
    if let Some(email) = email {
        conn.transaction::<_, ApiError, _>(async |conn| {
            if emails::record_click(conn, email.project_id, email.id, &url).await? {
                emails::add_event(
                    conn,
                    email.project_id,
                    email.id,
                    "clicked",
                    "tracking",
                    serde_json::json!({"url": url}),
                )
                .await?;
            }
            Ok(())
        })
        .await?;
    } else {
        // A social campaign's link names the campaign.
        crate::db::social::record_click(&mut conn, email_id).await?;
    }
    Ok(Click::Redirect(url))
}

/// 404 unless `token` is a signed unsubscribe link (`GET /t/u/{token}` changes nothing).
pub fn check_unsubscribe_link(state: &AppState, token: &str) -> Result<(), ApiError> {
    match state.tracker.verify(token) {
        Some(Link::Unsubscribe { .. }) => Ok(()),
        _ => Err(not_found()),
    }
}

/// Unsubscribes the recipient of the unsubscribe link's `token` (`POST /t/u/{token}`): the
/// address is suppressed for the project and its contact unsubscribed.
pub async fn unsubscribe(state: &AppState, token: &str) -> Result<(), ApiError> {
    let Some(Link::Unsubscribe { email_id }) = state.tracker.verify(token) else {
        return Err(not_found());
    };
    let mut conn = store::conn(&state.pool).await?;
    let Some(email) = email_of(&mut conn, email_id).await? else {
        return Err(not_found());
    };
    conn.transaction::<_, ApiError, _>(async |conn| {
        let (added, _) = flows::unsubscribe_everywhere(
            conn,
            email.project_id,
            &email.to_email,
            "one-click unsubscribe",
        )
        .await?;
        if added {
            emails::add_event(
                conn,
                email.project_id,
                email.id,
                "unsubscribed",
                "tracking",
                serde_json::Value::Null,
            )
            .await?;
        }
        Ok(())
    })
    .await
}
