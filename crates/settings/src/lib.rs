//! Configuration loading shared by every binary: built-in defaults, then an optional file,
//! then environment variables (`<PREFIX>_SECTION__KEY`, e.g. `MEMORY_DATABASE__URL`).

use std::path::Path;

use config::{Config, File, FileFormat, Map, Source, Value, ValueKind};
use serde::de::DeserializeOwned;

pub use config::ConfigError;

/// Loads `T` from `defaults` (TOML text), then `file` when given, then the environment
/// variables starting with `prefix` and `_` (nested keys separated by `__`; `Env` says
/// how their values are typed).
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
        .add_source(Env {
            prefix: prefix.to_owned(),
        })
        .build()?
        .try_deserialize()
}

/// The environment variables `<PREFIX>_SECTION__KEY`, as `section.key`.
///
/// A value is handed on as a whole number only when it reads back exactly as written (`25`,
/// `-1`), as a decimal when it is one with a point (`0.05`, `1.50`), and as a flag when it is
/// `true` or `false` in any case; everything else stays the text it was, so a secret written
/// `0123` or `+44` is no longer turned into `123` or `44` (config's own parsing did that).
/// Values are typed here at all because the APIs' settings flatten their shared sections and
/// the default provider is an internally tagged enum (`kind`): serde reads those through an
/// untyped buffer, where a number that arrived as text no longer parses. A setting there
/// written as no number is written (`016`, `1e3`) is refused with the text it got.
#[derive(Debug, Clone)]
struct Env {
    prefix: String,
}

impl Source for Env {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Map<String, Value>, ConfigError> {
        let origin = "the environment".to_owned();
        let head = format!("{}_", self.prefix.to_lowercase());
        let mut values = Map::new();
        for (key, value) in std::env::vars_os() {
            let Some(key) = key.to_str().map(str::to_lowercase) else {
                continue;
            };
            let Some(key) = key.strip_prefix(&head) else {
                continue;
            };
            let value = value.into_string().map_err(|_| {
                ConfigError::Message(format!("env variable {key:?} contains non-Unicode data"))
            })?;
            values.insert(
                key.replace("__", "."),
                Value::new(Some(&origin), typed(value)),
            );
        }
        Ok(values)
    }
}

/// `text` as a flag, a whole number written as Rust writes it back (no sign but `-`, no
/// leading zero), a decimal written with a point and such a whole part, or else as text.
fn typed(text: String) -> ValueKind {
    if let Ok(flag) = text.to_lowercase().parse::<bool>() {
        return ValueKind::Boolean(flag);
    }
    if let Ok(n) = text.parse::<i64>()
        && n.to_string() == text
    {
        return ValueKind::I64(n);
    }
    if let Some((whole, fraction)) = text.split_once('.')
        && whole.parse::<i64>().is_ok_and(|n| n.to_string() == whole)
        && !fraction.is_empty()
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && let Ok(x) = text.parse::<f64>()
    {
        return ValueKind::Float(x);
    }
    ValueKind::String(text)
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
    struct Flat {
        #[serde(flatten)]
        http: Http,
        password: String,
        scale: f64,
        enabled: bool,
    }

    #[test]
    fn environment_values_are_numbers_only_when_they_read_back_as_written() {
        let defaults =
            "bind = \"b\"\nworkers = 1\npassword = \"x\"\nscale = 1.0\nenabled = false\n";
        let vars = [
            ("SETTINGSTESTE_PASSWORD", "0123"),
            ("SETTINGSTESTE_SCALE", "1000"),
            ("SETTINGSTESTE_ENABLED", "TRUE"),
            ("SETTINGSTESTE_WORKERS", "16"),
        ];
        temp_envs(&vars, || {
            let got: Flat = load("SETTINGSTESTE", defaults, None).unwrap();
            assert_eq!(got.password, "0123", "{got:?}");
            assert_eq!(got.scale, 1000.0, "{got:?}");
            assert!(got.enabled, "{got:?}");
            assert_eq!(got.http.workers, 16, "{got:?}");
        });
        temp_envs(
            &[
                ("SETTINGSTESTF_PASSWORD", "123456"),
                ("SETTINGSTESTF_SCALE", "0.05"),
            ],
            || {
                let got: Flat = load("SETTINGSTESTF", defaults, None).unwrap();
                assert_eq!(got.password, "123456", "{got:?}");
                assert_eq!(got.scale, 0.05, "{got:?}");
            },
        );
        temp_envs(
            &[
                ("SETTINGSTESTG_PASSWORD", "+44"),
                ("SETTINGSTESTG_SCALE", "0.10"),
            ],
            || {
                let got: Flat = load("SETTINGSTESTG", defaults, None).unwrap();
                assert_eq!(got.password, "+44", "{got:?}");
                assert_eq!(got.scale, 0.1, "{got:?}");
            },
        );
        // A field serde reads by its type parses any number; one it buffers (here inside the
        // flattened struct) gets text that is not a number as written, and says so.
        temp_envs(&[("SETTINGSTESTH_SCALE", "1e3")], || {
            let got: Flat = load("SETTINGSTESTH", defaults, None).unwrap();
            assert_eq!(got.scale, 1000.0, "{got:?}");
        });
        temp_envs(&[("SETTINGSTESTI_WORKERS", "016")], || {
            let err = load::<Flat>("SETTINGSTESTI", defaults, None).unwrap_err();
            assert!(err.to_string().contains("\"016\""), "{err}");
        });
    }

    fn temp_envs(vars: &[(&str, &str)], f: impl FnOnce()) {
        match vars.split_first() {
            None => f(),
            Some(((key, value), rest)) => temp_env(key, value, || temp_envs(rest, f)),
        }
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
