use auth::{CredentialKind, Scope};
use mail_api::db::credentials;
use rate_limit::policy::Plan;
use serde_json::json;
use test_support::credentials::{Lookups, warm};

use crate::common::*;

/// A 401 whose message says `why`.
async fn assert_refused(res: reqwest::Response, why: &str) {
    let err = expect_error(res, 401, "UNAUTHORIZED").await;
    assert!(err.message.contains(why), "{why}: {err:?}");
}

/// A key of `scope` named `name` that expires `after` from now (in the past when negative).
async fn key_expiring(
    h: &Harness,
    project: uuid::Uuid,
    name: &str,
    scope: Scope,
    after: chrono::Duration,
) -> String {
    let (_, key) = credentials::create_key(
        &mut h.conn().await,
        project,
        name,
        scope,
        None,
        Some(chrono::Utc::now() + after),
    )
    .await
    .unwrap();
    key.plaintext
}

#[tokio::test]
async fn missing_malformed_unknown_revoked_and_expired_credentials_are_401() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let unknown = auth::credential::generate(CredentialKind::Mail).plaintext;
    let memory_key = auth::credential::generate(CredentialKind::MemoryLive).plaintext;
    let cases: Vec<(Option<String>, &str)> = vec![
        (None, "missing"),
        (Some("Bearer".into()), "malformed"),
        (Some("Bearer ".into()), "malformed"),
        (Some("Basic x".into()), "malformed"),
        (Some(format!("Basic {}", tenant.read)), "malformed"),
        (Some("Bearer mail_short".into()), "malformed"),
        (
            Some(format!("Bearer {}", tenant.read.to_uppercase())),
            "malformed",
        ),
        (Some(format!("Bearer {memory_key}")), "malformed"),
        (Some(format!("Bearer {unknown}")), "unknown"),
    ];
    for (header, why) in cases {
        for method in ["GET", "POST"] {
            let mut req = h
                .http
                .request(method.parse().unwrap(), h.server.url("/api/v1/sites"));
            if let Some(header) = &header {
                req = req.header("Authorization", header);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.headers()["www-authenticate"], "Bearer", "{why}");
            let err = expect_error(res, 401, "UNAUTHORIZED").await;
            assert!(err.message.contains(why), "{why}: {err:?}");
            assert!(err.details.is_null(), "{err:?}");
        }
    }

    // A key revoked before any use is refused on its first request.
    let (cold_id, cold) = h.key(tenant.project, Scope::Admin).await;
    assert!(
        store::revoke_api_key(&mut h.conn().await, cold_id)
            .await
            .unwrap()
    );
    let res = h.list_sites(&cold, "").await;
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    assert_refused(res, "revoked").await;

    // A key that worked (and so is cached) until revoked.
    let (revoked_id, revoked) = h.key(tenant.project, Scope::Read).await;
    let ok = h.list_sites(&revoked, "").await;
    assert_eq!(ok.status(), 200);
    assert!(
        store::revoke_api_key(&mut h.conn().await, revoked_id)
            .await
            .unwrap()
    );
    assert!(
        !store::revoke_api_key(&mut h.conn().await, revoked_id)
            .await
            .unwrap(),
        "revoking twice reports nothing revoked"
    );
    // Refused on the very next request, although the key was cached.
    let res = h.list_sites(&revoked, "").await;
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    assert_refused(res, "revoked").await;
    let res = h.create_site(&revoked, "after-revocation").await;
    assert_refused(res, "revoked").await;

    let expired = key_expiring(
        &h,
        tenant.project,
        "expired",
        Scope::Admin,
        -chrono::Duration::seconds(1),
    )
    .await;
    for res in [
        h.list_sites(&expired, "").await,
        h.create_site(&expired, "never").await,
    ] {
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
        assert_refused(res, "expired").await;
    }

    // A key with an expiry still ahead works.
    let expiring = key_expiring(
        &h,
        tenant.project,
        "expiring",
        Scope::Read,
        chrono::Duration::hours(1),
    )
    .await;
    assert_eq!(h.list_sites(&expiring, "").await.status(), 200);

    // The scheme is case-insensitive; the other keys were not affected.
    let res = h
        .anonymous()
        .get("/api/v1/sites")
        .header("Authorization", format!("bearer {}", tenant.read))
        .await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    h.stop().await;
}

#[tokio::test]
async fn keys_are_stored_hashed_and_listed_by_prefix() {
    let h = Harness::new().await;
    let project = h.project(Plan::Byod).await;
    let mut conn = h.conn().await;
    let (key, credential) =
        credentials::create_key(&mut conn, project, "ci", Scope::Write, None, None)
            .await
            .unwrap();
    assert!(credential.plaintext.starts_with("mail_"));
    assert_eq!(credential.plaintext.len(), "mail_".len() + 64);
    assert_eq!(
        key.key_hash,
        store::sha256(credential.plaintext.as_bytes()).to_vec()
    );
    assert!(
        credential
            .plaintext
            .starts_with(key.key_prefix.trim_end_matches('…'))
    );
    assert_eq!(key.scope, "write");
    let listed = credentials::list_keys(&mut conn, project).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, key.id);
    assert!(listed[0].revoked_at.is_none());
    let other = h.project(Plan::Byod).await;
    assert!(
        credentials::list_keys(&mut conn, other)
            .await
            .unwrap()
            .is_empty()
    );
    h.stop().await;
}

