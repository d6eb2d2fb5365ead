//! The approval policy on sending: once the project wrote its day's allowance of
//! transactional emails, an agent's next ones wait for a person; a person's keys do not; the
//! approved email is sent once.

use super::*;

async fn post(h: &Harness, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let res = h.post_json(key, path, body).await;
    (res.status().as_u16(), json(res).await)
}

/// A new key of the project, made with `admin` through the route: its secret.
async fn make_key(h: &Harness, admin: &str, body: Value) -> String {
    let (status, key) = post(h, admin, "/api/v1/api-keys", &body).await;
    assert_eq!(status, 201, "{key}");
    key["secret"].as_str().unwrap().to_owned()
}

async fn count(h: &Harness, sql: &str) -> usize {
    h.query(sql).await[0].parse().unwrap()
}

#[tokio::test]
async fn an_agents_sends_past_the_days_allowance_wait_and_the_approved_one_is_sent_once() {
    let s = Send::new().await;
    let t = s.h.tenant(Plan::Managed).await;
    let site = s.h.site(&t.admin, "allowance").await;
    let policy = json!({"applies_to": "agents", "campaign_launch": true,
        "send_recipients_per_day": 2, "enroll_segment_size": null, "bulk_delete": true,
        "expires_after_minutes": 60});
    let res =
        s.h.http
            .put(s.h.server.url("/api/v1/approval-policy"))
            .bearer_auth(&t.admin)
            .json(&policy)
            .send()
            .await
            .unwrap();
    assert_eq!(res.status(), 200);
    let agent = make_key(
        &s.h,
        &t.admin,
        json!({"name": "agent", "scope": "write", "agent": true}),
    )
    .await;
    let approver = make_key(
        &s.h,
        &t.admin,
        json!({"name": "approver", "scope": "read", "approve": true}),
    )
    .await;
    let emails = format!(
        "SELECT count(*) FROM email_log WHERE project_id = '{}'",
        t.project
    );

    // The day's allowance goes out at once.
    for to in ["a@example.com", "b@example.com"] {
        let sent = s.sent(&agent, &site, to).await;
        assert_eq!(sent["status"], "sent", "{sent}");
    }
    // The next waits: 202 with the approval, and nothing is written or sent.
    let (status, pending) = post(
        &s.h,
        &agent,
        "/api/v1/send",
        &message(&site, "c@example.com"),
    )
    .await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["approval_required"], true, "{pending}");
    assert_eq!(pending["action"], "send_email");
    let id = pending["approval_id"].as_str().unwrap().to_owned();
    assert_eq!(count(&s.h, &emails).await, 2);
    assert_eq!(s.sink.received_count(), 2);
    // Through the tool too.
    let (status, body) = post(
        &s.h,
        &agent,
        "/api/mcp/tools/send_transactional",
        &message(&site, "e@example.com"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["approval_required"], true, "{body}");
    assert_eq!(count(&s.h, &emails).await, 2);

    // A person's key is not held back.
    let sent = s.sent(&t.write, &site, "d@example.com").await;
    assert_eq!(sent["status"], "sent", "{sent}");
    assert_eq!(count(&s.h, &emails).await, 3);

    // Approved: the email is written with the arguments approved and sent, once.
    let approve = format!("/api/v1/approvals/{id}/approve");
    let (status, approved) = post(&s.h, &approver, &approve, &json!({})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["result"]["to"], "c@example.com", "{approved}");
    let email_id = approved["result"]["id"].as_str().unwrap().to_owned();
    let email = s
        .wait_email(&t.read, &email_id, |e| e["status"] == "sent")
        .await;
    assert_eq!(email["to"], "c@example.com", "{email}");
    let (status, again) = post(&s.h, &approver, &approve, &json!({})).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(count(&s.h, &emails).await, 4);
    let to_c = s
        .sink
        .received()
        .iter()
        .filter(|m| m.to.iter().any(|to| to == "c@example.com"))
        .count();
    assert_eq!(to_c, 1);
    s.finish().await;
}
