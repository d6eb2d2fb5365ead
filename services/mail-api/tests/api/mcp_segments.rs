//! The segment tools through the REST mirror, each effect read back through a REST route.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

#[tokio::test]
async fn the_segment_tools_act_like_their_routes() {
    let h = Harness::new().await;
    let p = h.segment_project("tools").await;
    let (read, write) = (&p.tenant.read, &p.tenant.write);
    let vip = json!({"all": [{"field": "tag", "op": "eq", "value": "vip"}]});

    let created = h
        .tool_ok(
            write,
            "create_segment",
            json!({"name": "VIPs", "rules": vip}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/segments/{id}");
    assert_eq!(json(h.get_with(read, &path).await).await, created);
    let refused = h
        .tool(
            write,
            "create_segment",
            json!({"name": "bad", "rules": {"any": [{"field": "tag", "op": "lt", "value": "x"}]}}),
        )
        .await;
    let err = expect_error(refused, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "rules.any[0].op");

    let listed = h.tool_ok(read, "list_segments", json!({"limit": 10})).await;
    assert_eq!(field_of_each(&listed, "id"), std::slice::from_ref(&id));

    let preview = h
        .tool_ok(
            read,
            "preview_segment",
            json!({"segment_id": id, "sample_size": 1}),
        )
        .await;
    assert_eq!(preview["count"], 2);
    assert_eq!(preview["sample"][0]["email"], "ann@example.com");
    let unsaved = h
        .tool_ok(
            read,
            "preview_segment",
            json!({"rules": {"any": [{"field": "event", "op": "eq", "value": "signup"}]}}),
        )
        .await;
    assert_eq!(unsaved["count"], 2);

    let size = h
        .tool_ok(
            read,
            "estimate_segment_size",
            json!({"segment_id": id, "site_id": p.second_site}),
        )
        .await;
    assert_eq!(
        size,
        json!({"contacts": 2, "sendable": 0, "site_id": p.second_site})
    );

    let page = h
        .tool_ok(
            read,
            "list_subscribers_by_segment",
            json!({"segment_id": id, "limit": 1}),
        )
        .await;
    assert_eq!(field_of_each(&page, "email"), ["ann@example.com"]);
    let rest = h
        .tool_ok(
            read,
            "list_subscribers_by_segment",
            json!({"segment_id": id, "cursor": page["next_cursor"]}),
        )
        .await;
    assert_eq!(field_of_each(&rest, "email"), ["bob@example.com"]);

    let draft = h
        .tool_ok(read, "list_win_back_draft", json!({"siteId": p.first_site}))
        .await;
    let rest_draft = json(
        h.get_with(
            read,
            &format!("/api/v1/segments/win-back?site_id={}", p.first_site),
        )
        .await,
    )
    .await;
    assert_eq!(draft, rest_draft);
    assert_eq!(field_of_each(&draft, "email"), ["bob@example.com"]);

    let updated = h
        .tool_ok(
            write,
            "update_segment",
            json!({"segment_id": id, "name": "Renamed", "description": "d"}),
        )
        .await;
    assert_eq!(updated["name"], "Renamed");
    assert_eq!(updated["rules"], vip);
    assert_eq!(json(h.get_with(read, &path).await).await["name"], "Renamed");

    // Destructive: the first call only says what it would delete.
    let first = h
        .tool_ok(write, "delete_segment", json!({"segment_id": id}))
        .await;
    assert_eq!(first["confirmation_required"], true);
    assert_eq!(first["summary"]["segment"]["id"], id.as_str());
    assert_eq!(h.get_with(read, &path).await.status(), 200, "not yet");
    let token = first["confirmation_token"].as_str().unwrap();
    let second = h
        .tool_ok(
            write,
            "delete_segment",
            json!({"segment_id": id, "confirmation_token": token}),
        )
        .await;
    assert_eq!(second["deleted"], true);
    expect_error(h.get_with(read, &path).await, 404, "SEGMENT_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn the_segment_tools_answer_404_for_another_projects_ids() {
    let h = Harness::new().await;
    let mine = h.segment_project("toolmine").await;
    let theirs = h.segment_project("tooltheirs").await;
    let their_segment = h
        .tool_ok(
            &theirs.tenant.write,
            "create_segment",
            json!({"name": "theirs", "rules": {"all": [{"field": "tag", "op": "exists", "value": true}]}}),
        )
        .await["id"]
        .clone();
    let key = &mine.tenant.write;
    let cases: [(&str, Value, &str); 7] = [
        (
            "preview_segment",
            json!({"segment_id": their_segment}),
            "SEGMENT_NOT_FOUND",
        ),
        (
            "estimate_segment_size",
            json!({"segment_id": their_segment}),
            "SEGMENT_NOT_FOUND",
        ),
        (
            "list_subscribers_by_segment",
            json!({"segment_id": their_segment}),
            "SEGMENT_NOT_FOUND",
        ),
        (
            "update_segment",
            json!({"segment_id": their_segment, "name": "x"}),
            "SEGMENT_NOT_FOUND",
        ),
        (
            "delete_segment",
            json!({"segment_id": their_segment}),
            "SEGMENT_NOT_FOUND",
        ),
        (
            "list_win_back_draft",
            json!({"siteId": theirs.first_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "estimate_segment_size",
            json!({"segment_id": Uuid::now_v7(), "site_id": theirs.first_site}),
            "SITE_NOT_FOUND",
        ),
    ];
    for (tool, arguments, code) in cases {
        let res = h.tool(key, tool, arguments.clone()).await;
        expect_error(res, 404, code).await;
    }
    let intact = h
        .tool_ok(&theirs.tenant.read, "list_segments", json!({}))
        .await;
    assert_eq!(intact["data"][0]["name"], "theirs");
    h.stop().await;
}
