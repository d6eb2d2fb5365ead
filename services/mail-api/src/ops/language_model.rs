//! Which chat-completions endpoint a project's model-backed tools call (RULINGS: the
//! deployment's, or the project's own): a project may set its own (`PUT
//! /api/v1/language-model`, admin), its key sealed and never answered; without one the
//! deployment's is used; without either the tools answer 422 `LLM_NOT_CONFIGURED`.
//!
//! A project's endpoint is a tenant's choice: `https://` only, its address literal and every
//! address its name resolves to checked like the outbound webhooks' targets, no redirects.

use std::sync::Arc;
use std::time::Duration;

use delivery::public_host::{HostError, resolve_public};
use delivery::safe_http::{SafeClient, TargetPolicy, check_url};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::language_models::{self, LanguageModel};
use crate::llm::ChatModel;

/// A project's own endpoint. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LanguageModelRequest {
    /// The API base of an OpenAI-compatible chat-completions endpoint: `https://…`, at most
    /// 2,048 characters (requests go to `{base_url}/chat/completions`). A host that is or
    /// resolves to a loopback, private, link-local or metadata address is refused (unless
    /// the deployment allows private targets).
    #[schema(
        min_length = 9,
        max_length = 2048,
        pattern = r"^https://[^\s\x85\uFEFF]+$"
    )]
    pub base_url: String,
    /// The model's name at that endpoint: 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub model: String,
    /// Sent as `Authorization: Bearer …`; stored sealed, never answered. At most 4,096
    /// characters; absent, null or empty: no key.
    #[schema(max_length = 4096)]
    pub api_key: Option<String>,
}

impl Validate for LanguageModelRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.base_url);
        http_kit::request::trim(&mut self.model);
        if !self.base_url.starts_with("https://") {
            return Err(ApiError::invalid_field(
                "base_url",
                "must start with https:// (a project's endpoint is reached over TLS only)",
            ));
        }
        if self.api_key.as_deref().is_some_and(str::is_empty) {
            self.api_key = None;
        }
        Ok(())
    }
}

/// Where the project's model-backed tools are answered from.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// The project's own endpoint.
    Project,
    /// The deployment's.
    Deployment,
    /// Neither: the model-backed tools answer 422 `LLM_NOT_CONFIGURED`.
    None,
}

/// The endpoint in use (never its key).
#[derive(Debug, Serialize, ToSchema)]
pub struct LanguageModelSettings {
    #[schema(inline)]
    pub source: ModelSource,
    /// The project's endpoint; null when it uses the deployment's (whose address is not
    /// shown) or none.
    pub base_url: Option<String>,
    /// The model's name; null when none is configured.
    pub model: Option<String>,
    /// Whether the project's endpoint has a key.
    pub has_api_key: bool,
}

/// The project's settings (`GET /language-model`).
pub async fn get_language_model(
    state: &AppState,
    project_id: Uuid,
) -> Result<LanguageModelSettings, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let own = language_models::get(&mut conn, project_id).await?;
    Ok(settings_of(state, own.as_ref()))
}

fn settings_of(state: &AppState, own: Option<&LanguageModel>) -> LanguageModelSettings {
    match (own, state.llm.as_deref()) {
        (Some(own), _) => LanguageModelSettings {
            source: ModelSource::Project,
            base_url: Some(own.base_url.clone()),
            model: Some(own.model.clone()),
            has_api_key: own.api_key_sealed.is_some(),
        },
        (None, Some(deployment)) => LanguageModelSettings {
            source: ModelSource::Deployment,
            base_url: None,
            model: Some(deployment.model.clone()),
            has_api_key: false,
        },
        (None, None) => LanguageModelSettings {
            source: ModelSource::None,
            base_url: None,
            model: None,
            has_api_key: false,
        },
    }
}

/// Sets the project's own endpoint (`PUT /language-model`): 400 for an address it may not
/// have.
pub async fn put_language_model(
    state: &AppState,
    project_id: Uuid,
    req: &LanguageModelRequest,
) -> Result<LanguageModelSettings, ApiError> {
    let policy = state.project_models.client.policy();
    let url = check_url(&req.base_url, policy)
        .map_err(|e| ApiError::invalid_field("base_url", &e.to_string()))?;
    // A name that resolves to an internal address is refused now; one that does not resolve
    // yet is checked again by the client's resolver at every call.
    if policy == TargetPolicy::PublicOnly
        && let Some(host) = url.host_str()
        && let Err(err @ HostError::NotPublic { .. }) =
            resolve_public(host, url.port_or_known_default().unwrap_or(443)).await
    {
        return Err(ApiError::invalid_field("base_url", &err.to_string()));
    }
    let row = LanguageModel {
        project_id,
        base_url: req.base_url.trim_end_matches('/').to_owned(),
        model: req.model.clone(),
        api_key_sealed: req
            .api_key
            .as_deref()
            .map(|key| language_models::seal_key(&state.kek, project_id, key)),
    };
    let mut conn = store::conn(&state.pool).await?;
    language_models::put(&mut conn, &row).await?;
    Ok(settings_of(state, Some(&row)))
}

/// Forgets the project's endpoint (`DELETE /language-model`): the deployment's applies again.
pub async fn delete_language_model(
    state: &AppState,
    project_id: Uuid,
) -> Result<LanguageModelSettings, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    language_models::delete(&mut conn, project_id).await?;
    Ok(settings_of(state, None))
}

/// The client for projects' own endpoints, built once: the SSRF-safe client (the outbound
/// webhooks' address policy, no redirects), trusting the deployment's `LLM__CA_FILE` besides
/// the system's roots.
pub struct ProjectModels {
    client: SafeClient,
}

impl ProjectModels {
    pub fn new(
        settings: &crate::llm::LlmSettings,
        policy: delivery::safe_http::TargetPolicy,
    ) -> anyhow::Result<Self> {
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        let roots = crate::llm::trusted_roots(&settings.ca_file)?;
        Ok(Self {
            client: SafeClient::with_roots(policy, timeout, 0, roots)?,
        })
    }
}

/// The model the project's model-backed tools call: its own, else the deployment's, else
/// 422 `LLM_NOT_CONFIGURED`.
pub async fn model_for(state: &AppState, project_id: Uuid) -> Result<Arc<ChatModel>, ApiError> {
    let own = {
        let mut conn = store::conn(&state.pool).await?;
        language_models::get(&mut conn, project_id).await?
    };
    let Some(own) = own else {
        return state.llm.clone().ok_or_else(crate::llm::not_configured);
    };
    let client = &state.project_models.client;
    // Checked when it was set; again in case the deployment's policy changed since.
    check_url(&own.base_url, client.policy())
        .map_err(|e| ApiError::unprocessable(format!("the project's model endpoint: {e}")))?;
    let api_key = own
        .api_key_sealed
        .as_deref()
        .map(|sealed| language_models::open_key(&state.kek, project_id, sealed))
        .transpose()
        .map_err(|e| ApiError::internal(format!("the project's model key: {e}")))?;
    Ok(Arc::new(ChatModel::with_client(
        client.http().clone(),
        &own.base_url,
        &own.model,
        api_key,
    )))
}
