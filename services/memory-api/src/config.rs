//! memory-api settings: defaults, then `--config FILE`, then `MEMORY_…` variables
//! (e.g. `MEMORY_DATABASE__URL`, `MEMORY_RATE_LIMIT__BACKEND=redis`).

use std::path::Path;

use serde::Deserialize;
use service_kit::CommonSettings;

const DEFAULTS: &str = r#"
[http]
bind = "127.0.0.1:8080"

[database]
url = "postgres://postgres@127.0.0.1:5432/memory"
"#;

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    #[serde(flatten)]
    pub common: CommonSettings,
}

impl Settings {
    pub fn load(file: Option<&Path>) -> Result<Self, settings::ConfigError> {
        let defaults = format!("{DEFAULTS}{}", service_kit::config::COMMON_DEFAULTS);
        settings::load("MEMORY", &defaults, file)
    }
}
