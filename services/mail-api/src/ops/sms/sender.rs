//! Sending one text exactly once (send-worker). Under the row's lock: a text with a provider
//! SID or in a final state is done; one whose lease another attempt holds waits; a number
//! without consent (a STOP since it was queued) is canceled; else the attempt takes the lease
//! and records when it started. An attempt that started before and never recorded its
//! outcome (a worker killed after Twilio took the text, or an answer lost) first asks Twilio
//! for a text with this body to this number since then, and records its SID instead of
//! sending again. The SID is recorded as soon as Twilio answers.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use diesel_async::AsyncConnection as _;
use secrets::Kek;
use store::Pool;
use uuid::Uuid;

use super::twilio::{TwilioClient, TwilioCredentials, TwilioError};
use crate::config::SmsSettings;
use crate::db::sms::{self as db, MessageChange, SmsMessageRow, SmsProvider};

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmsAttempt {
    /// Sent (now or before), canceled or failed for good: nothing more to do.
    Done(String),
    /// Try again after the queue's delay.
    Retry(String),
}

/// The statuses after which a text is never sent.
const FINAL: &[&str] = &["sent", "delivered", "undelivered", "failed", "canceled"];

pub struct SmsSender {
    pool: Pool,
    kek: Arc<Kek>,
    twilio: TwilioClient,
    /// The public base URL of mail-api (the status callbacks' address).
    public_base: String,
    lease: TimeDelta,
}

enum Claim {
    Finished(SmsAttempt),
    Go(
        Box<(SmsMessageRow, SmsProvider)>,
        Option<chrono::DateTime<Utc>>,
    ),
}

