//! Project signals: the signature over the raw body, a rotated secret's grace, bearer write keys,
//! `external_id` repeats and anomalies in the feed.

use super::*;

#[tokio::test]
async fn a_signature_over_the_raw_body_authenticates_a_project_signal() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let (project, secret) = product(&h, &key, "atlas").await;
    let (other_project, other_secret) = product(&h, &key, "globe").await;

    // Valid: the raw bytes as sent (odd spacing included) are what is signed.
    let raw = br#"{ "event_type": "deploy",  "title": "v2 shipped", "body": {"sha": "abc"} }"#;
    let ts = now();
    let first_ts = ts.clone();
    let res = signed_raw(
        &h,
        &project,
        raw,
        Some(&signature(&secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    assert_eq!(body["accepted"], true);
    assert_eq!(body["duplicate"], false);
    let id = body["signal_id"].as_str().unwrap().to_owned();
    assert_eq!(body.as_object().unwrap().len(), 3, "{body}");
    let stored = h
        .query(&format!(
            "SELECT concat_ws('|', product_id, event_type, title, severity, body->>'sha', \
             received_via) FROM project_signals WHERE id = '{id}'"
        ))
        .await;
    assert_eq!(
        stored,
        [format!("{project}|deploy|v2 shipped|info|abc|signature")]
    );

    // A wrong secret (another product's, or the right one for another product).
    let res = signed_raw(
        &h,
        &project,
        raw,
        Some(&signature(&other_secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    let message = expect_unauthorized(res).await;
    assert!(message.contains("does not match"), "{message}");
    assert!(!message.contains(&secret) && !message.contains(&other_secret));
    let res = signed_raw(
        &h,
        &other_project,
        raw,
        Some(&signature(&secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    expect_unauthorized(res).await;

    // The body altered after signing (one byte), or the timestamp changed.
    let altered = br#"{ "event_type": "deploy",  "title": "v3 shipped", "body": {"sha": "abc"} }"#;
    let res = signed_raw(
        &h,
        &project,
        altered,
        Some(&signature(&secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    expect_unauthorized(res).await;
    let later = (Utc::now().timestamp() + 1).to_string();
    let res = signed_raw(
        &h,
        &project,
        raw,
        Some(&signature(&secret, &ts, raw)),
        Some(&later),
    )
    .await;
    expect_unauthorized(res).await;

    // Stale or future timestamps beyond 300 s, even correctly signed. The clock only moves
    // on while the request travels, so a past offset stays stale however slow the machine;
    // a future one is kept far (one second past the edge became valid when a second ticked
    // between the test's clock and the server's). The exact edges are `signing`'s unit tests.
    for offset in [-301, 3_600, -100_000] {
        let ts = (Utc::now().timestamp() + offset).to_string();
        let res = signed_raw(
            &h,
            &project,
            raw,
            Some(&signature(&secret, &ts, raw)),
            Some(&ts),
        )
        .await;
        let message = expect_unauthorized(res).await;
        assert!(message.contains("300 seconds"), "{offset}: {message}");
    }
    // Inside the tolerance (with slack for a busy machine).
    let ts = (Utc::now().timestamp() - 200).to_string();
    let res = signed_raw(
        &h,
        &project,
        raw,
        Some(&signature(&secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    let inside = json_ok(res).await;

    // The same signed request again (a replay within the tolerance) records nothing and
    // answers the first signal as a duplicate.
    for _ in 0..3 {
        let res = signed_raw(
            &h,
            &project,
            raw,
            Some(&signature(&secret, &ts, raw)),
            Some(&ts),
        )
        .await;
        let replay = json_ok(res).await;
        assert_eq!(replay["duplicate"], true, "{replay}");
        assert_eq!(replay["signal_id"], inside["signal_id"], "{replay}");
    }
    let res = signed_raw(
        &h,
        &project,
        raw,
        Some(&signature(&secret, &first_ts, raw)),
        Some(&first_ts),
    )
    .await;
    let replay = json_ok(res).await;
    assert_eq!(replay["duplicate"], true, "{replay}");
    assert_eq!(replay["signal_id"], id.as_str(), "{replay}");
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM project_signals WHERE product_id = '{project}'")
        )
        .await,
        2
    );

    // Malformed or missing headers.
    let good = signature(&secret, &ts, raw);
    for (sig, stamp) in [
        (Some(good.trim_start_matches("sha256=")), Some(ts.as_str())),
        (Some("sha256=xyz"), Some(ts.as_str())),
        (Some(good.as_str()), Some("soon")),
        (Some(good.as_str()), None),
        (None, Some(ts.as_str())),
        (None, None),
    ] {
        expect_unauthorized(signed_raw(&h, &project, raw, sig, stamp).await).await;
    }
    // An unknown product answers like a wrong signature.
    let unknown = Uuid::now_v7().to_string();
    let res = signed_raw(
        &h,
        &unknown,
        raw,
        Some(&signature(&secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    expect_unauthorized(res).await;

    // Signed but invalid: 400 naming the field, with the rate-limit headers (it was counted).
    let res = signed(&h, &project, &secret, &json!({"event_type": "deploy"})).await;
    assert_rate_limit_headers(&res);
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.starts_with("title"), "{message}");
    let res = signed(
        &h,
        &project,
        &secret,
        &json!({"event_type": "x", "title": "t".repeat(201)}),
    )
    .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.starts_with("title"), "{message}");
    let res = signed(
        &h,
        &project,
        &secret,
        &json!({"event_type": "x", "title": "t", "severity": "fatal"}),
    )
    .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.starts_with("severity"), "{message}");
    let raw = b"{not json";
    let ts = now();
    let res = signed_raw(
        &h,
        &project,
        raw,
        Some(&signature(&secret, &ts, raw)),
        Some(&ts),
    )
    .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;

    assert_eq!(count(&h, "SELECT count(*) FROM project_signals").await, 2);
    h.stop().await;
}

#[tokio::test]
async fn a_rotated_secret_keeps_verifying_for_24_hours_only() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let (project, old) = product(&h, &key, "atlas").await;
    let rotated = h
        .api(&key)
        .post("/api/v1/products/atlas/signing-secret", &json!({}))
        .expect(200)
        .await;
    let new = rotated["signing_secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    let signal = json!({"event_type": "deploy", "title": "rotation"});

    // During the grace period both verify.
    assert_eq!(signed(&h, &project, &new, &signal).await.status(), 200);
    assert_eq!(signed(&h, &project, &old, &signal).await.status(), 200);
    // 23 hours later still.
    h.exec(&format!(
        "UPDATE products SET signing_secret_rotated_at = now() - interval '23 hours' \
         WHERE id = '{project}'"
    ))
    .await;
    assert_eq!(signed(&h, &project, &old, &signal).await.status(), 200);
    // After 24 hours only the new one.
    h.exec(&format!(
        "UPDATE products SET signing_secret_rotated_at = now() - interval '24 hours 1 minute' \
         WHERE id = '{project}'"
    ))
    .await;
    expect_unauthorized(signed(&h, &project, &old, &signal).await).await;
    assert_eq!(signed(&h, &project, &new, &signal).await.status(), 200);

    // A second rotation: the secret it replaces is the grace one, the first is gone.
    let newest = h
        .api(&key)
        .post("/api/v1/products/atlas/signing-secret", &json!({}))
        .expect(200)
        .await["signing_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(signed(&h, &project, &newest, &signal).await.status(), 200);
    assert_eq!(signed(&h, &project, &new, &signal).await.status(), 200);
    expect_unauthorized(signed(&h, &project, &old, &signal).await).await;
    // Stored sealed: no secret in plaintext in the table.
    let stored = h
        .query(&format!(
            "SELECT encode(signing_secret, 'escape') || encode(previous_signing_secret, 'escape') \
             FROM products WHERE id = '{project}'"
        ))
        .await;
    for secret in [&old, &new, &newest] {
        assert!(!stored[0].contains(secret.as_str()));
    }
    h.stop().await;
}

#[tokio::test]
async fn a_write_key_needs_no_signature_and_sees_only_its_own_products() {
    let (h, user, key) = Harness::with_writer(Tier::Free).await;
    let (project, _) = product(&h, &key, "atlas").await;
    let signal = json!({"event_type": "deploy", "title": "with a key", "external_id": "k-1"});

    let res = h
        .post(&format!("/api/v1/ingest/{project}"))
        .bearer_auth(&key)
        .json(&signal)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    assert_eq!(body["duplicate"], false);
    let id = body["signal_id"].as_str().unwrap().to_owned();
    assert_eq!(
        h.query(&format!(
            "SELECT received_via FROM project_signals WHERE id = '{id}'"
        ))
        .await,
        ["bearer"]
    );

    // With a key, signature headers are not consulted (a wrong one changes nothing).
    let body = h
        .api(&key)
        .post(&format!("/api/v1/ingest/{project}"), &signal)
        .header("X-Memory-Signature", format!("sha256={}", "0".repeat(64)))
        .header("X-Memory-Timestamp", "1")
        .expect(200)
        .await;
    assert_eq!(body["duplicate"], true);
    assert_eq!(body["signal_id"], id.as_str());
    // …only their documented lengths are checked.
    let long = format!("sha256={}", "0".repeat(65));
    for (name, value) in [
        ("X-Memory-Signature", long.as_str()),
        ("X-Memory-Signature", ""),
        ("X-Memory-Timestamp", ""),
        ("X-Memory-Timestamp", "1700000000000"),
    ] {
        let res = h
            .api(&key)
            .post(&format!("/api/v1/ingest/{project}"), &signal)
            .header(name, value)
            .await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(name), "{message}");
    }

    // A read-only key: 403; a bad key: 401 from the gate.
    let (_, reader) = h.reader(user).await;
    let res = h
        .api(&reader)
        .post(&format!("/api/v1/ingest/{project}"), &signal)
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h
        .api("mem_live_nope")
        .post(&format!("/api/v1/ingest/{project}"), &signal)
        .await;
    expect_error(res, 401, "UNAUTHORIZED").await;

    // Another owner's product, and the same user's test environment: 404, nothing written.
    let (_, stranger) = h.writer(Tier::Free).await;
    let res = h
        .api(&stranger)
        .post(&format!("/api/v1/ingest/{project}"), &signal)
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    let (_, test_key) = h.test_writer(user).await;
    let res = h
        .api(&test_key)
        .post(&format!("/api/v1/ingest/{project}"), &signal)
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    assert_eq!(count(&h, "SELECT count(*) FROM project_signals").await, 1);
    h.stop().await;
}

#[tokio::test]
async fn external_id_repeats_answer_the_first_signal_even_concurrently() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    let (project, secret) = product(&h, &key, "atlas").await;
    let (other, other_secret) = product(&h, &key, "globe").await;
    let signal = json!({"event_type": "build", "title": "failed", "severity": "error",
                        "external_id": "evt_1"});

    let first = json(signed(&h, &project, &secret, &signal).await).await;
    assert_eq!(first["duplicate"], false);
    // Repeated: signed, then with the key; the title differs, the id decides.
    let mut again = signal.clone();
    again["title"] = json!("failed again");
    let repeat = json(signed(&h, &project, &secret, &again).await).await;
    assert_eq!(repeat["duplicate"], true);
    assert_eq!(repeat["accepted"], true);
    assert_eq!(repeat["signal_id"], first["signal_id"]);
    let with_key = h
        .api(&key)
        .post(&format!("/api/v1/ingest/{project}"), &again)
        .expect(200)
        .await;
    assert_eq!(with_key["signal_id"], first["signal_id"]);
    // The same external_id on another product is another signal.
    let elsewhere = json(signed(&h, &other, &other_secret, &signal).await).await;
    assert_eq!(elsewhere["duplicate"], false);
    assert_ne!(elsewhere["signal_id"], first["signal_id"]);

    // Twenty at once with a new external_id: one signal, one anomaly.
    let mut concurrent = signal.clone();
    concurrent["external_id"] = json!("evt_2");
    let answers = futures_join(20, || signed(&h, &project, &secret, &concurrent)).await;
    let mut ids = std::collections::BTreeSet::new();
    let mut fresh = 0;
    for res in answers {
        assert_eq!(res.status(), 200);
        let body = json(res).await;
        ids.insert(body["signal_id"].as_str().unwrap().to_owned());
        fresh += usize::from(body["duplicate"] == false);
    }
    assert_eq!((ids.len(), fresh), (1, 1), "{ids:?}");
    assert_eq!(
        count(
            &h,
            "SELECT count(*) FROM project_signals WHERE external_id = 'evt_2'"
        )
        .await,
        1
    );
    // Anomalies: evt_1 on atlas, evt_1 on globe, evt_2 on atlas; never one per repeat.
    assert_eq!(
        count(&h, "SELECT count(*) FROM feed_items WHERE type = 'anomaly'").await,
        3
    );
    h.stop().await;
}

/// Runs `n` requests at once.
async fn futures_join<F, Fut>(n: usize, make: F) -> Vec<Response>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let futures: Vec<Fut> = (0..n).map(|_| make()).collect();
    futures_util::future::join_all(futures).await
}

#[tokio::test]
async fn error_and_critical_signals_are_anomalies_in_the_feed() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let (project, secret) = product(&h, &key, "atlas").await;
    for severity in ["info", "warning", "error", "critical"] {
        let signal = json!({"event_type": "latency", "title": format!("p99 {severity}"),
                            "severity": severity});
        assert_eq!(signed(&h, &project, &secret, &signal).await.status(), 200);
    }
    // The default severity is info.
    let signal = json!({"event_type": "latency", "title": "no severity"});
    assert_eq!(signed(&h, &project, &secret, &signal).await.status(), 200);
    let feed = h
        .api(&key)
        .get("/api/v1/intelligence/feed")
        .expect(200)
        .await;
    let anomalies: Vec<&Value> = feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "anomaly")
        .collect();
    assert_eq!(anomalies.len(), 2, "{feed}");
    assert_eq!(anomalies[0]["severity"], "critical");
    assert_eq!(anomalies[0]["summary"], "latency: p99 critical");
    assert_eq!(anomalies[0]["product_name"], "atlas");
    assert_eq!(anomalies[1]["severity"], "error");
    assert_eq!(
        h.query("SELECT severity FROM project_signals ORDER BY id DESC LIMIT 1")
            .await,
        ["info"]
    );
    // Another owner's feed has none of them.
    let (_, stranger) = h.writer(Tier::Free).await;
    let feed = h
        .api(&stranger)
        .get("/api/v1/intelligence/feed")
        .expect(200)
        .await;
    assert_eq!(feed["data"], json!([]));
    h.stop().await;
}

// ------------------------------------------------------------------ producer signals
