//! SMTP over TLS against the sink of `delivery::testing`, its certificate issued by a test CA
//! for `localhost`. The deployment's relay given that CA (`ca_file`) sends over STARTTLS and
//! over implicit TLS; a certificate of another CA, or for another name, is refused before
//! anything is sent, and so is a server that does not offer the STARTTLS the client requires.
//! Such a refusal is permanent: trying again cannot help until the server or the settings
//! change.

use std::path::Path;

use delivery::providers::{HostPolicy, SmtpProvider, SmtpSecurity};
use delivery::testing::SmtpSink;
use delivery::{OutgoingEmail, Provider, SendError};
use tls_kit::testing::{Leaf, TempDir, TestCa};
use uuid::Uuid;

fn email() -> OutgoingEmail {
    OutgoingEmail {
        id: Uuid::now_v7(),
        from_name: "Acme".into(),
        from_address: "news@mail.acme.test".into(),
        to: "ada@example.com".into(),
        reply_to: None,
        subject: "Sent over TLS".into(),
        html: "<p>Hello</p>".into(),
        text: Some("Hello".into()),
        headers: Vec::new(),
        tags: Vec::new(),
        dkim: None,
        return_path: None,
    }
}

/// The deployment's relay at `host`, trusting `ca_file` besides the system's roots.
fn relay(host: &str, port: u16, security: SmtpSecurity, ca_file: Option<&Path>) -> SmtpProvider {
    SmtpProvider::new(host, port, None, security, HostPolicy::Any, ca_file).unwrap()
}

/// A test CA, written to `ca.pem` in a directory of its own.
struct Ca {
    ca: TestCa,
    dir: TempDir,
}

impl Ca {
    fn new(name: &str) -> Self {
        tls_kit::install();
        Self {
            ca: TestCa::new(name),
            dir: TempDir::new("smtp-tls"),
        }
    }

    fn file(&self) -> std::path::PathBuf {
        self.ca.write(self.dir.path(), "ca.pem")
    }

    /// A server certificate for `localhost`.
    fn localhost(&self) -> Leaf {
        self.ca.issue(&["localhost"])
    }
}

/// A permanent failure whose reason contains `needle`.
fn assert_permanent(answer: &Result<delivery::Accepted, SendError>, needle: &str) {
    assert!(
        matches!(answer, Err(SendError::Permanent(reason)) if reason.contains(needle)),
        "expected a permanent failure naming {needle:?}, got {answer:?}"
    );
}

#[tokio::test]
async fn starttls_with_the_test_ca_sends_over_tls() {
    let ca = Ca::new("smtp test CA");
    let sink = SmtpSink::start_tls(ca.localhost().server_config()).await;
    let email = email();
    let sent = relay(
        "localhost",
        sink.port,
        SmtpSecurity::Starttls,
        Some(&ca.file()),
    )
    .send(&email)
    .await;
    assert!(sent.is_ok(), "STARTTLS with the test CA: {sent:?}");
    // A client that does not ask for STARTTLS is served in plain text, and told apart.
    let plain = relay("localhost", sink.port, SmtpSecurity::None, None)
        .send(&self::email())
        .await;
    assert!(plain.is_ok(), "plain text to the same sink: {plain:?}");

    let got = sink.received();
    let over_tls: Vec<bool> = got.iter().map(|m| m.tls).collect();
    assert_eq!(over_tls, [true, false], "{got:?}");
    assert_eq!(got[0].from, "news@mail.acme.test");
    assert_eq!(got[0].to, ["ada@example.com"]);
    for needle in [
        "Subject: Sent over TLS",
        &format!("Message-ID: {}", email.message_id()),
    ] {
        assert!(
            got[0].data.contains(needle),
            "{needle} missing from {got:?}"
        );
    }
}

#[tokio::test]
async fn implicit_tls_with_the_test_ca_sends_and_another_ca_is_refused() {
    let ca = Ca::new("smtp test CA");
    let sink = SmtpSink::start_implicit_tls(ca.localhost().server_config()).await;
    let sent = relay("localhost", sink.port, SmtpSecurity::Tls, Some(&ca.file()))
        .send(&email())
        .await;
    assert!(sent.is_ok(), "implicit TLS with the test CA: {sent:?}");
    let other = Ca::new("another CA");
    let refused = relay(
        "localhost",
        sink.port,
        SmtpSecurity::Tls,
        Some(&other.file()),
    )
    .send(&email())
    .await;
    assert_permanent(&refused, "certificate");

    let got = sink.received();
    let over_tls: Vec<bool> = got.iter().map(|m| m.tls).collect();
    assert_eq!(over_tls, [true], "{got:?}");
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused_and_nothing_is_sent() {
    let ca = Ca::new("smtp test CA");
    let sink = SmtpSink::start_tls(ca.localhost().server_config()).await;
    let other = Ca::new("another CA");
    let refused = relay(
        "localhost",
        sink.port,
        SmtpSecurity::Starttls,
        Some(&other.file()),
    )
    .send(&email())
    .await;
    assert_permanent(&refused, "certificate");
    // Without a CA file: the system's roots do not know the test CA either.
    let refused = relay("localhost", sink.port, SmtpSecurity::Starttls, None)
        .send(&email())
        .await;
    assert_permanent(&refused, "certificate");
    let got = sink.received();
    assert!(got.is_empty(), "the sink received {got:?}");
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    let ca = Ca::new("smtp test CA");
    let sink = SmtpSink::start_tls(ca.localhost().server_config()).await;
    // The same server by its address: the certificate names localhost only.
    let refused = relay(
        "127.0.0.1",
        sink.port,
        SmtpSecurity::Starttls,
        Some(&ca.file()),
    )
    .send(&email())
    .await;
    assert_permanent(&refused, "certificate");
    let got = sink.received();
    assert!(got.is_empty(), "the sink received {got:?}");
}

#[tokio::test]
async fn required_starttls_sends_nothing_in_plain_text_to_a_server_without_it() {
    let ca = Ca::new("smtp test CA");
    let sink = SmtpSink::start().await;
    let refused = relay(
        "localhost",
        sink.port,
        SmtpSecurity::Starttls,
        Some(&ca.file()),
    )
    .send(&email())
    .await;
    assert_permanent(&refused, "STARTTLS");
    let got = sink.received();
    assert!(got.is_empty(), "the sink received {got:?}");
}
