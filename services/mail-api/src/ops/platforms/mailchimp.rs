//! Mailchimp's Marketing API 3.0: HTTP basic auth with any user name and the API key as the
//! password; the key ends in its data center (`…-us21`), which names the API's host.

use http_kit::ApiError;
use serde_json::Value;

use super::{ImportPlatform, PlatformAdapter, PlatformApi, join, refused};

pub struct Mailchimp;

/// The data center of a key (`…-us21`): letters then digits.
fn data_center(api_key: &str) -> Option<&str> {
    let (_, dc) = api_key.rsplit_once('-')?;
    let letters = dc.trim_end_matches(|c: char| c.is_ascii_digit());
    let valid = !letters.is_empty()
        && letters.len() < dc.len()
        && dc.len() <= 8
        && letters.chars().all(|c| c.is_ascii_lowercase());
    valid.then_some(dc)
}

impl Mailchimp {
    pub(super) fn base(api: &PlatformApi, api_key: &str) -> Result<String, ApiError> {
        let dc = data_center(api_key).ok_or_else(|| {
            refused(
                ImportPlatform::Mailchimp,
                "the API key does not end in its data center (like -us21)",
            )
        })?;
        Ok(if api.settings.mailchimp_base_url.is_empty() {
            format!("https://{dc}.api.mailchimp.com")
        } else {
            api.settings.mailchimp_base_url.clone()
        })
    }
}

impl PlatformAdapter for Mailchimp {
    fn check(&self, api: &PlatformApi, api_key: &str) -> Result<reqwest::RequestBuilder, ApiError> {
        let base = Self::base(api, api_key)?;
        Ok(api
            .get(ImportPlatform::Mailchimp, &join(&base, "/3.0/ping"))?
            .basic_auth("mail-api", Some(api_key)))
    }

    fn account(&self, _answer: &Value) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::data_center;

    #[test]
    fn the_data_center_is_the_keys_suffix() {
        assert_eq!(data_center("0123abcd-us21"), Some("us21"));
        assert_eq!(data_center("0123abcd"), None);
        assert_eq!(data_center("0123abcd-us"), None);
        assert_eq!(data_center("0123abcd-21"), None);
        assert_eq!(data_center("0123-ab.cd1"), None);
    }
}
