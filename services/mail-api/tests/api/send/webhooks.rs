//! Provider webhooks: verified, deduplicated and applied, with the deployment's or the project's
//! secret, and their timestamps.

use super::*;

#[tokio::test]
async fn provider_webhooks_are_verified_deduplicated_and_applied() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("wh").await;
    s.use_resend(&t).await;
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = body["id"].as_str().unwrap().to_owned();
    let message_id = body["provider_message_id"].as_str().unwrap().to_owned();
    let path = "/api/webhooks/resend";
    let event = |kind: &str, extra: Value| {
        let mut data = json!({"email_id": message_id, "to": ["ada@example.com"]});
        if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        json!({"type": kind, "created_at": "2026-11-22T08:00:00Z", "data": data}).to_string()
    };

    let delivered = event("email.delivered", json!({}));
    let res = s.webhook(path, WEBHOOK_SECRET, "msg_1", &delivered).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(s.email(&t.read, &id).await["status"], "delivered");
    // The same webhook-id again: a duplicate, nothing applied twice.
    let res = s.webhook(path, WEBHOOK_SECRET, "msg_1", &delivered).await;
    assert_eq!(json(res).await["status"], "duplicate");

    let opened = event("email.opened", json!({}));
    s.webhook(path, WEBHOOK_SECRET, "msg_2", &opened).await;
    let clicked = event(
        "email.clicked",
        json!({"click": {"link": "https://example.com/a"}}),
    );
    s.webhook(path, WEBHOOK_SECRET, "msg_3", &clicked).await;
    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "clicked");
    assert_eq!(email["open_count"], 1);
    assert_eq!(email["clicked_urls"], json!(["https://example.com/a"]));

    // Bad signature, stale timestamp, missing headers: 401, nothing recorded.
    let complained = event("email.complained", json!({}));
    let mut forged = signed(WEBHOOK_SECRET, "msg_4", now(), &complained);
    forged[2].1 = signed(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_4",
        now(),
        &complained,
    )[2]
    .1
    .clone();
    let res = post_webhook(&s.h, path, &forged, &complained).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    let res = post_webhook(
        &s.h,
        path,
        &signed(WEBHOOK_SECRET, "msg_4", now() - 301, &complained),
        &complained,
    )
    .await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    let res = post_webhook(&s.h, path, &[], &complained).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    let altered = complained.replace("ada@", "eve@");
    let res = post_webhook(
        &s.h,
        path,
        &signed(WEBHOOK_SECRET, "msg_4", now(), &complained),
        &altered,
    )
    .await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    assert_eq!(
        s.h.query("SELECT count(*) FROM webhook_receipts").await,
        ["3"]
    );

    // svix-* headers are accepted too. A complaint: complained, suppressed, unsubscribed.
    let svix: Vec<(&'static str, String)> = signed(WEBHOOK_SECRET, "msg_4", now(), &complained)
        .into_iter()
        .map(|(n, v)| {
            (
                match n {
                    "webhook-id" => "svix-id",
                    "webhook-timestamp" => "svix-timestamp",
                    _ => "svix-signature",
                },
                v,
            )
        })
        .collect();
    let res = post_webhook(&s.h, path, &svix, &complained).await;
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(s.email(&t.read, &id).await["status"], "complained");
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["complained"]
    );
    assert_eq!(
        s.h.query("SELECT status FROM contact_sites").await,
        ["unsubscribed"]
    );
    // The project's outbound webhooks: the complaint, and the unsubscribe it caused.
    let mut events =
        s.h.query(
            "SELECT type || ':' || coalesce(data->>'email_log_id', data->>'email') \
             FROM outbound_events",
        )
        .await;
    events.sort();
    assert_eq!(
        events,
        [
            "contact.unsubscribed:ada@example.com".to_owned(),
            format!("email.complained:{id}")
        ]
    );
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;

    // An unknown message: 200, recorded as ignored.
    let unknown = json!({"type": "email.bounced", "data": {"email_id": "nope"}}).to_string();
    let res = s.webhook(path, WEBHOOK_SECRET, "msg_5", &unknown).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ignored");
    assert_eq!(
        s.h.query("SELECT status FROM webhook_receipts WHERE webhook_id = 'msg_5'")
            .await,
        ["ignored"]
    );
    // An unknown provider: 404.
    let res = s
        .webhook("/api/webhooks/sparkpost", WEBHOOK_SECRET, "msg_6", &unknown)
        .await;
    assert_eq!(res.status(), 404);

    assert_eq!(
        event_kinds(&s.email(&t.read, &id).await),
        [
            "accepted",
            "sent",
            "delivered",
            "opened",
            "clicked",
            "complained"
        ]
    );
    s.finish().await;
}

