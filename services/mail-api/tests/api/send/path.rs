//! The send path: a send reaches the provider, refusals before anything is written, idempotency
//! keys, the queued answer and the outbox relay.

use super::*;

#[tokio::test]
async fn a_send_reaches_the_provider_with_tracking_and_answers_sent() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("news").await;

    let res = s.send(&t.write, &message(&site, " Ada@Example.com ")).await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert_eq!(body["status"], "sent");
    assert_eq!(body["to"], "ada@example.com");
    let id = body["id"].as_str().unwrap().to_owned();
    let provider_id = body["provider_message_id"].as_str().unwrap();
    assert_eq!(provider_id, format!("<{id}@{SHARED_DOMAIN}>"));

    let mail = s.sink.received();
    assert_eq!(mail.len(), 1);
    let data = &mail[0].data;
    assert_eq!(mail[0].to, ["ada@example.com"]);
    assert_eq!(mail[0].from, format!("news@{SHARED_DOMAIN}"));
    assert!(
        data.contains(&format!("From: \"Sender news\" <news@{SHARED_DOMAIN}>"))
            || data.contains(&format!("From: Sender news <news@{SHARED_DOMAIN}>")),
        "{data}"
    );
    assert!(data.contains("Reply-To: help@example.com"), "{data}");
    assert!(data.contains("X-Order: 1234"), "{data}");
    assert!(data.contains("Subject: Welcome aboard"), "{data}");
    assert!(
        data.contains("text/plain") && data.contains("text/html"),
        "{data}"
    );
    assert!(
        !data.contains("List-Unsubscribe"),
        "transactional mail: {data}"
    );
    let unfolded = data.replace("=\r\n", "").replace("=3D", "=");
    assert!(unfolded.contains("/t/o/"), "open pixel: {data}");
    assert!(unfolded.contains("/t/c/"), "wrapped link: {data}");
    assert!(unfolded.contains("mailto:help@example.com"), "{data}");
    assert!(
        !unfolded.contains("href=\"https://example.com/start"),
        "{data}"
    );

    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "sent");
    assert_eq!(email["provider"], "smtp");
    assert_eq!(email["attempts"], 1);
    assert_eq!(email["tags"], json!(["welcome"]));
    assert_eq!(event_kinds(&email), ["accepted", "sent"]);

    // Another project never sees it.
    let other = s.h.tenant(Plan::Free).await;
    let res =
        s.h.get_with(&other.read, &format!("/api/v1/emails/{id}"))
            .await;
    expect_error(res, 404, "EMAIL_NOT_FOUND").await;
    let res = s.h.get_with(&other.read, "/api/v1/emails").await;
    assert_eq!(json(res).await["data"], json!([]));
    s.finish().await;
}

#[tokio::test]
async fn tracking_off_sends_the_html_as_given() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("plain").await;
    let mut body = message(&site, "bob@example.com");
    body["tracking"] = false.into();
    assert_eq!(s.send(&t.write, &body).await.status(), 200);
    let data = s.sink.received()[0]
        .data
        .replace("=\r\n", "")
        .replace("=3D", "=");
    assert!(!data.contains("/t/o/") && !data.contains("/t/c/"), "{data}");
    assert!(data.contains("https://example.com/start"), "{data}");
    s.finish().await;
}

#[tokio::test]
async fn invalid_requests_are_refused_before_anything_is_written() {
    let s = Send::new().await;
    // Enterprise: more sends in five minutes than Free's ten.
    let t = s.h.tenant(Plan::Enterprise).await;
    let site = s.h.site(&t.write, "v").await;
    let cases = [
        (
            json!({"site_id": site, "subject": "s", "html": "<p>x</p>"}),
            "to",
        ),
        (
            json!({"to": "not an address", "site_id": site, "subject": "s", "html": "x"}),
            "to",
        ),
        (
            json!({"to": "a@b.co", "subject": "s", "html": "x"}),
            "site_id",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "x".repeat(999), "html": "x"}),
            "subject",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "html": "x"}),
            "subject",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s"}),
            "html",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "reply_to": "nope"}),
            "reply_to",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "headers": {"Bcc": "x@y.co"}}),
            "headers",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "headers": {"X-A": "a\r\nBcc: x@y.co"}}),
            "headers",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "tracking": "yes"}),
            "tracking",
        ),
    ];
    for (body, field) in cases {
        let res = s.send(&t.write, &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(err.message.contains(field), "{field}: {}", err.message);
    }
    // 998 characters is allowed.
    let mut ok = message(&site, "a@b.co");
    ok["subject"] = "x".repeat(998).into();
    assert_eq!(s.send(&t.write, &ok).await.status(), 200);

    // Another project's site, and an unknown one: 404.
    let other = s.h.tenant(Plan::Free).await;
    let their_site = s.h.site(&other.write, "theirs").await;
    let res = s.send(&t.write, &message(&their_site, "a@b.co")).await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = s
        .send(&t.write, &message(&Uuid::now_v7().to_string(), "a@b.co"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    // Read keys cannot send.
    let res = s.send(&t.read, &message(&site, "a@b.co")).await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(s.sink.received().len(), 1);
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM email_log WHERE project_id = '{}'",
            t.project
        ))
        .await,
        ["1"]
    );
    s.finish().await;
}

