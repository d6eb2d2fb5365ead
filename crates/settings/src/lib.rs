//! Configuration loading shared by every binary: built-in defaults, then an optional file,
//! then environment variables (`<PREFIX>_SECTION__KEY`, e.g. `MEMORY_DATABASE__URL`).

use std::path::Path;

use config::{Config, Environment, File, FileFormat, Map, Value};
use serde::de::DeserializeOwned;

pub use config::ConfigError;

/// Loads `T` from `defaults` (TOML text), then `file` when given, then the environment
/// variables starting with `prefix` and `_` (nested keys separated by `__`).
///
/// An environment value stays the text it was until `T` asks for a type: a field of a number
/// or a flag parses it then, and a text field keeps it whole (`0123` stays `0123`, a password
/// of digits stays text). So `T` must not `#[serde(flatten)]`: serde buffers a flattened
/// struct's values untyped, and a number that arrived as text no longer parses. Gather shared
/// sections with [`load_grouped`] instead.
pub fn load<T: DeserializeOwned>(
    prefix: &str,
    defaults: &str,
    file: Option<&Path>,
) -> Result<T, ConfigError> {
    build(prefix, defaults, file)?.try_deserialize()
}

/// [`load`], with the top-level sections `members` also given to `T` under the key `group`:
/// `T` has a field `group` of a struct whose fields are those sections, while the settings
/// keep naming them at the top (`MAIL_DATABASE__URL`, not `MAIL_COMMON__DATABASE__URL`).
pub fn load_grouped<T: DeserializeOwned>(
    prefix: &str,
    defaults: &str,
    file: Option<&Path>,
    group: &str,
    members: &[&str],
) -> Result<T, ConfigError> {
    let config = build(prefix, defaults, file)?;
    let mut sections = Map::new();
    for member in members {
        if let Ok(section) = config.get::<Value>(member) {
            sections.insert((*member).to_owned(), section);
        }
    }
    Config::builder()
        .add_source(config)
        .set_override(group, sections)?
        .build()?
        .try_deserialize()
}

fn build(prefix: &str, defaults: &str, file: Option<&Path>) -> Result<Config, ConfigError> {
    let mut builder = Config::builder().add_source(File::from_str(defaults, FileFormat::Toml));
    if let Some(path) = file {
        builder = builder.add_source(File::from(path).required(true));
    }
    builder
        .add_source(
            Environment::with_prefix(prefix)
                .prefix_separator("_")
                .separator("__"),
        )
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Settings {
        http: Http,
        database: Database,
    }
    #[derive(Debug, Deserialize)]
    struct Http {
        bind: String,
        workers: usize,
    }
    #[derive(Debug, Deserialize)]
    struct Database {
        url: String,
    }

    const DEFAULTS: &str = "[http]\nbind = \"127.0.0.1:8080\"\nworkers = 2\n[database]\nurl = \"postgres://default\"\n";

    #[test]
    fn defaults_then_file_then_environment() {
        let dir = std::env::temp_dir().join(format!("settings-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("app.toml");
        std::fs::write(
            &file,
            "[http]\nworkers = 8\n[database]\nurl = \"postgres://file\"\n",
        )
        .unwrap();

        let only_defaults: Settings = load("SETTINGSTESTA", DEFAULTS, None).unwrap();
        assert_eq!(only_defaults.http.bind, "127.0.0.1:8080");
        assert_eq!(only_defaults.http.workers, 2);

        let with_file: Settings = load("SETTINGSTESTB", DEFAULTS, Some(&file)).unwrap();
        assert_eq!(with_file.http.workers, 8);
        assert_eq!(with_file.database.url, "postgres://file");
        assert_eq!(with_file.http.bind, "127.0.0.1:8080");

        // SAFETY of the test: the variable name is unique to this test.
        temp_env("SETTINGSTESTC_DATABASE__URL", "postgres://env", || {
            let with_env: Settings = load("SETTINGSTESTC", DEFAULTS, Some(&file)).unwrap();
            assert_eq!(with_env.database.url, "postgres://env");
            assert_eq!(with_env.http.workers, 8);
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[derive(Debug, Deserialize)]
    struct Grouped {
        common: Common,
        secret: Secret,
    }
    #[derive(Debug, Deserialize)]
    struct Common {
        http: Http,
        database: Database,
    }
    #[derive(Debug, Deserialize)]
    struct Secret {
        password: String,
        scale: f64,
        enabled: bool,
    }

    #[test]
    fn environment_values_keep_their_text_until_a_field_asks_for_a_number() {
        let defaults =
            format!("{DEFAULTS}[secret]\npassword = \"x\"\nscale = 1.0\nenabled = false\n");
        temp_env("SETTINGSTESTE_SECRET__PASSWORD", "0123", || {
            temp_env("SETTINGSTESTE_SECRET__SCALE", "1000", || {
                temp_env("SETTINGSTESTE_SECRET__ENABLED", "true", || {
                    temp_env("SETTINGSTESTE_HTTP__WORKERS", "16", || {
                        let got: Grouped = load_grouped(
                            "SETTINGSTESTE",
                            &defaults,
                            None,
                            "common",
                            &["http", "database"],
                        )
                        .unwrap();
                        assert_eq!(got.secret.password, "0123", "{got:?}");
                        assert_eq!(got.secret.scale, 1000.0, "{got:?}");
                        assert!(got.secret.enabled, "{got:?}");
                        assert_eq!(got.common.http.workers, 16, "{got:?}");
                        assert_eq!(got.common.http.bind, "127.0.0.1:8080", "{got:?}");
                        assert_eq!(got.common.database.url, "postgres://default", "{got:?}");
                    });
                });
            });
        });
        temp_env("SETTINGSTESTF_SECRET__PASSWORD", "123456", || {
            let got: Grouped = load_grouped(
                "SETTINGSTESTF",
                &defaults,
                None,
                "common",
                &["http", "database"],
            )
            .unwrap();
            assert_eq!(got.secret.password, "123456", "{got:?}");
        });
        temp_env("SETTINGSTESTG_SECRET__SCALE", "many", || {
            let err = load_grouped::<Grouped>(
                "SETTINGSTESTG",
                &defaults,
                None,
                "common",
                &["http", "database"],
            )
            .unwrap_err();
            assert!(err.to_string().contains("scale"), "{err}");
        });
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let missing = Path::new("/nonexistent/settings.toml");
        assert!(load::<Settings>("SETTINGSTESTD", DEFAULTS, Some(missing)).is_err());
    }

    fn temp_env(key: &str, value: &str, f: impl FnOnce()) {
        // Environment changes are process-wide; this crate's tests use distinct prefixes.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(key, value);
        }
        f();
        #[allow(unsafe_code)]
        unsafe {
            std::env::remove_var(key);
        }
    }
}
