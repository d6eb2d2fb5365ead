//! Inbox drafts: every answer of the lookup (by permanent id, then legacy id; freshness by
//! message time), and the strict replace body.

use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

const ACCOUNT: &str = "Owner@Example.com";
/// Gmail's permanent id `thread-f:1781234567890123456` names this hexadecimal thread id.
const THREAD_HEX: &str = "18B83766F0BCBAC0";
const THREAD_PERM: &str = "thread-f:1781234567890123456";
const OTHER_HEX: &str = "abc123";
const AT: &str = "2026-03-01T10:00:00Z";

fn thread(id: &str, latest_message_at: &str, tone: &str) -> Value {
    json!({
        "thread_id": id,
        "latest_message_id": "FFEE01",
        "latest_message_at": latest_message_at,
        "generated_at": "2026-03-01T10:05:00Z",
        "why": format!("{tone} reply to the pricing question"),
        "drafts": [{"tone": tone, "text": format!("A {tone} answer.")},
                   {"tone": "brief", "text": "Thanks, will do."}],
    })
}

fn put_body(threads: Vec<Value>) -> Value {
    json!({"account": {"email": ACCOUNT}, "drafts": threads})
}

async fn lookup(h: &Harness, key: &str, query: &str) -> Value {
    h.api(key)
        .get(&format!(
            "/api/v1/inbox/drafts?account_email=owner%40example.com&{query}"
        ))
        .expect(200)
        .await
}

#[tokio::test]
async fn every_lookup_answer() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Free).await;
    let api = h.api(&key);

    // Nothing stored: no_draft, about the id looked up first.
    let answer = lookup(
        &h,
        &key,
        &format!(
            "thread_perm_id={THREAD_PERM}&legacy_thread_id={THREAD_HEX}&latest_message_at={AT}"
        ),
    )
    .await;
    assert_eq!(
        answer,
        json!({"state": "no_draft", "matched_on": "thread_perm_id"})
    );
    let answer = lookup(&h, &key, &format!("legacy_thread_id={THREAD_HEX}")).await;
    assert_eq!(
        answer,
        json!({"state": "no_draft", "matched_on": "legacy_thread_id"})
    );

    let stored = api
        .put(
            "/api/v1/inbox/drafts",
            &put_body(vec![
                thread(THREAD_HEX, AT, "warm"),
                thread(OTHER_HEX, AT, "formal"),
            ]),
        )
        .expect(200)
        .await;
    assert_eq!(stored, json!({"upserted": 2, "deleted": 0}));

    // The permanent id finds the thread by its number; the stored message is as recent.
    let answer = lookup(
        &h,
        &key,
        &format!("thread_perm_id={THREAD_PERM}&latest_message_at=2026-03-01T10%3A00%3A00Z"),
    )
    .await;
    assert_eq!(
        answer,
        json!({
            "state": "draft_available",
            "matched_on": "thread_perm_id",
            "drafts": [{"tone": "warm", "text": "A warm answer."}, {"tone": "brief", "text": "Thanks, will do."}],
            "why": "warm reply to the pricing question",
            "latest_message_at": "2026-03-01T10:00:00Z",
            "generated_at": "2026-03-01T10:05:00Z",
        })
    );
    // The legacy id (any case), with an older message: still available. The message id is
    // never compared (freshness is by time).
    let answer = lookup(&h, &key, "legacy_thread_id=18b83766f0bcbac0&message_id=000000&latest_message_at=2026-03-01T09%3A00%3A00Z").await;
    assert_eq!(answer["state"], "draft_available", "{answer}");
    assert_eq!(answer["matched_on"], "legacy_thread_id");
    // A permanent id that names no stored thread falls back to the legacy id.
    let answer = lookup(
        &h,
        &key,
        &format!(
            "thread_perm_id=thread-a%3Ar-42&legacy_thread_id={THREAD_HEX}&latest_message_at={AT}"
        ),
    )
    .await;
    assert_eq!(
        (answer["state"].as_str(), answer["matched_on"].as_str()),
        (Some("draft_available"), Some("legacy_thread_id"))
    );

    // A newer message than the stored one: the drafts are stale.
    let answer = lookup(
        &h,
        &key,
        &format!("thread_perm_id={THREAD_PERM}&latest_message_at=2026-03-01T10%3A00%3A01Z"),
    )
    .await;
    assert_eq!(
        answer,
        json!({"state": "no_draft", "matched_on": "thread_perm_id"})
    );

    // No message time: indeterminate, the matched set shown for the caller to judge.
    let answer = lookup(&h, &key, &format!("thread_perm_id={THREAD_PERM}")).await;
    assert_eq!(answer["state"], "indeterminate", "{answer}");
    assert_eq!(answer["matched_on"], "thread_perm_id");
    assert_eq!(answer["why"], "warm reply to the pricing question");
    assert_eq!(answer["drafts"].as_array().unwrap().len(), 2);

    // The two ids name different stored threads: indeterminate, nothing shown.
    let answer = lookup(
        &h,
        &key,
        &format!(
            "thread_perm_id={THREAD_PERM}&legacy_thread_id={OTHER_HEX}&latest_message_at={AT}"
        ),
    )
    .await;
    assert_eq!(
        answer,
        json!({"state": "indeterminate", "matched_on": null})
    );

    // Another account of the caller, another user, the caller's test environment: nothing.
    let res = api
        .get(&format!(
            "/api/v1/inbox/drafts?account_email=other%40example.com&legacy_thread_id={THREAD_HEX}"
        ))
        .expect(200)
        .await;
    assert_eq!(res["state"], "no_draft");
    let (_, stranger) = h.writer(Tier::Free).await;
    let (_, test_env) = h.test_writer(user).await;
    for other in [&stranger, &test_env] {
        let answer = lookup(&h, other, &format!("legacy_thread_id={THREAD_HEX}")).await;
        assert_eq!(answer["state"], "no_draft", "{answer}");
    }

    // Neither thread id: 400 naming the first.
    let message = expect_error(
        api.get("/api/v1/inbox/drafts?account_email=owner%40example.com&legacy_thread_id=")
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.starts_with("thread_perm_id"), "{message}");
    let message = expect_error(
        api.get("/api/v1/inbox/drafts?account_email=not-an-email&legacy_thread_id=ab")
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.starts_with("account_email"), "{message}");
    h.stop().await;
}