#[tokio::test]
async fn suppressed_addresses_and_the_monthly_quota_answer_422() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("q").await;
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/suppressions",
            &json!({"email": "gone@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let res = s.send(&t.write, &message(&site, "GONE@example.com")).await;
    let err = expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    assert_eq!(err.details["to"], "gone@example.com");

    // Free sends 3,000 a month: the 3,000th passes, the next does not.
    s.h.exec(&format!(
        "INSERT INTO project_monthly_sends (project_id, month, sends) \
         VALUES ('{}', date_trunc('month', now() AT TIME ZONE 'UTC')::date, 2999)",
        t.project
    ))
    .await;
    assert_eq!(
        s.send(&t.write, &message(&site, "a@example.com"))
            .await
            .status(),
        200
    );
    let res = s.send(&t.write, &message(&site, "b@example.com")).await;
    let err = expect_error(res, 422, "PLAN_LIMIT").await;
    assert_eq!(err.details["limit"], "monthly_sends");
    assert_eq!(err.details["max"], 3000);
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_answer_and_refuses_another_request() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("idem").await;
    let mut body = message(&site, "ada@example.com");
    body["idempotency_key"] = "order-42".into();
    let first = s.send(&t.write, &body).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first).await;
    let again = s.send(&t.write, &body).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await, first);
    assert_eq!(s.sink.received().len(), 1);

    body["subject"] = "Another subject".into();
    let res = s.send(&t.write, &body).await;
    expect_error(res, 409, "IDEMPOTENCY_KEY_REUSED").await;
    // Keys are per project.
    let other = s.h.tenant(Plan::Free).await;
    let their_site = s.h.site(&other.write, "o").await;
    let mut theirs = message(&their_site, "ada@example.com");
    theirs["idempotency_key"] = "order-42".into();
    assert_eq!(s.send(&other.write, &theirs).await.status(), 200);
    assert_eq!(s.sink.received().len(), 2);
    s.finish().await;
}

#[tokio::test]
async fn a_queued_answer_replays_as_queued_after_the_worker_sent_the_email() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    s.without_worker().await;
    let (t, site) = s.tenant_with_site("replay-queued").await;
    let mut body = message(&site, "later@example.com");
    body["idempotency_key"] = "order-43".into();
    let first = s.send(&t.write, &body).await;
    assert_eq!(first.status(), 202);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first).await;
    assert_eq!(first["status"], "queued");
    let id = first["id"].as_str().unwrap().to_owned();

    s.start_worker();
    s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    // The replay answers what the first request was answered, not the email's later state.
    let again = s.send(&t.write, &body).await;
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await, first);
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn without_a_worker_the_answer_is_queued_and_the_email_is_sent_later_once() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    s.without_worker().await;
    let (t, site) = s.tenant_with_site("late").await;
    let res = s.send(&t.write, &message(&site, "late@example.com")).await;
    assert_eq!(res.status(), 202);
    let body = json(res).await;
    assert_eq!(body["status"], "queued");
    assert_eq!(body["provider_message_id"], Value::Null);
    let id = body["id"].as_str().unwrap().to_owned();
    // Published: the outbox row is gone.
    assert_eq!(s.h.query("SELECT count(*) FROM outbox").await, ["0"]);
    assert_eq!(s.email(&t.read, &id).await["status"], "queued");

    s.start_worker();
    let email = s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    assert!(email["provider_message_id"].is_string());
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn the_outbox_relay_publishes_a_job_whose_publish_was_lost() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    let (t, id) = s.queued_alone("relay", "lost@example.com").await;
    // The message is lost (purged), and the outbox row is back as if the request had
    // crashed before publishing.
    let queue = send_queue(s.prefix());
    s.broker.delete(&queue).await.unwrap();
    let task = SendEmail {
        email_log_id: id,
        project_id: t.project,
    };
    s.h.exec(&format!(
        "INSERT INTO outbox (id, project_id, queue, task, available_at) \
         VALUES ('{id}', '{}', '{}', '{}', now() - interval '1 second')",
        t.project,
        queue.queue(),
        queue::to_value(&task)
    ))
    .await;
    let pool = store::pool(&s.h.db.url, &store::PoolOptions::default()).unwrap();
    let dispatcher =
        mail_api::sending::Dispatcher::new(&s.broker, s.prefix(), Duration::from_secs(1));
    assert_eq!(
        mail_api::sending::relay_once(&pool, &dispatcher)
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.h.query("SELECT count(*) FROM outbox").await, ["0"]);
    assert_eq!(
        mail_api::sending::relay_once(&pool, &dispatcher)
            .await
            .unwrap(),
        0
    );
    s.start_worker();
    s.wait_email(&t.read, &id.to_string(), |e| e["status"] == "sent")
        .await;
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}