/// A project signing an event with its own secret under a `webhook-id` must not pre-empt the
/// deployment-signed event with that id (receipts were unique on (provider, webhook-id)).
#[tokio::test]
async fn a_projects_own_webhook_id_does_not_pre_empt_the_deployments_event() {
    let s = Send::new().await;
    let (victim, site) = s.tenant_with_site("victim").await;
    s.use_resend(&victim).await;
    let body = s.sent(&victim.write, &site, "ada@example.com").await;
    let email_id = body["id"].as_str().unwrap().to_owned();
    let bounce = json!({"type": "email.bounced",
        "data": {"email_id": body["provider_message_id"], "bounce": {"type": "Permanent"}}})
    .to_string();

    // The attacker's project signs the same event with its own secret and the id first.
    let attacker = s.h.tenant(Plan::Free).await;
    let res =
        s.h.api(&attacker.admin)
            .request(reqwest::Method::POST, "/api/v1/delivery/webhook-secret")
            .await;
    assert_eq!(res.status(), 201);
    let own = json(res).await;
    let own_secret = own["secret"].as_str().unwrap().to_owned();
    let own_path = own["path"].as_str().unwrap().to_owned();
    let res = s.webhook(&own_path, &own_secret, "evt_x", &bounce).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ignored");
    assert_eq!(s.email(&victim.read, &email_id).await["status"], "sent");

    // The deployment-signed event with that id is still applied.
    let res = s
        .webhook("/api/webhooks/resend", WEBHOOK_SECRET, "evt_x", &bounce)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(s.email(&victim.read, &email_id).await["status"], "bounced");
    // The project's outbound webhook event, with what the provider said.
    assert_eq!(
        s.h.query(
            "SELECT type || ':' || (data->>'email_log_id') || ':' || (data #>> '{bounce,type}') \
             FROM outbound_events"
        )
        .await,
        [format!("email.bounced:{email_id}:Permanent")]
    );

    // Each signer's repeat is still a duplicate.
    for (path, secret) in [
        (own_path.as_str(), own_secret.as_str()),
        ("/api/webhooks/resend", WEBHOOK_SECRET),
    ] {
        let res = s.webhook(path, secret, "evt_x", &bounce).await;
        assert_eq!(json(res).await["status"], "duplicate", "{path}");
    }
    assert_eq!(
        s.h.query("SELECT count(*) FROM webhook_receipts WHERE webhook_id = 'evt_x'")
            .await,
        ["2"]
    );
    s.finish().await;
}

#[tokio::test]
async fn a_bounce_for_a_project_route_uses_the_projects_own_secret() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("pw").await;
    s.use_resend(&t).await;
    let res =
        s.h.api(&t.admin)
            .request(reqwest::Method::POST, "/api/v1/delivery/webhook-secret")
            .await;
    assert_eq!(res.status(), 201);
    let answer = json(res).await;
    let secret = answer["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let path = answer["path"].as_str().unwrap().to_owned();
    assert_eq!(path, format!("/api/webhooks/resend/{}", t.project));
    let stored =
        s.h.query("SELECT encode(webhook_secret, 'base64') FROM project_delivery")
            .await;
    assert!(!stored[0].contains(secret.trim_start_matches("whsec_")));

    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let bounce = json!({"type": "email.bounced", "data": {"email_id": body["provider_message_id"], "bounce": {"type": "Permanent"}}}).to_string();
    // The deployment's secret does not open a project that has its own.
    let res = s.webhook(&path, WEBHOOK_SECRET, "b1", &bounce).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    // Another project's route does not reach this project's email.
    let other = s.h.tenant(Plan::Free).await;
    let res = post_webhook(
        &s.h,
        &format!("/api/webhooks/resend/{}", other.project),
        &signed(WEBHOOK_SECRET, "b0", now(), &bounce),
        &bounce,
    )
    .await;
    assert_eq!(json(res).await["status"], "ignored");
    // A project that does not exist (with a valid deployment signature): 404, nothing stored.
    let res = post_webhook(
        &s.h,
        &format!("/api/webhooks/resend/{}", Uuid::now_v7()),
        &signed(WEBHOOK_SECRET, "b9", now(), &bounce),
        &bounce,
    )
    .await;
    assert_eq!(res.status(), 404);
    assert_eq!(
        s.h.query("SELECT count(*) FROM webhook_receipts WHERE webhook_id = 'b9'")
            .await,
        ["0"]
    );
    let res = s.webhook(&path, &secret, "b1", &bounce).await;
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(
        s.email(&t.read, body["id"].as_str().unwrap()).await["status"],
        "bounced"
    );
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["bounced"]
    );
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    s.finish().await;
}

// The fixed clock exists only in debug builds.
#[cfg(debug_assertions)]
#[tokio::test]
async fn extreme_webhook_timestamps_answer_401_not_a_crash() {
    let h = Harness::with(|url| {
        let mut s = settings(url);
        s.webhooks.secret = WEBHOOK_SECRET.to_owned();
        s
    })
    .await;
    let body = json!({"type": "email.delivered", "data": {"email_id": "x"}}).to_string();
    let correctly_signed = [i64::MAX, i64::MIN, i64::MIN + 1, -1]
        .into_iter()
        .map(|ts| signed(WEBHOOK_SECRET, "msg_extreme", ts, &body));
    let unparsable = ["9".repeat(40), format!("-{}", "9".repeat(40))]
        .into_iter()
        .map(|ts| {
            let mut headers = signed(WEBHOOK_SECRET, "msg_extreme", now(), &body);
            headers[1].1 = ts;
            headers
        });
    for headers in correctly_signed.chain(unparsable) {
        let res = post_webhook(&h, "/api/webhooks/resend", &headers, &body).await;
        let err = expect_error(res, 401, "INVALID_SIGNATURE").await;
        assert!(err.message.contains("timestamp"), "{headers:?}: {err:?}");
    }
    assert_eq!(
        h.query("SELECT count(*) FROM webhook_receipts").await,
        ["0"]
    );
    h.stop().await;
}

#[tokio::test]
async fn the_standard_webhooks_vector_verifies_with_the_clock_at_its_time() {
    let s = Send::with(|s| s.webhooks.fixed_now = Some(1_649_367_553)).await;
    let body = r#"{"email":"test@example.com","username":"test_user"}"#;
    let headers = vec![
        ("webhook-id", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk".to_owned()),
        ("webhook-timestamp", "1649367553".to_owned()),
        (
            "webhook-signature",
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=".to_owned(),
        ),
    ];
    let res = post_webhook(&s.h, "/api/webhooks/resend", &headers, body).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ignored");
    let altered = body.replace("test_user", "test_usr");
    let res = post_webhook(&s.h, "/api/webhooks/resend", &headers, &altered).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    s.finish().await;
}
