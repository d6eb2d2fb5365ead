//! What Twilio posts back: status callbacks and inbound texts (STOP/START).

use super::*;

/// What a verified callback answers.
pub enum TwilioAnswer {
    /// TwiML (`text/xml`).
    Twiml(String),
    /// Nothing to say (204).
    Empty,
}

/// Which callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TwilioCallback {
    Inbound,
    Status,
}

pub(super) fn invalid_signature() -> ApiError {
    ApiError::unauthorized("missing or invalid X-Twilio-Signature")
        .with_code(MailErrorCode::InvalidSignature)
}

/// A callback Twilio posted for `project_id`: `url` is the full URL it requested (what it
/// signed), `params` its form fields. A missing or wrong signature answers 401; a project
/// without an SMS provider 404.
pub async fn receive_twilio(
    state: &AppState,
    project_id: Uuid,
    kind: TwilioCallback,
    url: &str,
    signature: Option<&str>,
    params: &[(String, String)],
) -> Result<TwilioAnswer, ApiError> {
    let Some(signature) = signature else {
        return Err(invalid_signature());
    };
    let mut conn = store::conn(&state.pool).await?;
    let provider = db::provider(&mut conn, project_id).await?.ok_or_else(|| {
        ApiError::not_found("no such project, or it has no SMS provider")
            .with_code(MailErrorCode::ProjectNotFound)
    })?;
    let token = db::open_token(&state.kek, project_id, &provider.auth_token_sealed)
        .map_err(|e| ApiError::internal(format!("the project's SMS token: {e}")))?;
    if !crate::domain::sms::twilio_signature_valid(&token, url, params, signature) {
        return Err(invalid_signature());
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let required = |name: &'static str| {
        param(name).ok_or_else(|| ApiError::invalid_field(name, "is required"))
    };
    match kind {
        TwilioCallback::Status => {
            let sid = required("MessageSid")?;
            let (status, reason) = match required("MessageStatus")? {
                "sent" => ("sent", None),
                "delivered" => ("delivered", None),
                "undelivered" => ("undelivered", param("ErrorCode")),
                "failed" => ("failed", param("ErrorCode")),
                // accepted, queued, sending, scheduled…: nothing new.
                _ => return Ok(TwilioAnswer::Empty),
            };
            db::set_status_by_sid(&mut conn, project_id, sid, status, reason).await?;
            Ok(TwilioAnswer::Empty)
        }
        TwilioCallback::Inbound => {
            let sid = required("MessageSid")?.to_owned();
            let from_raw = required("From")?;
            let from = parse_e164(from_raw).map_or_else(|_| from_raw.to_owned(), |(e, _)| e);
            let to = param("To").unwrap_or_default().to_owned();
            let body = param("Body").unwrap_or_default().to_owned();
            let keyword = Keyword::of(&body);
            crate::db::transaction::run_on(&mut conn, async |conn| {
                let fresh = db::insert_inbound(
                    conn,
                    &db::SmsInboundRow {
                        id: Uuid::now_v7(),
                        project_id,
                        message_sid: sid.clone(),
                        from_phone: from.clone(),
                        to_phone: to.clone(),
                        body: body.clone(),
                        keyword: keyword.map(|k| k.as_str().to_owned()),
                        received_at: Utc::now(),
                    },
                )
                .await?;
                if fresh {
                    match keyword {
                        Some(Keyword::Stop) => {
                            db::set_consent_by_phone(conn, project_id, &from, "revoked").await?;
                        }
                        Some(Keyword::Start) => {
                            db::set_consent_by_phone(conn, project_id, &from, "granted").await?;
                        }
                        _ => {}
                    }
                }
                Ok::<_, ApiError>(())
            })
            .await?;
            Ok(TwilioAnswer::Twiml(twiml(keyword.map(Keyword::reply))))
        }
    }
}
