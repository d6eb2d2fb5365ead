//! Producer signal batches: 201/207/422/400 as ruled, `dedup_key` collapse under concurrency, owned
//! `related_decisions`, consolidation sparing referenced decisions, and the batch's workspace.

use super::*;

fn triggered() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn producer(key: &str) -> Value {
    json!({
        "source": "api", "signal_type": "latency_spike", "dedup_key": key,
        "severity": "warning", "title": "p99 above budget",
        "payload": {"triggered_at": triggered(), "metric_key": "p99_ms",
                    "baseline_value": 120.0, "current_value": 480.5, "delta_percent": 300.4},
    })
}

async fn ingest(h: &Harness, key: &str, body: &Value) -> Response {
    h.post("/api/v1/signals/ingest")
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap()
}

fn ids(body: &Value) -> Vec<String> {
    body["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("ids: {body}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn producer_batches_answer_201_207_422_and_400_as_ruled() {
    let (h, user, key) = Harness::with_writer(Tier::Free).await;

    // 201: all accepted, ids in order.
    let workspace = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "repo"}))
        .expect(201)
        .await;
    let workspace = workspace["id"].as_str().unwrap().to_owned();
    let mut full = producer("full");
    full["entity_scope"] = json!("product");
    full["entity_id"] = json!("atlas");
    full["description"] = json!("spike after deploy");
    full["evidence"] = json!([{"trace": "t-1"}]);
    full["confidence_score"] = json!(0.75);
    full["collapse_window_minutes"] = json!(15);
    full["payload"]["source_url"] = json!("https://grafana.example/d/1");
    full["payload"]["metadata"] = json!({"region": "eu"});
    let body = json!({"workspaceId": workspace, "signals": [full, producer("a"), producer("b")]});
    let res = ingest(&h, &key, &body).await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    let answer = json(res).await;
    assert_eq!(answer["errors"], json!([]));
    let created = ids(&answer);
    assert_eq!(created.len(), 3);
    let row = h
        .query(&format!(
            "SELECT concat_ws('|', workspace_id, source, entity_scope, entity_id, signal_type, \
             severity, description, evidence, confidence_score, collapse_window_minutes, count, \
             payload->>'metric_key', payload->'metadata') FROM producer_signals WHERE id = '{}'",
            created[0]
        ))
        .await;
    assert_eq!(
        row,
        [format!(
            "{workspace}|api|product|atlas|latency_spike|warning|spike after deploy|\
             [{{\"trace\": \"t-1\"}}]|0.75|15|1|p99_ms|{{\"region\": \"eu\"}}"
        )]
    );
    // Defaults: entity_scope user, window 60, metadata {}, evidence [], no related decisions.
    let row = h
        .query(&format!(
            "SELECT concat_ws('|', entity_scope, collapse_window_minutes, payload->'metadata', \
             evidence, related_decisions, workspace_id IS NULL) \
             FROM producer_signals WHERE id = '{}'",
            created[1]
        ))
        .await;
    assert_eq!(row, ["user|60|{}|[]|{}|f"]);

    // 207: each refused signal names its index and field; the others are written.
    let mut bad_severity = producer("c");
    bad_severity["severity"] = json!("fatal");
    let mut no_trigger = producer("d");
    no_trigger["payload"]
        .as_object_mut()
        .unwrap()
        .remove("triggered_at");
    let mut long_title = producer("e");
    long_title["title"] = json!("t".repeat(501));
    let mut confident = producer("f");
    confident["confidence_score"] = json!(1.5);
    let mut zero_window = producer("g");
    zero_window["collapse_window_minutes"] = json!(0);
    let mut bad_url = producer("h");
    bad_url["payload"]["source_url"] = json!("not a uri");
    let mut no_source = producer("i");
    no_source.as_object_mut().unwrap().remove("source");
    let body = json!({"signals": [
        producer("ok-1"), bad_severity, no_trigger, 42, long_title, confident, zero_window,
        bad_url, no_source, producer("ok-2"),
    ]});
    let res = ingest(&h, &key, &body).await;
    assert_eq!(res.status(), 207);
    assert_rate_limit_headers(&res);
    let answer = json(res).await;
    assert_eq!(ids(&answer).len(), 2);
    let errors: Vec<String> = answer["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect();
    let prefixes = [
        "signals[1].severity: ",
        "signals[2].payload.triggered_at: ",
        "signals[3]: ",
        "signals[4].title: ",
        "signals[5].confidence_score: ",
        "signals[6].collapse_window_minutes: ",
        "signals[7].payload.source_url: ",
        "signals[8].source: ",
    ];
    assert_eq!(errors.len(), prefixes.len(), "{errors:?}");
    for (error, prefix) in errors.iter().zip(prefixes) {
        assert!(error.starts_with(prefix), "{error} (expected {prefix}…)");
    }
    assert_eq!(
        count(&h, "SELECT count(*) FROM producer_signals").await,
        5,
        "3 + the two accepted"
    );

    // 422: none accepted; the message lists every signal's error.
    let body = json!({"signals": [{"source": "api"}, "x"]});
    let message = expect_error(ingest(&h, &key, &body).await, 422, "VALIDATION_ERROR").await;
    assert!(
        message.contains("signals[0].") && message.contains("signals[1]: "),
        "{message}"
    );

    // 400: the envelope itself.
    let too_many: Vec<Value> = (0..51).map(|i| producer(&format!("m{i}"))).collect();
    for (body, field) in [
        (json!({"signals": []}), "signals"),
        (json!({"signals": too_many}), "signals"),
        (json!({}), "signals"),
        (json!({"signals": {"0": producer("x")}}), "signals"),
        (
            json!({"workspaceId": "nope", "signals": [producer("x")]}),
            "workspaceId",
        ),
        (json!([producer("x")]), "body"),
    ] {
        let message = expect_error(ingest(&h, &key, &body).await, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(field), "{body}: {message}");
    }
    let res = h
        .post("/api/v1/signals/ingest")
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{\"signals\": [")
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "VALIDATION_ERROR").await;
    // A NUL anywhere is the envelope's 400, naming where.
    let mut nul = producer("n");
    nul["title"] = json!("a\u{0}b");
    let message = expect_error(
        ingest(&h, &key, &json!({"signals": [producer("y"), nul]})).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.starts_with("signals[1].title"), "{message}");

    // Exactly 50 is fine; a read-only key is refused.
    let fifty: Vec<Value> = (0..50).map(|i| producer(&format!("fifty-{i}"))).collect();
    let answer = json(ingest(&h, &key, &json!({"signals": fifty})).await).await;
    assert_eq!(ids(&answer).len(), 50);
    let (_, reader) = h.reader(user).await;
    let res = ingest(&h, &reader, &json!({"signals": [producer("r")]})).await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(count(&h, "SELECT count(*) FROM producer_signals").await, 55);
    h.stop().await;
}

