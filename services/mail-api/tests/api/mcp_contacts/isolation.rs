//! Another project's contacts and sites are 404 through the contact tools.

use super::*;

#[tokio::test]
async fn another_projects_contacts_and_sites_are_404_through_the_contact_tools() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let my_site = h.site(&mine.write, "mine").await;
    let their_site = h.site(&theirs.write, "theirs").await;
    let my_contact = subscriber(
        &h,
        &mine.write,
        json!({"email": "me@example.com", "site_id": my_site}),
    )
    .await;
    let their_contact = subscriber(
        &h,
        &theirs.write,
        json!({"email": "them@example.com", "site_id": their_site, "tags": ["theirs"],
               "properties": {"secret": "theirs"}}),
    )
    .await;
    let cases = [
        (
            "get_subscriber",
            json!({"contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "get_subscriber",
            json!({"email": "them@example.com"}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "update_subscriber",
            json!({"contact_id": their_contact, "first_name": "Mine"}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "set_subscriber_tags",
            json!({"contact_ids": [their_contact], "set": []}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "unsubscribe_subscriber",
            json!({"email": "them@example.com", "site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "import_subscribers",
            json!({"site_id": their_site, "contacts": [{"email": "x@example.com"}]}),
            "SITE_NOT_FOUND",
        ),
        (
            "subscriber_export",
            json!({"contactId": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "get_subscriber_timeline",
            json!({"subscriber_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "get_contact_schema",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "find_duplicates",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "merge_subscribers",
            json!({"target_id": my_contact, "source_ids": [their_contact]}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "merge_subscribers",
            json!({"target_id": their_contact, "source_ids": [my_contact]}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "identify_inactive",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "run_list_hygiene",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "list_hygiene_audit",
            json!({"siteId": their_site}),
            "SITE_NOT_FOUND",
        ),
    ];
    for (tool, arguments, code) in cases {
        let res = h.tool(&mine.admin, tool, arguments.clone()).await;
        let err = expect_error(res, 404, code).await;
        assert!(
            !err.details.to_string().contains("theirs"),
            "{tool} {arguments}: {err:?}"
        );
    }
    // An address both projects could hold: only the caller's own list changes.
    let own = h
        .tool_ok(
            &mine.write,
            "unsubscribe_subscriber",
            json!({"email": "them@example.com"}),
        )
        .await;
    assert_eq!(own["contact_id"], Value::Null);
    let theirs_now = get_ok(
        &h,
        &theirs.read,
        &format!("/api/v1/contacts/{their_contact}"),
    )
    .await;
    assert_eq!(theirs_now["subscriptions"][0]["status"], "subscribed");
    assert_eq!(theirs_now["tags"], json!(["theirs"]));
    assert_eq!(theirs_now["first_name"], Value::Null);
    let their_suppressions = get_ok(&h, &theirs.read, "/api/v1/suppressions").await;
    assert_eq!(their_suppressions["data"], json!([]));
    h.tool_ok(
        &mine.write,
        "update_hygiene_config",
        json!({"suppress_role_addresses": true}),
    )
    .await;
    let their_config = get_ok(&h, &theirs.read, "/api/v1/hygiene/config").await;
    assert_eq!(their_config["suppress_role_addresses"], false);
    let duplicates = h.tool_ok(&mine.read, "find_duplicates", json!({})).await;
    assert!(!duplicates.to_string().contains(&their_contact));
    h.stop().await;
}
