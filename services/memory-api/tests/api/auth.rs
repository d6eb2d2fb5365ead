use auth::{CredentialKind, Scope};
use memory_api::db::credentials;
use rate_limit::policy::Tier;
use test_support::credentials::{Lookups, warm};

use crate::common::*;

#[tokio::test]
async fn missing_malformed_unknown_revoked_and_expired_credentials_are_401() {
    let (h, user, good) = Harness::with_writer(Tier::Free).await;
    let unknown = auth::credential::generate(CredentialKind::MemoryLive).plaintext;
    let mail_key = auth::credential::generate(CredentialKind::Mail).plaintext;
    let cases: Vec<(Option<String>, &str)> = vec![
        (None, "missing"),
        (Some("Bearer".into()), "malformed"),
        (Some("Basic abc".into()), "malformed"),
        (Some("Bearer mem_live_short".into()), "malformed"),
        (Some(format!("Bearer {mail_key}")), "malformed"),
        (Some(format!("Bearer {unknown}")), "unknown"),
    ];
    for (header, why) in cases {
        let mut req = h.get("/api/v1/products");
        if let Some(header) = header {
            req = req.header("Authorization", header);
        }
        let res = req.send().await.unwrap();
        // RFC 9728 §5.1: the challenge names the API's resource metadata.
        assert_eq!(
            res.headers()["www-authenticate"],
            format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/api/v1\"",
                h.server.base
            )
            .as_str()
        );
        let message = expect_error(res, 401, "UNAUTHORIZED").await;
        assert!(message.contains(why), "{why}: {message}");
    }

    let (revoked_id, revoked) = h.reader(user).await;
    let ok = h.api(&revoked).get("/api/v1/products").await;
    assert_eq!(ok.status(), 200);
    assert!(
        store::revoke_api_key(&mut h.conn().await, revoked_id)
            .await
            .unwrap()
    );
    let res = h.api(&revoked).get("/api/v1/products").await;
    assert!(
        expect_error(res, 401, "UNAUTHORIZED")
            .await
            .contains("revoked")
    );

    let (_, expired) = credentials::create_key(
        &mut h.conn().await,
        user,
        "expired",
        CredentialKind::MemoryLive,
        auth::Origin::FirstParty,
        &[Scope::Read],
        Some(chrono::Utc::now() - chrono::Duration::seconds(1)),
    )
    .await
    .unwrap();
    let res = h.api(&expired.plaintext).get("/api/v1/products").await;
    assert!(
        expect_error(res, 401, "UNAUTHORIZED")
            .await
            .contains("expired")
    );

    let res = h.api(&good).get("/api/v1/products").await;
    assert_eq!(res.status(), 200);
    h.stop().await;
}

#[tokio::test]
async fn read_scope_on_a_write_route_is_403_before_the_body_is_read() {
    let h = Harness::new().await;
    let user = h.user(Tier::Free).await;
    let (_, reader) = h.reader(user).await;
    let res = h
        .api(&reader)
        .request(reqwest::Method::POST, "/api/v1/products")
        .header("content-type", "application/json")
        .body("{not json")
        .await;
    assert_rate_limit_headers(&res);
    assert!(expect_error(res, 403, "FORBIDDEN").await.contains("write"));
    h.stop().await;
}

