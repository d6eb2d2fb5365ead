//! mail-api settings: defaults, then `--config FILE`, then `MAIL_…` variables
//! (e.g. `MAIL_DATABASE__URL`, `MAIL_RATE_LIMIT__BACKEND=redis`).

use std::path::Path;

use serde::Deserialize;
use service_kit::CommonSettings;

const DEFAULTS: &str = r#"
[http]
bind = "127.0.0.1:8081"

[database]
url = "postgres://postgres@127.0.0.1:5432/mail"

[sending]
shared_domain = "mail.localhost"
"#;

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    #[serde(flatten)]
    pub common: CommonSettings,
    pub sending: SendingSettings,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SendingSettings {
    /// Sites send as `<slug>@<shared_domain>` until they register a domain of their own.
    pub shared_domain: String,
}

impl Settings {
    pub fn load(file: Option<&Path>) -> Result<Self, settings::ConfigError> {
        let defaults = format!("{DEFAULTS}{}", service_kit::config::COMMON_DEFAULTS);
        settings::load("MAIL", &defaults, file)
    }
}
