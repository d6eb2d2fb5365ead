//! A mail stack of the real binaries: a migrated database with a project and an admin key,
//! mail-api and send-worker processes, an SMTP sink and the Resend stub as the providers.

use delivery::testing::{ResendStub, SmtpSink};
use serde_json::Value;
use store::testing::TestDatabase;

use super::{Proc, free_port, run, wait_ready};

pub const KEK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
pub const TRACKING_SECRET: &str = "e2e-tracking-secret-0123456789abcdef";
/// The Standard Webhooks specification's example secret, configured as the deployment's.
pub const WEBHOOK_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
/// The receiver's clock is fixed at the specification's example time.
pub const SPEC_TIME: i64 = 1_649_367_553;
pub const DOMAIN: &str = "send.e2e.example";

/// A migrated database with a project and an admin key, the providers, and the settings both
/// binaries share.
pub struct Stack {
    pub _db: TestDatabase,
    pub env: Vec<(&'static str, String)>,
    pub key: String,
    pub api: String,
    pub sink: SmtpSink,
    pub resend: ResendStub,
    pub http: reqwest::Client,
    pub _api_proc: Proc,
    /// What a mail-api process of the stack is started with, but its address.
    pub api_env: Vec<(&'static str, String)>,
}

impl Stack {
    pub async fn start(reply_wait_ms: u64) -> Self {
        Self::start_with(reply_wait_ms, &[]).await
    }

    /// A stack whose binaries (the API and every worker) also get `extra` settings.
    pub async fn start_with(reply_wait_ms: u64, extra: &[(&'static str, String)]) -> Self {
        let db = TestDatabase::empty("mail").await.unwrap();
        let sink = SmtpSink::start().await;
        let resend = ResendStub::start(Some("re_e2e")).await;
        let api_port = free_port();
        let api = format!("http://127.0.0.1:{api_port}");
        let mut env = vec![
            ("MAIL_DATABASE__URL", db.url.clone()),
            (
                "MAIL_BROKER__QUEUE_PREFIX",
                format!("e2e-{}.", uuid::Uuid::new_v4().simple()),
            ),
            ("MAIL_SECRETS__KEK", KEK.to_owned()),
            ("MAIL_TRACKING__SECRET", TRACKING_SECRET.to_owned()),
            ("MAIL_TRACKING__BASE_URL", api.clone()),
            ("MAIL_SENDING__SHARED_DOMAIN", DOMAIN.to_owned()),
            ("MAIL_DELIVERY__DEFAULT_PROVIDER__KIND", "smtp".to_owned()),
            (
                "MAIL_DELIVERY__DEFAULT_PROVIDER__HOST",
                "127.0.0.1".to_owned(),
            ),
            (
                "MAIL_DELIVERY__DEFAULT_PROVIDER__PORT",
                sink.port.to_string(),
            ),
            (
                "MAIL_DELIVERY__DEFAULT_PROVIDER__SECURITY",
                "none".to_owned(),
            ),
            ("MAIL_DELIVERY__RESEND_BASE_URL", resend.base_url.clone()),
        ];
        env.extend_from_slice(extra);
        let db_env = &env[..1];
        run("mail-api", &["migrate"], db_env);
        let key = super::mail_key(db_env, "enterprise", "admin");
        let mut api_env = env.clone();
        api_env.extend([
            ("MAIL_SENDING__REPLY_WAIT_MS", reply_wait_ms.to_string()),
            ("MAIL_SENDING__OUTBOX_RELAY_SECS", "1".to_owned()),
            // The crash burst sends far more than a plan's five-minute send budget.
            ("MAIL_RATE_LIMIT__SCALE", "1000".to_owned()),
            ("MAIL_WEBHOOKS__SECRET", WEBHOOK_SECRET.to_owned()),
            ("MAIL_WEBHOOKS__FIXED_NOW", SPEC_TIME.to_string()),
        ]);
        let api_proc = start_api(&api_env, api_port).await;
        Self {
            _db: db,
            env,
            key,
            api,
            sink,
            resend,
            http: super::http(),
            _api_proc: api_proc,
            api_env,
        }
    }

    /// Another mail-api process on the stack's database and queues (its settings and `extra`):
    /// the process and its base URL, once ready.
    pub async fn replica(&self, extra: &[(&'static str, String)]) -> (Proc, String) {
        let port = free_port();
        let mut env = self.api_env.clone();
        env.extend_from_slice(extra);
        (
            start_api(&env, port).await,
            format!("http://127.0.0.1:{port}"),
        )
    }

    pub async fn worker(&self) -> Proc {
        self.worker_at().await.0
    }

    /// A send-worker handling at most `prefetch` deliveries at once.
    pub async fn worker_prefetching(&self, prefetch: usize) -> Proc {
        self.worker_with(&[("MAIL_WORKER__PREFETCH", prefetch.to_string())])
            .await
            .0
    }

    /// A send-worker and the base URL of its health and metrics server, once ready.
    pub async fn worker_at(&self) -> (Proc, String) {
        self.worker_with(&[]).await
    }

    async fn worker_with(&self, extra: &[(&'static str, String)]) -> (Proc, String) {
        let port = free_port();
        let mut env = self.env.clone();
        env.extend_from_slice(extra);
        env.push(("MAIL_WORKER__BIND", format!("127.0.0.1:{port}")));
        let worker = Proc::start("send-worker", &[], &env);
        let base = format!("http://127.0.0.1:{port}");
        wait_ready(&base).await;
        (worker, base)
    }

    /// Makes the Resend stub the project's own provider.
    pub async fn use_resend(&self) {
        let res = self
            .http
            .put(format!("{}/api/v1/delivery/provider", self.api))
            .bearer_auth(&self.key)
            .json(&serde_json::json!({"kind": "resend", "api_key": "re_e2e"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }

    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.api))
            .bearer_auth(&self.key)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> Value {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        res.json().await.unwrap()
    }
}

/// mail-api with `env` on `port`, once ready.
async fn start_api(env: &[(&'static str, String)], port: u16) -> Proc {
    let mut env = env.to_vec();
    env.push(("MAIL_HTTP__BIND", format!("127.0.0.1:{port}")));
    let api = Proc::start("mail-api", &["serve"], &env);
    wait_ready(&format!("http://127.0.0.1:{port}")).await;
    api
}