#[tokio::test]
async fn dedup_keys_collapse_exactly_under_20_concurrent_requests() {
    let (h, user, key) = Harness::with_writer(Tier::Team).await;

    // Twenty requests at once, each with the shared key twice and a key of its own.
    let bodies: Vec<Value> = (0..20)
        .map(|i| {
            json!({"signals": [producer("shared"), producer(&format!("own-{i}")),
                               producer("shared")]})
        })
        .collect();
    let futures = bodies.iter().map(|body| ingest(&h, &key, body));
    let answers = futures_util::future::join_all(futures).await;
    let mut shared = std::collections::BTreeSet::new();
    let mut own = std::collections::BTreeSet::new();
    for res in answers {
        assert_eq!(res.status(), 201);
        let got = ids(&json(res).await);
        assert_eq!(got[0], got[2], "one key in one request: one id");
        shared.insert(got[0].clone());
        own.insert(got[1].clone());
    }
    assert_eq!(shared.len(), 1, "{shared:?}");
    assert_eq!(own.len(), 20);
    let shared_id = shared.into_iter().next().unwrap();
    let row = h
        .query(&format!(
            "SELECT concat_ws('|', count, open, last_seen_at > first_seen_at) \
             FROM producer_signals WHERE id = '{shared_id}'"
        ))
        .await;
    assert_eq!(row, ["40|t|t"]);
    assert_eq!(
        count(
            &h,
            "SELECT count(*) FROM producer_signals WHERE dedup_key = 'shared'"
        )
        .await,
        1
    );

    // Within the window (last seen 59 minutes ago, window 60): collapses, count grows.
    h.exec(&format!(
        "UPDATE producer_signals SET last_seen_at = now() - interval '59 minutes' \
         WHERE id = '{shared_id}'"
    ))
    .await;
    let answer = json(ingest(&h, &key, &json!({"signals": [producer("shared")]})).await).await;
    assert_eq!(ids(&answer), std::slice::from_ref(&shared_id));
    let row = h
        .query(&format!(
            "SELECT concat_ws('|', count, last_seen_at > now() - interval '1 minute') \
             FROM producer_signals WHERE id = '{shared_id}'"
        ))
        .await;
    assert_eq!(row, ["41|t"]);

    // Past the window: a new signal, the old one closed and kept.
    h.exec(&format!(
        "UPDATE producer_signals SET last_seen_at = now() - interval '61 minutes' \
         WHERE id = '{shared_id}'"
    ))
    .await;
    let one = json!({"signals": [producer("shared")]});
    let answers = futures_util::future::join_all((0..20).map(|_| ingest(&h, &key, &one))).await;
    let mut fresh = std::collections::BTreeSet::new();
    for res in answers {
        assert_eq!(res.status(), 201);
        fresh.insert(ids(&json(res).await)[0].clone());
    }
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    let fresh_id = fresh.into_iter().next().unwrap();
    assert_ne!(fresh_id, shared_id);
    let rows = h
        .query(
            "SELECT concat_ws('|', count, open) FROM producer_signals \
             WHERE dedup_key = 'shared' ORDER BY first_seen_at",
        )
        .await;
    assert_eq!(rows, ["41|f", "20|t"]);

    // The signal's own window decides: 1 minute, last seen 2 minutes ago.
    h.exec(&format!(
        "UPDATE producer_signals SET last_seen_at = now() - interval '2 minutes' \
         WHERE id = '{fresh_id}'"
    ))
    .await;
    let mut short = producer("shared");
    short["collapse_window_minutes"] = json!(1);
    let answer = json(ingest(&h, &key, &json!({"signals": [short]})).await).await;
    assert_ne!(ids(&answer)[0], fresh_id);

    // Keys are per owner and environment.
    let (_, stranger) = h.writer(Tier::Free).await;
    let (_, test_key) = h.test_writer(user).await;
    for other in [stranger, test_key] {
        let answer =
            json(ingest(&h, &other, &json!({"signals": [producer("shared")]})).await).await;
        let id = &ids(&answer)[0];
        assert!(id != &shared_id && id != &fresh_id);
    }
    h.stop().await;
}

