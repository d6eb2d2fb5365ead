//! Bootstraps tenants without SQL: memory users and their keys, mail accounts, projects and
//! their keys. Every command prints one JSON object; a key's plaintext is printed once, at
//! creation, and never stored.

use anyhow::Context as _;
use auth::{CredentialKind, Environment, Origin, Scope};
use chrono::{Duration, Utc};
use clap::{Parser, Subcommand, ValueEnum};
use diesel_async::AsyncPgConnection;
use rate_limit::policy::{Plan, Tier};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Parser)]
#[command(
    name = "admin",
    version,
    about = "Tenant bootstrap for memory-api and mail-api"
)]
struct Cli {
    /// The memory database.
    #[arg(
        long,
        env = "MEMORY_DATABASE__URL",
        default_value = "postgres://postgres@127.0.0.1:5432/memory"
    )]
    memory_db: String,
    /// The mail database.
    #[arg(
        long,
        env = "MAIL_DATABASE__URL",
        default_value = "postgres://postgres@127.0.0.1:5432/mail"
    )]
    mail_db: String,
    #[command(subcommand)]
    service: Service,
}

#[derive(Subcommand)]
enum Service {
    /// memory-api users and credentials.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// mail-api accounts, projects and keys.
    #[command(subcommand)]
    Mail(MailCommand),
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Create a user (live and test environments come with every user).
    CreateUser {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "free")]
        tier: Tier,
    },
    /// Change a user's tier.
    SetTier {
        #[arg(long)]
        user: Uuid,
        #[arg(long)]
        tier: Tier,
    },
    /// Create an API key (mem_live_/mem_test_) or an OAuth access token (memo_); either acts on
    /// the environment given by --env.
    CreateKey {
        #[arg(long)]
        user: Uuid,
        #[arg(long, default_value = "default")]
        name: String,
        #[arg(long, value_enum, default_value = "live")]
        env: Env,
        /// Comma-separated: read, write, propose.
        #[arg(long, default_value = "read,write", value_delimiter = ',')]
        scopes: Vec<String>,
        /// An OAuth access token of a third-party connector (read and propose only).
        #[arg(long)]
        connector: bool,
        #[arg(long)]
        expires_in_days: Option<i64>,
    },
    ListKeys {
        #[arg(long)]
        user: Uuid,
    },
    RevokeKey {
        #[arg(long)]
        key: Uuid,
    },
    /// Create a sign-in account (the OAuth and dashboard pages' email and password) acting for
    /// a user. The password is read from the first line of standard input (never an argument).
    CreateSignIn {
        #[arg(long)]
        email: String,
        #[arg(long)]
        user: Uuid,
    },
    /// Disable a sign-in account: its sessions end and every grant it gave is revoked.
    DisableSignIn {
        #[arg(long)]
        email: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Env {
    Live,
    Test,
}

#[derive(Subcommand)]
enum MailCommand {
    CreateAccount {
        #[arg(long)]
        name: String,
    },
    CreateProject {
        #[arg(long)]
        account: Uuid,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "free")]
        plan: Plan,
    },
    SetPlan {
        #[arg(long)]
        project: Uuid,
        #[arg(long)]
        plan: Plan,
    },
    /// Create a project key (mail_).
    CreateKey {
        #[arg(long)]
        project: Uuid,
        #[arg(long, default_value = "default")]
        name: String,
        /// read, write or admin (admin ⊃ write ⊃ read).
        #[arg(long, default_value = "write")]
        scope: String,
        /// Limit the key to these MCP tool groups (comma-separated).
        #[arg(long, value_delimiter = ',')]
        tool_groups: Option<Vec<String>>,
        #[arg(long)]
        expires_in_days: Option<i64>,
    },
    ListKeys {
        #[arg(long)]
        project: Uuid,
    },
    RevokeKey {
        #[arg(long)]
        key: Uuid,
    },
    /// Create a sign-in account (the OAuth sign-in page's email and password) acting for a
    /// project. The password is read from the first line of standard input (never an argument).
    CreateSignIn {
        #[arg(long)]
        email: String,
        #[arg(long)]
        project: Uuid,
    },
    /// Disable a sign-in account: its sessions end and every grant it gave is revoked.
    DisableSignIn {
        #[arg(long)]
        email: String,
    },
    /// List (or, with --replay, move back to their queue) the messages that failed for good:
    /// send jobs (`send`) or provider webhooks (`webhook-inbound`).
    DeadLetters {
        #[arg(long, value_enum)]
        queue: MailQueue,
        #[arg(long, default_value_t = 50)]
        max: usize,
        /// Republish them to the work queue (attempts start again at 1).
        #[arg(long)]
        replay: bool,
        #[arg(
            long,
            env = "MAIL_BROKER__URL",
            default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
        )]
        broker: String,
        /// With `amqps://`: a PEM file of CA certificates trusted besides the system's roots.
        #[arg(long, env = "MAIL_BROKER__CA_FILE", default_value = "")]
        broker_ca_file: String,
        #[arg(long, env = "MAIL_BROKER__QUEUE_PREFIX", default_value = "")]
        prefix: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum MailQueue {
    Send,
    WebhookInbound,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tls_kit::install();
    let cli = Cli::parse();
    let out = match cli.service {
        Service::Memory(cmd) => memory(&cli.memory_db, cmd).await?,
        Service::Mail(cmd) => mail(&cli.mail_db, cmd).await?,
    };
    #[allow(clippy::print_stdout)]
    {
        println!("{out}");
    }
    Ok(())
}

