//! SMS: a provider per project (Twilio; its auth token sealed), contacts' numbers (E.164) and
//! consent, texts and SMS campaigns (written with their outbox row, sent by send-worker once
//! each: [`sender`]), the cost of a body (segments as carriers count them), and what Twilio
//! posts back (status callbacks and inbound texts, signed; STOP and START change the consent).

mod callbacks;
mod campaigns;
mod consent;
mod cost;
mod lists;
mod provider;
pub mod queue;
pub mod sender;
mod texts;
pub mod twilio;

pub use callbacks::*;
pub use campaigns::*;
pub use consent::*;
pub use cost::*;
pub use lists::*;
pub use provider::*;
pub use texts::*;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use diesel_async::AsyncPgConnection;
use http_kit::request::trim;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::config::SmsSettings;
use crate::db::sms::{self as db, ContactSms, LogFilter, SmsCampaignRow, SmsMessageRow};
use crate::domain::error_code::MailErrorCode;
use crate::domain::sms::{
    Encoding, Keyword, PriceTable, QuietHours, count_segments, parse_e164, twiml,
};
use crate::flows;
use twilio::{TwilioClient, TwilioCredentials};

/// The longest body: Twilio's limit (1,600 characters).
pub const BODY_MAX: usize = 1600;

/// What the SMS use cases read from the configuration, parsed once.
pub struct SmsConfig {
    pub prices: PriceTable,
    pub currency: String,
    pub quiet: QuietHours,
    pub default_tz: Tz,
    /// mail-api's public base URL: the callbacks' address and the URL Twilio signs.
    pub public_base: String,
    pub twilio: TwilioClient,
}

impl SmsConfig {
    pub fn new(
        settings: &SmsSettings,
        policy: delivery::safe_http::TargetPolicy,
        public_base: &str,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            prices: PriceTable::parse(&settings.prices).map_err(anyhow::Error::msg)?,
            currency: settings.currency.clone(),
            quiet: QuietHours::parse(&settings.quiet_hours_start, &settings.quiet_hours_end)
                .map_err(anyhow::Error::msg)?,
            default_tz: settings
                .default_timezone
                .parse()
                .map_err(|_| anyhow::anyhow!("MAIL_SMS__DEFAULT_TIMEZONE"))?,
            public_base: public_base.trim_end_matches('/').to_owned(),
            twilio: TwilioClient::new(
                &settings.twilio_base_url,
                policy,
                std::time::Duration::from_millis(settings.timeout_ms.max(1)),
            )?,
        })
    }

    fn callback_url(&self, project_id: Uuid, what: &str) -> String {
        format!(
            "{}/api/webhooks/sms/twilio/{project_id}/{what}",
            self.public_base
        )
    }
}

fn provider_not_configured() -> ApiError {
    ApiError::unprocessable("the project has no SMS provider (PUT /api/v1/sms/provider)")
        .with_code(MailErrorCode::SmsProviderNotConfigured)
}

fn no_consent() -> ApiError {
    ApiError::unprocessable("this number has not consented to texts, or revoked its consent")
        .with_code(MailErrorCode::SmsNoConsent)
}

fn body_rules(body: &str, field: &str) -> Result<(), ApiError> {
    if body.trim().is_empty() {
        return Err(ApiError::invalid_field(field, "must not be blank"));
    }
    if body.chars().count() > BODY_MAX {
        return Err(ApiError::invalid_field(
            field,
            "is longer than 1600 characters",
        ));
    }
    Ok(())
}

fn e164_field(raw: &mut String, field: &str) -> Result<Option<String>, ApiError> {
    let (e164, country) = parse_e164(raw).map_err(|why| ApiError::invalid_field(field, why))?;
    *raw = e164;
    Ok(country)
}
