//! A project's own provider: stored sealed, used, refused on an internal address, and its errors
//! retried or failed.

use super::*;

#[tokio::test]
async fn a_project_provider_is_stored_sealed_and_used_resend_with_its_idempotency_key() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("rs").await;
    let res = s.put_provider(&t.write, &resend_provider()).await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = s
        .put_provider(&t.admin, &json!({"kind": "file", "directory": "/tmp"}))
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(s.use_resend(&t).await, json!({"kind": "resend"}));
    // At rest: sealed, the key nowhere in the row.
    let stored = s.h.query(&format!("SELECT encode(provider_config, 'escape') FROM project_delivery WHERE project_id = '{}'", t.project)).await;
    assert!(
        !stored[0].contains("re_test_key") && !stored[0].contains("resend"),
        "{stored:?}"
    );

    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    let accepted = s.resend.accepted();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0]["to"], json!(["ada@example.com"]));
    assert_eq!(
        accepted[0]["from"],
        format!("Sender rs <rs@{SHARED_DOMAIN}>")
    );
    assert!(body["provider_message_id"].is_string());
    assert!(s.sink.received().is_empty());
    assert_eq!(
        s.email(&t.read, body["id"].as_str().unwrap()).await["provider"],
        "resend"
    );

    // A crash after Resend accepted but before the row said so: the redelivered job reaches
    // Resend again with the same Idempotency-Key, and nothing is sent twice.
    let id = id_of(&body);
    s.h.exec(&format!(
        "UPDATE email_log SET status = 'accepted', provider_message_id = NULL WHERE id = '{id}'"
    ))
    .await;
    let reply = SendEmail {
        email_log_id: id,
        project_id: t.project,
    }
    .run(&Arc::new(s.send_worker()), redelivery("m"))
    .await
    .unwrap()
    .unwrap();
    assert_eq!(reply["status"], "sent");
    assert_eq!(reply["provider_message_id"], body["provider_message_id"]);
    assert_eq!(s.resend.accepted().len(), 1);
    assert_eq!(s.resend.requests(), 2);

    // Back to the default provider.
    let res = s.h.api(&t.admin).delete(PROVIDER).await;
    assert_eq!(res.status(), 204);
    assert_eq!(
        s.send(&t.write, &message(&site, "bob@example.com"))
            .await
            .status(),
        200
    );
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn a_project_smtp_host_on_an_internal_address_is_refused() {
    let s = Send::new().await;
    let t = s.h.tenant(Plan::Free).await;
    let put = |host: &str| {
        s.put_provider(
            &t.admin,
            &json!({"kind": "smtp", "host": host, "port": 25, "security": "none"}),
        )
    };
    for internal in [
        "127.0.0.1",
        "localhost",
        "10.0.0.8",
        "169.254.169.254",
        "[::1]",
        "::ffff:192.168.0.1",
        // IPv4-compatible, IPv4-translated and NAT64 forms of internal addresses.
        "::127.0.0.1",
        "[::127.0.0.1]",
        "::10.0.0.8",
        "::ffff:0:127.0.0.1",
        "64:ff9b::169.254.169.254",
        "2002:a00:8::1",
    ] {
        let err = expect_error(put(internal).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details["field"], "host", "{internal}: {err:?}");
        assert!(
            err.message.contains("not a public address"),
            "{internal}: {err:?}"
        );
    }
    let stored = format!(
        "SELECT count(*) FROM project_delivery WHERE project_id = '{}' AND provider_config IS NOT NULL",
        t.project
    );
    assert_eq!(s.h.query(&stored).await, ["0"], "nothing stored");
    // A public address literal is stored.
    let res = put("192.0.32.10").await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, json!({"kind": "smtp"}));
    s.finish().await;
}

#[tokio::test]
async fn provider_errors_retry_when_temporary_and_fail_when_permanent() {
    let s = Send::with(|s| s.sending.reply_wait_ms = 1_500).await;
    let (t, site) = s.tenant_with_site("err").await;
    s.use_resend(&t).await;

    // Permanent: 422 PROVIDER_REJECTED, the row failed with the reason.
    s.resend.fail_next(422, "validation_error");
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    let err = expect_error(res, 422, "PROVIDER_REJECTED").await;
    let id = err.details["id"].as_str().unwrap().to_owned();
    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "failed");
    assert!(
        email["last_error"]
            .as_str()
            .unwrap()
            .contains("validation_error")
            || email["last_error"].is_string()
    );

    // Temporary: the first attempt fails, the retry (1 s later) sends.
    s.resend.fail_next(503, "internal_server_error");
    let res = s.send(&t.write, &message(&site, "bob@example.com")).await;
    // 200 when the retry's answer comes within the wait, else 202.
    assert!(
        [200, 202].contains(&res.status().as_u16()),
        "{}",
        res.status()
    );
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    let email = s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    assert_eq!(email["attempts"], 2);
    s.finish().await;
}