async fn connect(url: &str) -> anyhow::Result<AsyncPgConnection> {
    store::tls::establish(url)
        .await
        .with_context(|| "cannot connect to the database")
}

fn expiry(days: Option<i64>) -> Option<chrono::DateTime<Utc>> {
    days.map(|d| Utc::now() + Duration::days(d))
}

fn parse_scope(s: &str) -> anyhow::Result<Scope> {
    Scope::parse(s.trim()).with_context(|| format!("unknown scope {s:?}"))
}

async fn memory(url: &str, cmd: MemoryCommand) -> anyhow::Result<Value> {
    use memory_api::db::{credentials, users};
    let conn = &mut connect(url).await?;
    Ok(match cmd {
        MemoryCommand::CreateUser { email, tier } => {
            let user = users::create(conn, &email, tier).await?;
            json!({ "user_id": user.id, "email": user.email, "tier": user.tier })
        }
        MemoryCommand::SetTier { user, tier } => {
            let changed = users::set_tier(conn, user, tier).await?;
            anyhow::ensure!(changed == 1, "no such user");
            json!({ "user_id": user, "tier": tier.as_str() })
        }
        MemoryCommand::CreateKey {
            user,
            name,
            env,
            scopes,
            connector,
            expires_in_days,
        } => {
            let scopes = scopes
                .iter()
                .map(|s| parse_scope(s))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let environment = match env {
                Env::Live => Environment::Live,
                Env::Test => Environment::Test,
            };
            // A connector token acts on the environment asked for, as an API key does.
            let (kind, origin) = match (connector, environment) {
                (true, _) => (CredentialKind::MemoryOAuth, Origin::Connector),
                (false, Environment::Live) => (CredentialKind::MemoryLive, Origin::FirstParty),
                (false, Environment::Test) => (CredentialKind::MemoryTest, Origin::FirstParty),
            };
            let (key, credential) = credentials::create_key_in(
                conn,
                user,
                &name,
                kind,
                origin,
                environment,
                &scopes,
                expiry(expires_in_days),
            )
            .await?;
            json!({
                "key_id": key.id,
                "key": credential.plaintext,
                "environment": key.environment,
                "scopes": key.scopes,
                "origin": key.origin,
                "expires_at": key.expires_at,
            })
        }
        MemoryCommand::ListKeys { user } => {
            let keys = credentials::list_keys(conn, user).await?;
            json!({ "keys": keys.iter().map(|k| json!({
                "key_id": k.id,
                "name": k.name,
                "prefix": k.key_prefix,
                "kind": k.kind,
                "environment": k.environment,
                "origin": k.origin,
                "scopes": k.scopes,
                "created_at": k.created_at,
                "expires_at": k.expires_at,
                "revoked_at": k.revoked_at,
            })).collect::<Vec<_>>() })
        }
        MemoryCommand::RevokeKey { key } => {
            anyhow::ensure!(
                store::revoke_api_key(conn, key).await?,
                "no such active key"
            );
            json!({ "key_id": key, "revoked": true })
        }
        MemoryCommand::CreateSignIn { email, user } => create_sign_in(conn, &email, user).await?,
        MemoryCommand::DisableSignIn { email } => disable_sign_in(conn, &email).await?,
    })
}

