//! The use cases of a project's delivery settings: its own provider and its webhook secret.
//!
//! A project's delivery settings (admin scope): `PUT /api/v1/delivery/provider` chooses the
//! provider (SMTP or Resend) and its credentials, `DELETE` returns to the deployment's
//! default; `POST /api/v1/delivery/webhook-secret` makes a new Standard Webhooks secret for
//! `POST /api/webhooks/{provider}/{projectId}`, shown once. Both are stored sealed
//! (AES-256-GCM under the key-encryption key); no answer ever contains a stored credential.

use delivery::ProviderConfig;
use delivery::providers::SmtpSecurity;
use delivery::providers::{CheckError, HostPolicy, MailgunRegion};
use delivery::public_host;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::delivery as settings_db;
use crate::domain::error_code::MailErrorCode;

/// `{"kind": "smtp", "host", "port"?, "username"?, "password"?, "security"?: "starttls"|"tls"|"none"}`,
/// `{"kind": "resend", "api_key"}`, `{"kind": "postmark", "server_token", "message_stream"?}`,
/// `{"kind": "mailgun", "api_key", "domain", "region"?: "us"|"eu", "webhook_signing_key"?}` or
/// `{"kind": "sendgrid", "api_key", "webhook_public_key"?}` or `{"kind": "ses",
/// "access_key_id", "secret_access_key", "aws_region", "configuration_set"?, "sns_topic_arn"?}`.
/// A field another kind uses is ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProviderRequest {
    pub kind: ProviderKind,
    /// `smtp`: required, not blank.
    #[schema(min_length = 1, max_length = 253, pattern = r"[^\s\x85\uFEFF]")]
    pub host: Option<String>,
    /// `smtp`: default 587.
    #[schema(minimum = 1, maximum = 65535)]
    pub port: Option<u16>,
    #[schema(max_length = 512)]
    pub username: Option<String>,
    #[schema(max_length = 512)]
    pub password: Option<String>,
    /// `smtp`: default `starttls`.
    #[schema(inline)]
    pub security: Option<SmtpSecurityName>,
    /// `resend`, `mailgun`, `sendgrid`: required, not blank.
    #[schema(min_length = 1, max_length = 512, pattern = r"[^\s\x85\uFEFF]")]
    pub api_key: Option<String>,
    /// `postmark`: required, the server's API token (`X-Postmark-Server-Token`).
    #[schema(min_length = 1, max_length = 256, pattern = r"[^\s\x85\uFEFF]")]
    pub server_token: Option<String>,
    /// `postmark`: the message stream (default: the server's default transactional stream).
    #[schema(min_length = 1, max_length = 100, pattern = r"^[A-Za-z0-9_-]+$")]
    pub message_stream: Option<String>,
    /// `mailgun`: required, the sending domain as Mailgun knows it (a host name).
    #[schema(
        min_length = 1,
        max_length = 253,
        pattern = r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$"
    )]
    pub domain: Option<String>,
    /// `mailgun`: `us` (default) or `eu`, which picks the deployment's Mailgun address.
    #[schema(inline)]
    pub region: Option<MailgunRegionName>,
    /// `mailgun`: the HTTP webhook signing key that verifies its events.
    #[schema(min_length = 1, max_length = 256, pattern = r"[^\s\x85\uFEFF]")]
    pub webhook_signing_key: Option<String>,
    /// `sendgrid`: the Signed Event Webhook's verification key (base64 ECDSA P-256 public
    /// key, as SendGrid shows it).
    #[schema(min_length = 1, max_length = 1024, pattern = r"[^\s\x85\uFEFF]")]
    pub webhook_public_key: Option<String>,
    /// `ses`: required, the IAM access key id (`AKIA…`).
    #[schema(min_length = 16, max_length = 128, pattern = r"^[A-Z0-9]+$")]
    pub access_key_id: Option<String>,
    /// `ses`: required, the IAM secret access key.
    #[schema(min_length = 1, max_length = 256, pattern = r"^[A-Za-z0-9/+=]+$")]
    pub secret_access_key: Option<String>,
    /// `ses`: required, the AWS region SES sends from (`eu-west-1`).
    #[schema(
        min_length = 9,
        max_length = 30,
        pattern = r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$"
    )]
    pub aws_region: Option<String>,
    /// `ses`: the configuration set whose event destination publishes to SNS.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_-]+$")]
    pub configuration_set: Option<String>,
    /// `ses`: the SNS topic whose deliveries `POST /api/webhooks/ses/{projectId}` accepts
    /// (events of any other topic answer 401); in the region of `aws_region` or another.
    #[schema(
        min_length = 20,
        max_length = 400,
        pattern = r"^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-[0-9]{1,2}:[0-9]{12}:[A-Za-z0-9_-]{1,256}$"
    )]
    pub sns_topic_arn: Option<String>,
}