#[tokio::test]
async fn replacing_keeps_fresher_sets_and_deletes_absent_threads() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Free).await;
    let api = h.api(&key);
    let put = async |body: Value| api.put("/api/v1/inbox/drafts", &body).expect(200).await;
    put(put_body(vec![
        thread("a1", AT, "warm"),
        thread("b2", AT, "warm"),
        thread("c3", AT, "warm"),
    ]))
    .await;

    // An older set for a stored thread is not written (freshness by message time); without
    // `replace` the absent threads stay.
    let mut body = put_body(vec![
        thread("A1", "2026-02-01T00:00:00Z", "stale"),
        thread("d4", AT, "new"),
    ]);
    body["replace"] = json!(false);
    assert_eq!(put(body).await, json!({"upserted": 1, "deleted": 0}));
    let answer = lookup(&h, &key, "legacy_thread_id=a1").await;
    assert_eq!(answer["why"], "warm reply to the pricing question");

    // A newer one is; `replace` (the default) deletes every other stored thread of the account.
    let newer = thread("0a1", "2026-03-02T00:00:00Z", "fresh");
    assert_eq!(
        put(put_body(vec![newer])).await,
        json!({"upserted": 1, "deleted": 3})
    );
    let answer = lookup(
        &h,
        &key,
        "legacy_thread_id=A1&latest_message_at=2026-03-02T00%3A00%3A00Z",
    )
    .await;
    assert_eq!(answer["state"], "draft_available");
    assert_eq!(answer["why"], "fresh reply to the pricing question");
    for gone in ["b2", "c3", "d4"] {
        let answer = lookup(&h, &key, &format!("legacy_thread_id={gone}")).await;
        assert_eq!(answer["state"], "no_draft", "{gone}: {answer}");
    }
    // An empty replace empties the account.
    assert_eq!(
        put(put_body(vec![])).await,
        json!({"upserted": 0, "deleted": 1})
    );
    h.stop().await;
}

#[tokio::test]
async fn the_replace_body_is_strict() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Free).await;
    let api = h.api(&key);
    let good = thread("abc", AT, "warm");
    let with = |path: &[&str], value: Value| {
        let mut body = put_body(vec![good.clone()]);
        let mut at = &mut body;
        for step in &path[..path.len() - 1] {
            at = match step.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*step],
            };
        }
        at[path[path.len() - 1]] = value;
        body
    };
    let too_many: Vec<Value> = (0..51)
        .map(|i| thread(&format!("{i:x}"), AT, "warm"))
        .collect();
    let six = Value::Array(vec![json!({"tone": "a", "text": "b"}); 6]);
    let cases = [
        (with(&["extra"], json!(1)), "extra"),
        (with(&["account", "name"], json!("x")), "account.name"),
        (with(&["drafts", "0", "note"], json!("x")), "drafts[0].note"),
        (
            with(&["drafts", "0", "drafts", "0", "emoji"], json!("x")),
            "drafts[0].drafts[0].emoji",
        ),
        (
            with(&["drafts", "0", "thread_id"], json!("xyz")),
            "drafts[0].thread_id",
        ),
        (
            with(&["drafts", "0", "thread_id"], json!("a".repeat(65))),
            "drafts[0].thread_id",
        ),
        (
            with(&["drafts", "0", "latest_message_id"], json!("msg-1")),
            "drafts[0].latest_message_id",
        ),
        (
            with(&["drafts", "0", "latest_message_at"], json!("yesterday")),
            "drafts[0].latest_message_at",
        ),
        (
            with(&["drafts", "0", "why"], json!("w".repeat(2001))),
            "drafts[0].why",
        ),
        (
            with(&["drafts", "0", "drafts"], json!([])),
            "drafts[0].drafts",
        ),
        (with(&["drafts", "0", "drafts"], six), "drafts[0].drafts"),
        (
            with(
                &["drafts", "0", "drafts", "0", "tone"],
                json!("t".repeat(121)),
            ),
            "drafts[0].drafts[0].tone",
        ),
        (
            with(&["account", "email"], json!("nobody")),
            "account.email",
        ),
        (put_body(too_many), "drafts"),
        (
            put_body(vec![good.clone(), thread("0ABC", AT, "again")]),
            "drafts[1].thread_id",
        ),
        (json!({"account": {"email": ACCOUNT}}), "drafts"),
    ];
    for (body, field) in cases {
        let message = expect_error(
            api.put("/api/v1/inbox/drafts", &body).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(
            message.starts_with(&format!("{field}:")),
            "{field}: {message}"
        );
    }
    // Nothing was stored by any of them.
    let answer = lookup(&h, &key, "legacy_thread_id=abc").await;
    assert_eq!(answer["state"], "no_draft");
    // `replace` must be a boolean.
    let message = expect_error(
        api.put("/api/v1/inbox/drafts", &with(&["replace"], json!("yes")))
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.starts_with("replace"), "{message}");
    h.stop().await;
}
