//! An OpenAI-compatible chat-completions client (`POST {base_url}/chat/completions`), for the
//! model-backed routes of the services: mail's tools (ruled: an endpoint configured for the
//! deployment; without one, 422 `LLM_NOT_CONFIGURED` and nothing is invented) and memory's
//! runs (the deployment's endpoint, called with the caller's own BYOK key). The endpoint is the
//! deployment's configuration, never a caller's, so it is trusted like the embedding endpoint.
//! Failures are 422s: `LLM_FAILED` (unreachable, refused, no text) and `LLM_INVALID_OUTPUT`
//! (an answer the service cannot use); the cause goes to the log, never the key.

use std::time::Duration;

use http_kit::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest piece of an endpoint's error body kept in the log.
const MAX_LOGGED_ERROR: usize = 300;

/// `<SERVICE>_LLM__BASE_URL`, `__MODEL`, `__API_KEY`, `__TIMEOUT_SECS`: an empty `base_url`
/// means no model.
#[derive(Clone, Deserialize)]
pub struct LlmSettings {
    /// The API base, `https://…` or `http://…` (e.g. `https://llm.internal/v1`); requests go
    /// to `{base_url}/chat/completions`.
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub model: String,
    /// Sent as `Authorization: Bearer …` when not empty.
    #[serde(default)]
    pub api_key: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// `…_LLM__CA_FILE`: a PEM file of CA certificates trusted for an `https://` endpoint in
    /// addition to the system's roots (a private CA); empty: the system's roots only.
    #[serde(default)]
    pub ca_file: String,
}

fn default_timeout() -> u64 {
    60
}

/// The settings of no `[llm]` table at all: no model, and the same timeout as a table that
/// leaves it out (a derived default would have been 0 s, raised to 1 s).
impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: String::new(),
            api_key: String::new(),
            timeout_secs: default_timeout(),
            ca_file: String::new(),
        }
    }
}

impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("timeout_secs", &self.timeout_secs)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: "system",
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: "user",
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: "assistant",
            content: content.into(),
        }
    }
}

/// The certificates of `ca_file` (`…_LLM__CA_FILE`, PEM), trusted for `https://` model
/// endpoints besides the system's roots; none when it is empty.
pub fn trusted_roots(ca_file: &str) -> anyhow::Result<Vec<reqwest::Certificate>> {
    let ca_file = ca_file.trim();
    if ca_file.is_empty() {
        return Ok(Vec::new());
    }
    let pem = std::fs::read(ca_file).map_err(|e| anyhow::anyhow!("LLM__CA_FILE {ca_file}: {e}"))?;
    reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| anyhow::anyhow!("LLM__CA_FILE {ca_file}: {e}"))
}

/// An OpenAI-compatible chat-completions endpoint.
pub struct ChatModel {
    client: reqwest::Client,
    url: String,
    pub model: String,
    api_key: Option<String>,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [Message],
    temperature: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
}

/// `{"type": "json_object"}`: the endpoint is asked for one JSON object.
#[derive(Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: AnswerMessage,
}

#[derive(Deserialize)]
struct AnswerMessage {
    content: Option<String>,
}

