//! The connections of the process's own pool (two: the background passes and the queue jobs
//! share them) are never lent for long: a model run gives its connection back while the model
//! answers, and `/readyz` checks the database on a connection of its own.

use std::time::Duration;

use rate_limit::policy::Tier;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::common::*;

/// A model endpoint that accepts every connection and never answers: each accepted
/// connection is handed to the test (and stays open while it holds it).
async fn silent_model() -> (String, mpsc::UnboundedReceiver<TcpStream>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (asked, calls) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            if asked.send(socket).is_err() {
                break;
            }
        }
    });
    (format!("http://{addr}/v1"), calls)
}

#[tokio::test]
async fn a_run_waiting_on_the_model_holds_no_connection_and_readyz_answers_meanwhile() {
    let (base_url, mut calls) = silent_model().await;
    let (h, infra) = Harness::with_infra(move |url| {
        let mut s = settings(url);
        s.llm.base_url = base_url;
        s.llm.model = "silent-model".to_owned();
        s
    })
    .await;
    let (_, key) = h.writer(Tier::Free).await;
    h.api(&key)
        .post(
            "/api/v1/byok",
            &json!({"service": "openai", "label": "mine", "key": "sk-own-Zq9xW2vB7nM4kL1pR8tY5uI3"}),
        )
        .expect(201)
        .await;
    h.api(&key)
        .post("/api/v1/content/brief", &json!({"topic": "Spring seeds"}))
        .expect(202)
        .await;
    // A bound for a broken run only: the run asks as soon as its job is delivered.
    let model_call = tokio::time::timeout(Duration::from_secs(120), calls.recv())
        .await
        .expect("the run did not ask the model within 120 s")
        .expect("the model endpoint stopped");

    // While the model is asked, every connection of the pool can be taken (the pool waits
    // 5 s for a connection, then fails: the run would hold one, and this would fail).
    let first = store::conn(&infra.pool).await.expect("a first connection");
    let second = store::conn(&infra.pool)
        .await
        .expect("a second connection: the run waiting on the model must hold none");
    // And with both taken, the database is still reported up.
    let res = h.get("/readyz").send().await.unwrap();
    let status = res.status();
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["checks"]["database"], "ok", "{body}");

    drop((first, second, model_call));
    h.stop().await;
}
