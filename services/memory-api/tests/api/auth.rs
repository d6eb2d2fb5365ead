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
    let (h, user, full) = Harness::with_writer(Tier::Pro).await;
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