impl ChatModel {
    /// The configured model; `None` when `base_url` is empty.
    pub fn from_settings(settings: &LlmSettings) -> anyhow::Result<Option<Self>> {
        let base = settings.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Ok(None);
        }
        if !base.starts_with("https://") && !base.starts_with("http://") {
            anyhow::bail!("LLM__BASE_URL must start with https:// or http://");
        }
        if settings.model.trim().is_empty() {
            anyhow::bail!("LLM__MODEL is required with LLM__BASE_URL");
        }
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        tls_kit::install();
        let mut client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)));
        for cert in trusted_roots(&settings.ca_file)? {
            client = client.add_root_certificate(cert);
        }
        let client = client.build()?;
        Ok(Some(Self {
            client,
            url: format!("{base}/chat/completions"),
            model: settings.model.trim().to_owned(),
            api_key: Some(settings.api_key.clone()).filter(|k| !k.is_empty()),
        }))
    }

    /// The endpoint at `base_url` (already checked by the caller), called through `client`
    /// (for an endpoint a tenant chose: a client whose resolver refuses internal addresses).
    pub fn with_client(
        client: reqwest::Client,
        base_url: &str,
        model: &str,
        api_key: Option<String>,
    ) -> Self {
        Self {
            client,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            model: model.to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
        }
    }

    /// The same endpoint and model, called with `api_key` (a caller's own credential)
    /// instead of the configured one.
    pub fn with_api_key(&self, api_key: impl Into<String>) -> Self {
        Self {
            client: self.client.clone(),
            url: self.url.clone(),
            model: self.model.clone(),
            api_key: Some(api_key.into()).filter(|k| !k.is_empty()),
        }
    }

    /// The model's answer to `messages` (temperature 0). A transport error, a status other
    /// than 2xx or an answer without text is a 422 `LLM_FAILED`; the cause goes to the log.
    pub async fn complete(&self, messages: &[Message]) -> Result<String, ApiError> {
        self.ask(messages, 0.0, None).await
    }

    /// Asks for one JSON object (`response_format: json_object`, temperature 0.7: a piece of
    /// writing) given `system` and `user` messages; the object the model answered. A failure
    /// of the endpoint is what [`Self::complete`] answers; an answer holding no JSON object a
    /// 422 `LLM_INVALID_OUTPUT`.
    pub async fn json_object(&self, system: &str, user: &str) -> Result<Value, ApiError> {
        let messages = [Message::system(system), Message::user(user)];
        let format = ResponseFormat {
            kind: "json_object",
        };
        let answer = self.ask(&messages, 0.7, Some(format)).await?;
        json_object(&answer)
            .ok_or_else(|| invalid_output("the model's answer is not a JSON object"))
    }

    async fn ask(
        &self,
        messages: &[Message],
        temperature: f32,
        response_format: Option<ResponseFormat>,
    ) -> Result<String, ApiError> {
        let mut request = self.client.post(&self.url).json(&Request {
            model: &self.model,
            messages,
            temperature,
            response_format,
        });
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            tracing::warn!(error = %e.without_url(), "language model unreachable");
            failed("the language model did not answer")
        })?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let excerpt: String = body.chars().take(MAX_LOGGED_ERROR).collect();
            tracing::warn!(%status, body = %excerpt, "language model refused");
            return Err(failed(&format!(
                "the language model answered HTTP {}",
                status.as_u16()
            )));
        }
        let answer: Response = response.json().await.map_err(|e| {
            tracing::warn!(error = %e.without_url(), "language model answer unreadable");
            failed("the language model's answer is not a chat completion")
        })?;
        answer
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .filter(|text| !text.trim().is_empty())
            .ok_or_else(|| failed("the language model answered nothing"))
    }
}

http_kit::error_codes! {
    /// The codes of the model-backed features' refusals (the mail envelope shows them).
    pub enum LlmErrorCode {
        InvalidOutput = "LLM_INVALID_OUTPUT",
        Failed = "LLM_FAILED",
        NotConfigured = "LLM_NOT_CONFIGURED",
    }
}

/// 422 `LLM_INVALID_OUTPUT`: the model answered something the service cannot use (nothing is
/// made up in its place).
pub fn invalid_output(why: &str) -> ApiError {
    ApiError::unprocessable(format!("{why}; nothing was made of it"))
        .with_code(LlmErrorCode::InvalidOutput)
}

fn failed(message: &str) -> ApiError {
    ApiError::unprocessable(message.to_owned()).with_code(LlmErrorCode::Failed)
}

/// Ruled: a model-backed tool without a configured model.
pub fn not_configured() -> ApiError {
    ApiError::unprocessable("no language model is configured for this deployment")
        .with_code(LlmErrorCode::NotConfigured)
}

/// The first JSON object in a model's answer (models wrap JSON in prose or code fences).
pub fn json_object(answer: &str) -> Option<serde_json::Value> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    serde_json::from_str(answer.get(start..=end)?)
        .ok()
        .filter(serde_json::Value::is_object)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_json_object_is_found_inside_prose_and_fences() {
        let answer = "Here you go:\n```json\n{\"rules\": {\"all\": []}}\n```\nDone.";
        assert_eq!(json_object(answer), Some(json!({"rules": {"all": []}})));
        assert_eq!(json_object("no json"), None);
        assert_eq!(json_object("[1, 2]"), None);
    }

    #[test]
    fn no_base_url_is_no_model_and_schemes_other_than_http_and_https_are_refused() {
        assert!(
            ChatModel::from_settings(&LlmSettings::default())
                .unwrap()
                .is_none()
        );
        let tls = LlmSettings {
            base_url: "https://api.example.com/v1".into(),
            model: "m".into(),
            ..LlmSettings::default()
        };
        assert!(ChatModel::from_settings(&tls).unwrap().is_some());
        let ftp = LlmSettings {
            base_url: "ftp://api.example.com/v1".into(),
            model: "m".into(),
            ..LlmSettings::default()
        };
        assert!(ChatModel::from_settings(&ftp).is_err());
        let missing_ca = LlmSettings {
            base_url: "https://api.example.com/v1".into(),
            model: "m".into(),
            ca_file: "/nonexistent/ca.pem".into(),
            ..LlmSettings::default()
        };
        assert!(ChatModel::from_settings(&missing_ca).is_err());
        let no_model = LlmSettings {
            base_url: "http://127.0.0.1:1/v1".into(),
            ..LlmSettings::default()
        };
        assert!(ChatModel::from_settings(&no_model).is_err());
    }
}