#[tokio::test]
async fn a_read_key_on_a_write_route_is_403_before_the_body_is_read() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let res = h
        .api(&tenant.read)
        .request(reqwest::Method::POST, "/api/v1/sites")
        .header("content-type", "application/json")
        .body("{not json")
        .await;
    assert_rate_limit_headers(&res);
    assert!(!res.headers().contains_key("www-authenticate"));
    let err = expect_error(res, 403, "FORBIDDEN").await;
    assert!(err.message.contains("write"), "{err:?}");

    // Nor with a valid body: nothing is created.
    let res = h.create_site(&tenant.read, "blocked").await;
    expect_error(res, 403, "FORBIDDEN").await;
    let list = json(h.list_sites(&tenant.read, "").await).await;
    assert_eq!(list["data"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn every_scope_may_read_and_write_and_admin_keys_may_create() {
    let (h, tenant) = Harness::with_tenant(Plan::Managed).await;
    for (key, slug) in [(&tenant.write, "by-write"), (&tenant.admin, "by-admin")] {
        let res = h.create_site(key, slug).await;
        assert_eq!(res.status(), 201, "{slug}");
        assert_rate_limit_headers(&res);
        assert_eq!(json(res).await["slug"], slug);
    }
    for key in [&tenant.read, &tenant.write, &tenant.admin] {
        let res = h.list_sites(key, "").await;
        assert_eq!(res.status(), 200);
        assert_rate_limit_headers(&res);
        let slugs: Vec<_> = json(res).await["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["slug"].clone())
            .collect();
        assert_eq!(slugs, ["by-write", "by-admin"]);
    }
    h.stop().await;
}

/// Revocation is immediate across replicas: the very next request to the other replica is
/// refused (the credential cache trusts an entry only after its listener's barrier).
#[tokio::test]
async fn a_key_revoked_through_one_replica_is_refused_by_the_other_on_the_next_request() {
    let db = database().await;
    let (a, b) = (
        serve(&settings(&db.url)).await,
        serve(&settings(&db.url)).await,
    );
    let mut conn = connect(&db.url).await;
    let project = project(&mut conn, Plan::Enterprise).await;
    let (key_id, key_text) = key(&mut conn, project, Scope::Write).await;
    let [on_a, on_b] = warm([&a, &b], "/api/v1/sites", &key_text).await;
    // Revoked through replica A's database session; B must refuse at once.
    assert!(store::revoke_api_key(&mut conn, key_id).await.unwrap());
    let res = on_b.get("/api/v1/sites").await;
    let err = expect_error(res, 401, "UNAUTHORIZED").await;
    assert!(err.message.contains("revoked"), "{err:?}");
    let res = on_a
        .post(
            "/api/v1/sites",
            &json!({"name": "n", "slug": "s", "from_name": "f"}),
        )
        .await;
    let err = expect_error(res, 401, "UNAUTHORIZED").await;
    assert!(err.message.contains("revoked"), "{err:?}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_unknown_key_is_looked_up_once_yet_usable_as_soon_as_it_is_inserted() {
    let h = Harness::new().await;
    let project = h.project(Plan::Free).await;
    let lookups = Lookups::new(h.anonymous(), "/api/v1/sites");
    let warmup = auth::credential::generate(CredentialKind::Mail).plaintext;
    lookups.wait_until_remembered(&warmup).await;

    let (key_id, key) = h.key(project, Scope::Read).await;
    lookups
        .assert_a_deleted_key_is_looked_up_once(&h.db.url, key_id, &key, async |res| {
            expect_error(res, 401, "UNAUTHORIZED").await;
        })
        .await;
    h.stop().await;
}

/// An answer's status and JSON body (`Null` when it has none), for checks that print both.
async fn answer(res: reqwest::Response) -> (u16, serde_json::Value) {
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(json!(text)))
}

/// A 403 `code`, printing the answer otherwise.
async fn assert_forbidden(res: reqwest::Response, code: &str, what: &str) {
    let (status, body) = answer(res).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some(code)),
        "{what}: {status} {body}"
    );
}

/// Tool groups hold on REST as on MCP: a key limited to `contacts` reads no template, creates
/// no webhook subscription, sends nothing and mints no key, while its own routes answer.
#[tokio::test]
async fn a_key_limited_to_tool_groups_is_held_to_them_on_rest() {
    let (h, tenant) = Harness::with_tenant(Plan::Managed).await;
    let site = json(h.create_site(&tenant.admin, "groups").await).await["id"].clone();
    let write = h.limited_key(&tenant.admin, "write", &["contacts"]).await;
    let admin = h.limited_key(&tenant.admin, "admin", &["contacts"]).await;
    let limited = h.api(&write);
    let refused = [
        limited.get("/api/v1/templates").await,
        limited
            .post(
                "/api/v1/webhook-subscriptions",
                &json!({"url": "https://hooks.example.com/x", "events": ["campaign.completed"]}),
            )
            .await,
        limited
            .post(
                "/api/v1/send",
                &json!({"to": "a@example.com", "site_id": site, "subject": "s", "html": "<p>x</p>"}),
            )
            .await,
        h.api(&admin)
            .post("/api/v1/api-keys", &json!({"name": "escape", "scope": "admin"}))
            .await,
        // Refused before the body is read.
        limited
            .request(reqwest::Method::POST, "/api/v1/templates")
            .header("content-type", "application/json")
            .body("{not json")
            .await,
    ];
    for (i, res) in refused.into_iter().enumerate() {
        assert_rate_limit_headers(&res);
        assert_forbidden(res, "TOOL_GROUP_FORBIDDEN", &format!("refused[{i}]")).await;
    }
    let keys = json(h.get_with(&tenant.admin, "/api/v1/api-keys").await).await;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 5, "{keys}");
    let sent = h.query("SELECT count(*)::text FROM email_log").await;
    assert_eq!(sent, ["0"]);

    // Its own group's routes answer.
    let (status, body) = answer(limited.get("/api/v1/contacts").await).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = answer(
        limited
            .post(
                "/api/v1/contacts",
                &json!({"email": "in-group@example.com"}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    h.stop().await;
}

/// A key never creates a key broader than itself (scope, tool groups, expiry): what it leaves
/// out is inherited, what it asks beyond itself is 403, on REST and through `create_api_key`.
#[tokio::test]
async fn a_key_never_creates_a_key_broader_than_itself() {
    let (h, tenant) = Harness::with_tenant(Plan::Managed).await;
    let expiry = chrono::Utc::now() + chrono::Duration::days(7);
    let (_, creator) = credentials::create_key(
        &mut h.conn().await,
        tenant.project,
        "limited admin",
        Scope::Admin,
        Some(vec!["data".to_owned(), "templates".to_owned()]),
        Some(expiry),
    )
    .await
    .unwrap();
    let creator = h.api(&creator.plaintext);
    let create = |body: serde_json::Value| creator.post("/api/v1/api-keys", &body);

    // Left out: the creator's groups and expiry.
    let (status, made) = answer(create(json!({"name": "inherits", "scope": "admin"})).await).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["tool_groups"], json!(["data", "templates"]), "{made}");
    let expires: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(made["expires_at"].clone()).unwrap();
    assert!((expires - expiry).num_milliseconds().abs() < 1000, "{made}");
    // The minted key is held to them.
    let minted = made["secret"].as_str().unwrap();
    assert_forbidden(
        h.get_with(minted, "/api/v1/contacts").await,
        "TOOL_GROUP_FORBIDDEN",
        "the minted key on contacts",
    )
    .await;

    // Narrower is fine.
    let (status, made) = answer(
        create(
            json!({"name": "narrower", "scope": "read", "tool_groups": ["templates"],
            "expires_at": chrono::Utc::now() + chrono::Duration::days(1)}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["tool_groups"], json!(["templates"]));

    // Broader is refused, and nothing is made.
    for body in [
        json!({"name": "other group", "tool_groups": ["contacts"]}),
        json!({"name": "wider", "tool_groups": ["data", "contacts"]}),
        json!({"name": "later", "expires_at": expiry + chrono::Duration::days(1)}),
    ] {
        assert_forbidden(
            create(body.clone()).await,
            "KEY_BROADER_THAN_CREATOR",
            &body.to_string(),
        )
        .await;
    }
    let (status, body) = answer(
        h.tool(
            &creator_key(&h, tenant.project).await,
            "create_api_key",
            json!({"name": "tool", "tool_groups": ["gdpr"]}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("KEY_BROADER_THAN_CREATOR")),
        "{body}"
    );
    let keys = json(h.get_with(&tenant.admin, "/api/v1/api-keys").await).await;
    let names: Vec<&str> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "test",
            "test",
            "test",
            "limited admin",
            "inherits",
            "narrower",
            "tool creator"
        ]
    );

    // A write key reaches no key route at all; an unlimited admin key mints what it asks.
    assert_forbidden(
        h.api(&tenant.write)
            .post("/api/v1/api-keys", &json!({"name": "w"}))
            .await,
        "FORBIDDEN",
        "a write key",
    )
    .await;
    let (status, made) = answer(
        h.api(&tenant.admin)
            .post(
                "/api/v1/api-keys",
                &json!({"name": "full", "scope": "admin"}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(
        (made["tool_groups"].clone(), made["expires_at"].clone()),
        (json!(null), json!(null))
    );
    h.stop().await;
}

/// An admin key limited to `data` that expires in an hour (it may call `create_api_key`).
async fn creator_key(h: &Harness, project: uuid::Uuid) -> String {
    credentials::create_key(
        &mut h.conn().await,
        project,
        "tool creator",
        Scope::Admin,
        Some(vec!["data".to_owned()]),
        Some(chrono::Utc::now() + chrono::Duration::hours(1)),
    )
    .await
    .unwrap()
    .1
    .plaintext
}
