//! mail-api settings: defaults, then `--config FILE`, then `MAIL_…` variables
//! (e.g. `MAIL_DATABASE__URL`, `MAIL_RATE_LIMIT__BACKEND=redis`).

use std::path::Path;

use serde::Deserialize;
use service_kit::CommonSettings;

use crate::domain::plans::SendQuotas;

const DEFAULTS: &str = r#"
[http]
bind = "127.0.0.1:8081"

[database]
url = "postgres://postgres@127.0.0.1:5432/mail"

[sending]
shared_domain = "mail.localhost"

[plans]
monthly_sends_byod = 50000
monthly_sends_managed = 250000
monthly_sends_agency_plus = 1000000
monthly_sends_enterprise = 0
"#;

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    #[serde(flatten)]
    pub common: CommonSettings,
    pub sending: SendingSettings,
    /// Monthly send quotas of the plans other than Free (0: unlimited).
    pub plans: SendQuotas,
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
