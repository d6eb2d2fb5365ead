//! Each provider against a real server: the SMTP sink and the Resend stub of
//! `delivery::testing`, and a directory.

use delivery::providers::{FileProvider, HostPolicy, ResendProvider, SmtpProvider, SmtpSecurity};
use delivery::testing::{ResendStub, SmtpSink};
use delivery::tracking::Tracker;
use delivery::{OutgoingEmail, Provider, SendError};
use uuid::Uuid;

fn email() -> OutgoingEmail {
    let id = Uuid::now_v7();
    let tracker = Tracker::new("http://track.test", b"a tracking key of enough length!");
    OutgoingEmail {
        id,
        from_name: "Acme".into(),
        from_address: "news@mail.acme.test".into(),
        to: "ada@example.com".into(),
        reply_to: Some("help@acme.test".into()),
        subject: "Your invoice".into(),
        html: tracker
            .inject(
                r#"<html><body><a href="https://acme.test/invoice">see it</a></body></html>"#,
                id,
            )
            .unwrap(),
        text: Some("See https://acme.test/invoice".into()),
        headers: vec![("X-Entity-Ref".into(), "inv-42".into())],
        tags: vec!["invoice".into()],
        dkim: None,
        return_path: None,
    }
}

#[tokio::test]
async fn smtp_delivers_both_parts_and_the_headers() {
    let sink = SmtpSink::start().await;
    let smtp = SmtpProvider::new(
        "127.0.0.1",
        sink.port,
        None,
        SmtpSecurity::None,
        HostPolicy::Any,
        None,
    )
    .unwrap();
    let email = email();
    let accepted = smtp.send(&email).await.unwrap();
    assert_eq!(accepted.provider_message_id, email.message_id());
    let got = sink.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].from, "news@mail.acme.test");
    assert_eq!(got[0].to, ["ada@example.com"]);
    let data = &got[0].data;
    for needle in [
        "Subject: Your invoice",
        "Reply-To: help@acme.test",
        "X-Entity-Ref: inv-42",
        &format!("Message-ID: {}", email.message_id()),
        "Content-Type: text/plain",
        "Content-Type: text/html",
    ] {
        assert!(data.contains(needle), "{needle} missing from {data}");
    }
    // The pooled transport reuses its connection for the next message.
    smtp.send(&self::email()).await.unwrap();
    assert_eq!(sink.received().len(), 2);
}

#[tokio::test]
async fn smtp_sends_from_the_return_path_and_a_refused_recipient_is_a_bounce() {
    let sink = SmtpSink::start().await;
    sink.refuse("gone@example.com");
    let smtp = SmtpProvider::new(
        "127.0.0.1",
        sink.port,
        None,
        SmtpSecurity::None,
        HostPolicy::Any,
        None,
    )
    .unwrap();
    let mut email = email();
    email.return_path = Some("bounce+t0k3n@bounces.acme.test".into());
    smtp.send(&email).await.unwrap();
    let got = sink.received();
    assert_eq!(got[0].from, "bounce+t0k3n@bounces.acme.test");
    assert!(
        got[0]
            .data
            .contains("Return-Path: <bounce+t0k3n@bounces.acme.test>"),
        "{}",
        got[0].data
    );
    email.to = "gone@example.com".into();
    let refused = smtp.send(&email).await;
    assert!(
        matches!(&refused, Err(SendError::Rejected(reason)) if reason.contains("550")),
        "{refused:?}"
    );
    // The pool recovers: the next message goes out.
    email.to = "ada@example.com".into();
    smtp.send(&email).await.unwrap();
    assert_eq!(sink.received().len(), 2);
}

#[tokio::test]
async fn smtp_connection_failures_are_temporary() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let smtp = SmtpProvider::new(
        "127.0.0.1",
        port,
        None,
        SmtpSecurity::None,
        HostPolicy::Any,
        None,
    )
    .unwrap();
    assert!(matches!(
        smtp.send(&email()).await,
        Err(SendError::Temporary(_))
    ));
}

