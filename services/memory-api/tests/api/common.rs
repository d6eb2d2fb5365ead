//! The memory-api test harness: a database of its own per test, the real server on an
//! ephemeral port, and users and keys made through the same code the admin CLI uses.

#![allow(dead_code)]

use std::path::Path;

use auth::{CredentialKind, Origin, Scope};
use diesel_async::AsyncPgConnection;
use memory_api::db::{credentials, users};
use memory_api::{MIGRATIONS, Settings};
use rate_limit::policy::Tier;
use reqwest::{RequestBuilder, Response};
use service_kit::Infra;
use service_kit::testing::{self, TestServer};
use store::testing::TestDatabase;
use uuid::Uuid;

pub use test_support::Client;
pub use test_support::response::*;

pub struct Harness {
    pub db: TestDatabase,
    pub server: TestServer,
    pub http: reqwest::Client,
    pub settings: Settings,
}

/// Settings for a server on `db_url`, bound to an ephemeral port.
pub fn settings(db_url: &str) -> Settings {
    let mut settings = Settings::load(None).expect("default settings load");
    testing::adapt(&mut settings.common, db_url);
    // Queues of its own: another test's server must not take this one's jobs.
    settings.common.broker.queue_prefix = format!("t{}.", Uuid::new_v4().simple());
    settings.secrets.kek = secrets::Kek::generate_base64();
    settings.objects.dir = std::env::temp_dir()
        .join(format!("memory-objects-{}", Uuid::new_v4().simple()))
        .to_string_lossy()
        .into_owned();
    settings
}

/// Settings with the Redis limiter under a key prefix of their own.
pub fn redis_settings(db_url: &str, prefix: &str) -> Settings {
    let mut settings = settings(db_url);
    testing::use_redis(&mut settings.common, prefix);
    settings
}

pub async fn database() -> TestDatabase {
    TestDatabase::new("memory", || MIGRATIONS)
        .await
        .expect("test database")
}

pub async fn serve(settings: &Settings) -> TestServer {
    TestServer::start(memory_api::launch(settings).await.expect("launch"))
}

/// A server whose database is at `url` (one that does not answer, or refuses it).
pub async fn serve_on_database(url: &str) -> TestServer {
    serve(&settings(url)).await
}

impl Harness {
    pub async fn new() -> Self {
        Self::with(settings).await
    }

    pub async fn with(make: impl FnOnce(&str) -> Settings) -> Self {
        Self::with_infra(make).await.0
    }

    /// [`Harness::with`], and the server's process-wide connections (the pool its background
    /// work and queue jobs share, its broker and its limiter).
    pub async fn with_infra(make: impl FnOnce(&str) -> Settings) -> (Self, Infra) {
        let db = database().await;
        let settings = make(&db.url);
        let launched = memory_api::launch(&settings).await.expect("launch");
        let infra = launched.infra.clone();
        let server = TestServer::start(launched);
        let harness = Self {
            db,
            server,
            // Idle connections are dropped before the server's 5 s keep-alive closes them, so a
            // test that pauses (e.g. to load a tokenizer) never sends on a closing connection.
            http: test_support::http_builder()
                .pool_idle_timeout(std::time::Duration::from_secs(2))
                .build()
                .expect("HTTP client"),
            settings,
        };
        (harness, infra)
    }

    pub async fn conn(&self) -> AsyncPgConnection {
        test_support::sql::connect(&self.db.url).await
    }

    pub async fn user(&self, tier: Tier) -> Uuid {
        users::create(
            &mut self.conn().await,
            &format!("{}@example.com", Uuid::new_v4()),
            tier,
        )
        .await
        .expect("user")
        .id
    }

    /// A first-party key: returns (key id, plaintext).
    pub async fn key(&self, user: Uuid, kind: CredentialKind, scopes: &[Scope]) -> (Uuid, String) {
        let origin = if kind == CredentialKind::MemoryOAuth {
            Origin::Connector
        } else {
            Origin::FirstParty
        };
        let (key, credential) = credentials::create_key(
            &mut self.conn().await,
            user,
            "test",
            kind,
            origin,
            scopes,
            None,
        )
        .await
        .expect("key");
        (key.id, credential.plaintext)
    }

    /// A new harness and a user of `tier` with a live read+write key: (harness, user, key).
    pub async fn with_writer(tier: Tier) -> (Self, Uuid, String) {
        let h = Self::new().await;
        let (user, key) = h.writer(tier).await;
        (h, user, key)
    }

    /// A user of `tier` with a live read+write key.
    pub async fn writer(&self, tier: Tier) -> (Uuid, String) {
        let user = self.user(tier).await;
        let (_, key) = self
            .key(
                user,
                CredentialKind::MemoryLive,
                &[Scope::Read, Scope::Write],
            )
            .await;
        (user, key)
    }

