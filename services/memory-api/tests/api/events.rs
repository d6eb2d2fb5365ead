//! `POST /ingest/events` (idempotency, limits) and the AI cost telemetry of `ai_cost` events
//! (`GET /ai/costs`, `GET /ai/costs/{product}`).

use chrono::{DateTime, Days, Duration, NaiveTime, SecondsFormat, Utc};
use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

const EVENTS: &str = "/api/v1/ingest/events";

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn midnight_utc(days_ago: u64) -> DateTime<Utc> {
    Utc::now()
        .date_naive()
        .checked_sub_days(Days::new(days_ago))
        .unwrap()
        .and_time(NaiveTime::MIN)
        .and_utc()
}

fn cost_event(product: &str, model: &str, cost: Value, at: DateTime<Utc>) -> Value {
    json!({"event_type": "ai_cost", "occurred_at": rfc3339(at),
           "payload": {"product": product, "model": model, "cost_usd": cost,
                       "input_tokens": 100, "output_tokens": 10}})
}

async fn send_cost(
    h: &Harness,
    key: &str,
    product: &str,
    model: &str,
    cost: Value,
    at: DateTime<Utc>,
) {
    let body = cost_event(product, model, cost, at);
    let answer = h.api(key).post(EVENTS, &body).expect(201).await;
    assert_eq!(answer["deduplicated"], false, "{answer}");
}

/// The summary as text (to read its exact numbers) and as JSON.
async fn costs(h: &Harness, key: &str, path: &str) -> (String, Value) {
    let res = h.api(key).get(path).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    assert_rate_limit_headers(&res);
    let text = res.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).expect("JSON");
    (text, body)
}

async fn count(h: &Harness, sql: &str) -> i64 {
    h.query(sql).await[0].parse().unwrap()
}

