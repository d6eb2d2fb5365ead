//! MailerLite's API (connect.mailerlite.com): the key as a bearer token.

use http_kit::ApiError;
use serde_json::Value;

use super::{ImportPlatform, PlatformAdapter, PlatformApi, join};

pub struct MailerLite;

impl PlatformAdapter for MailerLite {
    fn check(&self, api: &PlatformApi, api_key: &str) -> Result<reqwest::RequestBuilder, ApiError> {
        let url = join(&api.settings.mailerlite_base_url, "/groups?limit=1");
        Ok(api
            .get(ImportPlatform::Mailerlite, &url)?
            .bearer_auth(api_key)
            .header("accept", "application/json"))
    }

    fn account(&self, _answer: &Value) -> Option<String> {
        None
    }
}