async fn decision(h: &Harness, key: &str) -> String {
    let body = json!({"decision": "Ship weekly", "product_name": "atlas"});
    h.api(key)
        .post("/api/v1/memory/decisions", &body)
        .expect(201)
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn related_decisions_must_be_the_callers() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let (_, stranger) = h.writer(Tier::Free).await;
    product(&h, &key, "atlas").await;
    product(&h, &stranger, "atlas").await;
    let own = decision(&h, &key).await;
    let foreign = decision(&h, &stranger).await;
    let unknown = Uuid::now_v7().to_string();

    let with = |dedup: &str, related: Value| {
        let mut s = producer(dedup);
        s["related_decisions"] = related;
        s
    };
    let body = json!({"signals": [
        with("r0", json!([own])),
        with("r1", json!([own, foreign])),
        with("r2", json!([unknown])),
    ]});
    let res = ingest(&h, &key, &body).await;
    assert_eq!(res.status(), 207);
    let answer = json(res).await;
    assert_eq!(ids(&answer).len(), 1);
    assert_eq!(
        answer["errors"],
        json!([
            "signals[1].related_decisions[1]: not found: no such decision of the caller",
            "signals[2].related_decisions[0]: not found: no such decision of the caller",
        ])
    );
    let text = answer.to_string();
    assert!(!text.contains("Ship weekly") && !text.contains(&foreign));
    let stored = h
        .query(&format!(
            "SELECT related_decisions::text FROM producer_signals WHERE id = '{}'",
            ids(&answer)[0]
        ))
        .await;
    assert_eq!(stored, [format!("{{{own}}}")]);
    // Only foreign references: none accepted.
    let body = json!({"signals": [with("r3", json!([foreign]))]});
    let message = expect_error(ingest(&h, &key, &body).await, 422, "VALIDATION_ERROR").await;
    assert!(
        message.contains("signals[0].related_decisions[0]: not found"),
        "{message}"
    );
    h.stop().await;
}

