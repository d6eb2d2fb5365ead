//! `provider-stub [--resend-port N] [--smtp-port N] [--api-key KEY]`: the Resend stub and the
//! SMTP sink of `delivery::testing` as one process, for benchmarks and crash tests that need
//! the provider to outlive the worker. Prints the two addresses as a JSON line, then serves
//! until killed; `GET /stats` on the Resend address gives its counts.

#![allow(clippy::print_stdout)] // a command-line tool: its output is the point

use delivery::testing::{ResendStub, SmtpSink};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    tls_kit::install();
    let resend = ResendStub::start_on(
        arg("--resend-port")
            .and_then(|p| p.parse().ok())
            .unwrap_or(0),
        arg("--api-key").as_deref(),
    )
    .await;
    let smtp =
        SmtpSink::start_on(arg("--smtp-port").and_then(|p| p.parse().ok()).unwrap_or(0)).await;
    println!(
        "{}",
        serde_json::json!({"resend_base_url": resend.base_url, "smtp_port": smtp.port})
    );
    std::future::pending::<()>().await;
}
