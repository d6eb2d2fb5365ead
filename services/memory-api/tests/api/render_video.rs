//! Video render routes without a worker: the tier, the limits, and queued jobs of the caller.
//! Rendering itself is tested across the real binaries (tests/e2e, `render_video`).

use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> reqwest::Response {
    h.post(path)
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_video_routes_need_the_pro_tier() {
    let (h, _, free) = Harness::with_writer(Tier::Free).await;
    let body = json!({"brief": "A short brief."});
    for path in ["/api/v1/render/video", "/api/v1/render/video/jobs"] {
        expect_error(
            post(&h, &free, path, body.clone()).await,
            403,
            "TIER_REQUIRED",
        )
        .await;
    }
    let res = h
        .api(&free)
        .get(&format!(
            "/api/v1/render/video/jobs/{}/status",
            uuid::Uuid::now_v7()
        ))
        .await;
    expect_error(res, 403, "TIER_REQUIRED").await;
}

#[tokio::test]
async fn out_of_range_fields_are_refused_naming_them() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let long = "x".repeat(8001);
    let cases = [
        (json!({"brief": "ab"}), "brief"),
        (json!({"brief": "   ab   "}), "brief"),
        (json!({"brief": long}), "brief"),
        (json!({"brief": "A brief.", "duration": 4}), "duration"),
        (json!({"brief": "A brief.", "duration": 181}), "duration"),
        (json!({"brief": "A brief.", "format": "vertical"}), "format"),
        (
            json!({"brief": "A brief.", "template": "t".repeat(121)}),
            "template",
        ),
        (
            json!({"brief": "A brief.", "product_id": "p".repeat(121)}),
            "product_id",
        ),
        (
            json!({"brief": "A brief.", "run_id": "not-a-uuid"}),
            "run_id",
        ),
        (json!({"brief": "A brief.", "brand": "red"}), "brand"),
        (
            json!({"brief": "A brief.", "brand": {"logo": "https://example.com/logo.png"}}),
            "brand.logo",
        ),
        (
            json!({"brief": "A brief.", "brand": {"music": "data:image/png;base64,iVBORw0KGgo="}}),
            "brand.music",
        ),
        (
            json!({"brief": "A brief.", "brand": {"narration": "off"}}),
            "brand.narration",
        ),
        (
            json!({"brief": "A brief.", "brand": {"cta": "c".repeat(121)}}),
            "brand.cta",
        ),
    ];
    for (body, field) in cases {
        let message = expect_error(
            post(&h, &key, "/api/v1/render/video/jobs", body.clone()).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(message.contains(field), "{body}: {message}");
    }
}

#[tokio::test]
async fn a_queued_job_is_the_callers_own_and_keeps_no_brand() {
    let (h, user, key) = Harness::with_writer(Tier::Pro).await;
    let body = json!({
        "brief": "Meet Acme. It ships fast!",
        "format": "square_video",
        "duration": 8,
        "template": "launch",
        "product_id": "acme",
        "brand": {"primary": "#abc", "secret_note": "not kept"},
    });
    let res = post(&h, &key, "/api/v1/render/video/jobs", body).await;
    assert_eq!(res.status(), 202);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let job = json(res).await;
    assert_eq!(job["status"], "queued");
    assert_eq!(job["format"], "square_video");
    assert_eq!(job["duration"], 8);
    assert_eq!(job["template"], "launch");
    assert_eq!(job["product_id"], "acme");
    assert!(job["asset_url"].is_null() && job["cost_cents"].is_null());
    let id = job["jobId"].as_str().unwrap();
    assert_eq!(location, format!("/api/v1/render/video/jobs/{id}/status"));
    let polled = json(h.api(&key).get(&location).await).await;
    assert_eq!(polled["jobId"], id);
    assert_eq!(polled["status"], "queued");
    let stored = h
        .query(&format!(
            "SELECT input::text FROM render_video_jobs WHERE id = '{id}'"
        ))
        .await;
    assert!(stored[0].contains("#aabbcc"), "{stored:?}");
    assert!(
        !stored[0].contains("not kept"),
        "the brand is not stored: {stored:?}"
    );

    // Another owner (and the same owner's test environment) sees nothing.
    let (_, other) = h.writer(Tier::Pro).await;
    expect_error(h.api(&other).get(&location).await, 404, "NOT_FOUND").await;
    let (_, test_key) = h.test_writer(user).await;
    expect_error(h.api(&test_key).get(&location).await, 404, "NOT_FOUND").await;
}
