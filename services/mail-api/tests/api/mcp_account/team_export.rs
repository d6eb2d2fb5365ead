//! The team tools, and the full export tool answering the routes' document.

use super::*;

#[tokio::test]
async fn team_tools_invite_with_a_hashed_token_and_list() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let invited = h
        .tool_ok(
            &t.admin,
            "invite_team_member",
            json!({"email": " Grace@Example.com ", "role": "viewer"}),
        )
        .await;
    assert_eq!(invited["email"], "grace@example.com");
    assert_eq!(invited["role"], "viewer");
    assert_eq!(invited["status"], "invited");
    let token = invited["invitation_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("inv_") && token.len() == 68, "{token}");
    let team = get_ok(&h, &t.read, "/api/v1/team").await;
    assert_eq!(team["data"].as_array().unwrap().len(), 1);
    let member = &team["data"][0];
    assert_eq!(member["id"], invited["id"]);
    assert!(member["expires_at"].is_string());
    assert!(!team.to_string().contains(&token));
    assert_eq!(
        h.query(&format!(
            "SELECT encode(invitation_hash, 'hex') FROM team_members WHERE id = '{}'",
            invited["id"].as_str().unwrap()
        ))
        .await,
        [hex(&store::sha256(token.as_bytes()))],
        "only the token's hash is stored"
    );
    let listed = h.tool_ok(&t.read, "list_team_members", json!({})).await;
    assert_eq!(listed, team);

    let again = h
        .tool(
            &t.admin,
            "invite_team_member",
            json!({"email": "grace@example.com"}),
        )
        .await;
    expect_error(again, 409, "TEAM_MEMBER_EXISTS").await;
    let write = h
        .tool(
            &t.write,
            "invite_team_member",
            json!({"email": "eve@example.com", "role": "admin"}),
        )
        .await;
    expect_error(write, 403, "FORBIDDEN").await;
    let bad = h
        .tool(
            &t.admin,
            "invite_team_member",
            json!({"email": "x@example.com", "role": "owner"}),
        )
        .await;
    let err = expect_error(bad, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "role");
    // The REST route; the default role is editor.
    let res = h
        .post_json(
            &t.admin,
            "/api/v1/team",
            &json!({"email": "linus@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    assert_eq!(json(res).await["role"], "editor");
    let res = h
        .post_json(
            &t.write,
            "/api/v1/team",
            &json!({"email": "eve@example.com"}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let team = get_ok(&h, &t.read, "/api/v1/team?limit=1").await;
    assert_eq!(team["data"][0]["email"], "grace@example.com");
    assert!(team["next_cursor"].is_string());
    let notifications = get_ok(&h, &t.read, "/api/v1/notifications").await;
    assert_eq!(
        kinds(&notifications),
        ["team_member.invited", "team_member.invited"]
    );
    h.stop().await;
}

/// The export's document without its time.
fn untimed(mut doc: Value) -> Value {
    doc.as_object_mut().unwrap().remove("exported_at");
    doc
}

#[tokio::test]
async fn the_full_export_tool_answers_the_routes_document() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "full").await;
    let other = h.site(&t.write, "full-other").await;
    call(
        &h,
        &t.write,
        Method::PUT,
        &format!("/api/v1/sites/{site}/brand-voice"),
        Some(json!({"tone": "dry"})),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/identify",
        &json!({"email": "ada@example.com", "site_id": site}),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/identify",
        &json!({"email": "bob@example.com", "site_id": other}),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/templates",
        &json!({"name": "T", "brief": "b"}),
    )
    .await;
    h.post_json(
        &t.admin,
        "/api/v1/team",
        &json!({"email": "grace@example.com"}),
    )
    .await;

    let tool = h.tool_ok(&t.admin, "tenant_export_full", json!({})).await;
    let res = h.get_with(&t.admin, "/api/v1/export/full").await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("mail-export-full-")
    );
    let route: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert_eq!(untimed(tool.clone()), untimed(route));
    let keys: Vec<&str> = tool
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys[..EXPORT_MEMBERS.len()], EXPORT_MEMBERS);
    assert_eq!(
        keys[EXPORT_MEMBERS.len()..],
        [
            "sites",
            "campaigns",
            "templates",
            "suppressions",
            "team_members",
            "api_keys",
            "notifications",
            "deletion_log"
        ]
    );
    assert_eq!(tool["contacts"].as_array().unwrap().len(), 2);
    assert_eq!(tool["sites"][0]["brand_voice"]["tone"], "dry");
    assert_eq!(tool["sites"][1]["brand_voice"], Value::Null);
    assert_eq!(tool["templates"][0]["name"], "T");
    assert_eq!(tool["team_members"][0]["email"], "grace@example.com");
    assert_eq!(tool["api_keys"].as_array().unwrap().len(), 3);
    let text = tool.to_string();
    for secret in [
        t.read.as_str(),
        t.write.as_str(),
        t.admin.as_str(),
        "key_hash",
        "invitation",
        "inv_",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }

    let one = h
        .tool_ok(&t.admin, "tenant_export_full", json!({"siteId": site}))
        .await;
    assert_eq!(one["site_id"], site.as_str());
    assert_eq!(one["contacts"].as_array().unwrap().len(), 1);
    assert_eq!(one["contacts"][0]["email"], "ada@example.com");
    assert_eq!(one["sites"].as_array().unwrap().len(), 1);
    assert_eq!(one["templates"], json!([]));
    let route: Value = serde_json::from_str(
        &h.get_with(&t.admin, &format!("/api/v1/export/full?site_id={site}"))
            .await
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(untimed(one), untimed(route));

    expect_error(
        h.tool(&t.write, "tenant_export_full", json!({})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(
        h.get_with(&t.write, "/api/v1/export/full").await,
        403,
        "FORBIDDEN",
    )
    .await;
    let unknown = h
        .tool(
            &t.admin,
            "tenant_export_full",
            json!({"siteId": uuid::Uuid::now_v7()}),
        )
        .await;
    expect_error(unknown, 404, "SITE_NOT_FOUND").await;
    h.stop().await;
}
