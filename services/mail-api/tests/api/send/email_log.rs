//! The email log routes, campaign mail's unsubscribe headers, webhooks applied from the queue and
//! the send tools.

use super::*;

#[tokio::test]
async fn the_email_list_filters_and_pages_newest_first() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("list").await;
    let mut ids = Vec::new();
    for to in ["a@example.com", "b@example.com", "c@example.com"] {
        ids.push(
            json(s.send(&t.write, &message(&site, to)).await).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    s.h.exec(&format!(
        "UPDATE email_log SET status = 'failed' WHERE id = '{}'",
        ids[1]
    ))
    .await;
    let page = json(s.h.get_with(&t.read, "/api/v1/emails?limit=2").await).await;
    let got: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[2].as_str(), ids[1].as_str()]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let page = json(
        s.h.get_with(&t.read, &format!("/api/v1/emails?limit=2&cursor={cursor}"))
            .await,
    )
    .await;
    assert_eq!(page["data"][0]["id"], ids[0].as_str());
    assert_eq!(page["next_cursor"], Value::Null);
    let page = json(s.h.get_with(&t.read, "/api/v1/emails?status=failed").await).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    let page = json(
        s.h.get_with(&t.read, "/api/v1/emails?to=C@Example.com")
            .await,
    )
    .await;
    assert_eq!(page["data"][0]["id"], ids[2].as_str());
    let res = s.h.get_with(&t.read, "/api/v1/emails?status=lost").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = s.h.get_with(&t.read, "/api/v1/emails/not-a-uuid").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res =
        s.h.get_with(&t.read, &format!("/api/v1/emails/{}", Uuid::now_v7()))
            .await;
    expect_error(res, 404, "EMAIL_NOT_FOUND").await;
    s.finish().await;
}

#[tokio::test]
async fn campaign_mail_carries_one_click_unsubscribe_headers_that_work() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    s.without_worker().await;
    let (t, site) = s.tenant_with_site("camp").await;
    let campaign = s.h.campaign(&t, &site, "Welcome series", None, true).await;
    let id = s.queued(&t.write, &site, "ada@example.com").await;
    // The campaign runner's rows carry their campaign; this one is made so by hand.
    s.h.exec(&format!(
        "UPDATE email_log SET campaign_id = '{campaign}' WHERE id = '{id}'"
    ))
    .await;
    s.start_worker();
    s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    let data = s.sink.received()[0].data.clone();
    let unfolded = data.replace("\r\n ", " ");
    assert!(
        unfolded.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"),
        "{data}"
    );
    let start = unfolded
        .find("List-Unsubscribe: <")
        .expect("List-Unsubscribe")
        + 19;
    let url: String = unfolded[start..]
        .chars()
        .take_while(|c| *c != '>')
        .collect();
    let path = &url[url.find("/t/u/").unwrap()..];
    let res = s.unsubscribe_one_click(path).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["unsubscribed"]
    );
    let events = s.email(&t.read, &id).await["events"].clone();
    assert_eq!(events[2]["kind"], "unsubscribed");
    s.finish().await;
}

