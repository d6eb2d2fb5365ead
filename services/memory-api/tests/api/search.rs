//! `GET /memory/search` over decisions and product states.

use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> Value {
    let res = h.api(key).post(path, &body).await;
    assert!(res.status().is_success(), "{path}: {}", res.status());
    json(res).await
}

async fn product(h: &Harness, key: &str, name: &str) {
    post(h, key, "/api/v1/products", json!({"name": name})).await;
}

async fn decide(h: &Harness, key: &str, product_name: &str, decision: &str) -> String {
    let body = post(
        h,
        key,
        "/api/v1/memory/decisions",
        json!({"decision": decision, "product_name": product_name}),
    )
    .await;
    body["id"].as_str().unwrap().to_owned()
}

async fn set_state(h: &Harness, key: &str, product_name: &str, state: Value) {
    post(
        h,
        key,
        &format!("/api/v1/memory/product/{product_name}/state"),
        state,
    )
    .await;
}

async fn search(h: &Harness, key: &str, query: &str) -> Response {
    h.api(key)
        .get(&format!("/api/v1/memory/search?{query}"))
        .await
}

async fn found(h: &Harness, key: &str, query: &str) -> Value {
    let res = search(h, key, query).await;
    assert_eq!(res.status(), 200, "{query}");
    assert_rate_limit_headers(&res);
    json(res).await
}

