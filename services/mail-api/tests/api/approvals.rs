//! Approvals: an agent's action that the policy holds back answers 202 with an approval id and
//! does nothing until a person approves it; the approval runs it once, with the arguments
//! approved; a second approval changes nothing; it expires; OAuth tokens and agents' keys
//! never decide.

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::oauth::{mcp_rpc, mcp_token, setup, token_for};

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> (u16, Value) {
    let res = h.post_json(key, path, &body).await;
    (res.status().as_u16(), json(res).await)
}

/// A new key of the project made with `admin` through the route: its secret.
async fn make_key(h: &Harness, admin: &str, body: Value) -> String {
    let (status, key) = post(h, admin, "/api/v1/api-keys", body).await;
    assert_eq!(status, 201, "{key}");
    key["secret"].as_str().unwrap().to_owned()
}

trait PutPolicy {
    async fn put_policy(&self, key: &str, body: &Value) -> reqwest::Response;
}

impl PutPolicy for Harness {
    async fn put_policy(&self, key: &str, body: &Value) -> reqwest::Response {
        self.http
            .put(self.server.url("/api/v1/approval-policy"))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .unwrap()
    }
}

async fn count(h: &Harness, sql: &str) -> usize {
    h.query(sql).await[0].parse().unwrap()
}

/// The done-when flow: an agent (an OAuth client through `/mcp`) asks to launch a campaign.
#[tokio::test]
async fn an_agents_launch_waits_for_a_person_and_runs_once() {
    let (h, project) = setup().await;
    let (_, admin) = h.key(project, auth::Scope::Admin).await;
    let site = h.site(&admin, "approvals").await;
    let contact = json!({"email": "reader@example.com", "site_id": site});
    assert_eq!(
        h.post_json(&admin, "/api/v1/contacts", &contact)
            .await
            .status(),
        201
    );
    let token = mcp_token(&h).await;
    let launch = json!({"name": "Agent launch", "site_id": site,
        "emails": [{"subject": "Hello", "html": "<p>Hello</p>"}]});
    let (status, _, body) = mcp_rpc(
        &h,
        &token,
        "tools/call",
        json!({"name": "launch_campaign", "arguments": launch}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let pending = &body["result"]["structuredContent"];
    assert_eq!(pending["approval_required"], true, "{body}");
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["action"], "launch_campaign");
    let id = pending["approval_id"].as_str().unwrap().to_owned();
    // Nothing was made, enrolled or sent.
    let campaigns = format!("SELECT count(*) FROM campaigns WHERE project_id = '{project}'");
    assert_eq!(count(&h, &campaigns).await, 0);

    // The agent reads it back, and sees it pending.
    let (_, _, body) = mcp_rpc(
        &h,
        &token,
        "tools/call",
        json!({"name": "check_approval", "arguments": {"approval_id": id}}),
    )
    .await;
    let checked = &body["result"]["structuredContent"];
    assert_eq!(checked["status"], "pending", "{body}");
    assert_eq!(checked["requester"], "oauth_client");
    assert_eq!(checked["arguments"]["name"], "Agent launch");
    assert_eq!(checked["arguments_sha256"].as_str().unwrap().len(), 64);
    let (_, _, body) = mcp_rpc(
        &h,
        &token,
        "tools/call",
        json!({"name": "list_pending_approvals", "arguments": {}}),
    )
    .await;
    assert_eq!(
        field_of_each(&body["result"]["structuredContent"], "id"),
        std::slice::from_ref(&id)
    );

    // An OAuth token never decides: 403, and nothing changes.
    let rest_token = token_for(&h, "/api/v1").await;
    let approve_path = format!("/api/v1/approvals/{id}/approve");
    let res = h.post_json(&rest_token, &approve_path, &json!({})).await;
    expect_error(res, 403, "FORBIDDEN").await;
    // Nor a key without the approve right.
    let res = h.post_json(&admin, &approve_path, &json!({})).await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(count(&h, &campaigns).await, 0);

    // A person approves it with a key that holds the right: the launch runs, once.
    let approver = make_key(
        &h,
        &admin,
        json!({"name": "approver", "scope": "write", "approve": true}),
    )
    .await;
    let (status, approved) = post(&h, &approver, &approve_path, json!({})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["result"]["enrolled"], 1, "{approved}");
    assert_eq!(approved["result"]["status"], "active");
    assert!(approved["decided_by"].is_string());
    assert_eq!(count(&h, &campaigns).await, 1);
    // A second approval changes nothing.
    let res = h.post_json(&approver, &approve_path, &json!({})).await;
    let err = expect_error(res, 409, "APPROVAL_DECIDED").await;
    assert_eq!(err.details["status"], "approved");
    assert_eq!(count(&h, &campaigns).await, 1);
    let enrolled = format!("SELECT count(*) FROM enrollments WHERE project_id = '{project}'");
    assert_eq!(count(&h, &enrolled).await, 1);
    let got = json(h.get_with(&admin, &format!("/api/v1/approvals/{id}")).await).await;
    assert_eq!(got["status"], "approved");
    assert_eq!(got["result"], approved["result"]);

    // Both events were recorded for the outbound webhooks.
    let events = h
        .query(&format!(
            "SELECT type FROM outbound_events WHERE project_id = '{project}' \
             AND type LIKE 'approval.%' ORDER BY id"
        ))
        .await;
    assert_eq!(events, ["approval.requested", "approval.decided"]);
}

#[tokio::test]
async fn agent_keys_wait_people_do_not_and_approvals_expire_or_are_rejected() {
    let (h, t) = Harness::with_tenant(Plan::Managed).await;
    let site = h.site(&t.admin, "agentkeys").await;
    let policy = json(h.get_with(&t.read, "/api/v1/approval-policy").await).await;
    assert_eq!(
        policy,
        json!({"applies_to": "agents", "campaign_launch": true, "send_recipients_per_day": 100,
               "enroll_segment_size": 1000, "bulk_delete": true, "expires_after_minutes": 1440})
    );
    let agent = make_key(
        &h,
        &t.admin,
        json!({"name": "agent", "scope": "admin", "agent": true}),
    )
    .await;
    let approver = make_key(
        &h,
        &t.admin,
        json!({"name": "approver", "scope": "read", "approve": true}),
    )
    .await;
    // An agent's key cannot give itself the right, nor make a key that is not an agent's.
    let res = h
        .post_json(
            &agent,
            "/api/v1/api-keys",
            &json!({"name": "x", "scope": "read", "agent": false}),
        )
        .await;
    expect_error(res, 403, "KEY_BROADER_THAN_CREATOR").await;

    // A person's key activates a campaign at once.
    let step = json!([{"subject": "Hi", "html": "<p>Hi</p>"}]);
    let make = |name: &str| json!({"name": name, "site_id": site, "steps": step});
    let (_, mine) = post(&h, &t.write, "/api/v1/campaigns", make("mine")).await;
    let mine = mine["id"].as_str().unwrap().to_owned();
    let (status, body) = post(
        &h,
        &t.write,
        &format!("/api/v1/campaigns/{mine}/status"),
        json!({"status": "active"}),
    )
    .await;
    assert_eq!((status, &body["status"]), (200, &json!("active")), "{body}");

    // An agent's key waits: 202, and the campaign stays a draft.
    let (_, theirs) = post(&h, &agent, "/api/v1/campaigns", make("theirs")).await;
    let theirs = theirs["id"].as_str().unwrap().to_owned();
    let status_path = format!("/api/v1/campaigns/{theirs}/status");
    let (status, pending) = post(&h, &agent, &status_path, json!({"status": "active"})).await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["action"], "activate_campaign");
    let id = pending["approval_id"].as_str().unwrap().to_owned();
    let campaign_path = format!("/api/v1/campaigns/{theirs}");
    let campaign = json(h.get_with(&t.read, &campaign_path).await).await;
    assert_eq!(campaign["status"], "draft");
    // An agent's key decides nothing, whatever its scope, nor changes the policy.
    let res = h
        .post_json(
            &agent,
            &format!("/api/v1/approvals/{id}/approve"),
            &json!({}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h.put_policy(&agent, &policy).await;
    expect_error(res, 403, "FORBIDDEN").await;

    // Rejected, with a reason: it never runs.
    let (status, rejected) = post(
        &h,
        &approver,
        &format!("/api/v1/approvals/{id}/reject"),
        json!({"reason": " not this week "}),
    )
    .await;
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["reason"], "not this week");
    assert_eq!(rejected["result"], Value::Null);
    let campaign = json(h.get_with(&t.read, &campaign_path).await).await;
    assert_eq!(campaign["status"], "draft");
    let res = h
        .post_json(
            &approver,
            &format!("/api/v1/approvals/{id}/approve"),
            &json!({}),
        )
        .await;
    expect_error(res, 409, "APPROVAL_DECIDED").await;

    // Past its time: refused, and no longer listed.
    let (_, pending) = post(&h, &agent, &status_path, json!({"status": "active"})).await;
    let late = pending["approval_id"].as_str().unwrap().to_owned();
    h.exec(&format!(
        "UPDATE approvals SET expires_at = now() - interval '1 minute' WHERE id = '{late}'"
    ))
    .await;
    let res = h
        .post_json(
            &approver,
            &format!("/api/v1/approvals/{late}/approve"),
            &json!({}),
        )
        .await;
    let err = expect_error(res, 409, "APPROVAL_EXPIRED").await;
    assert_eq!(err.details["status"], "expired");
    let page = json(h.get_with(&t.read, "/api/v1/approvals").await).await;
    assert!(field_of_each(&page, "id").is_empty(), "{page}");
    let campaign = json(h.get_with(&t.read, &campaign_path).await).await;
    assert_eq!(campaign["status"], "draft");

    // A policy for every key below admin: now the write key waits too, for 10 minutes.
    let stricter = json!({"applies_to": "all_but_admin", "campaign_launch": true,
        "send_recipients_per_day": null, "enroll_segment_size": null, "bulk_delete": false,
        "expires_after_minutes": 10});
    let res = h.put_policy(&t.admin, &stricter).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, stricter);
    let (status, pending) = post(&h, &t.write, &status_path, json!({"status": "active"})).await;
    assert_eq!(status, 202, "{pending}");
    let id = pending["approval_id"].as_str().unwrap().to_owned();
    let (status, approved) = post(
        &h,
        &approver,
        &format!("/api/v1/approvals/{id}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["result"]["status"], "active");
    let campaign = json(h.get_with(&t.read, &campaign_path).await).await;
    assert_eq!(campaign["status"], "active");

    // Another project's approval is not found.
    let other = h.tenant(Plan::Managed).await;
    let res = h
        .get_with(&other.read, &format!("/api/v1/approvals/{id}"))
        .await;
    expect_error(res, 404, "APPROVAL_NOT_FOUND").await;
}

/// An agent's enrollment larger than the policy's size, and its deletion of a campaign (a bulk
/// deletion), wait for a person; approved, each runs once. A policy changed is applied to the
/// next action.
#[tokio::test]
async fn large_enrollments_and_campaign_deletions_by_agents_wait_for_a_person() {
    let (h, t) = Harness::with_tenant(Plan::Managed).await;
    let site = h.site(&t.admin, "bulk").await;
    let policy = |size: i32| {
        json!({"applies_to": "agents", "campaign_launch": false,
            "send_recipients_per_day": null, "enroll_segment_size": size, "bulk_delete": true,
            "expires_after_minutes": 60})
    };
    assert_eq!(h.put_policy(&t.admin, &policy(2)).await.status(), 200);
    for email in ["a@example.com", "b@example.com", "c@example.com"] {
        let contact = json!({"email": email, "site_id": site});
        let (status, body) = post(&h, &t.write, "/api/v1/contacts", contact).await;
        assert_eq!(status, 201, "{body}");
    }
    let agent = make_key(
        &h,
        &t.admin,
        json!({"name": "agent", "scope": "write", "agent": true}),
    )
    .await;
    let approver = make_key(
        &h,
        &t.admin,
        json!({"name": "approver", "scope": "read", "approve": true}),
    )
    .await;
    let campaign = json!({"name": "bulk", "site_id": site,
        "steps": [{"subject": "Hi", "html": "<p>Hi</p>"}]});
    let (status, created) = post(&h, &agent, "/api/v1/campaigns", campaign).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, body) = post(
        &h,
        &agent,
        &format!("/api/v1/campaigns/{id}/status"),
        json!({"status": "active"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let enrolled = format!("SELECT count(*) FROM enrollments WHERE campaign_id = '{id}'");

    // Three subscribers, two allowed: the enrollment waits, nothing is enrolled.
    let enroll_path = format!("/api/v1/campaigns/{id}/segment-enrollments");
    let audience = json!({"site_id": site});
    let (status, pending) = post(&h, &agent, &enroll_path, audience.clone()).await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["action"], "enroll_segment");
    assert_eq!(count(&h, &enrolled).await, 0);
    let approval = pending["approval_id"].as_str().unwrap().to_owned();
    let (status, approved) = post(
        &h,
        &approver,
        &format!("/api/v1/approvals/{approval}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["result"]["enrolled"], 3, "{approved}");
    assert_eq!(count(&h, &enrolled).await, 3);

    // A larger size: the agent's next enrollment runs at once.
    assert_eq!(h.put_policy(&t.admin, &policy(5)).await.status(), 200);
    let (status, body) = post(&h, &agent, &enroll_path, audience).await;
    assert_eq!((status, &body["enrolled"]), (200, &json!(0)), "{body}");

    // Deleting the campaign waits; approved, it is gone.
    let campaign_path = format!("/api/v1/campaigns/{id}");
    let res = h
        .http
        .delete(h.server.url(&campaign_path))
        .bearer_auth(&agent)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let pending = json(res).await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["action"], "delete_campaign");
    assert_eq!(h.get_with(&t.read, &campaign_path).await.status(), 200);
    let approval = pending["approval_id"].as_str().unwrap().to_owned();
    let (status, approved) = post(
        &h,
        &approver,
        &format!("/api/v1/approvals/{approval}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["result"]["id"], json!(id), "{approved}");
    expect_error(
        h.get_with(&t.read, &campaign_path).await,
        404,
        "CAMPAIGN_NOT_FOUND",
    )
    .await;
    // A person's key deletes at once.
    let (_, other) = post(
        &h,
        &t.write,
        "/api/v1/campaigns",
        json!({"name": "mine", "site_id": site}),
    )
    .await;
    let res = h
        .http
        .delete(h.server.url(&format!(
            "/api/v1/campaigns/{}",
            other["id"].as_str().unwrap()
        )))
        .bearer_auth(&t.write)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
}
