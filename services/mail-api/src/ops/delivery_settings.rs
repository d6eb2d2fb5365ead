//! The use cases of a project's delivery settings: its own provider and its webhook secret.
//!
//! A project's delivery settings (admin scope): `PUT /api/v1/delivery/provider` chooses the
//! provider (SMTP or Resend) and its credentials, `DELETE` returns to the deployment's
//! default; `POST /api/v1/delivery/webhook-secret` makes a new Standard Webhooks secret for
//! `POST /api/webhooks/{provider}/{projectId}`, shown once. Both are stored sealed
//! (AES-256-GCM under the key-encryption key); no answer ever contains a stored credential.

use delivery::ProviderConfig;
use delivery::providers::HostPolicy;
use delivery::providers::SmtpSecurity;
use delivery::public_host;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::delivery as settings_db;

/// `{"kind": "smtp", "host", "port"?, "username"?, "password"?, "security"?: "starttls"|"tls"|"none"}`
/// or `{"kind": "resend", "api_key"}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProviderRequest {
    pub kind: ProviderKind,
    /// `smtp`: required, not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x85\uFEFF]")]
    pub host: Option<String>,
    /// `smtp`: default 587.
    #[schema(minimum = 1, maximum = 65535)]
    pub port: Option<u16>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// `smtp`: default `starttls`.
    #[schema(inline)]
    pub security: Option<SmtpSecurityName>,
    /// `resend`: required, not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x85\uFEFF]")]
    pub api_key: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Smtp,
    Resend,
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
        let (field, given) = match self.kind {
            ProviderKind::Smtp => ("host", &self.host),
            ProviderKind::Resend => ("api_key", &self.api_key),
        };
        if given.is_none() {
            return Err(ApiError::invalid_field(
                field,
                &format!("is required for kind {}", self.kind_name()),
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
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderAnswer {
    /// `smtp`, `resend`, or `default` (the deployment's).
    pub kind: String,
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
    /// `whsec_…`: configure it at the provider; it is not shown again.
    pub secret: String,
    /// Where the provider posts events for this project.
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