#[tokio::test]
async fn connector_tokens_authenticate_as_connectors() {
    let h = Harness::new().await;
    let user = h.user(Tier::Pro).await;
    let (_, token) = h
        .key(
            user,
            CredentialKind::MemoryOAuth,
            &[Scope::Read, Scope::Propose],
        )
        .await;
    assert!(token.starts_with("memo_"));
    let res = h.api(&token).get("/api/v1/products").await;
    assert_eq!(res.status(), 200);
    let res = h
        .api(&token)
        .post("/api/v1/products", &serde_json::json!({"name": "x"}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    // Connector credentials cannot be minted with write.
    let refused = credentials::create_key(
        &mut h.conn().await,
        user,
        "bad",
        CredentialKind::MemoryOAuth,
        auth::Origin::Connector,
        &[Scope::Read, Scope::Write],
        None,
    )
    .await;
    assert!(refused.is_err());
    h.stop().await;
}

#[tokio::test]
async fn a_key_revoked_through_one_replica_is_refused_by_the_other_on_the_next_request() {
    let db = database().await;
    let a = serve(&settings(&db.url)).await;
    let b = serve(&settings(&db.url)).await;
    let mut conn = test_support::sql::connect(&db.url).await;
    let user = memory_api::db::users::create(&mut conn, "r@example.com", Tier::Free)
        .await
        .unwrap()
        .id;
    let (key, credential) = credentials::create_key(
        &mut conn,
        user,
        "replicated",
        CredentialKind::MemoryLive,
        auth::Origin::FirstParty,
        &[Scope::Read],
        None,
    )
    .await
    .unwrap();
    let [on_a, on_b] = warm([&a, &b], "/api/v1/products", &credential.plaintext).await;
    // Revoked through replica A's database session; B must refuse at once.
    assert!(store::revoke_api_key(&mut conn, key.id).await.unwrap());
    let res = on_b.get("/api/v1/products").await;
    assert!(
        expect_error(res, 401, "UNAUTHORIZED")
            .await
            .contains("revoked")
    );
    expect_error(on_a.get("/api/v1/products").await, 401, "UNAUTHORIZED").await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_unknown_key_is_looked_up_once_yet_usable_as_soon_as_it_is_inserted() {
    let h = Harness::new().await;
    let lookups = Lookups::new(h.anonymous(), "/api/v1/products");
    let warmup = auth::credential::generate(CredentialKind::MemoryLive).plaintext;
    lookups.wait_until_remembered(&warmup).await;

    let user = h.user(Tier::Free).await;
    let (key_id, key) = h.reader(user).await;
    lookups
        .assert_a_deleted_key_is_looked_up_once(&h.db.url, key_id, &key, async |res| {
            expect_error(res, 401, "UNAUTHORIZED").await;
        })
        .await;
    h.stop().await;
}

/// Every credentialed GET of the committed OpenAPI document, made concrete: path parameters
/// filled from `values` (by `"<path> <name>"`, else by name), and `q` given where the route
/// takes one.
fn documented_reads(values: &[(&str, &str)]) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../proto-docs/memory-api.openapi.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut reads = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("get") else { continue };
        if op["security"][0].get("bearer").is_none() {
            continue;
        }
        assert!(
            op["responses"].get("403").is_some(),
            "GET {path} does not document 403"
        );
        let mut concrete = path.clone();
        let mut query = Vec::new();
        for param in op["parameters"].as_array().into_iter().flatten() {
            let name = param["name"].as_str().unwrap();
            match param["in"].as_str().unwrap() {
                "path" => {
                    // A value for this path's parameter (`"<path> <name>"`), else for the name.
                    let own = format!("{path} {name}");
                    let value = values
                        .iter()
                        .find(|(n, _)| *n == own)
                        .or_else(|| values.iter().find(|(n, _)| *n == name))
                        .unwrap_or_else(|| panic!("no value for {{{name}}} of GET {path}"))
                        .1;
                    concrete = concrete.replace(&format!("{{{name}}}"), value);
                }
                "query" if name == "q" => query.push("q=launch"),
                "query" if name == "account_email" => query.push("account_email=a%40example.com"),
                "query" if name == "legacy_thread_id" => query.push("legacy_thread_id=ab12"),
                _ => {}
            }
        }
        if !query.is_empty() {
            concrete = format!("{concrete}?{}", query.join("&"));
        }
        reads.push(concrete);
    }
    reads
}

#[tokio::test]
async fn every_read_route_needs_the_read_scope() {
    let h = Harness::with(|url| with_unanswering_model(settings(url))).await;
    let (user, full) = h.writer(Tier::Pro).await;
    let (_, writer) = h
        .key(user, CredentialKind::MemoryLive, &[Scope::Write])
        .await;
    let (_, reader) = h.reader(user).await;
    let send = |method: reqwest::Method, path: &str, key: &str, body: serde_json::Value| {
        h.http
            .request(method, h.server.url(path))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    // Something to read on every route.
    use reqwest::Method;
    use serde_json::json;
    for (method, path, body) in [
        (Method::POST, "/api/v1/products", json!({"name": "alpha"})),
        (
            Method::PUT,
            "/api/v1/memory/identity",
            json!({"constraints": ["Ship the launch"]}),
        ),
        (
            Method::POST,
            "/api/v1/memory/product/alpha/state",
            json!({"status": "launch"}),
        ),
        (
            Method::POST,
            "/api/v1/memory/decisions",
            json!({"decision": "Plan the launch", "product_name": "alpha"}),
        ),
        (
            Method::POST,
            "/api/v1/memory/free-form",
            json!({"content": "launch notes"}),
        ),
        (
            Method::POST,
            "/api/v1/ingest/events",
            json!({"event_type": "ai_cost",
                   "payload": {"product": "alpha", "model": "m", "cost_usd": 0.5}}),
        ),
        (
            Method::POST,
            "/api/v1/ingest/datasets/alpha/rows",
            json!({"rows": [{"launch": 1}]}),
        ),
    ] {
        let res = send(method, path, &full, body).await.unwrap();
        assert!(res.status().is_success(), "{path}: {}", res.status());
    }
    let run = json(
        send(
            Method::POST,
            "/api/v1/memory/consolidate",
            &full,
            json!({"compute_budget_tokens": 1000}),
        )
        .await
        .unwrap(),
    )
    .await;
    let run_id = run["runId"].as_str().expect("a run id").to_owned();
    let intake = json(
        send(
            Method::POST,
            "/api/v1/connectors/intake",
            &full,
            json!({"raw_content": "launch plan"}),
        )
        .await
        .unwrap(),
    )
    .await;
    let proposal = intake["proposal_id"]
        .as_str()
        .expect("a proposal")
        .to_owned();
    let job = json(
        send(Method::POST, "/api/v1/bridge/generate", &full, json!({}))
            .await
            .unwrap(),
    )
    .await;
    let job_id = job["job_id"].as_str().expect("a job id").to_owned();
    // A model credential, then one model run of each kind.
    let byok = json!({"service": "openai", "label": "mine", "key": "sk-read-scope-test-0000"});
    let res = send(Method::POST, "/api/v1/byok", &full, byok)
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let mut model_runs = Vec::new();
    for (path, body) in [
        ("/api/v1/content/brief", json!({"topic": "launch"})),
        (
            "/api/v1/marketing/autonomous/run",
            json!({"goal": "launch"}),
        ),
        (
            "/api/v1/marketing/competitor-watch/run",
            json!({"competitors": [{"name": "Acme"}]}),
        ),
    ] {
        let started = json(send(Method::POST, path, &full, body).await.unwrap()).await;
        model_runs.push(started["id"].as_str().expect("a run id").to_owned());
    }
    let watch = json!({"competitors": [{"name": "Acme"}], "interval_minutes": 60});
    let watch = send(
        Method::POST,
        "/api/v1/marketing/competitor-watches",
        &full,
        watch,
    )
    .await
    .unwrap();
    let watch = json(watch).await["id"]
        .as_str()
        .expect("a watch id")
        .to_owned();

    // One render job of each kind (queued: their status is readable without a worker).
    let producible = json(
        send(
            Method::POST,
            "/api/v1/render/producibles/jobs",
            &full,
            json!({"format": "csv", "ir": {"title": "Launch", "blocks": []}}),
        )
        .await
        .unwrap(),
    )
    .await;
    let producible = producible["jobId"].as_str().expect("a job id").to_owned();
    let video = json(
        send(
            Method::POST,
            "/api/v1/render/video/jobs",
            &full,
            json!({"brief": "Launch day", "duration": 5}),
        )
        .await
        .unwrap(),
    )
    .await;
    let video = video["jobId"].as_str().expect("a job id").to_owned();

    let reads = documented_reads(&[
        (
            "/api/v1/render/producibles/jobs/{jobId}/status jobId",
            &producible,
        ),
        ("/api/v1/render/video/jobs/{jobId}/status jobId", &video),
        ("name", "alpha"),
        ("product", "alpha"),
        ("runId", &run_id),
        ("id", &proposal),
        ("jobId", &job_id),
        ("requestId", &model_runs[0]),
        (
            "/api/v1/marketing/autonomous/run/{runId} runId",
            &model_runs[1],
        ),
        (
            "/api/v1/marketing/competitor-watch/run/{runId} runId",
            &model_runs[2],
        ),
        ("/api/v1/marketing/competitor-watches/{id} id", &watch),
    ]);
    assert!(reads.len() >= 11, "{reads:?}");
    for path in &reads {
        let res = h.api(&writer).get(path).await;
        assert_rate_limit_headers(&res);
        let message = expect_error(res, 403, "FORBIDDEN").await;
        assert!(message.contains("read"), "GET {path}: {message}");

        let res = h.api(&reader).get(path).await;
        assert_eq!(res.status(), 200, "GET {path} with a read key");
    }
    h.stop().await;
}

/// Connects an agent with `key`: the answer of `POST /agents/connect` (201).
async fn connect(api: &test_support::client::Client, name: &str) -> serde_json::Value {
    api.post(
        "/api/v1/agents/connect",
        &serde_json::json!({ "name": name }),
    )
    .expect(201)
    .await
}

/// A credential an agent connection mints is never broader than the credential connecting it:
/// scopes within the creator's (`read` required), and an expiry no later than the creator's.
#[tokio::test]
async fn a_minted_agent_token_is_never_broader_than_its_creator() {
    let h = Harness::new().await;
    let user = h.user(Tier::Pro).await;

    // A write-only key (with or without propose) cannot mint itself a reader: 403, no token.
    for scopes in [&[Scope::Write][..], &[Scope::Write, Scope::Propose]] {
        let (_, write_only) = h.key(user, CredentialKind::MemoryLive, scopes).await;
        let res = h
            .api(&write_only)
            .post(
                "/api/v1/agents/connect",
                &serde_json::json!({"name": "thief"}),
            )
            .await;
        let message = expect_error(res, 403, "FORBIDDEN").await;
        assert!(message.contains("read"), "{message}");
    }
    assert_eq!(
        h.query("SELECT count(*) FROM api_keys WHERE origin = 'connector'")
            .await,
        ["0"]
    );

    // A read+write key: read and propose, 90 days, linked to its creator.
    let (writer_id, writer) = h
        .key(
            user,
            CredentialKind::MemoryLive,
            &[Scope::Read, Scope::Write],
        )
        .await;
    let connected = connect(&h.api(&writer), "reader").await;
    assert_eq!(
        connected["scopes"],
        serde_json::json!(["read", "propose"]),
        "{connected}"
    );
    let expires: chrono::DateTime<chrono::Utc> =
        connected["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires - chrono::Utc::now()).num_days();
    assert!((89..=90).contains(&days), "{connected}");
    let token = connected["token"].as_str().unwrap();
    assert_eq!(
        h.query(&format!(
            "SELECT concat_ws('|', array_to_string(scopes, ','), created_by, \
             expires_at = '{}'::timestamptz) FROM api_keys WHERE name = 'agent: reader'",
            connected["expires_at"].as_str().unwrap()
        ))
        .await,
        [format!("read,propose|{writer_id}|t")]
    );
    h.api(token).get("/api/v1/scope").expect(200).await;

    // A key expiring in two days mints a token expiring with it.
    let (soon_id, soon) = h
        .key(
            user,
            CredentialKind::MemoryLive,
            &[Scope::Read, Scope::Write],
        )
        .await;
    h.exec(&format!(
        "UPDATE api_keys SET expires_at = date_trunc('second', now()) + interval '2 days' \
         WHERE id = '{soon_id}'"
    ))
    .await;
    let connected = connect(&h.api(&soon), "short").await;
    assert_eq!(
        h.query(&format!(
            "SELECT (SELECT expires_at FROM api_keys WHERE id = '{soon_id}') = '{}'::timestamptz",
            connected["expires_at"].as_str().unwrap()
        ))
        .await,
        ["true"],
        "{connected}"
    );
    h.stop().await;
}

/// Revoking or deleting the key that connected an agent revokes the agent's token at once, on
/// every replica.
#[tokio::test]
async fn a_minted_token_is_revoked_with_its_creator_on_every_replica() {
    let db = database().await;
    let a = serve(&settings(&db.url)).await;
    let b = serve(&settings(&db.url)).await;
    let mut conn = test_support::sql::connect(&db.url).await;
    let user = memory_api::db::users::create(&mut conn, "m@example.com", Tier::Free)
        .await
        .unwrap()
        .id;
    let mut creators = Vec::new();
    for name in ["revoked", "deleted"] {
        let (key, credential) = credentials::create_key(
            &mut conn,
            user,
            name,
            CredentialKind::MemoryLive,
            auth::Origin::FirstParty,
            &[Scope::Read, Scope::Write],
            None,
        )
        .await
        .unwrap();
        let api = test_support::client::Client::of(&a).with_key(&credential.plaintext);
        let token = connect(&api, name).await["token"]
            .as_str()
            .unwrap()
            .to_owned();
        creators.push((key.id, token));
    }
    let [revoked_a, revoked_b] = warm([&a, &b], "/api/v1/scope", &creators[0].1).await;
    let [deleted_a, deleted_b] = warm([&a, &b], "/api/v1/scope", &creators[1].1).await;

    assert!(
        store::revoke_api_key(&mut conn, creators[0].0)
            .await
            .unwrap()
    );
    for api in [&revoked_b, &revoked_a] {
        let message = expect_error(api.get("/api/v1/scope").await, 401, "UNAUTHORIZED").await;
        assert!(message.contains("revoked"), "{message}");
    }
    test_support::sql::exec(
        &db.url,
        &format!("DELETE FROM api_keys WHERE id = '{}'", creators[1].0),
    )
    .await;
    for api in [&deleted_b, &deleted_a] {
        expect_error(api.get("/api/v1/scope").await, 401, "UNAUTHORIZED").await;
    }
    a.stop().await;
    b.stop().await;
}

/// A token bound to a workspace never widens: deleting its workspace revokes it at once, on
/// every replica, instead of leaving it account-wide. The key that connected it is untouched.
#[tokio::test]
async fn a_workspace_bound_token_is_revoked_with_its_workspace_on_every_replica() {
    let db = database().await;
    let a = serve(&settings(&db.url)).await;
    let b = serve(&settings(&db.url)).await;
    let mut conn = test_support::sql::connect(&db.url).await;
    let user = memory_api::db::users::create(&mut conn, "w@example.com", Tier::Team)
        .await
        .unwrap()
        .id;
    let (_, credential) = credentials::create_key(
        &mut conn,
        user,
        "owner",
        CredentialKind::MemoryLive,
        auth::Origin::FirstParty,
        &[Scope::Read, Scope::Write],
        None,
    )
    .await
    .unwrap();
    let api = test_support::client::Client::of(&a).with_key(&credential.plaintext);
    let workspace = api
        .post("/api/v1/workspaces", &serde_json::json!({"name": "doomed"}))
        .expect(201)
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let connected = api
        .post(
            "/api/v1/agents/connect",
            &serde_json::json!({"name": "bound", "workspace_id": workspace}),
        )
        .expect(201)
        .await;
    let token = connected["token"].as_str().unwrap();
    let [on_a, on_b] = warm([&a, &b], "/api/v1/scope", token).await;

    api.delete(&format!("/api/v1/workspaces/{workspace}"))
        .expect(200)
        .await;
    for api in [&on_b, &on_a] {
        let message = expect_error(api.get("/api/v1/scope").await, 401, "UNAUTHORIZED").await;
        assert!(message.contains("revoked"), "{message}");
    }
    api.get("/api/v1/scope").expect(200).await;
    a.stop().await;
    b.stop().await;
}
