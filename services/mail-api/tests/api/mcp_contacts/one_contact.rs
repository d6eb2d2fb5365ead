//! One contact through the subscriber tools (get, update, tags, unsubscribe), each effect checked
//! through its REST route.

use super::*;

#[tokio::test]
async fn subscriber_tools_read_and_change_one_contact_as_its_routes_do() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "people").await;
    let other = h.site(&t.write, "others").await;
    let ada = subscriber(
        &h,
        &t.write,
        json!({"email": "ada@example.com", "site_id": site, "tags": ["vip"],
               "properties": {"plan": {"tier": "pro", "seats": 3}}}),
    )
    .await;
    let joined = json!({"email": "ada@example.com", "site_id": other});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/identify", &joined)
            .await
            .status(),
        200
    );

    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert_eq!(rest["email"], "ada@example.com");
    assert_eq!(
        statuses(&rest),
        [
            (site.clone(), "subscribed".to_owned()),
            (other.clone(), "subscribed".to_owned())
        ]
    );
    assert_eq!(rest["site_ids"], json!([site, other]));
    let by_email = get_ok(&h, &t.read, "/api/v1/contacts/ADA%40example.com").await;
    assert_eq!(by_email, rest);
    let tool_by_id = h
        .tool_ok(&t.read, "get_subscriber", json!({"contact_id": ada}))
        .await;
    assert_eq!(tool_by_id, rest);
    let tool_by_email = h
        .tool_ok(
            &t.read,
            "get_subscriber",
            json!({"email": " Ada@Example.com "}),
        )
        .await;
    assert_eq!(tool_by_email, rest);
    for neither_or_both in [
        json!({}),
        json!({"contact_id": ada, "email": "ada@example.com"}),
    ] {
        let res = h.tool(&t.read, "get_subscriber", neither_or_both).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let unknown = h
        .tool(
            &t.read,
            "get_subscriber",
            json!({"email": "nobody@example.com"}),
        )
        .await;
    expect_error(unknown, 404, "CONTACT_NOT_FOUND").await;

    let updated = h
        .tool_ok(
            &t.write,
            "update_subscriber",
            json!({"contact_id": ada, "first_name": " Ada ", "tags": ["vip", "beta"],
                   "properties": {"plan": {"seats": 5}, "city": "London"}}),
        )
        .await;
    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert_eq!(updated, rest);
    assert_eq!(rest["first_name"], "Ada");
    assert_eq!(rest["tags"], json!(["vip", "beta"]));
    assert_eq!(
        rest["properties"],
        json!({"plan": {"tier": "pro", "seats": 5}, "city": "London"})
    );
    let read_only = h
        .tool(
            &t.read,
            "update_subscriber",
            json!({"contact_id": ada, "first_name": "X"}),
        )
        .await;
    expect_error(read_only, 403, "FORBIDDEN").await;

    let bob = subscriber(
        &h,
        &t.write,
        json!({"email": "bob@example.com", "tags": ["beta"]}),
    )
    .await;
    let tagged = h
        .tool_ok(
            &t.write,
            "set_subscriber_tags",
            json!({"contact_ids": [bob, ada, bob], "add": ["news"], "remove": ["beta"]}),
        )
        .await;
    assert_eq!(
        tagged,
        json!({"contacts": [
            {"contact_id": bob, "tags": ["news"]},
            {"contact_id": ada, "tags": ["vip", "news"]},
        ]})
    );
    let news = get_ok(&h, &t.read, "/api/v1/contacts?tag=news").await;
    assert_eq!(ids_of(&news), [ada.clone(), bob.clone()]);
    let beta = get_ok(&h, &t.read, "/api/v1/contacts?tag=beta").await;
    assert_eq!(beta["data"], json!([]));
    h.tool_ok(
        &t.write,
        "set_subscriber_tags",
        json!({"contact_ids": [bob], "set": []}),
    )
    .await;
    let bob_now = get_ok(&h, &t.read, &format!("/api/v1/contacts/{bob}")).await;
    assert_eq!(bob_now["tags"], json!([]));
    let stranger = Uuid::now_v7().to_string();
    let partly_unknown = h
        .tool(
            &t.write,
            "set_subscriber_tags",
            json!({"contact_ids": [ada, stranger], "add": ["never"]}),
        )
        .await;
    let err = expect_error(partly_unknown, 404, "CONTACT_NOT_FOUND").await;
    assert_eq!(err.details["missing"], json!([stranger]));
    let never = get_ok(&h, &t.read, "/api/v1/contacts?tag=never").await;
    assert_eq!(never["data"], json!([]), "all or none");
    let unchanged = h
        .tool_ok(
            &t.write,
            "set_subscriber_tags",
            json!({"contact_ids": [ada]}),
        )
        .await;
    assert_eq!(
        unchanged,
        json!({"contacts": [{"contact_id": ada, "tags": ["vip", "news"]}]})
    );

    let from_one = h
        .tool_ok(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(
        from_one,
        json!({"email": "ada@example.com", "contact_id": ada,
               "unsubscribed_site_ids": [site], "suppressed": false})
    );
    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert_eq!(
        statuses(&rest),
        [
            (site.clone(), "unsubscribed".to_owned()),
            (other.clone(), "subscribed".to_owned())
        ]
    );
    let suppressions = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressions["data"], json!([]));

    let from_all = h
        .tool_ok(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "ada@example.com"}),
        )
        .await;
    assert_eq!(from_all["unsubscribed_site_ids"], json!([other]));
    assert_eq!(from_all["suppressed"], true);
    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert!(
        statuses(&rest).iter().all(|(_, s)| s == "unsubscribed"),
        "{rest}"
    );
    let suppressions = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressions["data"][0]["email"], "ada@example.com");
    assert_eq!(suppressions["data"][0]["reason"], "unsubscribed");
    let no_contact = h
        .tool(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "nobody@example.com", "site_id": site}),
        )
        .await;
    expect_error(no_contact, 404, "CONTACT_NOT_FOUND").await;
    h.stop().await;
}