impl SmsSender {
    pub fn new(
        pool: Pool,
        kek: Arc<Kek>,
        settings: &SmsSettings,
        policy: delivery::safe_http::TargetPolicy,
        public_base: &str,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            pool,
            kek,
            twilio: TwilioClient::new(
                &settings.twilio_base_url,
                policy,
                Duration::from_millis(settings.timeout_ms.max(1)),
            )?,
            public_base: public_base.trim_end_matches('/').to_owned(),
            lease: TimeDelta::seconds(settings.lease_secs.max(1)),
        })
    }

    /// Sends the project's text `message_id` unless it went already.
    pub async fn send(&self, project_id: Uuid, message_id: Uuid) -> anyhow::Result<SmsAttempt> {
        let lease = self.lease;
        let mut conn = store::conn(&self.pool).await?;
        let claim = conn
            .transaction::<_, anyhow::Error, _>(async |conn| {
                let now = Utc::now();
                let Some(row) = db::lock_message(conn, project_id, message_id).await? else {
                    return Ok(Claim::Finished(SmsAttempt::Done("no such text".into())));
                };
                if row.provider_sid.is_some() || FINAL.contains(&row.status.as_str()) {
                    return Ok(Claim::Finished(SmsAttempt::Done(format!(
                        "already {}",
                        row.status
                    ))));
                }
                if row.lease_until.is_some_and(|until| until > now) {
                    return Ok(Claim::Finished(SmsAttempt::Retry(
                        "another attempt is sending it".into(),
                    )));
                }
                if !db::phone_consented(conn, project_id, &row.to_phone).await? {
                    finish(conn, &row, "canceled", Some("no_consent"), None).await?;
                    return Ok(Claim::Finished(SmsAttempt::Done("no consent".into())));
                }
                let Some(provider) = db::provider(conn, project_id).await? else {
                    finish(conn, &row, "failed", Some("no SMS provider"), None).await?;
                    return Ok(Claim::Finished(SmsAttempt::Done("no provider".into())));
                };
                let earlier = row.attempt_started_at;
                db::update_message(
                    conn,
                    row.id,
                    &MessageChange {
                        status: "sending",
                        reason: None,
                        attempt_started_at: Some(earlier.unwrap_or(now)),
                        lease_until: Some(now + lease),
                        provider_sid: None,
                    },
                )
                .await?;
                Ok(Claim::Go(Box::new((row, provider)), earlier))
            })
            .await?;
        let (boxed, earlier) = match claim {
            Claim::Finished(outcome) => return Ok(outcome),
            Claim::Go(boxed, earlier) => (boxed, earlier),
        };
        let (row, provider) = *boxed;
        let token = db::open_token(&self.kek, project_id, &provider.auth_token_sealed)?;
        let creds = TwilioCredentials {
            account_sid: &provider.account_sid,
            auth_token: &token,
        };
        if let Some(since) = earlier {
            match self
                .twilio
                .find_sent(
                    &creds,
                    &row.to_phone,
                    &provider.from_number,
                    &row.body,
                    since,
                )
                .await
            {
                Ok(Some(sid)) => {
                    finish(&mut conn, &row, "sent", None, Some(&sid)).await?;
                    return Ok(SmsAttempt::Done("found sent by an earlier attempt".into()));
                }
                Ok(None) => {}
                Err(err) => {
                    release(&mut conn, &row, since).await?;
                    return Ok(SmsAttempt::Retry(err.to_string()));
                }
            }
        }
        let callback = format!(
            "{}/api/webhooks/sms/twilio/{project_id}/status",
            self.public_base
        );
        match self
            .twilio
            .send(
                &creds,
                &row.to_phone,
                &provider.from_number,
                &row.body,
                &callback,
            )
            .await
        {
            Ok(sid) => {
                finish(&mut conn, &row, "sent", None, Some(&sid)).await?;
                Ok(SmsAttempt::Done("sent".into()))
            }
            Err(TwilioError::RateLimited) => {
                // Twilio took nothing: a later attempt need not look for it (unless an
                // earlier one is still unaccounted for).
                match earlier {
                    Some(since) => release(&mut conn, &row, since).await?,
                    None => requeue(&mut conn, &row).await?,
                }
                Ok(SmsAttempt::Retry("rate limited".into()))
            }
            Err(TwilioError::Rejected(reason)) => {
                finish(&mut conn, &row, "failed", Some(&reason), None).await?;
                Ok(SmsAttempt::Done(reason))
            }
            Err(err @ TwilioError::Uncertain(_)) => {
                let since = earlier.unwrap_or_else(Utc::now);
                release(&mut conn, &row, since).await?;
                Ok(SmsAttempt::Retry(err.to_string()))
            }
        }
    }
}

async fn finish(
    conn: &mut diesel_async::AsyncPgConnection,
    row: &SmsMessageRow,
    status: &str,
    reason: Option<&str>,
    sid: Option<&str>,
) -> anyhow::Result<()> {
    db::update_message(
        conn,
        row.id,
        &MessageChange {
            status,
            reason,
            attempt_started_at: None,
            lease_until: None,
            provider_sid: sid,
        },
    )
    .await?;
    Ok(())
}

/// The attempt ended without knowing whether Twilio took the text: the next one looks first.
async fn release(
    conn: &mut diesel_async::AsyncPgConnection,
    row: &SmsMessageRow,
    since: chrono::DateTime<Utc>,
) -> anyhow::Result<()> {
    db::update_message(
        conn,
        row.id,
        &MessageChange {
            status: "queued",
            reason: None,
            attempt_started_at: Some(since),
            lease_until: None,
            provider_sid: None,
        },
    )
    .await?;
    Ok(())
}

/// The attempt ended knowing Twilio took nothing.
async fn requeue(
    conn: &mut diesel_async::AsyncPgConnection,
    row: &SmsMessageRow,
) -> anyhow::Result<()> {
    db::update_message(
        conn,
        row.id,
        &MessageChange {
            status: "queued",
            reason: Some("rate_limited"),
            attempt_started_at: None,
            lease_until: None,
            provider_sid: None,
        },
    )
    .await?;
    Ok(())
}
