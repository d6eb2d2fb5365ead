//! Brevo's API v3: the key in the `api-key` header.

use http_kit::ApiError;
use serde_json::Value;

use super::{ImportPlatform, PlatformAdapter, PlatformApi, join};

pub struct Brevo;

impl PlatformAdapter for Brevo {
    fn check(&self, api: &PlatformApi, api_key: &str) -> Result<reqwest::RequestBuilder, ApiError> {
        let url = join(&api.settings.brevo_base_url, "/account");
        Ok(api
            .get(ImportPlatform::Brevo, &url)?
            .header("api-key", api_key)
            .header("accept", "application/json"))
    }

    fn account(&self, answer: &Value) -> Option<String> {
        answer["companyName"]
            .as_str()
            .or(answer["email"].as_str())
            .map(str::to_owned)
    }
}