async fn mail(url: &str, cmd: MailCommand) -> anyhow::Result<Value> {
    use mail_api::db::{credentials, tenants};
    if let MailCommand::DeadLetters {
        queue,
        max,
        replay,
        broker,
        broker_ca_file,
        prefix,
    } = cmd
    {
        let broker = queue::BrokerConfig::new(broker).with_ca_file(&broker_ca_file)?;
        return dead_letters(queue, max, replay, broker, &prefix).await;
    }
    let conn = &mut connect(url).await?;
    Ok(match cmd {
        MailCommand::CreateAccount { name } => {
            let account = tenants::create_account(conn, &name).await?;
            json!({ "account_id": account.id, "name": account.name })
        }
        MailCommand::CreateProject {
            account,
            name,
            plan,
        } => {
            let project = tenants::create_project(conn, account, &name, plan).await?;
            json!({ "project_id": project.id, "name": project.name, "plan": project.plan })
        }
        MailCommand::SetPlan { project, plan } => {
            let changed = tenants::set_plan(conn, project, plan).await?;
            anyhow::ensure!(changed == 1, "no such project");
            json!({ "project_id": project, "plan": plan.as_str() })
        }
        MailCommand::CreateKey {
            project,
            name,
            scope,
            tool_groups,
            expires_in_days,
        } => {
            let scope = parse_scope(&scope)?;
            anyhow::ensure!(
                matches!(scope, Scope::Read | Scope::Write | Scope::Admin),
                "mail keys have scope read, write or admin"
            );
            let (key, credential) = credentials::create_key(
                conn,
                project,
                &name,
                scope,
                tool_groups,
                expiry(expires_in_days),
            )
            .await?;
            json!({
                "key_id": key.id,
                "key": credential.plaintext,
                "scope": key.scope,
                "tool_groups": key.tool_groups,
                "expires_at": key.expires_at,
            })
        }
        MailCommand::ListKeys { project } => {
            let keys = credentials::list_keys(conn, project).await?;
            json!({ "keys": keys.iter().map(|k| json!({
                "key_id": k.id,
                "name": k.name,
                "prefix": k.key_prefix,
                "scope": k.scope,
                "tool_groups": k.tool_groups,
                "created_at": k.created_at,
                "expires_at": k.expires_at,
                "revoked_at": k.revoked_at,
            })).collect::<Vec<_>>() })
        }
        MailCommand::RevokeKey { key } => {
            anyhow::ensure!(
                store::revoke_api_key(conn, key).await?,
                "no such active key"
            );
            json!({ "key_id": key, "revoked": true })
        }
        MailCommand::CreateSignIn { email, project } => {
            create_sign_in(conn, &email, project).await?
        }
        MailCommand::DisableSignIn { email } => disable_sign_in(conn, &email).await?,
        MailCommand::DeadLetters { .. } => anyhow::bail!("dead letters need no database"),
    })
}

/// The password of a new sign-in account: the first line of standard input.
fn read_password() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("reading the password from standard input")?;
    let password = line.trim_end_matches(['\r', '\n']).to_owned();
    anyhow::ensure!(
        password.chars().count() >= 12,
        "the password (first line of standard input) must have at least 12 characters"
    );
    Ok(password)
}

/// A sign-in account of the OAuth pages, acting for `owner` (a project or a user).
async fn create_sign_in(
    conn: &mut AsyncPgConnection,
    email: &str,
    owner: Uuid,
) -> anyhow::Result<Value> {
    let password = read_password()?;
    let account = oauth::db::create_account(conn, email, &password, owner).await?;
    Ok(json!({ "account_id": account.id, "email": account.email, "owner_id": account.owner_id }))
}

async fn disable_sign_in(conn: &mut AsyncPgConnection, email: &str) -> anyhow::Result<Value> {
    let account = oauth::db::set_account_disabled(conn, email, true)
        .await?
        .context("no such sign-in account")?;
    Ok(json!({ "account_id": account.id, "email": account.email, "disabled": true }))
}

/// The dead-letter queue of a mail work queue: listed (left in place) or replayed.
async fn dead_letters(
    queue: MailQueue,
    max: usize,
    replay: bool,
    broker: queue::BrokerConfig,
    prefix: &str,
) -> anyhow::Result<Value> {
    let queue = match queue {
        MailQueue::Send => mail_api::sending::send_queue(prefix),
        MailQueue::WebhookInbound => mail_api::sending::inbound_queue(prefix),
    };
    let broker = queue::Broker::connect(broker)
        .await
        .with_context(|| "cannot connect to the broker")?;
    let out = if replay {
        let moved = broker.replay_dead_letters(&queue, max).await?;
        json!({ "queue": queue.dead_letter_queue(), "replayed": moved })
    } else {
        let letters: Vec<Value> = broker
            .list_dead_letters(&queue, max)
            .await?
            .into_iter()
            .map(|l| {
                json!({
                    "message_id": l.message_id,
                    "task": l.task,
                    "last_error": l.last_error,
                    "attempts": l.attempts,
                })
            })
            .collect();
        json!({ "queue": queue.dead_letter_queue(), "messages": letters })
    };
    broker.close().await;
    Ok(out)
}