    /// `user`'s read+write key of the test environment (whose data live keys never see):
    /// returns (key id, plaintext).
    /// A live read-only key of `user`: returns (key id, plaintext).
    pub async fn reader(&self, user: Uuid) -> (Uuid, String) {
        self.key(user, CredentialKind::MemoryLive, &[Scope::Read])
            .await
    }

    pub async fn test_writer(&self, user: Uuid) -> (Uuid, String) {
        self.key(
            user,
            CredentialKind::MemoryTest,
            &[Scope::Read, Scope::Write],
        )
        .await
    }

    /// A client of the server that carries `key`.
    pub fn api(&self, key: &str) -> Client {
        self.anonymous().with_key(key)
    }

    /// A client of the server without a key.
    pub fn anonymous(&self) -> Client {
        Client::new(self.http.clone(), &self.server.base)
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.http.get(self.server.url(path))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.http.post(self.server.url(path))
    }

    /// Runs `sql` (a query of one column) on the test database and returns that column of
    /// every row, as text.
    pub async fn query(&self, sql: &str) -> Vec<String> {
        test_support::sql::query(&self.db.url, sql).await
    }

    /// Runs a statement on the test database.
    pub async fn exec(&self, sql: &str) {
        test_support::sql::exec(&self.db.url, sql).await;
    }

    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// Asserts a 201 with the rate-limit headers and `success: true`, and returns the body.
pub async fn expect_created(response: Response) -> serde_json::Value {
    assert_eq!(response.status(), 201);
    assert_rate_limit_headers(&response);
    let created = json(response).await;
    assert_eq!(created["success"], true);
    created
}

/// Asserts the memory error envelope with `code`, and returns the message.
pub async fn expect_error(response: Response, status: u16, code: &str) -> String {
    let got = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_owned());
    let text = response.text().await.unwrap_or_default();
    assert_eq!(got, status, "status; body: {text}");
    assert_eq!(content_type.as_deref(), Some("application/json"), "{text}");
    let body: serde_json::Value = serde_json::from_str(&text).expect(&text);
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(!message.is_empty());
    assert_eq!(body.as_object().unwrap().len(), 1, "only `error`: {body}");
    message
}

/// The local embedding model's directory: `EMBED_MODEL_DIR`, else what the project's own
/// `scripts/models.sh` fetches (with its ONNX export when `EMBED_ONNXRUNTIME_LIBRARY` is set;
/// idempotent; it prints the directory last).
pub fn model_dir() -> std::path::PathBuf {
    if let Ok(dir) = std::env::var("EMBED_MODEL_DIR") {
        return dir.into();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/models.sh");
    let mut command = std::process::Command::new("bash");
    command.arg(script);
    if std::env::var_os("EMBED_ONNXRUNTIME_LIBRARY").is_some() {
        command.arg("--onnx");
    }
    let out = command.output().expect("scripts/models.sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout
        .lines()
        .last()
        .expect("a model directory")
        .trim()
        .into()
}

/// Settings with the local all-MiniLM-L6-v2 embedder, on ONNX Runtime when
/// `EMBED_ONNXRUNTIME_LIBRARY` names its library (`scripts/run-tests.sh` sets it), else candle.
pub fn semantic_settings(db_url: &str) -> Settings {
    let mut settings = settings(db_url);
    settings.embeddings.provider = embed::Provider::Local;
    settings.embeddings.model_dir = Some(model_dir());
    settings.embeddings.onnxruntime_library =
        std::env::var_os("EMBED_ONNXRUNTIME_LIBRARY").map(Into::into);
    settings
}

/// A response reduced to what must not depend on where it was answered from: status, body
/// bytes, and the headers other than the per-request ones.
pub async fn snapshot(res: Response) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let per_request = [
        "date",
        "x-request-id",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ];
    let status = res.status().as_u16();
    let mut headers: Vec<(String, String)> = res
        .headers()
        .iter()
        .filter(|(name, _)| !per_request.contains(&name.as_str()))
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    headers.sort();
    (status, headers, res.bytes().await.unwrap().to_vec())
}

/// Waits until the server's LISTEN connection is up (its credential cache remembers an
/// unknown key), so the kernel cache, fed by the same connection, is in use.
pub async fn wait_until_listening(server: &TestServer) {
    let unknown = auth::credential::generate(auth::CredentialKind::MemoryLive).plaintext;
    test_support::credentials::Lookups::new(Client::of(server), "/api/v1/memory/identity")
        .wait_until_remembered(&unknown)
        .await;
}

/// `settings` with a model endpoint on a port nothing listens on: model-backed requests are
/// accepted (the deployment has a model) and their runs fail `LLM_FAILED`. For suites that
/// seed model runs without reading their answers.
pub fn with_unanswering_model(mut settings: Settings) -> Settings {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    settings.llm.base_url = format!("http://127.0.0.1:{port}/v1");
    settings.llm.model = "unanswering".into();
    settings
}
