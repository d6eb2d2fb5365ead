//! The command lines of the API binaries (`serve | migrate | openapi | schema`) and of the workers.

use std::future::Future;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use store::EmbeddedMigrations;

use crate::server::Launched;
use crate::{CommonSettings, infra};

#[derive(Parser)]
struct ApiCli {
    /// A TOML settings file (environment variables override it); default: $<PREFIX>_CONFIG.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: ApiCommand,
}

#[derive(Subcommand)]
enum ApiCommand {
    /// Serve HTTP until SIGTERM or SIGINT (in-flight requests finish).
    Serve {
        /// Apply pending migrations first.
        #[arg(long)]
        migrate: bool,
    },
    /// Apply pending migrations and exit.
    Migrate,
    /// Print the OpenAPI document.
    Openapi {
        #[arg(long)]
        yaml: bool,
    },
    /// Print another published JSON Schema (by its file name under `proto-docs/`).
    Schema { name: String },
}

#[derive(Parser)]
struct WorkerCli {
    /// A TOML settings file (environment variables override it); default: $<PREFIX>_CONFIG.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// A JSON Schema a service publishes beside its OpenAPI document: its file name under
/// `proto-docs/`, and its text.
pub type PublishedSchema = (&'static str, fn() -> String);

/// What distinguishes one API binary from the other.
pub struct ApiBinary<S, L> {
    pub service: &'static str,
    pub about: &'static str,
    /// `MEMORY` or `MAIL`.
    pub env_prefix: &'static str,
    pub load: fn(Option<&Path>) -> Result<S, settings::ConfigError>,
    pub common: fn(&S) -> &CommonSettings,
    pub migrations: EmbeddedMigrations,
    pub launch: fn(S) -> L,
    pub openapi_json: fn() -> String,
    pub openapi_yaml: fn() -> String,
    /// The other JSON Schemas the service publishes.
    pub schemas: &'static [PublishedSchema],
}

fn parse<T: clap::FromArgMatches + clap::CommandFactory>(
    service: &'static str,
    about: &'static str,
) -> T {
    let matches = T::command()
        .name(service)
        .about(about)
        .version(env!("CARGO_PKG_VERSION"))
        .get_matches();
    T::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// `--config FILE`, else the file named by `<PREFIX>_CONFIG`.
fn config_file(flag: Option<PathBuf>, env_prefix: &str) -> Option<PathBuf> {
    flag.or_else(|| std::env::var_os(format!("{env_prefix}_CONFIG")).map(PathBuf::from))
}

/// The whole `main` of an API binary.
pub async fn api_main<S, L>(binary: ApiBinary<S, L>) -> anyhow::Result<()>
where
    L: Future<Output = anyhow::Result<Launched>>,
{
    tls_kit::install();
    let cli: ApiCli = parse(binary.service, binary.about);
    let file = config_file(cli.config, binary.env_prefix);
    let settings = (binary.load)(file.as_deref())?;
    let common = (binary.common)(&settings);
    let _telemetry = infra::init_telemetry(binary.service, &common.telemetry)?;
    match cli.command {
        ApiCommand::Openapi { yaml } => {
            let text = if yaml {
                (binary.openapi_yaml)()
            } else {
                (binary.openapi_json)()
            };
            std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?;
        }
        ApiCommand::Schema { name } => {
            let Some((_, text)) = binary.schemas.iter().find(|(n, _)| *n == name) else {
                let known: Vec<&str> = binary.schemas.iter().map(|(n, _)| *n).collect();
                anyhow::bail!("no schema {name}; known: {}", known.join(", "));
            };
            std::io::Write::write_all(&mut std::io::stdout(), text().as_bytes())?;
        }
        ApiCommand::Migrate => migrate(&common.database.url, binary.migrations).await?,
        ApiCommand::Serve { migrate: first } => {
            if first {
                migrate(&common.database.url, binary.migrations).await?;
            }
            let launched = (binary.launch)(settings).await?;
            tracing::info!(addr = %launched.addr, service = binary.service, "listening");
            launched.server.await?;
            launched.background.finish().await;
        }
    }
    Ok(())
}

async fn migrate(url: &str, migrations: EmbeddedMigrations) -> anyhow::Result<()> {
    let applied = store::run_migrations(url, migrations).await?;
    tracing::info!(?applied, "migrations applied");
    Ok(())
}

/// The config file a worker binary was given.
pub fn worker_config(
    service: &'static str,
    about: &'static str,
    env_prefix: &str,
) -> Option<PathBuf> {
    let cli: WorkerCli = parse(service, about);
    config_file(cli.config, env_prefix)
}
