//! Drafts over REST and through their tools: written pending, approved or rejected by a
//! person (an OAuth client's token is refused), promoted to a campaign's step once.

use auth::Scope;
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::oauth::{mcp_rpc, mcp_token, setup};

async fn create(h: &Harness, key: &str, site: &str, subject: &str) -> Value {
    let body = json!({"site_id": site, "subject": subject, "body_html": "<p>Hello</p>",
                      "text": "Hello"});
    let res = h.post_json(key, "/api/v1/drafts", &body).await;
    let status = res.status();
    let answer = json(res).await;
    assert_eq!(status, 201, "{answer}");
    answer
}

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> (u16, Value) {
    let res = h.post_json(key, path, &body).await;
    (res.status().as_u16(), json(res).await)
}

#[tokio::test]
async fn a_draft_is_approved_by_a_person_and_promoted_once() {
    let (h, t) = Harness::with_tenant(Plan::Managed).await;
    let site = h.site(&t.admin, "drafts").await;
    let draft = create(&h, &t.write, &site, "Spring sale").await;
    assert_eq!(draft["status"], "pending", "{draft}");
    assert_eq!(draft["text"], "Hello");
    assert_eq!(draft["campaign_id"], Value::Null);
    let id = draft["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/drafts/{id}");
    assert_eq!(json(h.get_with(&t.read, &path).await).await, draft);

    // Not approved: it cannot be promoted.
    let res = h
        .post_json(&t.write, &format!("{path}/promote"), &json!({}))
        .await;
    let err = expect_error(res, 409, "DRAFT_NOT_APPROVED").await;
    assert_eq!(err.details["status"], "pending");

    // The read key can neither write nor decide.
    let res = h
        .post_json(&t.read, &format!("{path}/approve"), &json!({}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;

    let (status, approved) = post(&h, &t.write, &format!("{path}/approve"), json!({})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "approved");
    assert!(approved["decided_at"].is_string(), "{approved}");
    // Again: nothing changes.
    let (status, again) = post(&h, &t.write, &format!("{path}/approve"), json!({})).await;
    assert_eq!((status, &again), (200, &approved));
    // An approved draft is not rejected afterwards.
    let res = h
        .post_json(
            &t.write,
            &format!("{path}/reject"),
            &json!({"reason": "late"}),
        )
        .await;
    let err = expect_error(res, 409, "INVALID_TRANSITION").await;
    assert_eq!(err.details["from"], "approved");

    // Promoted without a campaign: a new draft campaign with it as step 1.
    let (status, promoted) = post(
        &h,
        &t.write,
        &format!("{path}/promote"),
        json!({"name": "Spring", "delay_minutes": 5}),
    )
    .await;
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(promoted["draft"]["status"], "promoted");
    let campaign = &promoted["campaign"];
    assert_eq!(campaign["name"], "Spring");
    assert_eq!(campaign["status"], "draft");
    assert_eq!(campaign["site_id"], site.as_str());
    assert_eq!(campaign["steps"].as_array().unwrap().len(), 1, "{campaign}");
    let step = &campaign["steps"][0];
    assert_eq!(step["subject"], "Spring sale");
    assert_eq!(step["html"], "<p>Hello</p>");
    assert_eq!(step["text"], "Hello");
    assert_eq!(step["delay_minutes"], 5.0);
    assert_eq!(promoted["draft"]["campaign_id"], campaign["id"]);
    assert_eq!(promoted["draft"]["step_id"], step["id"]);
    // Once.
    let res = h
        .post_json(&t.write, &format!("{path}/promote"), &json!({}))
        .await;
    let err = expect_error(res, 409, "DRAFT_NOT_APPROVED").await;
    assert_eq!(err.details["status"], "promoted");

    // A second draft goes to the end of that campaign.
    let second = create(&h, &t.write, &site, "Reminder").await;
    let second_path = format!("/api/v1/drafts/{}", second["id"].as_str().unwrap());
    post(&h, &t.admin, &format!("{second_path}/approve"), json!({})).await;
    let (status, promoted) = post(
        &h,
        &t.write,
        &format!("{second_path}/promote"),
        json!({"campaign_id": campaign["id"]}),
    )
    .await;
    assert_eq!(status, 200, "{promoted}");
    let steps = promoted["campaign"]["steps"].as_array().unwrap();
    assert_eq!(
        field_of_each(&json!({"data": steps}), "subject"),
        ["Spring sale", "Reminder"]
    );
    assert_eq!(steps[1]["step_order"], 2);

    // A rejection says why, and a rejected draft is never promoted.
    let third = create(&h, &t.write, &site, "Too loud").await;
    let third_path = format!("/api/v1/drafts/{}", third["id"].as_str().unwrap());
    let (status, rejected) = post(
        &h,
        &t.write,
        &format!("{third_path}/reject"),
        json!({"reason": "  off-brand  "}),
    )
    .await;
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["reason"], "off-brand");
    let res = h
        .post_json(&t.write, &format!("{third_path}/promote"), &json!({}))
        .await;
    expect_error(res, 409, "DRAFT_NOT_APPROVED").await;
    let res = h
        .post_json(&t.write, &format!("{third_path}/approve"), &json!({}))
        .await;
    expect_error(res, 409, "INVALID_TRANSITION").await;

    // Listing, filtered by status.
    let page = json(h.get_with(&t.read, "/api/v1/drafts?status=rejected").await).await;
    assert_eq!(field_of_each(&page, "subject"), ["Too loud"]);
    let page = json(h.get_with(&t.read, "/api/v1/drafts?limit=2").await).await;
    assert_eq!(field_of_each(&page, "subject"), ["Spring sale", "Reminder"]);
    assert!(page["next_cursor"].is_string(), "{page}");

    // Invalid input is named; another project's ids are 404.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/drafts",
            &json!({"site_id": site, "subject": "x", "body_html": "<p>x</p>", "bodyhtml": 1}),
        )
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = h
        .post_json(
            &t.write,
            &format!("{path}/promote"),
            &json!({"campaign_id": campaign["id"], "name": "both"}),
        )
        .await;
    expect_invalid(res, "name").await;
    let other = h.tenant(Plan::Managed).await;
    let res = h.get_with(&other.read, &path).await;
    expect_error(res, 404, "DRAFT_NOT_FOUND").await;
    let res = h
        .post_json(
            &other.write,
            "/api/v1/drafts",
            &json!({"site_id": site, "subject": "x", "body_html": "<p>x</p>"}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
}

#[tokio::test]
async fn the_draft_tools_act_like_their_routes() {
    let (h, t) = Harness::with_tenant(Plan::Managed).await;
    let site = h.site(&t.admin, "drafttools").await;
    let draft = h
        .tool_ok(
            &t.write,
            "create_draft",
            json!({"site_id": site, "subject": "Hi", "body_html": "<p>Hi</p>"}),
        )
        .await;
    let id = draft["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/drafts/{id}");
    assert_eq!(json(h.get_with(&t.read, &path).await).await, draft);
    let got = h
        .tool_ok(&t.read, "get_draft", json!({"draft_id": id}))
        .await;
    assert_eq!(got, draft);
    let listed = h
        .tool_ok(&t.read, "list_drafts", json!({"status": "pending"}))
        .await;
    assert_eq!(field_of_each(&listed, "id"), std::slice::from_ref(&id));

    let res = h
        .tool(
            &t.write,
            "promote_draft_to_campaign",
            json!({"draft_id": id}),
        )
        .await;
    expect_error(res, 409, "DRAFT_NOT_APPROVED").await;
    let approved = h
        .tool_ok(&t.write, "approve_draft", json!({"draft_id": id}))
        .await;
    assert_eq!(approved["status"], "approved");
    let promoted = h
        .tool_ok(
            &t.write,
            "promote_draft_to_campaign",
            json!({"draft_id": id}),
        )
        .await;
    let campaign = promoted["campaign"]["id"].as_str().unwrap();
    let read = json(
        h.get_with(&t.read, &format!("/api/v1/campaigns/{campaign}"))
            .await,
    )
    .await;
    assert_eq!(read["name"], "Hi");
    assert_eq!(read["steps"][0]["subject"], "Hi");

    let other = h
        .tool_ok(
            &t.write,
            "create_draft",
            json!({"site_id": site, "subject": "No", "body_html": "<p>No</p>"}),
        )
        .await;
    let rejected = h
        .tool_ok(
            &t.write,
            "reject_draft",
            json!({"draft_id": other["id"], "reason": "no"}),
        )
        .await;
    assert_eq!(rejected["reason"], "no");
    let read = json(
        h.get_with(
            &t.read,
            &format!("/api/v1/drafts/{}", other["id"].as_str().unwrap()),
        )
        .await,
    )
    .await;
    assert_eq!(read["status"], "rejected");
}

/// An agent writes drafts through `/mcp` with its OAuth token, but cannot decide them.
#[tokio::test]
async fn an_oauth_client_writes_drafts_but_cannot_approve_them() {
    let (h, project) = setup().await;
    let (_, admin) = h.key(project, Scope::Admin).await;
    let site = h.site(&admin, "agentdrafts").await;
    let token = mcp_token(&h).await;
    let call = |name: &'static str, arguments: Value| {
        let (h, token) = (&h, &token);
        async move {
            let (status, _, body) = mcp_rpc(
                h,
                token,
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await;
            assert_eq!(status, 200, "{body}");
            body["result"].clone()
        }
    };
    let created = call(
        "create_draft",
        json!({"site_id": site, "subject": "From the agent", "body_html": "<p>x</p>"}),
    )
    .await;
    let draft = &created["structuredContent"];
    assert_eq!(draft["status"], "pending", "{created}");
    let id = draft["id"].as_str().unwrap().to_owned();
    for tool in ["approve_draft", "reject_draft"] {
        let refused = call(tool, json!({"draft_id": id})).await;
        assert_eq!(refused["isError"], true, "{refused}");
        assert_eq!(refused["structuredContent"]["status"], 403, "{refused}");
    }
    let read = json(h.get_with(&admin, &format!("/api/v1/drafts/{id}")).await).await;
    assert_eq!(read["status"], "pending");
    // The person approves it with their key.
    let res = h
        .post_json(&admin, &format!("/api/v1/drafts/{id}/approve"), &json!({}))
        .await;
    assert_eq!(res.status(), 200);
}
