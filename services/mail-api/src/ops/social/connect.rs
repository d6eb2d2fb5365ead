//! Connecting a project's accounts: the OAuth redirect (`GET /api/integrations/social/
//! {platform}/connect`: a random state, stored as its SHA-256, single use, bound to the
//! project and the platform, expiring; PKCE S256) and its callback (the state checked and
//! used up before the code is exchanged; a wrong, used or expired one is 400 and stores
//! nothing); or, for the token-flow platforms (Bluesky, Telegram), the credentials posted and
//! checked with the platform (refused: 422). Tokens are sealed with the project and platform
//! as context, never answered and never logged.

use chrono::{DateTime, TimeDelta, Utc};
use data_encoding::BASE64URL_NOPAD;
use http_kit::{ApiError, Validate};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::social::{self as db, AccountRow};
use crate::domain::error_code::MailErrorCode;
use crate::social::{AuthorizeRequest, Credentials, Platform, PlatformError, Tokens};

/// A connected account (its tokens are never answered).
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialAccount {
    #[schema(inline)]
    pub platform: Platform,
    /// The account's name on the platform (for Telegram, the chat posted to).
    pub handle: Option<String>,
    /// When the access token expires (it is refreshed before); null: no expiry given.
    pub expires_at: Option<DateTime<Utc>>,
    /// Whether the service holds a refresh token.
    pub refreshable: bool,
    pub connected_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl SocialAccount {
    fn new(row: &AccountRow) -> Option<Self> {
        Some(Self {
            platform: Platform::parse(&row.platform)?,
            handle: row.handle.clone(),
            expires_at: row.expires_at,
            refreshable: row.refresh_sealed.is_some(),
            connected_at: row.connected_at,
            updated_at: row.updated_at,
        })
    }
}

/// The sealing context of an account's tokens.
pub fn seal_context(project_id: Uuid, platform: Platform) -> Vec<u8> {
    format!("social-account:{project_id}:{}", platform.as_str()).into_bytes()
}

fn random_token() -> Result<String, ApiError> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ApiError::internal("no randomness"))?;
    Ok(BASE64URL_NOPAD.encode(&bytes))
}

fn state_hash(state: &str) -> [u8; 32] {
    store::sha256(state.as_bytes())
}

/// The PKCE S256 challenge of `verifier`.
pub fn challenge_of(verifier: &str) -> String {
    BASE64URL_NOPAD.encode(&store::sha256(verifier.as_bytes()))
}

/// Where the platform sends the person back.
pub fn callback_url(state: &AppState, platform: Platform) -> String {
    format!(
        "{}/api/integrations/social/{}/callback",
        state.social_callback_base.trim_end_matches('/'),
        platform.as_str()
    )
}

pub fn unknown_platform(name: &str) -> ApiError {
    ApiError::invalid_field(
        "platform",
        &format!("{name:?} is not a platform the service publishes to"),
    )
}

/// The platform named by a path, 400 otherwise.
pub fn platform_named(name: &str) -> Result<Platform, ApiError> {
    Platform::parse(name).ok_or_else(|| unknown_platform(name))
}

fn refused(err: &PlatformError) -> ApiError {
    match err {
        PlatformError::NotConfigured(reason) => ApiError::unprocessable(reason.clone())
            .with_code(MailErrorCode::SocialPlatformNotConfigured),
        other => ApiError::unprocessable(format!("the platform refused: {other}"))
            .with_code(MailErrorCode::SocialPlatformRefused),
    }
}

/// Where a connection was started, which decides how its callback answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectOrigin {
    /// `GET /api/integrations/social/{platform}/connect`: the callback answers the account.
    Api,
    /// The dashboard's social page, by this sign-in account: the callback must come to a
    /// browser signed in as that account (so a person cannot be made to connect their platform
    /// account to someone else's project), and sends them back to the page.
    Dashboard { account_id: Uuid },
}

impl ConnectOrigin {
    fn started_by(self) -> Option<Uuid> {
        match self {
            Self::Api => None,
            Self::Dashboard { account_id } => Some(account_id),
        }
    }
}

