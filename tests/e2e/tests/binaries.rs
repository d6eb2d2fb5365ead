//! The real binaries, started as processes, against the real PostgreSQL, RabbitMQ and Redis.

mod common;

use std::time::Duration;

use queue::{Broker, BrokerConfig, Echo, Envelope, WorkQueue};
use serde_json::Value;
use store::testing::TestDatabase;

use common::{AMQP, Proc, free_port, mail_key, run, wait_ready};

#[tokio::test(flavor = "multi_thread")]
async fn migrate_bootstrap_two_replicas_share_limits_and_revocation() {
    let db = TestDatabase::empty("memory").await.unwrap();
    let db_env = ("MEMORY_DATABASE__URL", db.url.clone());
    run("memory-api", &["migrate"], std::slice::from_ref(&db_env));
    // Idempotent.
    run("memory-api", &["migrate"], std::slice::from_ref(&db_env));

    let user = run(
        "admin",
        &[
            "memory",
            "create-user",
            "--email",
            "e2e@example.com",
            "--tier",
            "free",
        ],
        std::slice::from_ref(&db_env),
    );
    let user_id = user["user_id"].as_str().unwrap().to_owned();
    let key = run(
        "admin",
        &[
            "memory",
            "create-key",
            "--user",
            &user_id,
            "--scopes",
            "read,write",
        ],
        std::slice::from_ref(&db_env),
    );
    let key_id = key["key_id"].as_str().unwrap().to_owned();
    let plaintext = key["key"].as_str().unwrap().to_owned();
    assert!(plaintext.starts_with("mem_live_"));
    let listed = run(
        "admin",
        &["memory", "list-keys", "--user", &user_id],
        std::slice::from_ref(&db_env),
    );
    let listed = listed.to_string();
    assert!(!listed.contains(&plaintext), "plaintext is shown once only");

    let prefix = format!("e2e-{}", uuid::Uuid::new_v4());
    // 32 bytes, base64: the key that seals third-party secrets.
    let kek = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=".to_owned();
    let replica = |port: u16| {
        Proc::start(
            "memory-api",
            &["serve"],
            &[
                db_env.clone(),
                ("MEMORY_HTTP__BIND", format!("127.0.0.1:{port}")),
                ("MEMORY_SECRETS__KEK", kek.clone()),
                ("MEMORY_RATE_LIMIT__BACKEND", "redis".into()),
                ("MEMORY_RATE_LIMIT__KEY_PREFIX", prefix.clone()),
                // 60/min scaled to 4/min.
                ("MEMORY_RATE_LIMIT__SCALE", "0.0667".into()),
            ],
        )
    };
    let (port_a, port_b) = (free_port(), free_port());
    let a = replica(port_a);
    let b = replica(port_b);
    let (base_a, base_b) = (
        format!("http://127.0.0.1:{port_a}"),
        format!("http://127.0.0.1:{port_b}"),
    );
    wait_ready(&base_a).await;
    wait_ready(&base_b).await;

    // Stay inside one minute window.
    while 60
        - std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            % 60
        <= 8
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let http = common::http();
    let statuses = futures_util::future::join_all((0..12).map(|i| {
        let base = if i % 2 == 0 { &base_a } else { &base_b };
        http.get(format!("{base}/api/v1/products"))
            .bearer_auth(&plaintext)
            .send()
    }))
    .await;
    let ok = statuses
        .iter()
        .filter(|r| r.as_ref().unwrap().status() == 200)
        .count();
    let limited = statuses
        .iter()
        .filter(|r| r.as_ref().unwrap().status() == 429)
        .count();
    assert_eq!(
        (ok, limited),
        (4, 8),
        "the limit holds across both replicas"
    );

    // Revoked with the admin CLI: both replicas refuse at once (401, not 429).
    run(
        "admin",
        &["memory", "revoke-key", "--key", &key_id],
        std::slice::from_ref(&db_env),
    );
    for base in [&base_a, &base_b] {
        let res = http
            .get(format!("{base}/api/v1/products"))
            .bearer_auth(&plaintext)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    }

    let status = a.terminate(Duration::from_secs(15));
    assert!(
        status.success(),
        "memory-api exits cleanly on SIGTERM: {status}"
    );
    drop(b);
}

