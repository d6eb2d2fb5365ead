//! `mail-api serve | migrate | openapi`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use mail_api::{MIGRATIONS, Settings, app};

#[derive(Parser)]
#[command(name = "mail-api", version, about = "Email operations service")]
struct Cli {
    /// A TOML settings file (environment variables MAIL_… override it).
    #[arg(long, env = "MAIL_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let settings = Settings::load(cli.config.as_deref())?;
    let _telemetry = service_kit::infra::init_telemetry(app::SERVICE, &settings.common.telemetry)?;
    match cli.command {
        Command::Openapi { yaml } => {
            let text = if yaml {
                mail_api::openapi::yaml()
            } else {
                mail_api::openapi::json()
            };
            std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?;
        }
        Command::Migrate => migrate(&settings).await?,
        Command::Serve { migrate: first } => {
            if first {
                migrate(&settings).await?;
            }
            let launched = app::launch(&settings).await?;
            tracing::info!(addr = %launched.addr, "mail-api listening");
            launched.server.await?;
            launched.background.finish().await;
        }
    }
    Ok(())
}

async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let applied = store::run_migrations(&settings.common.database.url, MIGRATIONS).await?;
    tracing::info!(?applied, "migrations applied");
    Ok(())
}
