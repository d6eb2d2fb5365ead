//! Configuration loading shared by every binary: built-in defaults, then an optional file,
//! then environment variables (`<PREFIX>_SECTION__KEY`, e.g. `MEMORY_DATABASE__URL`).

use std::path::Path;

use config::{Config, Environment, File, FileFormat};
use serde::de::DeserializeOwned;

pub use config::ConfigError;

/// Loads `T` from `defaults` (TOML text), then `file` when given, then the environment
/// variables starting with `prefix` and `_` (nested keys separated by `__`).
pub fn load<T: DeserializeOwned>(
    prefix: &str,
    defaults: &str,
    file: Option<&Path>,
) -> Result<T, ConfigError> {
    let mut builder = Config::builder().add_source(File::from_str(defaults, FileFormat::Toml));
    if let Some(path) = file {
        builder = builder.add_source(File::from(path).required(true));
    }
    builder
        .add_source(
            Environment::with_prefix(prefix)
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true),
        )
        .build()?
        .try_deserialize()
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
