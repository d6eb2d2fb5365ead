//! Connections to other email platforms a project migrates from (`connect_platform`,
//! `list_connected_platforms`, `disconnect_platform`): the credential is checked against the
//! platform when the connection is made (refused: 422 naming the platform), stored sealed and
//! never answered. One module per platform behind [`PlatformAdapter`].

mod brevo;
mod kit;
mod mailchimp;
mod mailerlite;
pub mod migrate;

use std::time::Duration;

use chrono::{DateTime, Utc};
use delivery::safe_http::{SafeClient, TargetPolicy, check_url};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::config::PlatformSettings;
use crate::db::platforms::{self, Connection};
use crate::domain::error_code::MailErrorCode;

/// An email platform a project can migrate from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportPlatform {
    Mailchimp,
    Brevo,
    /// Kit (formerly ConvertKit), API v4.
    Kit,
    Mailerlite,
}

impl ImportPlatform {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mailchimp => "mailchimp",
            Self::Brevo => "brevo",
            Self::Kit => "kit",
            Self::Mailerlite => "mailerlite",
        }
    }

    fn parse(stored: &str) -> Option<Self> {
        [Self::Mailchimp, Self::Brevo, Self::Kit, Self::Mailerlite]
            .into_iter()
            .find(|p| p.as_str() == stored)
    }

    fn adapter(self) -> &'static dyn PlatformAdapter {
        match self {
            Self::Mailchimp => &mailchimp::Mailchimp,
            Self::Brevo => &brevo::Brevo,
            Self::Kit => &kit::Kit,
            Self::Mailerlite => &mailerlite::MailerLite,
        }
    }
}

/// What one platform's API looks like to the importer.
trait PlatformAdapter: Sync {
    /// The request that checks `api_key` (any 2xx answer accepts it); 422 for a key the
    /// platform could not take whatever it answers.
    fn check(&self, api: &PlatformApi, api_key: &str) -> Result<reqwest::RequestBuilder, ApiError>;
    /// The account's name in the check's answer, when the platform gives one.
    fn account(&self, answer: &Value) -> Option<String>;
}

/// The client of the platforms' APIs, built once: the outbound client (its address policy,
/// no redirects) and where each platform's API is.
pub struct PlatformApi {
    client: SafeClient,
    settings: PlatformSettings,
}

impl PlatformApi {
    pub fn new(settings: &PlatformSettings, policy: TargetPolicy) -> anyhow::Result<Self> {
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        Ok(Self {
            client: SafeClient::new(policy, timeout, 0)?,
            settings: settings.clone(),
        })
    }

    /// A GET of `url`, once the URL passed the address policy.
    fn get(
        &self,
        platform: ImportPlatform,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, ApiError> {
        let url = check_url(url, self.client.policy())
            .map_err(|e| refused(platform, &format!("its API address is not reachable: {e}")))?;
        Ok(self.client.http().get(url))
    }
}

/// 422 `PLATFORM_REFUSED`, naming the platform.
fn refused(platform: ImportPlatform, why: &str) -> ApiError {
    ApiError::unprocessable(format!("{}: {why}", platform.as_str()))
        .with_code(MailErrorCode::PlatformRefused)
        .with_details(json!({ "platform": platform.as_str() }))
}

pub fn connection_not_found() -> ApiError {
    ApiError::not_found("no such platform connection")
        .with_code(MailErrorCode::PlatformConnectionNotFound)
}

/// A platform's credential. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportPlatformCredentials {
    /// The account's API key (Mailchimp's ends in its data center, `…-us21`); stored sealed,
    /// never answered. 1..=500 characters without spaces.
    #[schema(min_length = 1, max_length = 500, pattern = r"^[^\s\x85\uFEFF]+$")]
    pub api_key: String,
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ConnectImportPlatform {
    pub platform: ImportPlatform,
    pub credentials: ImportPlatformCredentials,
}

impl Validate for ConnectImportPlatform {}

/// A connected platform account (never its credential).
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportPlatformConnection {
    pub id: Uuid,
    pub platform: ImportPlatform,
    /// The account's name as the platform gave it when the credential was checked (null when
    /// it gives none).
    pub account: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl ImportPlatformConnection {
    fn new(row: Connection) -> Result<Self, ApiError> {
        Ok(Self {
            id: row.id,
            platform: ImportPlatform::parse(&row.platform)
                .ok_or_else(|| ApiError::internal(format!("stored platform {:?}", row.platform)))?,
            account: row.account,
            created_at: row.created_at,
        })
    }
}

/// Checks the credential against the platform: the account's name if it gives one.
async fn verify(
    api: &PlatformApi,
    platform: ImportPlatform,
    api_key: &str,
) -> Result<Option<String>, ApiError> {
    let adapter = platform.adapter();
    let response = adapter.check(api, api_key)?.send().await.map_err(|e| {
        refused(
            platform,
            &format!("could not be reached ({})", e.without_url()),
        )
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(refused(platform, "the credential was refused"));
    }
    if !status.is_success() {
        return Err(refused(
            platform,
            &format!("the credential check answered {}", status.as_u16()),
        ));
    }
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    Ok(adapter
        .account(&answer)
        .map(|name| name.chars().take(200).collect()))
}

/// Connects a platform account (`POST /platforms/connections`, `connect_platform`).
pub async fn connect_platform(
    state: &AppState,
    project_id: Uuid,
    req: &ConnectImportPlatform,
) -> Result<ImportPlatformConnection, ApiError> {
    let account = verify(&state.platforms, req.platform, &req.credentials.api_key).await?;
    let id = Uuid::now_v7();
    let row = Connection {
        id,
        project_id,
        platform: req.platform.as_str().to_owned(),
        account,
        credentials_sealed: platforms::seal_credential(
            &state.kek,
            project_id,
            id,
            &req.credentials.api_key,
        ),
        created_at: Utc::now(),
    };
    let mut conn = store::conn(&state.pool).await?;
    platforms::insert(&mut conn, &row).await?;
    ImportPlatformConnection::new(row)
}

/// A page of the project's connections, oldest first (`GET /platforms/connections`,
/// `list_connected_platforms`).
pub async fn list_connected_platforms(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<ImportPlatformConnection>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = platforms::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(ImportPlatformConnection::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |c| c.id))
}

/// The project's connection `id`: 404 `PLATFORM_CONNECTION_NOT_FOUND` otherwise.
pub async fn get_connection(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<ImportPlatformConnection, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = platforms::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(connection_not_found)?;
    ImportPlatformConnection::new(row)
}

/// Forgets a connection and its sealed credential (`DELETE /platforms/connections/{id}`,
/// `disconnect_platform`); what was imported stays.
pub async fn disconnect_platform(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if !platforms::delete(&mut conn, project_id, id).await? {
        return Err(connection_not_found());
    }
    Ok(())
}

/// `settings` + `path`, without a doubled slash.
fn join(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}
