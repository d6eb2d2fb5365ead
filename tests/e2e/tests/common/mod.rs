//! What the end-to-end tests share: the real binaries started as processes (killed when
//! dropped), one-shot commands, and waiting for readiness.
#![allow(dead_code)] // each test file uses a part

pub mod mail;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// An HTTP client, the workspace's TLS provider installed first (reqwest refuses to build a
/// client without one).
pub fn http() -> reqwest::Client {
    http_builder().build().expect("HTTP client")
}

pub fn http_builder() -> reqwest::ClientBuilder {
    tls_kit::install();
    reqwest::Client::builder()
}

/// The directory holding the workspace's debug binaries.
pub fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("E2E_BIN_DIR") {
        return dir.into();
    }
    let target = std::env::var("CARGO_TARGET_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("debug")
}

pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: build the binaries first (cargo build --bins)",
        path.display()
    );
    path
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped.
pub struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    pub fn start(name: &str, args: &[&str], env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(binary(name));
        cmd.args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env("MEMORY_TELEMETRY__LOG_FILTER", "warn")
            .env("MAIL_TELEMETRY__LOG_FILTER", "warn")
            // mail-api and send-worker refuse to start without these.
            .env(
                "MAIL_SECRETS__KEK",
                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
            )
            .env(
                "MAIL_TRACKING__SECRET",
                "e2e-tracking-secret-0123456789abcdef",
            );
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self(cmd.spawn().expect("spawn"))
    }

    /// Sends `signal` (`TERM`, `KILL`, …) without waiting.
    pub fn signal(&self, signal: &str) {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal} {pid}");
    }

    /// SIGKILL: no chance to finish anything.
    pub fn kill9(mut self) {
        self.signal("KILL");
        let _ = self.0.wait();
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(mut self, within: Duration) -> std::process::ExitStatus {
        self.signal("TERM");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "did not stop within {within:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub fn run(name: &str, args: &[&str], env: &[(&str, String)]) -> Value {
    let mut cmd = Command::new(binary(name));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// A mail account, a project of `plan` and a key of `scope` in it, made with the admin CLI on
/// the database of `db_env`: returns the key's plaintext.
pub fn mail_key(db_env: &[(&str, String)], plan: &str, scope: &str) -> String {
    let account = run(
        "admin",
        &["mail", "create-account", "--name", "e2e"],
        db_env,
    );
    let account = account["account_id"].as_str().unwrap();
    let project = run(
        "admin",
        &[
            "mail",
            "create-project",
            "--account",
            account,
            "--name",
            "e2e",
            "--plan",
            plan,
        ],
        db_env,
    );
    let project = project["project_id"].as_str().unwrap();
    let key = run(
        "admin",
        &["mail", "create-key", "--project", project, "--scope", scope],
        db_env,
    );
    key["key"].as_str().unwrap().to_owned()
}

/// Waits until every dependency of the binary at `base` answers (`/healthz/details`, which
/// an API has beside its database-only `/readyz`; a worker's `/readyz` already covers them).
pub async fn wait_ready(base: &str) {
    let http = http();
    // A bound against a hang only: a busy machine (video renders of other tests, a cold
    // binary) can take well over ten seconds to bring a process up.
    for _ in 0..2400 {
        if let Ok(res) = http.get(format!("{base}/healthz/details")).send().await
            && res.status() == 200
            && res
                .json::<serde_json::Value>()
                .await
                .is_ok_and(|d| d["status"] == "ok")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} never became ready");
}
