//! Kit's (ConvertKit's) API v4: the key in the `X-Kit-Api-Key` header.

use http_kit::ApiError;
use serde_json::Value;

use super::{ImportPlatform, PlatformAdapter, PlatformApi, join};

pub struct Kit;

impl PlatformAdapter for Kit {
    fn check(&self, api: &PlatformApi, api_key: &str) -> Result<reqwest::RequestBuilder, ApiError> {
        let url = join(&api.settings.kit_base_url, "/account");
        Ok(api
            .get(ImportPlatform::Kit, &url)?
            .header("X-Kit-Api-Key", api_key)
            .header("accept", "application/json"))
    }

    fn account(&self, answer: &Value) -> Option<String> {
        answer["account"]["name"].as_str().map(str::to_owned)
    }
}