#[tokio::test]
async fn a_webhook_whose_application_failed_is_applied_by_the_worker_from_its_queue() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("retry").await;
    s.use_resend(&t).await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let message_id = body["provider_message_id"].as_str().unwrap();
    // A receipt whose inline application failed, as the receiver leaves it.
    let receipt = Uuid::now_v7();
    let payload = json!({"type": "email.bounced", "data": {"email_id": message_id}});
    s.h.exec(&format!(
        "INSERT INTO webhook_receipts (id, provider, webhook_id, event_type, payload, status, \
         attempts, last_error) VALUES ('{receipt}', 'resend', 'msg_r', 'email.bounced', '{payload}', \
         'failed', 1, 'connection reset')"
    ))
    .await;
    let queue = mail_api::sending::inbound_queue(s.prefix());
    s.broker.declare(&queue).await.unwrap();
    s.broker
        .publisher(queue.clone())
        .publish(&ProviderEvent {
            receipt_id: receipt,
        })
        .await
        .unwrap();
    let pool = store::pool(&s.h.db.url, &store::PoolOptions::default()).unwrap();
    let stop = ShutdownToken::new();
    let consumer = s.broker.consumer(queue).with_prefetch(1);
    let token = stop.clone();
    let events = ProviderEvents { pool };
    let task = tokio::spawn(async move {
        let jobs = Jobs::new().register::<ProviderEvent, _>(events);
        consumer.run_jobs(jobs, token).await
    });
    let id = body["id"].as_str().unwrap().to_owned();
    s.wait_email(&t.read, &id, |e| e["status"] == "bounced")
        .await;
    assert_eq!(
        s.h.query(&format!(
            "SELECT status || ' ' || attempts FROM webhook_receipts WHERE id = '{receipt}'"
        ))
        .await,
        ["applied 2"]
    );
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["bounced"]
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    s.finish().await;
}

/// An open records an event without data: the email's detail answers it with `data: null`,
/// which the document must allow, or a generated client refuses the whole answer.
#[tokio::test]
async fn an_email_detail_with_an_event_without_data_matches_the_document() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("nulls").await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = id_of(&body);
    let open = s.tracker.token(&Link::Open { email_id: id });
    let res = s.h.anonymous().get(&format!("/t/o/{open}")).await;
    assert_eq!(res.status(), 200);

    let email = s.email(&t.read, &id.to_string()).await;
    let events = email["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "opened" && e["data"].is_null()),
        "{email}"
    );
    let doc = committed_document();
    assert_eq!(
        undeclared_nulls(&doc, "EmailDetail", &email),
        Vec::<String>::new()
    );
    let res =
        s.h.get_with(&t.read, &format!("/api/v1/emails/{id}/events"))
            .await;
    assert_eq!(res.status(), 200);
    let page = json(res).await;
    assert_eq!(
        undeclared_nulls(&doc, "Page_EmailEventRecord", &page),
        Vec::<String>::new()
    );
    s.finish().await;
}

/// `send_transactional` and `send_test_email` through the REST mirror take the send path of
/// `POST /send`: the email is sent, logged and readable through `GET /emails/{id}`.
#[tokio::test]
async fn the_send_tools_send_through_the_routes_path() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("tools").await;
    let sent =
        s.h.tool_ok(
            &t.write,
            "send_transactional",
            json!({"to": "Ada@Example.com", "site_id": site, "subject": "Hi",
                    "html": "<p>Hi <a href=\"https://example.com/a\">a</a></p>"}),
        )
        .await;
    assert_eq!(sent["status"], "sent", "{sent}");
    let id = sent["id"].as_str().unwrap();
    let email =
        s.h.api(&t.read)
            .get(&format!("/api/v1/emails/{id}"))
            .expect(200)
            .await;
    assert_eq!(email["to"], "ada@example.com");
    assert_eq!(email["status"], "sent");

    let test =
        s.h.tool_ok(
            &t.write,
            "send_test_email",
            json!({"to_email": "bob@example.com", "site_id": site, "subject": "Draft",
                    "html": "<p>Draft <a href=\"https://example.com/b\">b</a></p>"}),
        )
        .await;
    let id = test["id"].as_str().unwrap();
    let email =
        s.h.api(&t.read)
            .get(&format!("/api/v1/emails/{id}"))
            .expect(200)
            .await;
    assert_eq!(email["subject"], "[Test] Draft");
    assert_eq!(email["to"], "bob@example.com");

    let mail = s.sink.received();
    assert_eq!(mail.len(), 2, "one message per tool call");
    assert_eq!(mail[1].to, ["bob@example.com"]);
    let unfolded = mail[1].data.replace("=\r\n", "").replace("=3D", "=");
    assert!(unfolded.contains("Subject: [Test] Draft"), "{unfolded}");
    assert!(
        !unfolded.contains("/t/o/"),
        "a test email is not tracked: {unfolded}"
    );
    s.finish().await;
}