/// The OAuth platforms the deployment has a client for: those a person can connect.
pub fn connectable_platforms(state: &AppState) -> Vec<Platform> {
    Platform::ALL
        .into_iter()
        .filter(|p| p.uses_oauth() && state.social.has_client(*p))
        .collect()
}

/// Starts connecting the project's `platform` account: the address to send the person to.
pub async fn start_connect(
    state: &AppState,
    project_id: Uuid,
    platform: Platform,
    origin: ConnectOrigin,
) -> Result<String, ApiError> {
    let oauth_state = random_token()?;
    let verifier = random_token()?;
    let redirect_uri = callback_url(state, platform);
    let location = state
        .social
        .authorize_url(
            platform,
            &AuthorizeRequest {
                state: &oauth_state,
                code_challenge: &challenge_of(&verifier),
                code_verifier: &verifier,
                redirect_uri: &redirect_uri,
            },
        )
        .map_err(|e| refused(&e))?;
    let expires_at = Utc::now() + TimeDelta::seconds(state.social.settings.state_lifetime_secs);
    let mut conn = store::conn(&state.pool).await?;
    db::insert_state(
        &mut conn,
        &state_hash(&oauth_state),
        project_id,
        platform.as_str(),
        &verifier,
        origin.started_by(),
        expires_at,
    )
    .await?;
    Ok(location)
}

/// What the platform sends back. Unknown parameters are ignored (platforms add their own).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SocialCallback {
    /// The authorization code.
    #[param(max_length = 2000)]
    pub code: Option<String>,
    /// The state the connect route sent.
    #[param(max_length = 200)]
    pub state: Option<String>,
    /// The platform's refusal (the person declined).
    #[param(max_length = 200)]
    pub error: Option<String>,
}

impl Validate for SocialCallback {}

fn bad_state() -> ApiError {
    ApiError::bad_request("the state is unknown, used or expired: start connecting again")
        .with_code(MailErrorCode::SocialConnectStateInvalid)
}

async fn store_tokens(
    state: &AppState,
    project_id: Uuid,
    platform: Platform,
    tokens: &Tokens,
) -> Result<SocialAccount, ApiError> {
    let context = seal_context(project_id, platform);
    let now = Utc::now();
    let row = AccountRow {
        project_id,
        platform: platform.as_str().to_owned(),
        handle: tokens.handle.clone(),
        access_sealed: state.kek.seal(tokens.access.as_bytes(), &context),
        refresh_sealed: tokens
            .refresh
            .as_ref()
            .map(|r| state.kek.seal(r.as_bytes(), &context)),
        expires_at: tokens.expires_at,
        connected_at: now,
        updated_at: now,
    };
    let mut conn = store::conn(&state.pool).await?;
    db::upsert_account(&mut conn, &row).await?;
    let row = db::account(&mut conn, project_id, platform.as_str())
        .await?
        .unwrap_or(row);
    SocialAccount::new(&row).ok_or_else(|| ApiError::internal("unknown platform stored"))
}

