//! Tracking links: opens and clicks counted, altered links refused, upper-case schemes wrapped, and
//! thousands of opens kept bounded.

use super::*;

#[tokio::test]
async fn tracking_links_count_opens_and_clicks_and_never_redirect_when_altered() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("trk").await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = id_of(&body);
    let no_redirect = s.h.anonymous().not_following_redirects();

    let open = s.tracker.token(&Link::Open { email_id: id });
    let res = no_redirect.get(&format!("/t/o/{open}")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/gif");
    assert!(
        res.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("no-store")
    );
    assert!(res.bytes().await.unwrap().starts_with(b"GIF89a"));
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(
        (email["status"].as_str(), email["open_count"].as_i64()),
        (Some("opened"), Some(1))
    );

    let url = "https://example.com/start?x=1";
    let click = s.tracker.token(&Link::Click {
        email_id: id,
        url: url.into(),
    });
    let res = no_redirect.get(&format!("/t/c/{click}")).await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], url);
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(email["status"], "clicked");
    assert_eq!(email["clicked_urls"], json!([url]));
    // A second open keeps `clicked` and counts.
    no_redirect.get(&format!("/t/o/{open}")).await;
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(
        (email["status"].as_str(), email["open_count"].as_i64()),
        (Some("clicked"), Some(2))
    );

    // Altered destination, another key's signature, garbage: 404, no Location.
    let (payload, tag) = click.split_once('.').unwrap();
    let mut bytes = base64_decode(payload);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let forged = format!("{}.{tag}", base64_encode(&bytes));
    let foreign =
        Tracker::new("http://x", b"another key of thirty-two bytes!!").token(&Link::Click {
            email_id: id,
            url: "https://evil.example".into(),
        });
    for token in [forged, foreign, "nonsense".to_owned(), open.clone()] {
        let res = no_redirect.get(&format!("/t/c/{token}")).await;
        assert_eq!(res.status(), 404, "{token}");
        assert!(res.headers().get("location").is_none());
    }
    let res = no_redirect.get(&format!("/t/o/{click}")).await;
    assert_eq!(res.status(), 404);

    // Unsubscribe: GET shows a page and changes nothing; POST (one-click) suppresses.
    let unsub = s.tracker.token(&Link::Unsubscribe { email_id: id });
    let res = no_redirect.get(&format!("/t/u/{unsub}")).await;
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("method=\"post\""));
    assert_eq!(s.h.query("SELECT count(*) FROM suppressions").await, ["0"]);
    let res = s.unsubscribe_one_click(&format!("/t/u/{unsub}")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["unsubscribed"]
    );
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    s.finish().await;
}

/// The token of every wrapped click link in a message as the SMTP sink received it.
fn click_tokens(data: &str) -> Vec<String> {
    let unfolded = data.replace("=\r\n", "").replace("=3D", "=");
    unfolded
        .split("/t/c/")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect()
        })
        .collect()
}

/// URL schemes are case-insensitive: a link written `HTTPS://…` is wrapped like any other, so
/// its click must redirect too (it answered 404).
#[tokio::test]
async fn a_link_with_an_upper_case_scheme_is_wrapped_and_redirects() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("caps").await;
    let mut body = message(&site, "ada@example.com");
    body["html"] = json!("<p><a href=\"HTTPS://Example.com/x\">x</a></p>");
    let res = s.send(&t.write, &body).await;
    assert_eq!(res.status(), 200);
    let id: Uuid = json(res).await["id"].as_str().unwrap().parse().unwrap();
    let mail = s.sink.received();
    assert_eq!(mail.len(), 1);
    let tokens = click_tokens(&mail[0].data);
    assert_eq!(tokens.len(), 1, "{}", mail[0].data);

    let no_redirect = s.h.anonymous().not_following_redirects();
    let res = no_redirect.get(&format!("/t/c/{}", tokens[0])).await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "HTTPS://Example.com/x");
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(email["status"], "clicked");
    assert_eq!(email["clicked_urls"], json!(["HTTPS://Example.com/x"]));

    // Even signed by us, a destination that is not http(s) never redirects.
    for url in [
        "javascript:alert(1)",
        "HTTPSX://evil.example",
        "//evil.example",
    ] {
        let token = s.tracker.token(&Link::Click {
            email_id: id,
            url: url.into(),
        });
        let res = no_redirect.get(&format!("/t/c/{token}")).await;
        assert_eq!(res.status(), 404, "{url}");
        assert!(res.headers().get("location").is_none(), "{url}");
    }
    s.finish().await;
}

/// 5,000 opens of one email through the signed pixel: `open_count` counts them all, while the
/// stored events stay bounded (the first 50 opens) and the detail answer holds one page of
/// them; the rest of the history pages through `/emails/{id}/events`.
#[tokio::test]
async fn thousands_of_opens_keep_the_count_exact_and_the_stored_events_bounded() {
    use futures_util::StreamExt as _;

    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("opens").await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    assert_eq!(body["status"], "sent");
    let id = id_of(&body);
    let pixel = s.h.server.url(&format!(
        "/t/o/{}",
        s.tracker.token(&Link::Open { email_id: id })
    ));
    let opens = 5_000;
    let statuses: Vec<u16> = futures_util::stream::iter(0..opens)
        .map(|_| async {
            let res = s.h.http.get(&pixel).send().await.unwrap();
            res.status().as_u16()
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200));

    let stored =
        s.h.query(&format!(
            "SELECT count(*) FROM email_events WHERE email_log_id = '{id}' AND kind = 'opened'"
        ))
        .await;
    assert_eq!(stored, ["50"]);

    let res = s.h.get_with(&t.read, &format!("/api/v1/emails/{id}")).await;
    assert_eq!(res.status(), 200);
    let bytes = res.bytes().await.unwrap();
    assert!(bytes.len() < 16 * 1024, "{} bytes", bytes.len());
    let email: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(email["open_count"], opens);
    assert_eq!(email["status"], "opened");
    let first = email["events"].as_array().unwrap();
    assert_eq!(first.len(), 50);
    let cursor = email["events_next_cursor"].as_str().expect("more events");

    // The rest of the history: accepted, sent and 50 opens in all.
    let res =
        s.h.get_with(
            &t.read,
            &format!("/api/v1/emails/{id}/events?limit=100&cursor={cursor}"),
        )
        .await;
    assert_eq!(res.status(), 200);
    let rest = json(res).await;
    assert!(rest["next_cursor"].is_null());
    let mut kinds: Vec<String> = first
        .iter()
        .chain(rest["data"].as_array().unwrap())
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.len(), 52);
    kinds.dedup();
    assert_eq!(kinds, ["accepted", "sent", "opened"]);

    // Another project sees neither the email nor its events.
    let other = s.h.tenant(Plan::Free).await;
    let res =
        s.h.get_with(&other.read, &format!("/api/v1/emails/{id}/events"))
            .await;
    expect_error(res, 404, "EMAIL_NOT_FOUND").await;
    s.finish().await;
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}