#[tokio::test]
async fn a_project_smtp_host_on_an_internal_address_is_refused_and_nothing_connects() {
    let sink = SmtpSink::start().await;
    // An address literal is refused when the provider is made.
    assert!(matches!(
        SmtpProvider::new("127.0.0.1", sink.port, None, SmtpSecurity::None, HostPolicy::PublicOnly, None),
        Err(SendError::Permanent(reason)) if reason.contains("not a public address")
    ));
    // A name is resolved at send time: `localhost` is loopback, refused for good.
    let smtp = SmtpProvider::new(
        "localhost",
        sink.port,
        None,
        SmtpSecurity::None,
        HostPolicy::PublicOnly,
        None,
    )
    .unwrap();
    assert!(matches!(
        smtp.send(&email()).await,
        Err(SendError::Permanent(reason)) if reason.contains("not a public address")
    ));
    assert!(sink.received().is_empty(), "the sink was reached");
}

#[tokio::test]
async fn resend_gets_its_wire_format_and_replays_are_not_sent_twice() {
    let stub = ResendStub::start(Some("re_test_key")).await;
    let resend = ResendProvider::new("re_test_key", &stub.base_url).unwrap();
    let email = email();
    let first = resend.send(&email).await.unwrap();
    let again = resend.send(&email).await.unwrap();
    assert_eq!(first, again, "the same idempotency key answers the same id");
    let accepted = stub.accepted();
    assert_eq!(accepted.len(), 1, "sent once");
    assert_eq!(stub.requests(), 2);
    let stats: serde_json::Value = reqwest::get(format!("{}/stats", stub.base_url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats, serde_json::json!({"accepted": 1, "requests": 2}));
    let body = &accepted[0];
    assert_eq!(body["from"], "Acme <news@mail.acme.test>");
    assert_eq!(body["to"][0], "ada@example.com");
    assert_eq!(body["subject"], "Your invoice");
    assert!(
        body["html"]
            .as_str()
            .unwrap()
            .contains("http://track.test/t/c/")
    );
    assert!(
        body["html"]
            .as_str()
            .unwrap()
            .contains("http://track.test/t/o/")
    );
    assert_eq!(body["text"], "See https://acme.test/invoice");
    assert_eq!(body["headers"]["X-Entity-Ref"], "inv-42");
}

#[tokio::test]
async fn resend_errors_are_classified() {
    let stub = ResendStub::start(Some("re_test_key")).await;
    let resend = ResendProvider::new("re_test_key", &stub.base_url).unwrap();
    stub.fail_next(429, "rate_limit_exceeded");
    assert!(matches!(
        resend.send(&email()).await,
        Err(SendError::Temporary(_))
    ));
    stub.fail_next(500, "internal_server_error");
    assert!(matches!(
        resend.send(&email()).await,
        Err(SendError::Temporary(_))
    ));
    stub.fail_next(422, "validation_error");
    assert!(matches!(
        resend.send(&email()).await,
        Err(SendError::Permanent(_))
    ));
    let wrong_key = ResendProvider::new("re_wrong", &stub.base_url).unwrap();
    assert!(matches!(
        wrong_key.send(&email()).await,
        Err(SendError::Permanent(_))
    ));
    // A reused key with another body is refused, not sent.
    let mut changed = email();
    resend.send(&changed).await.unwrap();
    changed.subject = "Another subject".into();
    assert!(matches!(
        resend.send(&changed).await,
        Err(SendError::Permanent(_))
    ));
    assert_eq!(stub.accepted().len(), 1);
}

#[tokio::test]
async fn files_are_written_whole_and_idempotently() {
    let dir = std::env::temp_dir().join(format!("delivery-test-{}", Uuid::new_v4()));
    let files = FileProvider::new(&dir);
    let email = email();
    files.send(&email).await.unwrap();
    files.send(&email).await.unwrap();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [format!("{}.eml", email.id)]);
    let raw = std::fs::read_to_string(dir.join(&names[0])).unwrap();
    assert!(raw.contains("Subject: Your invoice"));
    std::fs::remove_dir_all(dir).unwrap();
}