#[tokio::test]
async fn an_event_is_recorded_and_a_repeated_key_answers_the_first_id() {
    let (h, user, key) = Harness::with_writer(Tier::Free).await;
    let body = json!({"event_type": " signup ", "severity": "warning", "idempotency_key": "k-1",
                      "external_id": "ext-1", "worker_type": "crm",
                      "occurred_at": "2026-01-02T03:04:05Z", "payload": {"plan": "pro"}});
    let res = h.api(&key).post(EVENTS, &body).await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    let first = json(res).await;
    assert_eq!(first["success"], true);
    assert_eq!(first["inserted"], 1);
    assert_eq!(first["deduplicated"], false);
    let id = first["event_id"].as_str().unwrap().to_owned();
    let stored = h
        .query(&format!(
            "SELECT concat_ws('|', event_type, severity, external_id, idempotency_key, worker_type, \
             payload::text, occurred_at AT TIME ZONE 'UTC') FROM events WHERE id = '{id}' AND user_id = '{user}'"
        ))
        .await;
    assert_eq!(
        stored,
        ["signup|warning|ext-1|k-1|crm|{\"plan\": \"pro\"}|2026-01-02 03:04:05"]
    );

    // The same key again, with another body: nothing recorded, the first id.
    let again = json!({"event_type": "other", "idempotency_key": "k-1", "payload": {"x": 1}});
    let repeat = h.api(&key).post(EVENTS, &again).expect(200).await;
    assert_eq!(
        repeat,
        json!({"success": true, "event_id": id, "inserted": 0, "deduplicated": true})
    );
    // A repeated external_id (under a new key) is the same event too.
    let by_external =
        json!({"event_type": "signup", "external_id": "ext-1", "idempotency_key": "k-2"});
    let repeat = h.api(&key).post(EVENTS, &by_external).expect(200).await;
    assert_eq!(repeat["event_id"], id.as_str());
    assert_eq!(repeat["deduplicated"], true);
    assert_eq!(count(&h, "SELECT count(*) FROM events").await, 1);

    // Defaults, and events without keys are never deduplicated.
    let plain = json!({"event_type": "page_view"});
    let a = h.api(&key).post(EVENTS, &plain).expect(201).await;
    let b = h.api(&key).post(EVENTS, &plain).expect(201).await;
    assert_ne!(a["event_id"], b["event_id"]);
    let defaults = h
        .query(&format!(
            "SELECT concat_ws('|', severity, payload::text, received_at - occurred_at < interval '1 minute') \
             FROM events WHERE id = '{}'",
            a["event_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(defaults, ["info|{}|t"]);

    // Keys belong to one owner: another user, and the same user's test environment, get
    // events of their own.
    let (_, other) = h.writer(Tier::Free).await;
    let (_, test_key) = h.test_writer(user).await;
    for key in [other, test_key] {
        let own = h.api(&key).post(EVENTS, &body).expect(201).await;
        assert_ne!(own["event_id"], id.as_str());
        assert_eq!(own["deduplicated"], false);
    }
    assert_eq!(
        count(
            &h,
            "SELECT count(*) FROM events WHERE idempotency_key = 'k-1'"
        )
        .await,
        3
    );
    h.stop().await;
}

#[tokio::test]
async fn concurrent_repeats_of_a_key_store_one_event() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    for (round, field) in [(0, "idempotency_key"), (1, "external_id")] {
        let mut body = cost_event("atlas", "m", json!(0.1), Utc::now());
        body[field] = json!(format!("concurrent-{round}"));
        let calls = (0..20).map(|_| {
            let api = h.api(&key);
            let body = body.clone();
            async move {
                let res = api.post(EVENTS, &body).await;
                let status = res.status().as_u16();
                (status, json(res).await)
            }
        });
        let answers = futures_util::future::join_all(calls).await;
        let created = answers.iter().filter(|(s, _)| *s == 201).count();
        let repeated = answers.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!((created, repeated), (1, 19), "{answers:?}");
        let first = answers.iter().find(|(s, _)| *s == 201).unwrap().1["event_id"].clone();
        for (status, answer) in &answers {
            assert_eq!(answer["event_id"], first);
            assert_eq!(answer["deduplicated"], *status == 200);
            assert_eq!(answer["inserted"], u8::from(*status == 201));
        }
        let n = count(
            &h,
            &format!("SELECT count(*) FROM events WHERE {field} = 'concurrent-{round}'"),
        )
        .await;
        assert_eq!(n, 1);
    }
    // One cost row per stored event: the repeats added no cost.
    assert_eq!(count(&h, "SELECT count(*) FROM ai_cost_events").await, 2);
    let (text, _) = costs(&h, &key, "/api/v1/ai/costs").await;
    assert!(text.contains("\"total_cost_usd\":0.2,"), "{text}");
    h.stop().await;
}

#[tokio::test]
async fn event_limits_answer_400_naming_the_field() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    let future = rfc3339(Utc::now() + Duration::hours(25));
    let cases = [
        (json!({}), "event_type"),
        (json!({"event_type": ""}), "event_type"),
        (json!({"event_type": "   "}), "event_type"),
        (json!({"event_type": "e".repeat(121)}), "event_type"),
        (json!({"event_type": 5}), "event_type"),
        (json!({"event_type": "e", "severity": "fatal"}), "severity"),
        (
            json!({"event_type": "e", "idempotency_key": "k".repeat(256)}),
            "idempotency_key",
        ),
        (
            json!({"event_type": "e", "idempotency_key": ""}),
            "idempotency_key",
        ),
        (
            json!({"event_type": "e", "external_id": "x".repeat(256)}),
            "external_id",
        ),
        (
            json!({"event_type": "e", "worker_type": "w".repeat(121)}),
            "worker_type",
        ),
        (
            json!({"event_type": "e", "occurred_at": "yesterday"}),
            "occurred_at",
        ),
        (
            json!({"event_type": "e", "occurred_at": "1969-12-31T23:59:59Z"}),
            "occurred_at",
        ),
        (
            json!({"event_type": "e", "occurred_at": future}),
            "occurred_at",
        ),
        (json!({"event_type": "e", "payload": [1]}), "payload"),
        (
            json!({"event_type": "e", "payload": {"big": "x".repeat(65_536)}}),
            "payload",
        ),
        (
            json!({"event_type": "e", "payload": {"a": "nul\u{0}"}}),
            "payload.a",
        ),
    ];
    for (body, field) in cases {
        let res = h.api(&key).post(EVENTS, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(field), "{field}: {message}");
    }
    let at_limits = json!({"event_type": "e".repeat(120), "idempotency_key": "k".repeat(255),
                           "external_id": "x".repeat(255), "worker_type": "w".repeat(120),
                           "severity": "critical", "occurred_at": "1970-01-01T00:00:00Z",
                           "payload": {"big": "x".repeat(65_000)}});
    h.api(&key).post(EVENTS, &at_limits).expect(201).await;
    let soon = json!({"event_type": "e", "occurred_at": rfc3339(Utc::now() + Duration::hours(23))});
    h.api(&key).post(EVENTS, &soon).expect(201).await;
    // Nothing refused was stored.
    assert_eq!(count(&h, "SELECT count(*) FROM events").await, 2);

    // Writing needs the write scope.
    let user = h.user(Tier::Free).await;
    let (_, reader) = h.reader(user).await;
    let res = h
        .api(&reader)
        .post(EVENTS, &json!({"event_type": "e"}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h.api(&reader).get("/api/v1/ai/costs").await;
    assert_eq!(res.status(), 200);
    h.stop().await;
}

#[tokio::test]
async fn ai_cost_payloads_are_checked_naming_the_member() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    let with = |payload: Value| json!({"event_type": "ai_cost", "payload": payload});
    let ok = json!({"product": "atlas", "model": "m", "cost_usd": 0.5});
    let mut cases = vec![
        (json!({"event_type": "ai_cost"}), "payload.product"),
        (
            with(json!({"model": "m", "cost_usd": 1})),
            "payload.product",
        ),
        (
            with(json!({"product": "p".repeat(101), "model": "m", "cost_usd": 1})),
            "payload.product",
        ),
        (
            with(json!({"product": "atlas", "cost_usd": 1})),
            "payload.model",
        ),
        (
            with(json!({"product": "atlas", "model": ""})),
            "payload.model",
        ),
        (
            with(json!({"product": "atlas", "model": "m"})),
            "payload.cost_usd",
        ),
    ];
    for bad_cost in [
        json!(-0.01),
        json!(-1),
        json!(100_000.01),
        json!(0.000_000_000_01),
        json!(1e300),
        json!("0.1e1"),
        json!("abc"),
        json!("-0.5"),
        json!(null),
        json!({"amount": 1}),
    ] {
        let mut payload = ok.clone();
        payload["cost_usd"] = bad_cost;
        cases.push((with(payload), "payload.cost_usd"));
    }
    for (member, bad) in [
        ("input_tokens", json!(-1)),
        ("input_tokens", json!(1.5)),
        ("output_tokens", json!(1_000_000_001u64)),
        ("output_tokens", json!("10")),
    ] {
        let mut payload = ok.clone();
        payload[member] = bad;
        cases.push((
            with(payload),
            if member == "input_tokens" {
                "payload.input_tokens"
            } else {
                "payload.output_tokens"
            },
        ));
    }
    for (body, field) in cases {
        let res = h.api(&key).post(EVENTS, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(field), "{field}: {body} {message}");
    }
    assert_eq!(count(&h, "SELECT count(*) FROM events").await, 0);

    // The extremes are accepted, as numbers or decimal strings; other event types carry any
    // payload.
    for cost in [
        json!(0),
        json!(100_000),
        json!("100000.0000000000"),
        json!(0.000_000_000_1),
        json!("0.0000000001"),
    ] {
        let mut payload = ok.clone();
        payload["cost_usd"] = cost;
        payload["output_tokens"] = json!(1_000_000_000u64);
        h.api(&key).post(EVENTS, &with(payload)).expect(201).await;
    }
    let other = json!({"event_type": "ai_cost_estimate", "payload": {"cost_usd": -5}});
    h.api(&key).post(EVENTS, &other).expect(201).await;
    let (text, body) = costs(&h, &key, "/api/v1/ai/costs").await;
    assert!(
        text.contains("\"total_cost_usd\":200000.0000000002,"),
        "{text}"
    );
    assert_eq!(body["event_count"], 5);
    assert_eq!(
        body["total_tokens"],
        json!({"input": 0, "output": 5_000_000_000u64})
    );
    h.stop().await;
}

#[tokio::test]
async fn cost_aggregates_add_up_exactly_by_model_and_by_day() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    let today = midnight_utc(0) + Duration::minutes(1);
    let yesterday = midnight_utc(1) + Duration::hours(12);
    // 0.1 + 0.2 is 0.30000000000000004 in floating point; ten times 0.1 is 0.9999999999999999.
    send_cost(&h, &key, "atlas", "model-a", json!(0.1), today).await;
    send_cost(&h, &key, "atlas", "model-a", json!(0.2), today).await;
    for _ in 0..10 {
        send_cost(&h, &key, "atlas", "model-b", json!(0.1), yesterday).await;
    }
    send_cost(&h, &key, "zephyr", "model-c", json!("0.0000000001"), today).await;
    send_cost(&h, &key, "zephyr", "model-a", json!(1.7), yesterday).await;

    let (text, body) = costs(&h, &key, "/api/v1/ai/costs?days=7").await;
    // total = 0.3 + 1 + 0.0000000001 + 1.7
    assert!(text.contains("\"total_cost_usd\":3.0000000001,"), "{text}");
    assert!(
        text.contains("{\"model\":\"model-a\",\"cost_usd\":2,"),
        "{text}"
    );
    assert!(
        text.contains("{\"model\":\"model-b\",\"cost_usd\":1,"),
        "{text}"
    );
    assert!(
        text.contains("{\"model\":\"model-c\",\"cost_usd\":0.0000000001,"),
        "{text}"
    );
    let day = |at: DateTime<Utc>| at.date_naive().to_string();
    assert!(
        text.contains(&format!(
            "{{\"date\":\"{}\",\"cost_usd\":2.7,",
            day(yesterday)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{{\"date\":\"{}\",\"cost_usd\":0.3000000001,",
            day(today)
        )),
        "{text}"
    );
    assert_eq!(body["product"], Value::Null);
    assert_eq!(body["event_count"], 14);
    assert_eq!(body["period_days"], 7);
    assert_eq!(body["total_tokens"], json!({"input": 1400, "output": 140}));
    let models: Vec<_> = body["by_model"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["model"].clone(),
                m["event_count"].clone(),
                m["input_tokens"].clone(),
            )
        })
        .collect();
    assert_eq!(
        models,
        [
            (json!("model-a"), json!(3), json!(300)),
            (json!("model-b"), json!(10), json!(1000)),
            (json!("model-c"), json!(1), json!(100)),
        ]
    );
    let days: Vec<_> = body["by_day"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["date"].clone(),
                d["event_count"].clone(),
                d["output_tokens"].clone(),
            )
        })
        .collect();
    assert_eq!(
        days,
        [
            (json!(day(yesterday)), json!(11), json!(110)),
            (json!(day(today)), json!(3), json!(30)),
        ]
    );

    // One product: only its events.
    let (text, body) = costs(&h, &key, "/api/v1/ai/costs/atlas?days=7").await;
    assert!(text.contains("\"total_cost_usd\":1.3,"), "{text}");
    assert!(
        text.contains("{\"model\":\"model-b\",\"cost_usd\":1,"),
        "{text}"
    );
    assert!(
        text.contains("{\"model\":\"model-a\",\"cost_usd\":0.3,"),
        "{text}"
    );
    assert_eq!(body["product"], "atlas");
    assert_eq!(body["event_count"], 12);
    assert_eq!(body["by_day"].as_array().unwrap().len(), 2);
    let (text, body) = costs(&h, &key, "/api/v1/ai/costs/zephyr?days=1").await;
    assert!(text.contains("\"total_cost_usd\":0.0000000001,"), "{text}");
    assert_eq!(body["event_count"], 1);
    h.stop().await;
}

