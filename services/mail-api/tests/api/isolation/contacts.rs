//! The contact routes that take another project's ids in their body, which the walk does not
//! reach (it calls POST only with an id in the path).

use rate_limit::policy::Plan;

use super::*;

/// The contact routes that name another project's ids in their body (the walk calls POST only
/// on a path id): each answers 404, and nothing of the other project changes, also when
/// a call names an address both projects could hold.
#[tokio::test]
async fn contact_writes_naming_another_projects_ids_answer_404_and_change_nothing() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Managed).await, h.tenant(Plan::Managed).await);
    let my_site = h.site(&mine.admin, "minebulk").await;
    let their_site = h.site(&theirs.admin, "theirsbulk").await;
    let mut ids = Vec::new();
    for (key, email, site) in [
        (&mine.admin, "mine@example.com", &my_site),
        (&theirs.admin, "shared@example.com", &their_site),
        (&theirs.admin, "info@example.com", &their_site),
    ] {
        let body = json!({"email": email, "site_id": site, "tags": ["kept"],
                          "properties": {"note": "kept"}});
        let (status, answer) = send(&h, key, Method::POST, "/api/v1/contacts", Some(body)).await;
        assert_eq!(status, 201, "{answer}");
        ids.push(id_of(&answer, "contact_id"));
    }
    let (my_contact, their_contact) = (&ids[0], &ids[1]);
    let snapshot = async || -> Vec<Value> {
        let mut state = Vec::new();
        for path in [
            "/api/v1/contacts?limit=100".to_owned(),
            "/api/v1/suppressions".to_owned(),
            "/api/v1/hygiene/config".to_owned(),
            format!("/api/v1/hygiene/audit?site_id={their_site}"),
            format!("/api/v1/contacts/{their_contact}"),
        ] {
            let (status, body) = send(&h, &theirs.admin, Method::GET, &path, None).await;
            assert_eq!(status, 200, "{path}: {body}");
            state.push(body);
        }
        state
    };
    let before = snapshot().await;
    let refused = [
        (
            "/api/v1/contacts/tags",
            json!({"contact_ids": [their_contact], "set": []}),
        ),
        (
            "/api/v1/contacts/tags",
            json!({"contact_ids": [my_contact, their_contact], "add": ["x"]}),
        ),
        (
            "/api/v1/contacts/merge",
            json!({"target_id": my_contact, "source_ids": [their_contact]}),
        ),
        (
            "/api/v1/contacts/merge",
            json!({"target_id": their_contact, "source_ids": [my_contact]}),
        ),
        (
            "/api/v1/contacts/import",
            json!({"site_id": their_site, "contacts": [{"email": "shared@example.com"}]}),
        ),
        (
            "/api/v1/contacts/unsubscribe",
            json!({"email": "shared@example.com", "site_id": their_site}),
        ),
        ("/api/v1/hygiene/run", json!({"site_id": their_site})),
    ];
    for (path, body) in refused {
        let (status, answer) = send(&h, &mine.admin, Method::POST, path, Some(body.clone())).await;
        assert_eq!(status, 404, "{path} {body}: {answer}");
        assert!(
            answer["code"].as_str().unwrap().ends_with("NOT_FOUND"),
            "{answer}"
        );
    }
    // Names both projects could hold act on the caller's project only.
    let own = [
        (
            "/api/v1/contacts/unsubscribe",
            json!({"email": "shared@example.com"}),
        ),
        (
            "/api/v1/contacts/unsubscribe",
            json!({"email": "info@example.com"}),
        ),
        ("/api/v1/hygiene/run", json!({})),
    ];
    let (status, _) = send(
        &h,
        &mine.admin,
        Method::PUT,
        "/api/v1/hygiene/config",
        Some(json!({"suppress_role_addresses": true})),
    )
    .await;
    assert_eq!(status, 200);
    for (path, body) in own {
        let (status, answer) = send(&h, &mine.admin, Method::POST, path, Some(body)).await;
        assert_eq!(status, 200, "{path}: {answer}");
        assert!(
            !answer.to_string().contains(their_contact.as_str()),
            "{answer}"
        );
    }
    assert_eq!(snapshot().await, before, "the other project changed");
    h.stop().await;
}
