//! Leads (`lead_queued` intakes): each is a pending lead, listed by `GET /leads`, announced
//! by a producer signal on arrival, and resolved once (accepted or dismissed) by a
//! first-party credential only.

use auth::{CredentialKind, Scope};
use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

async fn lead(h: &Harness, key: &str, body: Value) -> Value {
    let answer = h
        .api(key)
        .post("/api/v1/connectors/intake", &body)
        .expect(200)
        .await;
    assert_eq!(answer["outcome"], "lead_queued", "{answer}");
    assert!(answer.get("proposal_id").is_none(), "{answer}");
    answer
}

async fn leads(h: &Harness, key: &str, query: &str) -> Vec<Value> {
    let page = h
        .api(key)
        .get(&format!("/api/v1/leads{query}"))
        .expect(200)
        .await;
    page["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_lead_is_listed_signalled_and_resolved_once_by_a_first_party_credential() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Free).await;
    let (_, connector) = h
        .key(
            user,
            CredentialKind::MemoryOAuth,
            &[Scope::Read, Scope::Propose],
        )
        .await;

    let content = "Jane from Acme wants a demo";
    let first = lead(
        &h,
        &connector,
        json!({"raw_content": content, "ai_vendor": "claude", "requested_capability": "Lead.capture"}),
    )
    .await;
    let lead_id = first["lead_id"].as_str().expect("a lead id").to_owned();
    let second = lead(
        &h,
        &connector,
        json!({"raw_content": "Bob wants pricing", "requested_capability": "lead"}),
    )
    .await;
    let second_id = second["lead_id"].as_str().unwrap().to_owned();
    // A proposal is not a lead.
    h.api(&connector)
        .post("/api/v1/connectors/intake", &json!({"raw_content": "note"}))
        .expect(200)
        .await;

    // Listed (read scope, the connector too), oldest first, exactly as sent.
    let listed = leads(&h, &connector, "").await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    let shown = &listed[0];
    assert_eq!(shown["id"], lead_id.as_str());
    assert_eq!(shown["status"], "pending");
    assert_eq!(shown["ledger_id"], first["ledger_id"]);
    assert_eq!(shown["ai_vendor"], "claude");
    assert_eq!(shown["requested_capability"], "Lead.capture");
    assert_eq!(shown["raw_content"], content);
    assert_eq!(shown["decided_at"], Value::Null);

    // Its arrival is a producer signal of its own.
    let signal_id = shown["signal_id"].as_str().expect("a signal").to_owned();
    let signal = h
        .query(&format!(
            "SELECT concat_ws('|', user_id, signal_type, source, title, description, \
             payload->>'lead_id', count) FROM producer_signals WHERE id = '{signal_id}'"
        ))
        .await;
    assert_eq!(
        signal,
        [format!(
            "{user}|lead_queued|connector:claude|A claude connector queued a lead (Lead.capture)|{content}|{lead_id}|1"
        )]
    );
    assert_eq!(
        h.query("SELECT count(*) FROM producer_signals").await,
        ["2"]
    );
    // A replayed intake answers the same lead and writes no second signal.
    for _ in 0..2 {
        let replay = h
            .api(&connector)
            .post(
                "/api/v1/connectors/intake",
                &json!({"raw_content": "Carol", "requested_capability": "lead"}),
            )
            .header("Idempotency-Key", "lead-1")
            .expect(200)
            .await;
        assert!(replay["lead_id"].is_string(), "{replay}");
    }
    assert_eq!(
        h.query("SELECT count(*) FROM producer_signals").await,
        ["3"]
    );
    assert_eq!(h.query("SELECT count(*) FROM leads").await, ["3"]);

    // A connector token never resolves; another owner finds nothing.
    for action in ["accept", "dismiss"] {
        let path = format!("/api/v1/leads/{lead_id}/{action}");
        let res = h.api(&connector).post(&path, &json!({})).await;
        expect_error(res, 403, "FORBIDDEN").await;
        let (_, stranger) = h.writer(Tier::Free).await;
        let res = h.api(&stranger).post(&path, &json!({})).await;
        expect_error(res, 404, "NOT_FOUND").await;
        assert!(leads(&h, &stranger, "").await.is_empty());
    }
    assert_eq!(leads(&h, &key, "?status=pending").await.len(), 3);

    // The first-party key accepts once: a feed item records it; nothing else is applied.
    let accepted = h
        .api(&key)
        .post(&format!("/api/v1/leads/{lead_id}/accept"), &json!({}))
        .expect(200)
        .await;
    assert_eq!(accepted["status"], "accepted");
    assert!(accepted["decided_at"].is_string());
    for action in ["accept", "dismiss"] {
        let res = h
            .api(&key)
            .post(&format!("/api/v1/leads/{lead_id}/{action}"), &json!({}))
            .await;
        let message = expect_error(res, 409, "VALIDATION_ERROR").await;
        assert!(message.contains("already accepted"), "{message}");
    }
    let feed = h
        .api(&key)
        .get("/api/v1/intelligence/feed")
        .expect(200)
        .await;
    let items = feed["data"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{feed}");
    assert_eq!(items[0]["type"], "decision", "{feed}");
    let summary = items[0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Accepted a claude connector lead (Lead.capture): Jane"),
        "{summary}"
    );
    assert_eq!(
        h.query("SELECT count(*) FROM free_form_entries").await,
        ["0"]
    );

    let dismissed = h
        .api(&key)
        .post(&format!("/api/v1/leads/{second_id}/dismiss"), &json!({}))
        .expect(200)
        .await;
    assert_eq!(dismissed["status"], "dismissed");
    let by_status = |s: &'static str| {
        let h = &h;
        let key = key.clone();
        async move { leads(h, &key, &format!("?status={s}")).await.len() }
    };
    assert_eq!(by_status("accepted").await, 1);
    assert_eq!(by_status("dismissed").await, 1);
    assert_eq!(by_status("pending").await, 1);
    // Paging and the rules of the query.
    let page = h.api(&key).get("/api/v1/leads?limit=1").expect(200).await;
    assert_eq!(page["data"][0]["id"], lead_id.as_str());
    let next = page["next_cursor"].as_str().expect("a cursor");
    let page = h
        .api(&key)
        .get(&format!("/api/v1/leads?limit=1&cursor={next}"))
        .expect(200)
        .await;
    assert_eq!(page["data"][0]["id"], second_id.as_str());
    for bad in ["?status=won", "?limit=0", "?unknown=1"] {
        let res = h.api(&key).get(&format!("/api/v1/leads{bad}")).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    h.stop().await;
}