/// Ingests one producer signal whose `related_decisions` is `decision`.
async fn ingest_referencing(h: &Harness, key: &str, decision: Uuid) {
    let mut signal = producer("ref");
    signal["related_decisions"] = json!([decision]);
    let res = ingest(h, key, &json!({"signals": [signal]})).await;
    assert_eq!(res.status(), 201);
}

#[tokio::test]
async fn consolidation_spares_old_decisions_a_signal_references() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let old = (Utc::now() - Duration::days(400)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let (kept, flagged) = (Uuid::now_v7(), Uuid::now_v7());
    let mif = json!({
        "mif_version": "0.1", "provenance": {}, "identity_kernel": {},
        "decisions": [
            {"id": kept, "decision": "Use Postgres everywhere", "product_name": "web", "decided_at": old},
            {"id": flagged, "decision": "Host on bare metal", "product_name": "web", "decided_at": old},
        ],
    });
    h.api(&key)
        .post(
            "/api/v1/memory/import-mif",
            &json!({"mif": mif, "merge_strategy": "merge", "apply_immediately": true}),
        )
        .expect(200)
        .await;
    let consolidate = async || {
        let run = h
            .api(&key)
            .post("/api/v1/memory/consolidate", &json!({}))
            .expect(200)
            .await;
        let id = run["runId"].as_str().unwrap().to_owned();
        let report = h
            .api(&key)
            .get(&format!("/api/v1/memory/consolidate/{id}"))
            .expect(200)
            .await;
        let stale: Vec<String> = report["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["rule"] == "old_unreferenced")
            .map(|c| c["item"]["id"].as_str().unwrap().to_owned())
            .collect();
        (run["staleDecisionsFlagged"].clone(), stale)
    };
    // Before any signal, both are stale.
    let (flagged_count, mut stale) = consolidate().await;
    stale.sort();
    let mut both = vec![kept.to_string(), flagged.to_string()];
    both.sort();
    assert_eq!((flagged_count, stale), (json!(2), both));

    // A signal referencing one: only the other stays stale.
    ingest_referencing(&h, &key, kept).await;
    let only_flagged = (json!(1), vec![flagged.to_string()]);
    assert_eq!(consolidate().await, only_flagged);

    // Another owner's signals reference nothing of this owner (its ids are its own).
    let (_, stranger) = h.writer(Tier::Pro).await;
    let mif = json!({
        "mif_version": "0.1", "provenance": {}, "identity_kernel": {},
        "decisions": [{"id": flagged, "decision": "Host on bare metal", "product_name": "web",
                       "decided_at": old}],
    });
    h.api(&stranger)
        .post(
            "/api/v1/memory/import-mif",
            &json!({"mif": mif, "merge_strategy": "merge", "apply_immediately": true}),
        )
        .expect(200)
        .await;
    ingest_referencing(&h, &stranger, flagged).await;
    assert_eq!(consolidate().await, only_flagged);
    h.stop().await;
}

#[tokio::test]
async fn a_producer_batch_names_a_workspace_of_the_caller_or_answers_404() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let (_, other) = h.writer(Tier::Free).await;
    let theirs = h
        .api(&other)
        .post("/api/v1/workspaces", &json!({"name": "theirs"}))
        .expect(201)
        .await;
    let theirs = theirs["id"].as_str().unwrap().to_owned();
    for workspace in [theirs.clone(), Uuid::now_v7().to_string()] {
        let body = json!({"workspaceId": workspace, "signals": [producer("w")]});
        expect_error(ingest(&h, &key, &body).await, 404, "NOT_FOUND").await;
    }
    let count = h
        .query("SELECT count(*) FROM producer_signals WHERE dedup_key = 'w'")
        .await;
    assert_eq!(count, ["0"]);

    // Absent: the credential's active workspace is recorded.
    let mine = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "mine"}))
        .expect(201)
        .await;
    let mine = mine["id"].as_str().unwrap().to_owned();
    h.api(&key)
        .patch("/api/v1/scope", &json!({"workspace_id": mine}))
        .expect(200)
        .await;
    let res = ingest(&h, &key, &json!({"signals": [producer("active")]})).await;
    assert_eq!(res.status(), 201);
    let id = ids(&json(res).await).remove(0);
    let row = h
        .query(&format!(
            "SELECT workspace_id::text FROM producer_signals WHERE id = '{id}'"
        ))
        .await;
    assert_eq!(row, [mine]);
}