/// Mailgun's region.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MailgunRegionName {
    Us,
    Eu,
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Smtp,
    Resend,
    Postmark,
    Mailgun,
    Sendgrid,
    Ses,
}

/// How the worker talks to a project's SMTP server.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurityName {
    Starttls,
    Tls,
    None,
}

impl From<SmtpSecurityName> for SmtpSecurity {
    fn from(name: SmtpSecurityName) -> Self {
        match name {
            SmtpSecurityName::Starttls => Self::Starttls,
            SmtpSecurityName::Tls => Self::Tls,
            SmtpSecurityName::None => Self::None,
        }
    }
}

impl Validate for ProviderRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        let required: Vec<(&str, &Option<String>)> = match self.kind {
            ProviderKind::Smtp => vec![("host", &self.host)],
            ProviderKind::Resend => vec![("api_key", &self.api_key)],
            ProviderKind::Postmark => vec![("server_token", &self.server_token)],
            ProviderKind::Mailgun => vec![("api_key", &self.api_key), ("domain", &self.domain)],
            ProviderKind::Sendgrid => vec![("api_key", &self.api_key)],
            ProviderKind::Ses => vec![
                ("access_key_id", &self.access_key_id),
                ("secret_access_key", &self.secret_access_key),
                ("aws_region", &self.aws_region),
            ],
        };
        for (field, given) in required {
            if given.is_none() {
                return Err(ApiError::invalid_field(
                    field,
                    &format!("is required for kind {}", self.kind_name()),
                ));
            }
        }
        if let (ProviderKind::Sendgrid, Some(key)) = (self.kind, &self.webhook_public_key)
            && delivery::provider_webhooks::sendgrid_public_key(key).is_err()
        {
            return Err(ApiError::invalid_field(
                "webhook_public_key",
                "is not a base64 ECDSA P-256 public key",
            ));
        }
        Ok(())
    }
}