#[tokio::test]
async fn the_days_window_is_whole_utc_days_ending_today() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    let millisecond = Duration::milliseconds(1);
    // Just inside and just outside each edge of a one-day and a two-day window.
    send_cost(&h, &key, "p", "m", json!(1), midnight_utc(0)).await;
    send_cost(&h, &key, "p", "m", json!(2), midnight_utc(0) - millisecond).await;
    send_cost(&h, &key, "p", "m", json!(4), midnight_utc(1)).await;
    send_cost(&h, &key, "p", "m", json!(8), midnight_utc(1) - millisecond).await;
    // Tomorrow (allowed: within 24 hours of the server's clock) is after the window.
    send_cost(
        &h,
        &key,
        "p",
        "m",
        json!(16),
        midnight_utc(0) + Duration::days(1),
    )
    .await;
    send_cost(&h, &key, "p", "m", json!(32), midnight_utc(400)).await;

    for (days, total, count) in [(1, "1", 1), (2, "7", 3), (3, "15", 4), (365, "15", 4)] {
        let (text, body) = costs(&h, &key, &format!("/api/v1/ai/costs?days={days}")).await;
        assert!(
            text.contains(&format!("\"total_cost_usd\":{total},")),
            "{days}: {text}"
        );
        assert_eq!(body["event_count"], count, "{days}");
        assert_eq!(body["period_days"], days);
        let start: DateTime<Utc> = body["period_start"].as_str().unwrap().parse().unwrap();
        let end: DateTime<Utc> = body["period_end"].as_str().unwrap().parse().unwrap();
        assert_eq!(start, midnight_utc(days - 1));
        assert_eq!(end, midnight_utc(0) + Duration::days(1));
        assert!(body["period_start"].as_str().unwrap().ends_with('Z'));
    }
    let (_, body) = costs(&h, &key, "/api/v1/ai/costs").await;
    assert_eq!(body["period_days"], 30);
    assert_eq!(body["event_count"], 4);
    for bad in ["0", "366", "-1", "x", ""] {
        let res = h
            .api(&key)
            .get(&format!("/api/v1/ai/costs?days={bad}"))
            .await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with("days"), "{message}");
        let res = h
            .api(&key)
            .get(&format!("/api/v1/ai/costs/p?days={bad}"))
            .await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    h.stop().await;
}