/// The platform's callback (`GET /api/integrations/social/{platform}/callback`): the state
/// used up, the code exchanged and the tokens stored sealed. `browser_account` is the sign-in
/// account of the browser that came back, if any. Answers the account and where the
/// connection was started.
pub async fn finish_connect(
    state: &AppState,
    platform: Platform,
    callback: &SocialCallback,
    browser_account: Option<Uuid>,
) -> Result<(SocialAccount, ConnectOrigin), ApiError> {
    let Some(oauth_state) = callback.state.as_deref() else {
        return Err(bad_state());
    };
    let taken = {
        let mut conn = store::conn(&state.pool).await?;
        db::take_state(&mut conn, &state_hash(oauth_state), platform.as_str()).await?
    };
    let Some((project_id, verifier, started_by)) = taken else {
        return Err(bad_state());
    };
    let origin = match started_by {
        None => ConnectOrigin::Api,
        Some(account_id) if browser_account == Some(account_id) => {
            ConnectOrigin::Dashboard { account_id }
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "this connection was started on the dashboard by another sign-in: sign in as \
                 that person, or start connecting again",
            )
            .with_code(MailErrorCode::SocialConnectStateInvalid));
        }
    };
    if let Some(error) = &callback.error {
        return Err(ApiError::unprocessable(format!(
            "the platform did not authorize: {}",
            error.chars().take(200).collect::<String>()
        ))
        .with_code(MailErrorCode::SocialPlatformRefused));
    }
    let Some(code) = callback.code.as_deref() else {
        return Err(ApiError::invalid_field("code", "is missing"));
    };
    let tokens = state
        .social
        .exchange(platform, code, &verifier, &callback_url(state, platform))
        .await
        .map_err(|e| refused(&e))?;
    let account = store_tokens(state, project_id, platform, &tokens).await?;
    Ok((account, origin))
}

/// A token-flow platform's credentials; the fields of the other platform are refused.
/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ConnectSocialAccount {
    /// Bluesky: the account's handle or email, 1..=253 characters.
    #[schema(min_length = 1, max_length = 253, pattern = r"^[^\s\x85\uFEFF]+$")]
    pub identifier: Option<String>,
    /// Bluesky: an app password (Settings, App passwords), 1..=100 characters.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\s\x85\uFEFF]+$")]
    pub app_password: Option<String>,
    /// Telegram: the bot's token from BotFather.
    #[schema(min_length = 3, max_length = 200, pattern = "^[0-9]+:[A-Za-z0-9_-]+$")]
    pub bot_token: Option<String>,
    /// Telegram: the chat the bot posts to, a numeric id or `@channelname`.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^(-?[0-9]+|@[A-Za-z0-9_]{5,32})$"
    )]
    pub chat_id: Option<String>,
}

impl Validate for ConnectSocialAccount {}

fn required(value: Option<&String>, field: &str) -> Result<String, ApiError> {
    value
        .cloned()
        .ok_or_else(|| ApiError::invalid_field(field, "is required for this platform"))
}

/// Connects a token-flow platform's account (`POST /social/accounts/{platform}`): the
/// credentials checked with the platform first (422 when it refuses them).
pub async fn connect_with_credentials(
    state: &AppState,
    project_id: Uuid,
    platform: Platform,
    req: &ConnectSocialAccount,
) -> Result<SocialAccount, ApiError> {
    let credentials = match platform {
        Platform::Bluesky => {
            if req.bot_token.is_some() || req.chat_id.is_some() {
                return Err(ApiError::invalid_field("bot_token", "is Telegram's"));
            }
            Credentials::Bluesky {
                identifier: required(req.identifier.as_ref(), "identifier")?,
                app_password: required(req.app_password.as_ref(), "app_password")?,
            }
        }
        Platform::Telegram => {
            if req.identifier.is_some() || req.app_password.is_some() {
                return Err(ApiError::invalid_field("identifier", "is Bluesky's"));
            }
            Credentials::Telegram {
                bot_token: required(req.bot_token.as_ref(), "bot_token")?,
                chat_id: required(req.chat_id.as_ref(), "chat_id")?,
            }
        }
        other => {
            return Err(ApiError::unprocessable(format!(
                "{} connects through GET /api/integrations/social/{}/connect",
                other.as_str(),
                other.as_str()
            ))
            .with_code(MailErrorCode::SocialPlatformNotConfigured));
        }
    };
    let tokens = state
        .social
        .connect(platform, &credentials)
        .await
        .map_err(|e| refused(&e))?;
    store_tokens(state, project_id, platform, &tokens).await
}

/// The project's connected accounts (`GET /social/accounts`).
pub async fn list_social_accounts(
    state: &AppState,
    project_id: Uuid,
) -> Result<Vec<SocialAccount>, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let rows = db::accounts(&mut conn, project_id).await?;
    Ok(rows.iter().filter_map(SocialAccount::new).collect())
}