impl ProviderRequest {
    fn kind_name(&self) -> &'static str {
        match self.kind {
            ProviderKind::Smtp => "smtp",
            ProviderKind::Resend => "resend",
            ProviderKind::Postmark => "postmark",
            ProviderKind::Mailgun => "mailgun",
            ProviderKind::Sendgrid => "sendgrid",
            ProviderKind::Ses => "ses",
        }
    }

    fn into_config(self) -> ProviderConfig {
        match self.kind {
            ProviderKind::Smtp => ProviderConfig::Smtp {
                host: self.host.unwrap_or_default(),
                port: self.port.unwrap_or(587),
                username: self.username,
                password: self.password,
                security: self.security.map(SmtpSecurity::from).unwrap_or_default(),
            },
            ProviderKind::Resend => ProviderConfig::Resend {
                api_key: self.api_key.unwrap_or_default(),
            },
            ProviderKind::Postmark => ProviderConfig::Postmark {
                server_token: self.server_token.unwrap_or_default(),
                message_stream: self.message_stream,
            },
            ProviderKind::Mailgun => ProviderConfig::Mailgun {
                api_key: self.api_key.unwrap_or_default(),
                domain: self.domain.unwrap_or_default(),
                region: match self.region {
                    Some(MailgunRegionName::Eu) => MailgunRegion::Eu,
                    _ => MailgunRegion::Us,
                },
                webhook_signing_key: self.webhook_signing_key,
            },
            ProviderKind::Sendgrid => ProviderConfig::Sendgrid {
                api_key: self.api_key.unwrap_or_default(),
                webhook_public_key: self.webhook_public_key,
            },
            ProviderKind::Ses => ProviderConfig::Ses {
                access_key_id: self.access_key_id.unwrap_or_default(),
                secret_access_key: self.secret_access_key.unwrap_or_default(),
                region: self.aws_region.unwrap_or_default(),
                configuration_set: self.configuration_set,
                sns_topic_arn: self.sns_topic_arn,
            },
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderAnswer {
    /// `smtp`, `resend`, `postmark`, `mailgun`, `sendgrid`, `ses`, or `default` (the
    /// deployment's).
    pub kind: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderTestAnswer {
    /// The provider tested: the project's (`smtp`, `resend`, `postmark`, `mailgun`,
    /// `sendgrid`, `ses`) or, without one, `default` (the deployment's).
    pub kind: String,
    /// The provider's kind behind `default`, when this process knows the deployment's
    /// default provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// What was asked (`GET /server`, `GET /v3/domains/{domain}`, `GET /v3/scopes`), or
    /// `nothing: …` for a provider whose credentials are checked only at the first send.
    pub checked: String,
}

/// A project's SMTP host must not be, or resolve to, an internal address. A name that does
/// not resolve now is accepted (DNS may be private to the deployment, or not yet published):
/// the worker resolves and checks it again before every connection.
async fn check_smtp_host(host: &str, port: u16, policy: HostPolicy) -> Result<(), ApiError> {
    if policy == HostPolicy::Any {
        return Ok(());
    }
    match public_host::resolve_public(host.trim(), port).await {
        Err(err @ public_host::HostError::NotPublic { .. }) => Err(ApiError::invalid_field(
            "host",
            &format!("must be a public SMTP server: {err}"),
        )),
        Ok(_) | Err(public_host::HostError::Unresolved { .. }) => Ok(()),
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSecretAnswer {
    /// `whsec_…`: configure it at the provider (Resend's signing secret; Postmark's webhook
    /// basic-auth password); it is not shown again.
    pub secret: String,
    /// Where Resend posts events for this project (the other providers' receivers are
    /// `/api/webhooks/{postmark|mailgun|sendgrid|ses}/{projectId}`).
    pub path: String,
}

/// Stores the project's provider, sealed (`PUT /delivery/provider`); an SMTP host is checked
/// first.
pub async fn set_project_provider(
    state: &AppState,
    project_id: Uuid,
    request: ProviderRequest,
) -> Result<ProviderAnswer, ApiError> {
    let kind = request.kind_name();
    let config = request.into_config();
    if let ProviderConfig::Smtp { host, port, .. } = &config {
        check_smtp_host(host, *port, state.smtp_hosts).await?;
    }
    let sealed = settings_db::seal_provider(&state.kek, project_id, &config);
    let mut conn = store::conn(&state.pool).await?;
    settings_db::set_provider(&mut conn, project_id, Some(&sealed)).await?;
    Ok(ProviderAnswer {
        kind: kind.to_owned(),
    })
}

/// Sends through the deployment's default provider again (`DELETE /delivery/provider`).
pub async fn clear_project_provider(state: &AppState, project_id: Uuid) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    settings_db::set_provider(&mut conn, project_id, None).await?;
    Ok(())
}

/// Makes (or replaces) the project's webhook signing secret, shown once
/// (`POST /delivery/webhook-secret`).
pub async fn rotate_project_webhook_secret(
    state: &AppState,
    project_id: Uuid,
) -> Result<WebhookSecretAnswer, ApiError> {
    let secret = webhook_signature::Secret::generate();
    let sealed = settings_db::seal_webhook_secret(&state.kek, project_id, &secret);
    let mut conn = store::conn(&state.pool).await?;
    settings_db::set_webhook_secret(&mut conn, project_id, &sealed).await?;
    Ok(WebhookSecretAnswer {
        secret,
        path: format!("/api/webhooks/resend/{project_id}"),
    })
}

/// Asks the project's provider (or, without one, the deployment's default) whether it takes
/// its credentials, sending nothing (`POST /delivery/provider/test`): 422 `PROVIDER_REJECTED`
/// naming the provider when it answers 401 or 403.
pub async fn test_project_provider(
    state: &AppState,
    project_id: Uuid,
) -> Result<ProviderTestAnswer, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let sealed = settings_db::get(&mut conn, project_id).await?.0;
    drop(conn);
    let (kind, config) = match sealed {
        Some(sealed) => {
            let config = settings_db::open_provider(&state.kek, project_id, &sealed)
                .map_err(ApiError::internal)?;
            (config.kind().to_owned(), config)
        }
        None => match &state.delivery.default_provider {
            Some(config) => ("default".to_owned(), config.clone()),
            None => {
                return Ok(ProviderTestAnswer {
                    kind: "default".to_owned(),
                    provider: None,
                    checked: "nothing: the deployment's default provider is configured on the send worker".to_owned(),
                });
            }
        },
    };
    let provider_kind = config.kind();
    let provider = if matches!(
        config,
        ProviderConfig::Smtp { .. } | ProviderConfig::File { .. }
    ) {
        None
    } else {
        Some(
            config
                .build(
                    &state.delivery.resend_base_url,
                    &state.delivery.provider_urls,
                    state.smtp_hosts,
                )
                .map_err(ApiError::internal)?,
        )
    };
    let checked = match provider {
        None => format!("nothing: {provider_kind} credentials are checked at the first send"),
        Some(provider) => match provider.check().await {
            Ok(checked) => checked,
            Err(CheckError::Rejected(why)) => {
                return Err(ApiError::unprocessable(why)
                    .with_code(MailErrorCode::ProviderRejected)
                    .with_details(serde_json::json!({"provider": provider_kind})));
            }
            Err(CheckError::Failed(why)) => {
                tracing::warn!(provider = provider_kind, error = %why, "provider check failed");
                return Err(ApiError::unavailable(provider_kind, 30));
            }
        },
    };
    Ok(ProviderTestAnswer {
        kind,
        provider: Some(provider_kind.to_owned()),
        checked,
    })
}
