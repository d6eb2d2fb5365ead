//! Another project's ids are 404 through the account tools.

use super::*;

#[tokio::test]
async fn another_projects_ids_are_404_through_the_account_tools() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let their_site = h.site(&theirs.write, "their-acct").await;
    let res = h
        .post_json(
            &theirs.write,
            "/api/v1/templates",
            &json!({"name": "Theirs", "brief": "b"}),
        )
        .await;
    let their_template = json(res).await["id"].as_str().unwrap().to_owned();
    let res = h
        .post_json(
            &theirs.write,
            "/api/v1/identify",
            &json!({"email": "their@example.com", "site_id": their_site}),
        )
        .await;
    let their_contact = json(res).await["contact_id"].as_str().unwrap().to_owned();
    h.post_json(
        &theirs.admin,
        "/api/v1/api-keys",
        &json!({"name": "theirs"}),
    )
    .await;
    let their_notes = get_ok(&h, &theirs.read, "/api/v1/notifications").await;
    let their_note = their_notes["data"][0]["id"].clone();

    let calls = [
        (
            "update_site",
            json!({"site_id": their_site, "name": "mine now"}),
            "SITE_NOT_FOUND",
        ),
        (
            "get_brand_voice",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "update_brand_voice",
            json!({"site_id": their_site, "brand_voice": {"tone": "x"}}),
            "SITE_NOT_FOUND",
        ),
        (
            "get_template",
            json!({"id": their_template}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "update_template",
            json!({"id": their_template, "name": "mine"}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "delete_template",
            json!({"id": their_template}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "delete_subscriber_data",
            json!({"contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "tenant_export_full",
            json!({"siteId": their_site}),
            "SITE_NOT_FOUND",
        ),
    ];
    for (name, arguments, code) in calls {
        let res = h.tool(&mine.admin, name, arguments).await;
        expect_error(res, 404, code).await;
    }
    let marked = h
        .tool_ok(
            &mine.write,
            "mark_notifications_read",
            json!({"ids": [their_note]}),
        )
        .await;
    assert_eq!(marked["marked"], 0);
    let their_unread = get_ok(&h, &theirs.read, "/api/v1/notifications?unread=true").await;
    assert_eq!(their_unread["data"][0]["id"], their_note);
    for name in [
        "list_notifications",
        "list_team_members",
        "list_deletion_log",
    ] {
        let mine_listed = h.tool_ok(&mine.admin, name, json!({})).await;
        assert_eq!(mine_listed["data"], json!([]), "{name}");
    }
    let export = h
        .tool_ok(&mine.admin, "tenant_export_full", json!({}))
        .await;
    assert!(!export.to_string().contains(&their_site));

    // Theirs are intact.
    let got = get_ok(&h, &theirs.read, &format!("/api/v1/sites/{their_site}")).await;
    assert_eq!(got["name"], "Site their-acct");
    get_ok(
        &h,
        &theirs.read,
        &format!("/api/v1/templates/{their_template}"),
    )
    .await;
    let found = get_ok(&h, &theirs.read, "/api/v1/contacts?search=their").await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1);
    h.stop().await;
}