#[tokio::test(flavor = "multi_thread")]
async fn send_worker_answers_rpc_and_stops_gracefully_on_sigterm() {
    let db = TestDatabase::empty("mail").await.unwrap();
    let prefix = format!("e2e-{}.", uuid::Uuid::new_v4().simple());
    let port = free_port();
    let worker = Proc::start(
        "send-worker",
        &[],
        &[
            ("MAIL_DATABASE__URL", db.url.clone()),
            ("MAIL_BROKER__QUEUE_PREFIX", prefix.clone()),
            ("MAIL_WORKER__BIND", format!("127.0.0.1:{port}")),
        ],
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    let metrics = common::http()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("service=\"send-worker\""));

    let broker = Broker::connect(BrokerConfig::new(AMQP)).await.unwrap();
    let queue = WorkQueue::new("send.email").with_prefix(&prefix);
    broker.declare(&queue).await.unwrap();
    let publisher = broker.publisher(queue.clone());
    let reply = publisher
        .rpc_call(
            &Echo {
                message: "ping".into(),
            },
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert_eq!(reply["echo"], "ping");
    assert_eq!(reply["worker"], "send-worker");

    // A kind this worker does not handle yet is dead-lettered, not lost.
    publisher
        .publish(&Envelope::new(
            "render",
            serde_json::json!({"job_id": uuid::Uuid::now_v7(), "user_id": uuid::Uuid::now_v7()}),
        ))
        .await
        .unwrap();
    let mut dead = Vec::new();
    for _ in 0..100 {
        dead = broker.list_dead_letters(&queue, 10).await.unwrap();
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(dead.len(), 1);

    let status = worker.terminate(Duration::from_secs(15));
    assert!(
        status.success(),
        "send-worker exits cleanly on SIGTERM: {status}"
    );
    broker.delete(&queue).await.unwrap();
    broker.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_in_flight_request_finishes_after_sigterm() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let db = TestDatabase::empty("mail").await.unwrap();
    let db_env = ("MAIL_DATABASE__URL", db.url.clone());
    run("mail-api", &["migrate"], std::slice::from_ref(&db_env));
    let key = mail_key(std::slice::from_ref(&db_env), "free", "write");
    let port = free_port();
    let api = Proc::start(
        "mail-api",
        &["serve"],
        &[
            db_env.clone(),
            ("MAIL_HTTP__BIND", format!("127.0.0.1:{port}")),
        ],
    );
    wait_ready(&format!("http://127.0.0.1:{port}")).await;

    // A request whose body is still arriving when the stop signal comes.
    let body = br#"{"name":"Late","slug":"late","from_name":"Late"}"#;
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let head = format!(
        "POST /api/v1/sites HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    api.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream.write_all(&body[10..]).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(answer.contains("\"slug\":\"late\""), "{answer}");

    let status = api.terminate(Duration::from_secs(15));
    assert!(
        status.success(),
        "mail-api exits cleanly after draining: {status}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connector_token_created_for_the_test_environment_acts_on_it() {
    let db = TestDatabase::empty("memory").await.unwrap();
    let db_env = ("MEMORY_DATABASE__URL", db.url.clone());
    run("memory-api", &["migrate"], std::slice::from_ref(&db_env));
    let admin = |args: &[&str]| {
        let mut all = vec!["memory"];
        all.extend_from_slice(args);
        run("admin", &all, std::slice::from_ref(&db_env))
    };
    let user = admin(&[
        "create-user",
        "--email",
        "connector@example.com",
        "--tier",
        "pro",
    ]);
    let user_id = user["user_id"].as_str().unwrap().to_owned();
    let key = |env: &str, connector: bool| {
        let scopes = if connector {
            "read,propose"
        } else {
            "read,write"
        };
        let mut args = vec![
            "create-key",
            "--user",
            &user_id,
            "--env",
            env,
            "--scopes",
            scopes,
        ];
        if connector {
            args.push("--connector");
        }
        admin(&args)
    };
    let test_connector = key("test", true);
    assert_eq!(test_connector["environment"], "test", "{test_connector}");
    assert_eq!(test_connector["origin"], "connector");
    let test_token = test_connector["key"].as_str().unwrap().to_owned();
    assert!(test_token.starts_with("memo_"));
    let live_connector = key("live", true);
    assert_eq!(live_connector["environment"], "live");
    let live_token = live_connector["key"].as_str().unwrap().to_owned();
    let test_key = key("test", false)["key"].as_str().unwrap().to_owned();
    let live_key = key("live", false)["key"].as_str().unwrap().to_owned();
    let listed = admin(&["list-keys", "--user", &user_id]);
    let test_connectors = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kind"] == "oauth" && k["environment"] == "test")
        .count();
    assert_eq!(test_connectors, 1, "{listed}");

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _api = Proc::start(
        "memory-api",
        &["serve"],
        &[
            db_env.clone(),
            ("MEMORY_HTTP__BIND", format!("127.0.0.1:{port}")),
            (
                "MEMORY_SECRETS__KEK",
                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=".to_owned(),
            ),
        ],
    );
    wait_ready(&base).await;
    let http = common::http();
    for (writer, name) in [(&test_key, "in-test"), (&live_key, "in-live")] {
        let res = http
            .post(format!("{base}/api/v1/products"))
            .bearer_auth(writer)
            .json(&serde_json::json!({ "name": name }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
    }
    let names = |token: String| {
        let http = http.clone();
        let base = base.clone();
        async move {
            let res = http
                .get(format!("{base}/api/v1/products"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            let body: Value = res.json().await.unwrap();
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["name"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(names(test_token.clone()).await, ["in-test"]);
    assert_eq!(names(live_token).await, ["in-live"]);
    // Still a connector: read and propose only.
    let res = http
        .post(format!("{base}/api/v1/products"))
        .bearer_auth(&test_token)
        .json(&serde_json::json!({ "name": "nope" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
}
