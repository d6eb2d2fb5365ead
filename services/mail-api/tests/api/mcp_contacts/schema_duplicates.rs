//! A site's contact schema, and duplicates found and merged once confirmed.

use super::*;

#[tokio::test]
async fn get_contact_schema_counts_the_property_names_and_types_of_a_sites_contacts() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "schema").await;
    let elsewhere = h.site(&t.write, "elsewhere").await;
    for (email, site, properties) in [
        ("a@example.com", &site, json!({"plan": "pro", "seats": 3})),
        (
            "b@example.com",
            &site,
            json!({"plan": "free", "seats": "many", "vip": true}),
        ),
        ("c@example.com", &elsewhere, json!({"secret": 1})),
    ] {
        subscriber(
            &h,
            &t.write,
            json!({"email": email, "site_id": site, "properties": properties}),
        )
        .await;
    }
    let schema = h
        .tool_ok(&t.read, "get_contact_schema", json!({"site_id": site}))
        .await;
    assert_eq!(
        schema,
        get_ok(
            &h,
            &t.read,
            &format!("/api/v1/contacts/schema?site_id={site}")
        )
        .await
    );
    assert_eq!(schema["contacts"], 2);
    assert_eq!(
        schema["properties"],
        json!([
            {"name": "plan", "count": 2, "types": [{"type": "string", "count": 2}]},
            {"name": "seats", "count": 2,
             "types": [{"type": "number", "count": 1}, {"type": "string", "count": 1}]},
            {"name": "vip", "count": 1, "types": [{"type": "boolean", "count": 1}]},
        ])
    );
    assert_eq!(schema["truncated"], false);
    let fields = field_of_each(&json!({"data": schema["fields"]}), "name");
    assert!(fields.contains(&"email".to_owned()) && fields.contains(&"tags".to_owned()));
    let missing = h.tool(&t.read, "get_contact_schema", json!({})).await;
    expect_error(missing, 400, "VALIDATION_ERROR").await;
    h.stop().await;
}

#[tokio::test]
async fn find_duplicates_groups_one_persons_addresses_and_merge_subscribers_joins_them_once_confirmed()
 {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let (site, second) = (
        h.site(&t.write, "first").await,
        h.site(&t.write, "second").await,
    );
    let target = subscriber(
        &h,
        &t.write,
        json!({"email": "ada.lovelace@gmail.com", "site_id": site, "tags": ["a"],
               "properties": {"x": 1, "keep": "target"}}),
    )
    .await;
    let source = subscriber(
        &h,
        &t.write,
        json!({"email": "adalovelace+news@gmail.com", "site_id": second, "tags": ["b", "a"],
               "first_name": "Ada", "properties": {"x": 2, "y": 3}}),
    )
    .await;
    let other_source = subscriber(
        &h,
        &t.write,
        json!({"email": "ada.lovelace@googlemail.com"}),
    )
    .await;
    let bob = subscriber(&h, &t.write, json!({"email": "bob@example.com"})).await;
    let bob_tagged = subscriber(&h, &t.write, json!({"email": "bob+x@example.com"})).await;
    subscriber(&h, &t.write, json!({"email": "b.ob@example.com"})).await;
    let event = json!({"email": "adalovelace+news@gmail.com", "event": "signup"});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/events", &event)
            .await
            .status(),
        200
    );
    let conversion = json!({"email": "ada.lovelace@googlemail.com", "revenue": 5});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/conversion", &conversion)
            .await
            .status(),
        200
    );

    let groups = h.tool_ok(&t.read, "find_duplicates", json!({})).await;
    assert_eq!(
        groups,
        get_ok(&h, &t.read, "/api/v1/contacts/duplicates").await
    );
    let found: Vec<(Value, Vec<String>)> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["identity"].clone(),
                ids_of(&json!({"data": g["contacts"]})),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                json!("adalovelace@gmail.com"),
                vec![target.clone(), source.clone(), other_source.clone()]
            ),
            (
                json!("bob@example.com"),
                vec![bob.clone(), bob_tagged.clone()]
            ),
        ]
    );
    assert_eq!(groups["groups"][0]["suggested_target_id"], target.as_str());
    let in_site = h
        .tool_ok(&t.read, "find_duplicates", json!({"site_id": site}))
        .await;
    assert_eq!(in_site["groups"], json!([]));

    let arguments = json!({"target_id": target, "source_ids": [source, other_source]});
    let first = h
        .tool_ok(&t.write, "merge_subscribers", arguments.clone())
        .await;
    assert_eq!(first["confirmation_required"], true, "{first}");
    let preview = &first["summary"]["merge"];
    assert_eq!(preview["target"]["contact_id"], target.as_str());
    assert_eq!(preview["moves"]["events"], 1);
    assert_eq!(preview["moves"]["conversions"], 1);
    let token = first["confirmation_token"].as_str().unwrap().to_owned();
    get_ok(&h, &t.read, &format!("/api/v1/contacts/{source}")).await;
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/plan").await["contacts"]["used"],
        6,
        "nothing merged yet"
    );

    let mut confirmed = arguments.clone();
    confirmed["confirmation_token"] = json!(token);
    let merged = h
        .tool_ok(&t.write, "merge_subscribers", confirmed.clone())
        .await;
    assert_eq!(merged["merged_ids"], json!([source, other_source]));
    assert_eq!(merged["moved"]["events"], 1);
    assert_eq!(merged["moved"]["subscriptions"], 1);
    for gone in [&source, &other_source] {
        let res = h
            .get_with(&t.read, &format!("/api/v1/contacts/{gone}"))
            .await;
        expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    }
    let now = get_ok(&h, &t.read, &format!("/api/v1/contacts/{target}")).await;
    assert_eq!(merged["contact"], now);
    assert_eq!(now["email"], "ada.lovelace@gmail.com");
    assert_eq!(now["first_name"], "Ada");
    assert_eq!(now["tags"], json!(["a", "b"]));
    assert_eq!(now["properties"], json!({"x": 1, "y": 3, "keep": "target"}));
    assert_eq!(now["site_ids"], json!([site, second]));
    let timeline = get_ok(&h, &t.read, &format!("/api/v1/contacts/{target}/timeline")).await;
    let kinds: Vec<&str> = timeline["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["conversion", "event"]);
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/plan").await["contacts"]["used"],
        4
    );
    let again = h.tool(&t.write, "merge_subscribers", confirmed).await;
    expect_error(again, 400, "INVALID_CONFIRMATION_TOKEN").await;
    let groups = get_ok(&h, &t.read, "/api/v1/contacts/duplicates").await;
    assert_eq!(groups["groups"].as_array().unwrap().len(), 1);
    assert_eq!(groups["groups"][0]["identity"], "bob@example.com");

    let unknown = json!({"target_id": bob, "source_ids": [Uuid::now_v7()]});
    let res = h.tool(&t.write, "merge_subscribers", unknown).await;
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    // The target among the sources is ignored: a contact is not merged into itself.
    let itself = json!({"target_id": bob, "source_ids": [bob_tagged, bob]});
    let preview = h.tool_ok(&t.write, "merge_subscribers", itself).await;
    let sources = &preview["summary"]["merge"]["sources"];
    assert_eq!(ids_of(&json!({"data": sources})), [bob_tagged.as_str()]);
    h.stop().await;
}