#[tokio::test]
async fn another_owners_costs_never_count_and_unknown_products_are_404() {
    let (h, user, key) = Harness::with_writer(Tier::Team).await;
    let (_, other) = h.writer(Tier::Team).await;
    let (_, test_key) = h.test_writer(user).await;
    let now = Utc::now();
    send_cost(&h, &key, "atlas", "m", json!(0.25), now).await;
    // The same product and model under another user and in the test environment.
    for k in [&other, &test_key] {
        send_cost(&h, k, "atlas", "m", json!(1000), now).await;
        send_cost(&h, k, "hidden", "m", json!(1000), now).await;
    }
    let (text, body) = costs(&h, &key, "/api/v1/ai/costs").await;
    assert!(text.contains("\"total_cost_usd\":0.25,"), "{text}");
    assert_eq!(body["event_count"], 1);
    let (text, _) = costs(&h, &key, "/api/v1/ai/costs/atlas").await;
    assert!(text.contains("\"total_cost_usd\":0.25,"), "{text}");
    let (text, body) = costs(&h, &other, "/api/v1/ai/costs").await;
    assert!(text.contains("\"total_cost_usd\":2000,"), "{text}");
    assert_eq!(body["event_count"], 2);

    // Unknown products: never named by the caller's product list or cost events. Another
    // owner's product is unknown too.
    for path in ["/api/v1/ai/costs/nothing", "/api/v1/ai/costs/hidden"] {
        let res = h.api(&key).get(path).await;
        expect_error(res, 404, "NOT_FOUND").await;
    }
    // A registered product without events: zeros.
    h.api(&key)
        .post("/api/v1/products", &json!({"name": "quiet"}))
        .expect(201)
        .await;
    let (text, body) = costs(&h, &key, "/api/v1/ai/costs/quiet").await;
    assert!(text.contains("\"total_cost_usd\":0,"), "{text}");
    assert_eq!(body["by_model"], json!([]));
    assert_eq!(body["by_day"], json!([]));
    assert_eq!(body["total_tokens"], json!({"input": 0, "output": 0}));
    assert_eq!(body["event_count"], 0);
    // A product named only by events long ago is known; its window is empty.
    send_cost(&h, &key, "old", "m", json!(3), midnight_utc(100)).await;
    let (text, body) = costs(&h, &key, "/api/v1/ai/costs/old?days=7").await;
    assert!(text.contains("\"total_cost_usd\":0,"), "{text}");
    assert_eq!(body["product"], "old");
    let (text, _) = costs(&h, &key, "/api/v1/ai/costs/old?days=365").await;
    assert!(text.contains("\"total_cost_usd\":3,"), "{text}");
    h.stop().await;
}
