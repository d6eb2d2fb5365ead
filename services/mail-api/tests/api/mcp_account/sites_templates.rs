//! The site and template tools: the site and its brand voice, and templates read, updated and
//! deleted once confirmed.

use super::*;

#[tokio::test]
async fn site_tools_update_the_site_and_its_brand_voice() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "acct-site").await;
    h.site(&t.write, "acct-taken").await;

    let updated = h
        .tool_ok(
            &t.write,
            "update_site",
            json!({"site_id": site, "name": "  Renamed  ", "from_name": "The Shop"}),
        )
        .await;
    let got = get_ok(&h, &t.read, &format!("/api/v1/sites/{site}")).await;
    assert_eq!(got, updated);
    assert_eq!(got["name"], "Renamed");
    assert_eq!(got["from_name"], "The Shop");
    assert_eq!(got["slug"], "acct-site");
    let moved = h
        .tool_ok(
            &t.write,
            "update_site",
            json!({"site_id": site, "slug": "acct-moved"}),
        )
        .await;
    assert_eq!(moved["from_email"], format!("acct-moved@{SHARED_DOMAIN}"));
    assert_eq!(moved["name"], "Renamed", "absent fields are unchanged");
    let listed = json(h.list_sites(&t.read, "").await).await;
    assert_eq!(listed["data"][0]["slug"], "acct-moved");
    let taken = h
        .tool(
            &t.write,
            "update_site",
            json!({"site_id": site, "slug": "acct-taken"}),
        )
        .await;
    expect_error(taken, 409, "SLUG_TAKEN").await;
    let reserved = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"slug": "postmaster"})),
    )
    .await;
    let err = expect_error(reserved, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "slug");
    let blank = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"name": "   "})),
    )
    .await;
    expect_error(blank, 400, "VALIDATION_ERROR").await;
    let read_only = call(
        &h,
        &t.read,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"name": "x"})),
    )
    .await;
    expect_error(read_only, 403, "FORBIDDEN").await;
    let rest = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"from_name": "REST"})),
    )
    .await;
    assert_eq!(rest.status(), 200);
    assert_eq!(json(rest).await["from_name"], "REST");

    let voice_path = format!("/api/v1/sites/{site}/brand-voice");
    let empty = h
        .tool_ok(&t.read, "get_brand_voice", json!({"site_id": site}))
        .await;
    assert_eq!(empty, get_ok(&h, &t.read, &voice_path).await);
    assert_eq!(empty["updated_at"], Value::Null);
    assert_eq!(empty["words_to_avoid"], json!([]));
    let voice = json!({"tone": " warm, plain ", "audience": "gardeners",
        "guidelines": "Short sentences.", "words_to_avoid": ["cheap", " cheap ", "synergy"]});
    let stored = h
        .tool_ok(
            &t.write,
            "update_brand_voice",
            json!({"site_id": site, "brand_voice": voice}),
        )
        .await;
    let got = get_ok(&h, &t.read, &voice_path).await;
    assert_eq!(got, stored);
    assert_eq!(got["tone"], "warm, plain");
    assert_eq!(got["words_to_avoid"], json!(["cheap", "synergy"]));
    assert!(got["updated_at"].is_string());
    assert_eq!(
        h.tool_ok(&t.read, "get_brand_voice", json!({"site_id": site}))
            .await,
        got
    );
    // PUT replaces the whole voice.
    let res = call(
        &h,
        &t.write,
        Method::PUT,
        &voice_path,
        Some(json!({"tone": "brisk"})),
    )
    .await;
    assert_eq!(res.status(), 200);
    let got = get_ok(&h, &t.read, &voice_path).await;
    assert_eq!(got["tone"], "brisk");
    assert_eq!(got["audience"], Value::Null);
    assert_eq!(got["words_to_avoid"], json!([]));
    let long = h
        .tool(
            &t.write,
            "update_brand_voice",
            json!({"site_id": site, "brand_voice": {"tone": "x".repeat(201)}}),
        )
        .await;
    let err = expect_error(long, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "brand_voice.tone", "{}", err.message);
    let too_many: Vec<String> = (0..201).map(|i| format!("w{i}")).collect();
    let res = call(
        &h,
        &t.write,
        Method::PUT,
        &voice_path,
        Some(json!({"words_to_avoid": too_many})),
    )
    .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(get_ok(&h, &t.read, &voice_path).await["tone"], "brisk");
    h.stop().await;
}

#[tokio::test]
async fn template_tools_get_update_and_delete_once_confirmed() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Welcome", "brief": "Say hello", "subject_hint": "Hi",
                "tags": ["a"], "html": "<p>hi</p>"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/templates/{id}");

    let got = h.tool_ok(&t.read, "get_template", json!({"id": id})).await;
    assert_eq!(got, get_ok(&h, &t.read, &path).await);
    assert_eq!(got["name"], "Welcome");

    let updated = h
        .tool_ok(
            &t.write,
            "update_template",
            json!({"id": id, "name": " Welcome back ", "subject_hint": "", "category": "",
                "tags": ["b", "b", "c"]}),
        )
        .await;
    let got = get_ok(&h, &t.read, &path).await;
    assert_eq!(got, updated);
    assert_eq!(got["name"], "Welcome back");
    assert_eq!(got["subject_hint"], Value::Null, "blank clears");
    assert_eq!(got["category"], "general");
    assert_eq!(got["tags"], json!(["b", "c"]));
    assert_eq!(got["html"], "<p>hi</p>", "absent is unchanged");
    assert_eq!(got["brief"], "Say hello");
    let res = call(
        &h,
        &t.write,
        Method::PATCH,
        &path,
        Some(json!({"html": "<p>new</p>", "brief": "Greet"})),
    )
    .await;
    assert_eq!(res.status(), 200);
    let got = get_ok(&h, &t.read, &path).await;
    assert_eq!(got["html"], "<p>new</p>");
    assert_eq!(got["brief"], "Greet");
    let bad = h
        .tool(&t.write, "update_template", json!({"id": id, "brief": ""}))
        .await;
    expect_error(bad, 400, "VALIDATION_ERROR").await;

    let (first, second) = {
        let first = h
            .tool_ok(&t.write, "delete_template", json!({"id": id}))
            .await;
        assert_eq!(first["confirmation_required"], true);
        assert_eq!(first["summary"]["template"]["id"], id.as_str());
        assert_eq!(h.get_with(&t.read, &path).await.status(), 200, "not yet");
        let token = first["confirmation_token"].as_str().unwrap().to_owned();
        let second = h
            .tool_ok(
                &t.write,
                "delete_template",
                json!({"id": id, "confirmation_token": token}),
            )
            .await;
        (first, second)
    };
    assert_eq!(second["deleted"], true, "{first}");
    assert_eq!(second["template"]["id"], id.as_str());
    expect_error(h.get_with(&t.read, &path).await, 404, "TEMPLATE_NOT_FOUND").await;
    let again = h.tool(&t.write, "delete_template", json!({"id": id})).await;
    expect_error(again, 404, "TEMPLATE_NOT_FOUND").await;

    // The REST route: 204, then 404.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Other", "brief": "b"}),
        )
        .await;
    let other = json(res).await["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/templates/{other}");
    let res = call(&h, &t.read, Method::DELETE, &path, None).await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = call(&h, &t.write, Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    let res = call(&h, &t.write, Method::DELETE, &path, None).await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/templates").await["data"],
        json!([])
    );
    h.stop().await;
}
