//! Content: blocks (CRUD, a unique name, rendered unescaped by previews and by the send
//! worker, a block in use refused deletion naming its users), sources and the pipeline
//! against a feed server in the test (RSS and Atom; one digest draft, then none, then one with
//! only the new item), the SSRF policy on a source's address, and another project's ids.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::*;
use crate::send::Send;

/// Feeds served on loopback: path → body.
struct FeedServer {
    port: u16,
    feeds: Arc<Mutex<HashMap<String, String>>>,
}

impl FeedServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let feeds: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let served = Arc::clone(&feeds);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let served = Arc::clone(&served);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let body = served.lock().unwrap().get(&path).cloned();
                    let reply = match body {
                        Some(body) => format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\n\
                             content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\
                                 connection: close\r\n\r\n"
                            .to_owned(),
                    };
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { port, feeds }
    }

    fn serve(&self, path: &str, body: String) {
        self.feeds.lock().unwrap().insert(path.to_owned(), body);
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn rss(items: &[(&str, &str)]) -> String {
    let items: String = items
        .iter()
        .map(|(guid, title)| {
            format!(
                "<item><title>{title}</title><link>https://blog.example.com/{guid}</link>\
                 <description>&lt;p&gt;About {guid} &amp;amp; more&lt;/p&gt;</description>\
                 <guid>{guid}</guid></item>"
            )
        })
        .collect();
    format!(
        r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
        <link>https://blog.example.com/</link><description>d</description>{items}</channel></rss>"#
    )
}

fn atom() -> String {
    r#"<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
    <title>News</title><id>urn:news</id><updated>2026-12-01T00:00:00Z</updated>
    <entry><title>Atom &lt;script&gt; one</title><id>urn:news:1</id>
    <updated>2026-12-01T00:00:00Z</updated><link href="https://news.example.com/1"/>
    <summary>Short &lt;b&gt;summary&lt;/b&gt;</summary></entry></feed>"#
        .to_owned()
}

fn loopback_allowed(url: &str) -> mail_api::Settings {
    let mut s = settings(url);
    // The feed server listens on loopback.
    s.outbound_webhooks.allow_private_targets = true;
    s
}

async fn draft(h: &Harness, key: &str, id: &str) -> Value {
    h.api(key)
        .get(&format!("/api/v1/drafts/{id}"))
        .expect(200)
        .await
}

#[tokio::test]
async fn blocks_are_created_listed_updated_and_named_uniquely() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let api = h.api(&t.write);
    let block = api
        .post(
            "/api/v1/content/blocks",
            &json!({"name": "footer", "html": "<p>Bye</p>"}),
        )
        .expect(201)
        .await;
    let id = block["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (&block["name"], &block["html"]),
        (&json!("footer"), &json!("<p>Bye</p>"))
    );
    let res = h
        .post_json(
            &t.write,
            "/api/v1/content/blocks",
            &json!({"name": "footer", "html": "<p>Other</p>"}),
        )
        .await;
    expect_error(res, 409, "CONTENT_BLOCK_NAME_TAKEN").await;
    for bad in [
        json!({"name": "Footer", "html": "<p>x</p>"}),
        json!({"name": "foot-er", "html": "<p>x</p>"}),
        json!({"name": "x".repeat(65), "html": "<p>x</p>"}),
    ] {
        let res = h.post_json(&t.write, "/api/v1/content/blocks", &bad).await;
        expect_invalid(res, "name").await;
    }
    let res = h
        .post_json(
            &t.write,
            "/api/v1/content/blocks",
            &json!({"name": "a", "html": "<p>x</p>", "extra": 1}),
        )
        .await;
    assert_eq!(res.status(), 400);
    let updated = api
        .patch(
            &format!("/api/v1/content/blocks/{id}"),
            &json!({"html": "<p>Bye now</p>"}),
        )
        .expect(200)
        .await;
    assert_eq!(updated["html"], "<p>Bye now</p>");
    let page = h
        .api(&t.read)
        .get("/api/v1/content/blocks")
        .expect(200)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    let got = h
        .api(&t.read)
        .get(&format!("/api/v1/content/blocks/{id}"))
        .expect(200)
        .await;
    assert_eq!(got["html"], "<p>Bye now</p>");

    // Another project sees none of it, and its ids answer 404.
    let other = h.tenant(Plan::Free).await;
    let page = h
        .api(&other.read)
        .get("/api/v1/content/blocks")
        .expect(200)
        .await;
    assert_eq!(page["data"], json!([]), "{page}");
    let res = h
        .get_with(&other.read, &format!("/api/v1/content/blocks/{id}"))
        .await;
    expect_error(res, 404, "CONTENT_BLOCK_NOT_FOUND").await;
    let res = h
        .api(&other.write)
        .delete(&format!("/api/v1/content/blocks/{id}"))
        .await;
    expect_error(res, 404, "CONTENT_BLOCK_NOT_FOUND").await;
    // The other project may use the name too.
    h.api(&other.write)
        .post(
            "/api/v1/content/blocks",
            &json!({"name": "footer", "html": "<p>Theirs</p>"}),
        )
        .expect(201)
        .await;

    api.delete(&format!("/api/v1/content/blocks/{id}"))
        .expect(200)
        .await;
    let res = h
        .get_with(&t.read, &format!("/api/v1/content/blocks/{id}"))
        .await;
    expect_error(res, 404, "CONTENT_BLOCK_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn a_block_renders_unescaped_in_previews_and_sent_mail_and_cannot_go_while_used() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("blocks").await;
    let api = s.h.api(&t.write);
    let block = api
        .post(
            "/api/v1/content/blocks",
            &json!({"name": "footer", "html": "<p class=\"f\">Bye &amp; thanks</p>"}),
        )
        .expect(201)
        .await;
    let block_id = block["id"].as_str().unwrap().to_owned();

    let preview = api
        .post(
            "/api/v1/emails/preview",
            &json!({"site_id": site, "subject": "Hi",
                    "html": "<p>{{ data.x }}</p>{{ blocks.footer }}",
                    "data": {"x": "<i>"}, "tracking": false, "kind": "transactional"}),
        )
        .expect(200)
        .await;
    assert_eq!(
        preview["html"], "<p>&lt;i&gt;</p><p class=\"f\">Bye &amp; thanks</p>",
        "{preview}"
    );
    assert_eq!(preview["check"]["valid"], true, "{preview}");

    let template = api
        .post(
            "/api/v1/templates",
            &json!({"name": "Newsletter", "brief": "monthly", "subject_hint": "News",
                    "html": "<p>News</p>{{ blocks['footer'] }}"}),
        )
        .expect(201)
        .await;
    let template_id = template["id"].as_str().unwrap().to_owned();
    let sent = api
        .post(
            "/api/v1/send",
            &json!({"to": "ada@example.com", "site_id": site, "template_id": template_id,
                    "tracking": false}),
        )
        .expect(200)
        .await;
    assert_eq!(sent["status"], "sent", "{sent}");
    let mail = s.sink.received();
    let body = mail[0].data.replace("=\r\n", "").replace("=3D", "=");
    assert!(
        body.contains("<p>News</p><p class=\"f\">Bye &amp; thanks</p>"),
        "{body}"
    );

    // In use by the template: 409 naming it; the block stays.
    let res =
        s.h.api(&t.write)
            .delete(&format!("/api/v1/content/blocks/{block_id}"))
            .await;
    let err = expect_error(res, 409, "CONTENT_BLOCK_IN_USE").await;
    assert!(err.message.contains("Newsletter"), "{}", err.message);
    assert_eq!(
        err.details["users"],
        json!([{"kind": "template", "id": template_id, "name": "Newsletter"}])
    );
    api.get(&format!("/api/v1/content/blocks/{block_id}"))
        .expect(200)
        .await;
    // Once the template no longer includes it, it goes.
    api.delete(&format!("/api/v1/templates/{template_id}"))
        .expect_empty(204)
        .await;
    api.delete(&format!("/api/v1/content/blocks/{block_id}"))
        .expect(200)
        .await;
    s.finish().await;
}

#[tokio::test]
async fn the_pipeline_drafts_new_items_once_and_then_only_what_is_new() {
    let feeds = FeedServer::start().await;
    feeds.serve(
        "/blog.rss",
        rss(&[("a1", "First post"), ("a2", "Second &lt;post&gt;")]),
    );
    feeds.serve("/news.atom", atom());
    let h = Harness::with(loopback_allowed).await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "digest").await;
    let api = h.api(&t.write);
    let mut sources = Vec::new();
    for path in ["/blog.rss", "/news.atom"] {
        let source = api
            .post(
                "/api/v1/content/sources",
                &json!({"site_id": site, "url": feeds.url(path)}),
            )
            .expect(201)
            .await;
        assert_eq!(source["last_fetched_at"], Value::Null);
        sources.push(source["id"].as_str().unwrap().to_owned());
    }
    let res = h
        .post_json(
            &t.write,
            "/api/v1/content/sources",
            &json!({"site_id": site, "url": feeds.url("/blog.rss")}),
        )
        .await;
    expect_error(res, 409, "CONTENT_SOURCE_EXISTS").await;
    let listed = h
        .api(&t.read)
        .get(&format!("/api/v1/content/sources?site_id={site}"))
        .expect(200)
        .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 2, "{listed}");

    let run = api
        .post("/api/v1/content/pipeline", &json!({}))
        .expect(200)
        .await;
    assert_eq!(
        (
            &run["sources_read"],
            &run["new_items"],
            &run["sources_failed"]
        ),
        (&json!(2), &json!(3), &json!(0)),
        "{run}"
    );
    let drafts = run["drafts"].as_array().unwrap();
    assert_eq!(drafts.len(), 1, "{run}");
    assert_eq!(drafts[0]["site_id"], json!(site));
    let first = draft(&h, &t.read, drafts[0]["draft_id"].as_str().unwrap()).await;
    assert_eq!(first["status"], "pending", "{first}");
    let html = first["body_html"].as_str().unwrap();
    assert!(
        html.contains(r#"<a href="https://blog.example.com/a1">First post</a>"#),
        "{html}"
    );
    // Markup in a title or summary is dropped, the rest escaped.
    assert!(html.contains(">Second</a>"), "{html}");
    assert!(html.contains("About a1 &amp; more"), "{html}");
    assert!(html.contains(">Atom one</a>"), "{html}");
    assert!(!html.contains("<script") && !html.contains("<b>"), "{html}");
    // Nothing was sent.
    let emails = h.query("SELECT count(*) FROM email_log").await;
    assert_eq!(emails, ["0"]);

    // Nothing new: no draft.
    let run = api
        .post("/api/v1/content/pipeline", &json!({"site_id": site}))
        .expect(200)
        .await;
    assert_eq!(
        (&run["sources_read"], &run["new_items"], &run["drafts"]),
        (&json!(2), &json!(0), &json!([])),
        "{run}"
    );

    // One new item in the blog: a draft with only it.
    feeds.serve(
        "/blog.rss",
        rss(&[
            ("a3", "Third post"),
            ("a1", "First post"),
            ("a2", "Second &lt;post&gt;"),
        ]),
    );
    let run = api
        .post(
            "/api/v1/content/pipeline",
            &json!({"source_id": sources[0], "site_id": null}),
        )
        .expect(200)
        .await;
    assert_eq!(
        (&run["sources_read"], &run["new_items"]),
        (&json!(1), &json!(1)),
        "{run}"
    );
    let second = draft(&h, &t.read, run["drafts"][0]["draft_id"].as_str().unwrap()).await;
    let html = second["body_html"].as_str().unwrap();
    assert!(html.contains("Third post"), "{html}");
    assert!(
        !html.contains("First post") && !html.contains("Atom"),
        "{html}"
    );
    assert_eq!(
        second["subject"], "New from Site digest: 1 item",
        "{second}"
    );

    // A feed that is gone is reported, not fatal.
    let gone = api
        .post(
            "/api/v1/content/sources",
            &json!({"site_id": site, "url": feeds.url("/gone.rss")}),
        )
        .expect(201)
        .await;
    let run = api
        .post("/api/v1/content/pipeline", &json!({}))
        .expect(200)
        .await;
    assert_eq!(
        (&run["sources_read"], &run["sources_failed"], &run["drafts"]),
        (&json!(2), &json!(1), &json!([])),
        "{run}"
    );
    let listed = h
        .api(&t.read)
        .get("/api/v1/content/sources")
        .expect(200)
        .await;
    let gone_row = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == gone["id"])
        .unwrap()
        .clone();
    assert!(
        gone_row["last_error"].as_str().unwrap().contains("404"),
        "{gone_row}"
    );

    // Another project: none of it, and its ids are 404.
    let other = h.tenant(Plan::Free).await;
    let page = h
        .api(&other.read)
        .get("/api/v1/content/sources")
        .expect(200)
        .await;
    assert_eq!(page["data"], json!([]));
    let res = h
        .post_json(
            &other.write,
            "/api/v1/content/pipeline",
            &json!({"source_id": sources[0]}),
        )
        .await;
    expect_error(res, 404, "CONTENT_SOURCE_NOT_FOUND").await;
    let res = h
        .post_json(
            &other.write,
            "/api/v1/content/pipeline",
            &json!({"site_id": site}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = h
        .api(&other.write)
        .delete(&format!("/api/v1/content/sources/{}", sources[0]))
        .await;
    expect_error(res, 404, "CONTENT_SOURCE_NOT_FOUND").await;
    let run = h
        .api(&other.write)
        .post("/api/v1/content/pipeline", &json!({}))
        .expect(200)
        .await;
    assert_eq!(run["sources"], json!([]), "{run}");

    api.delete(&format!("/api/v1/content/sources/{}", sources[0]))
        .expect_empty(204)
        .await;
    h.stop().await;
}

#[tokio::test]
async fn a_source_on_a_private_or_metadata_address_is_refused() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "ssrf").await;
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/feed.xml",
        "http://127.0.0.1:9/feed.xml",
        "http://[::1]/feed.xml",
        "http://user:pw@example.com/feed.xml",
        "ftp://example.com/feed.xml",
    ] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/content/sources",
                &json!({"site_id": site, "url": url}),
            )
            .await;
        expect_invalid(res, "url").await;
    }
    let page = h
        .api(&t.read)
        .get("/api/v1/content/sources")
        .expect(200)
        .await;
    assert_eq!(page["data"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn the_content_tools_act_like_their_routes() {
    let feeds = FeedServer::start().await;
    feeds.serve("/blog.rss", rss(&[("t1", "Tool post")]));
    let h = Harness::with(loopback_allowed).await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "tools").await;
    let (read, write) = (&t.read, &t.write);

    let block = h
        .tool_ok(
            write,
            "create_content_block",
            json!({"name": "header", "html": "<h1>Hi</h1>"}),
        )
        .await;
    let id = block["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/content/blocks/{id}");
    assert_eq!(json(h.get_with(read, &path).await).await, block);
    let listed = h
        .tool_ok(read, "list_content_blocks", json!({"limit": 10}))
        .await;
    assert_eq!(field_of_each(&listed, "id"), std::slice::from_ref(&id));

    h.api(write)
        .post(
            "/api/v1/content/sources",
            &json!({"site_id": site, "url": feeds.url("/blog.rss")}),
        )
        .expect(201)
        .await;
    let sources = h
        .tool_ok(read, "list_content_sources", json!({"site_id": site}))
        .await;
    assert_eq!(sources["data"].as_array().unwrap().len(), 1, "{sources}");
    let run = h
        .tool_ok(write, "trigger_content_pipeline", json!({"site_id": site}))
        .await;
    assert_eq!(run["new_items"], 1, "{run}");
    let draft_id = run["drafts"][0]["draft_id"].as_str().unwrap();
    let got = draft(&h, read, draft_id).await;
    assert!(got["body_html"].as_str().unwrap().contains("Tool post"));

    // Destructive: the first call only says what it would delete.
    let first = h
        .tool_ok(write, "delete_content_block", json!({"block_id": id}))
        .await;
    assert_eq!(first["confirmation_required"], true);
    assert_eq!(h.get_with(read, &path).await.status(), 200, "not yet");
    let token = first["confirmation_token"].as_str().unwrap();
    let second = h
        .tool_ok(
            write,
            "delete_content_block",
            json!({"block_id": id, "confirmation_token": token}),
        )
        .await;
    assert_eq!(second["deleted"], true);
    expect_error(
        h.get_with(read, &path).await,
        404,
        "CONTENT_BLOCK_NOT_FOUND",
    )
    .await;
    h.stop().await;
}
