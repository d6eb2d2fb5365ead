//! Model runs refuse early: on a deployment without a model (`MEMORY_LLM__BASE_URL` empty),
//! every route that queues a model run, or stores a competitor watch that would, answers 422
//! `LLM_NOT_CONFIGURED` at the request, even for a caller with a model credential, and
//! records nothing.

use rate_limit::policy::Tier;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn without_a_deployment_model_every_model_run_is_refused_at_the_request() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Free).await;
    h.api(&key)
        .post(
            "/api/v1/byok",
            &json!({"service": "openai", "label": "mine", "key": "sk-own-0123456789abcdef"}),
        )
        .expect(201)
        .await;
    for (path, body) in [
        ("/api/v1/content/brief", json!({"topic": "Spring seeds"})),
        (
            "/api/v1/marketing/autonomous/run",
            json!({"goal": "More signups"}),
        ),
        (
            "/api/v1/marketing/competitor-watch/run",
            json!({"competitors": [{"name": "Acme"}]}),
        ),
        (
            "/api/v1/marketing/competitor-watches",
            json!({"competitors": [{"name": "Acme"}], "interval_minutes": 60}),
        ),
    ] {
        let res = h.api(&key).post(path, &body).await;
        let message = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert!(
            message.starts_with("LLM_NOT_CONFIGURED: "),
            "{path}: {message}"
        );
        // A bad body is still a 400 naming the field.
        let res = h.api(&key).post(path, &json!({"unknown": 1})).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    assert_eq!(h.query("SELECT count(*) FROM model_runs").await, ["0"]);
    assert_eq!(
        h.query("SELECT count(*) FROM competitor_watches").await,
        ["0"]
    );
    h.stop().await;
}