fn decision_texts(body: &Value) -> Vec<&str> {
    body["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect()
}

fn state_products(body: &Value) -> Vec<&str> {
    body["product_states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["product_name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn parameters_are_checked() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let too_long = "a".repeat(1001);
    for (query, field) in [
        ("", "q"),
        ("q=%20%20", "q"),
        (&*format!("q={too_long}"), "q"),
        ("q=x&limit=0", "limit"),
        ("q=x&limit=21", "limit"),
        ("q=x&limit=ten", "limit"),
        ("q=x&min_similarity=-0.1", "min_similarity"),
        ("q=x&min_similarity=1.01", "min_similarity"),
        ("q=x&min_similarity=high", "min_similarity"),
        ("q=x&include=decisions,memories", "include"),
        ("q=x&include=", "include"),
    ] {
        let message = expect_error(search(&h, &key, query).await, 400, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{query}: {message}");
    }
    for query in [
        "q=x&limit=1",
        "q=x&limit=20",
        "q=x&min_similarity=0",
        "q=x&min_similarity=1",
        "q=x&include=product_states",
        "q=x&include=decisions,%20product_states",
        &format!("q={}", "a".repeat(1000)),
    ] {
        let body = found(&h, &key, query).await;
        assert_eq!(body["count"], 0, "{query}");
        assert_eq!(body["total"], 0, "{query}");
    }
    let res = h.anonymous().get("/api/v1/memory/search?q=x").await;
    expect_error(res, 401, "UNAUTHORIZED").await;
    h.stop().await;
}

#[tokio::test]
async fn keyword_mode_finds_decisions_and_states_and_counts_them() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    for name in ["billing", "web"] {
        product(&h, &key, name).await;
    }
    decide(&h, &key, "billing", "Move the ledger to PostgreSQL").await;
    decide(&h, &key, "billing", "Reconcile the ledger nightly").await;
    decide(&h, &key, "billing", "The ledger keeps amounts in cents").await;
    decide(&h, &key, "web", "Use Tailwind for styling").await;
    set_state(
        &h,
        &key,
        "billing",
        json!({"status": "beta", "what_is_blocked": ["ledger export to the accountants"]}),
    )
    .await;
    set_state(&h, &key, "web", json!({"status": "live"})).await;

    let body = found(&h, &key, "q=ledger").await;
    assert_eq!(body["search_mode"], "keyword");
    assert_eq!(body["query"], "ledger");
    assert!(body["latency_ms"].is_u64());
    assert_eq!(body["count"], 4);
    assert_eq!(body["total"], 4);
    assert_eq!(decision_texts(&body).len(), 3);
    assert_eq!(state_products(&body), ["billing"]);
    let state = &body["product_states"][0];
    assert_eq!(state["status"], "beta");
    assert_eq!(state["version"], 1);
    assert_eq!(
        state["state"]["what_is_blocked"][0],
        "ledger export to the accountants"
    );
    assert!(
        state["similarity"].is_null(),
        "no similarity in keyword mode"
    );
    assert!(body["decisions"][0]["similarity"].is_null());
    assert!(body["decisions"][0]["tags"].is_array());

    // limit caps decisions and states together; total still counts every match.
    let body = found(&h, &key, "q=ledger&limit=2").await;
    assert_eq!(body["count"], 2);
    assert_eq!(body["total"], 4);

    let body = found(&h, &key, "q=ledger&include=decisions").await;
    assert_eq!(
        (body["count"].as_u64(), body["total"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(body["product_states"], json!([]));
    let body = found(&h, &key, "q=ledger&include=product_states").await;
    assert_eq!(body["decisions"], json!([]));
    assert_eq!(state_products(&body), ["billing"]);

    // A product's name finds its state; a state change is searched in its newest version.
    assert_eq!(state_products(&found(&h, &key, "q=web").await), ["web"]);
    set_state(&h, &key, "web", json!({"status": "sunset"})).await;
    let body = found(&h, &key, "q=sunset").await;
    assert_eq!(state_products(&body), ["web"]);
    assert_eq!(body["product_states"][0]["version"], 2);
    assert_eq!(found(&h, &key, "q=live%20-sunset").await["count"], 0);
    h.stop().await;
}

#[tokio::test]
async fn search_is_isolated_by_owner_and_environment() {
    let (h, owner, key) = Harness::with_writer(Tier::Pro).await;
    let (_, stranger) = h.writer(Tier::Pro).await;
    let (_, test_key) = h.test_writer(owner).await;
    product(&h, &key, "billing").await;
    decide(&h, &key, "billing", "Keep the ledger in PostgreSQL").await;
    set_state(&h, &key, "billing", json!({"status": "ledger migration"})).await;
    assert_eq!(found(&h, &key, "q=ledger").await["total"], 2);
    for other in [&stranger, &test_key] {
        let body = found(&h, other, "q=ledger").await;
        assert_eq!(body["total"], 0, "{body}");
        assert_eq!(body["count"], 0);
    }
    h.stop().await;
}

#[tokio::test]
async fn semantic_mode_finds_paraphrases_above_the_calibrated_threshold() {
    let h = Harness::with(semantic_settings).await;
    let (_, key) = h.writer(Tier::Pro).await;
    for name in ["billing", "web", "ops", "team", "mobile"] {
        product(&h, &key, name).await;
    }
    let target = decide(
        &h,
        &key,
        "billing",
        "We chose PostgreSQL over MongoDB for the billing ledger",
    )
    .await;
    decide(
        &h,
        &key,
        "web",
        "Use Tailwind for the marketing site styling",
    )
    .await;
    decide(
        &h,
        &key,
        "ops",
        "Deploys on Fridays are banned after the March outage",
    )
    .await;
    decide(
        &h,
        &key,
        "team",
        "Hire two support engineers in the third quarter",
    )
    .await;
    set_state(
        &h,
        &key,
        "mobile",
        json!({"status": "blocked", "what_is_blocked": ["Apple rejected the iPhone build in App Store review"]}),
    )
    .await;

    let body = found(
        &h,
        &key,
        "q=which%20database%20did%20we%20pick%20for%20payments%3F",
    )
    .await;
    assert_eq!(body["search_mode"], "semantic");
    assert_eq!(body["decisions"][0]["id"], target.as_str(), "{body}");
    let similarity = body["decisions"][0]["similarity"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&similarity), "{similarity}");
    // Unrelated memories stay under the default threshold of 0.5.
    for d in body["decisions"].as_array().unwrap() {
        assert!(d["similarity"].as_f64().unwrap() >= 0.5, "{body}");
    }
    assert!(!decision_texts(&body).contains(&"Hire two support engineers in the third quarter"));
    assert_eq!(
        body["total"].as_u64().unwrap() as usize,
        body["count"].as_u64().unwrap() as usize
    );
    // The same question in other case and spacing (its cached vector) finds the same.
    let again = found(
        &h,
        &key,
        "q=Which%20DATABASE%20did%20we%20%20pick%20for%20payments%3F",
    )
    .await;
    assert_eq!(again["decisions"], body["decisions"], "{again}");
    assert_eq!(again["total"], body["total"]);

    // A state is found by what it says, in other words.
    let body = found(&h, &key, "q=why%20can%27t%20our%20phone%20app%20ship%3F").await;
    assert_eq!(state_products(&body).first(), Some(&"mobile"), "{body}");
    assert!(body["product_states"][0]["similarity"].as_f64().unwrap() >= 0.5);

    // min_similarity 0 lets everything through; 1 keeps only what matches the words.
    let everything = found(&h, &key, "q=support%20staffing&min_similarity=0").await;
    assert_eq!(everything["total"], 5, "{everything}");
    // A decision matching both by meaning and by its words is one match, ranked first.
    let both = found(&h, &key, "q=support%20engineers&min_similarity=0").await;
    assert_eq!(both["total"], 5, "{both}");
    assert_eq!(
        decision_texts(&both).first(),
        Some(&"Hire two support engineers in the third quarter"),
        "{both}"
    );
    let strict = found(&h, &key, "q=support%20engineers&min_similarity=1").await;
    assert_eq!(
        decision_texts(&strict),
        ["Hire two support engineers in the third quarter"]
    );
    assert_eq!(strict["total"], 1);
    h.stop().await;
}

/// Decisions matching the query's words outrank some only nearer by meaning, wherever they
/// stand in the semantic ranking: every limit answers the head of the full ranking, and
/// `total` still counts every match.
#[tokio::test]
async fn every_limit_answers_the_head_of_the_full_ranking() {
    let h = Harness::with(semantic_settings).await;
    let (_, key) = h.writer(Tier::Pro).await;
    product(&h, &key, "billing").await;
    let texts = [
        "Deploys are frozen on Fridays since the ledger outage",
        "Hire a designer for the mobile team; interviews happen in the ledger room",
        "Our office moves to Berlin in May, next to the old ledger printing house",
        "Double-entry bookkeeping records every payment in the accounts",
        "The general journal of accounting entries lives in PostgreSQL",
        "Account balances are reconciled against the bookkeeping records nightly",
        "Hire two support engineers in the third quarter",
    ];
    for text in texts {
        decide(&h, &key, "billing", text).await;
    }

    let full = found(&h, &key, "q=ledger&min_similarity=0&limit=20").await;
    assert_eq!(full["search_mode"], "semantic");
    assert_eq!(full["total"], texts.len(), "{full}");
    let decisions = full["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), texts.len(), "{full}");
    // The words lift a decision above one nearer by meaning: the semantic ranking alone
    // would order them otherwise.
    let similarity = |d: &Value| d["similarity"].as_f64().unwrap();
    assert!(
        decisions
            .windows(2)
            .any(|pair| similarity(&pair[0]) < similarity(&pair[1])),
        "{full}"
    );

    for limit in 1..texts.len() {
        let body = found(
            &h,
            &key,
            &format!("q=ledger&min_similarity=0&limit={limit}"),
        )
        .await;
        assert_eq!(
            body["decisions"].as_array().unwrap()[..],
            decisions[..limit],
            "{body}"
        );
        assert_eq!(body["total"], texts.len(), "{body}");
    }
    h.stop().await;
}

/// Imports (merge, applied now) one decision under `id` with `text`.
async fn import_decision(h: &Harness, key: &str, id: &str, product_name: &str, text: &str) {
    let body = post(
        h,
        key,
        "/api/v1/memory/import-mif",
        json!({
            "mif": {
                "mif_version": "0.1",
                "provenance": {},
                "identity_kernel": {},
                "decisions": [{"id": id, "decision": text, "product_name": product_name}],
            },
            "merge_strategy": "merge",
            "apply_immediately": true,
        }),
    )
    .await;
    assert_eq!(body["decisions_imported"], 1, "{body}");
}

/// Two owners (two users, or one user's live and test environments) holding a decision under
/// the same id each find their own text, never the other's.
async fn assert_same_id_stays_with_its_owner(h: &Harness, a: &str, b: &str, query: &str) {
    product(h, a, "billing").await;
    let id = decide(h, a, "billing", "Keep the invoice ledger in PostgreSQL").await;
    import_decision(
        h,
        b,
        &id,
        "billing",
        "Keep the invoice ledger in a spreadsheet",
    )
    .await;
    for (key, own, other) in [
        (
            a,
            "Keep the invoice ledger in PostgreSQL",
            "Keep the invoice ledger in a spreadsheet",
        ),
        (
            b,
            "Keep the invoice ledger in a spreadsheet",
            "Keep the invoice ledger in PostgreSQL",
        ),
    ] {
        let body = found(h, key, query).await;
        let texts = decision_texts(&body);
        assert_eq!(texts, [own], "{body}");
        assert!(!texts.contains(&other), "{body}");
        assert_eq!(body["decisions"][0]["id"], id.as_str());
    }
}

#[tokio::test]
async fn semantic_search_never_answers_another_users_decision_with_the_same_id() {
    let h = Harness::with(semantic_settings).await;
    let (_, a) = h.writer(Tier::Pro).await;
    let (_, b) = h.writer(Tier::Pro).await;
    let query = "q=invoice%20ledger&min_similarity=0";
    assert_same_id_stays_with_its_owner(&h, &a, &b, query).await;
    assert_eq!(found(&h, &a, query).await["search_mode"], "semantic");
    h.stop().await;
}

#[tokio::test]
async fn semantic_search_never_answers_the_other_environments_decision_with_the_same_id() {
    let h = Harness::with(semantic_settings).await;
    let (user, live) = h.writer(Tier::Pro).await;
    let (_, test) = h.test_writer(user).await;
    let query = "q=invoice%20ledger&min_similarity=0";
    assert_same_id_stays_with_its_owner(&h, &live, &test, query).await;
    assert_eq!(found(&h, &test, query).await["search_mode"], "semantic");
    h.stop().await;
}

#[tokio::test]
async fn keyword_search_never_answers_another_owners_decision_with_the_same_id() {
    let (h, user, a) = Harness::with_writer(Tier::Pro).await;
    let (_, b) = h.writer(Tier::Pro).await;
    let query = "q=invoice%20ledger";
    assert_same_id_stays_with_its_owner(&h, &a, &b, query).await;
    assert_eq!(found(&h, &a, query).await["search_mode"], "keyword");
    let (_, test) = h.test_writer(user).await;
    let body = found(&h, &test, query).await;
    assert_eq!(body["total"], 0, "{body}");
    h.stop().await;
}

/// A semantic server whose model endpoint is `stub`, with the LLM rewrite `on` or off.
async fn rewriting_harness(stub: &test_support::chat_stub::ChatStub, on: bool) -> Harness {
    let base = stub.base_url.clone();
    Harness::with(move |url| {
        let mut s = semantic_settings(url);
        s.llm.base_url = base;
        s.llm.model = "stub-model".to_owned();
        // Off is left to the default.
        if on {
            s.search.llm_rewrite = true;
        }
        s
    })
    .await
}

const OWN_KEY: &str = "sk-own-Rw7qX2vB9nM4kL1pT8yU5iO3";

/// Two decisions, the caller's model credential, and the stub answering with the second
/// decision's words: the answer's ids for a query that names neither.
async fn ask_with_rewrite(h: &Harness, stub: &test_support::chat_stub::ChatStub) -> Vec<String> {
    let (_, key) = h.writer(Tier::Pro).await;
    product(h, &key, "billing").await;
    decide(
        h,
        &key,
        "billing",
        "We chose PostgreSQL over MongoDB for the billing ledger",
    )
    .await;
    let wanted = "Invoices are emailed to customers on the first business day of each month";
    decide(h, &key, "billing", wanted).await;
    post(
        h,
        &key,
        "/api/v1/byok",
        json!({"service": "openai", "label": "mine", "key": OWN_KEY}),
    )
    .await;
    stub.reply(wanted);
    let body = h
        .api(&key)
        .get("/api/v1/memory/decisions/search?q=zebra%20umbrella%20violin")
        .expect(200)
        .await;
    decision_texts(&body)
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

#[tokio::test]
async fn the_llm_rewrite_asks_the_callers_model_and_finds_what_it_restates() {
    let stub = test_support::chat_stub::ChatStub::start().await;
    let h = rewriting_harness(&stub, true).await;
    let texts = ask_with_rewrite(&h, &stub).await;
    assert_eq!(
        texts.first().map(String::as_str),
        Some("Invoices are emailed to customers on the first business day of each month"),
        "{texts:?}"
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some(format!("Bearer {OWN_KEY}").as_str())
    );
    assert!(
        requests[0]
            .contents()
            .contains(&"zebra umbrella violin".to_owned()),
        "{:?}",
        requests[0].contents()
    );
}

#[tokio::test]
async fn the_llm_rewrite_is_off_by_default() {
    let stub = test_support::chat_stub::ChatStub::start().await;
    let h = rewriting_harness(&stub, false).await;
    ask_with_rewrite(&h, &stub).await;
    assert!(stub.requests().is_empty(), "the model was asked");
}
