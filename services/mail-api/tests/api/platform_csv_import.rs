//! CSV exports imported through the migration machinery (`POST /api/v1/platforms/imports/csv`,
//! the `import_platform_csv` tool, the `platform.migrate` job): Mailchimp's audience export
//! made here as its ZIP of subscribed, unsubscribed and cleaned members, imported suppressions
//! first through a crash of the workers in the middle of the contacts (held by a row lock the
//! test takes, so no timing decides where), with exact counts; a generic file through a column
//! mapping, over REST and MCP; a second import creating nothing; every refused input answered
//! 400 naming its field; another project's run and site are 404.

use std::io::Write as _;
use std::time::Duration;

use base64::Engine as _;
use diesel_async::SimpleAsyncConnection as _;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use zip::write::{SimpleFileOptions, ZipWriter};

use crate::common::*;
use crate::platform_migrations::{Workers, count, ended};

/// The job's page size (`MAIL_PLATFORMS__PAGE_SIZE`): rows read per page.
const PAGE: usize = 100;

async fn harness() -> Harness {
    Harness::with(|url| {
        let mut s = settings(url);
        s.platforms.page_size = PAGE as u32;
        s.platforms.relay_interval_ms = 50;
        s.platforms.retry_delays_ms = "100,100,100".to_owned();
        s
    })
    .await
}

/// The export: 2,500 subscribed members (two with an address that is not one), 300
/// unsubscribed and 200 cleaned.
const SUBSCRIBED: usize = 2_500;
const UNSUBSCRIBED: usize = 300;
const CLEANED: usize = 200;
const BAD: [usize; 2] = [10, 1_777];
/// The subscribed member who is already a contact, locked by the test: the page holding it
/// (rows 1,200 to 1,299) waits, the twelve before it are written.
const HELD: usize = 1_234;

const COLUMNS: &str = "\"Email Address\",\"First Name\",\"Last Name\",\"Phone Number\",\
MEMBER_RATING,OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,LATITUDE,LONGITUDE,GMTOFF,DSTOFF,\
TIMEZONE,CC,REGION,LAST_CHANGED,LEID,EUID,NOTES,TAGS";

fn member(prefix: &str, i: usize) -> String {
    let email = if prefix == "sub" && BAD.contains(&i) {
        format!("not-an-address-{i}")
    } else {
        format!("{prefix}{i}@Example.com")
    };
    let phone = if i.is_multiple_of(2) {
        format!("+33 1 00 00 {i:04}")
    } else {
        String::new()
    };
    // Mailchimp's TAGS cell: a quoted, comma-separated list.
    let tags = if i.is_multiple_of(10) {
        r#""""vip"",""Early Bird""""#
    } else {
        ""
    };
    format!(
        "{email},First{i},Last{i},{phone},2,2024-01-01 10:00:00,,2024-01-01 10:00:05,,,,,,,,,\
         2024-02-01 10:00:00,{i},euid-{prefix}{i},,{tags}"
    )
}

/// The ZIP of Mailchimp's audience export, its subscribed members first.
fn mailchimp_export() -> Vec<u8> {
    let mut subscribed = format!("{COLUMNS}\n");
    for i in 0..SUBSCRIBED {
        subscribed.push_str(&member("sub", i));
        subscribed.push('\n');
    }
    let mut unsubscribed = format!(
        "{COLUMNS},UNSUB_TIME,UNSUB_CAMPAIGN_TITLE,UNSUB_CAMPAIGN_ID,UNSUB_REASON,UNSUB_REASON_OTHER\n"
    );
    for i in 0..UNSUBSCRIBED {
        unsubscribed.push_str(&member("unsub", i));
        unsubscribed.push_str(",2024-03-01 10:00:00,Spring,c1,\"No longer interested\",\n");
    }
    let mut cleaned = format!("{COLUMNS},CLEAN_TIME,CLEAN_CAMPAIGN_TITLE,CLEAN_CAMPAIGN_ID\n");
    for i in 0..CLEANED {
        cleaned.push_str(&member("clean", i));
        cleaned.push_str(",2024-03-02 10:00:00,Spring,c1\n");
    }
    zip_of(&[
        ("subscribed_members_export_1a2b.csv", &subscribed),
        ("unsubscribed_members_export_1a2b.csv", &unsubscribed),
        ("cleaned_members_export_1a2b.csv", &cleaned),
    ])
}

fn zip_of(files: &[(&str, &str)]) -> Vec<u8> {
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content) in files {
        zip.start_file(*name, SimpleFileOptions::default()).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Posts an import: 202 with the queued run, its address in `Location`.
async fn import(h: &Harness, key: &str, body: &Value) -> Value {
    let res = h.api(key).post("/api/v1/platforms/imports/csv", body).await;
    assert_eq!(res.status(), 202, "{:?}", res.text().await);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let run = json(res).await;
    assert_eq!(run["status"], "queued", "{run}");
    assert_eq!(run["kind"], "csv");
    assert_eq!(run["connection_id"], Value::Null);
    assert_eq!(
        location,
        format!("/api/v1/platforms/imports/{}", run["id"].as_str().unwrap())
    );
    run
}

/// Waits (a generous bound) until a statement of the test database waits for a lock.
async fn until_a_worker_waits_for_the_lock(h: &Harness) {
    let sql = "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
               WHERE NOT l.granted AND a.datname = current_database()";
    for _ in 0..1200 {
        if count(h, sql).await > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no worker waited for the held contact in 2 minutes");
}

fn kind_counts(imported: usize, updated: usize, skipped: usize) -> Value {
    json!({"imported": imported, "updated": updated, "skipped": skipped, "failed": 0})
}

fn counts(suppressions: Value, contacts: Value) -> Value {
    let none = kind_counts(0, 0, 0);
    json!({"suppressions": suppressions, "contacts": contacts, "lists": none,
        "templates": none, "campaigns": none})
}

#[tokio::test]
async fn a_mailchimp_export_lands_once_suppressions_first_through_a_crash() {
    let h = harness().await;
    let t = h.tenant(Plan::Managed).await;
    let project = t.project;
    let site = h.site(&t.write, "shop").await;
    let held = format!("sub{HELD}@example.com");
    h.api(&t.write)
        .post("/api/v1/contacts", &json!({"email": held}))
        .expect(201)
        .await;
    let mut lock = h.conn().await;
    lock.batch_execute(&format!(
        "BEGIN; SELECT id FROM contacts WHERE project_id = '{project}' AND email = '{held}' \
         FOR UPDATE"
    ))
    .await
    .unwrap();
    let zip = base64(&mailchimp_export());
    let body = json!({"site_id": site, "layout": "mailchimp", "zip_base64": zip});
    let workers = Workers::start(&h).await;
    let run = import(&h, &t.write, &body).await;
    assert_eq!(run["platform"], "mailchimp");
    let id = run["id"].as_str().unwrap().to_owned();

    // Killed while the page of the held contact waits: every suppression and the twelve
    // pages of contacts before it are written, the run is `running`.
    until_a_worker_waits_for_the_lock(&h).await;
    workers.kill().await;
    let midway = h
        .api(&t.read)
        .get(&format!("/api/v1/platforms/imports/{id}"))
        .expect(200)
        .await;
    assert_eq!(midway["status"], "running", "{midway}");
    assert_eq!(
        midway["counts"],
        counts(
            kind_counts(UNSUBSCRIBED + CLEANED, 0, 0),
            kind_counts(12 * PAGE - 1, 0, 1)
        ),
        "{midway}"
    );
    lock.batch_execute("ROLLBACK").await.unwrap();

    // Started again, the workers finish it from its last page.
    let workers = Workers::start(&h).await;
    let done = ended(&h, &t.read, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["counts"],
        counts(
            kind_counts(UNSUBSCRIBED + CLEANED, 0, 0),
            kind_counts(SUBSCRIBED - BAD.len() - 1, 1, BAD.len())
        ),
        "{done}"
    );
    let errors: Vec<Value> = BAD
        .iter()
        .map(|i| {
            json!({"kind": "contacts", "error": "not a valid email address",
                "remote_id": format!("subscribed_members_export_1a2b.csv line {}", i + 2)})
        })
        .collect();
    assert_eq!(done["errors"], json!(errors));
    assert!(!done.to_string().contains("not-an-address"), "{done}");
    assert!(done["started_at"].is_string() && done["finished_at"].is_string());

    let contacts = format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'");
    assert_eq!(count(&h, &contacts).await, (SUBSCRIBED - BAD.len()) as i64);
    for (reason, n) in [("unsubscribed", UNSUBSCRIBED), ("bounced", CLEANED)] {
        let sql = format!(
            "SELECT count(*) FROM suppressions WHERE project_id = '{project}' \
             AND reason = '{reason}' AND note = 'imported from mailchimp'"
        );
        assert_eq!(count(&h, &sql).await, n as i64, "{reason}");
    }
    // Suppressed before any contact was imported (the held one was there before), by time
    // and by id (UUIDv7, made as each page is written).
    let order = h
        .query(&format!(
            "SELECT (SELECT max(created_at) FROM suppressions WHERE project_id = '{project}') \
                  < (SELECT min(created_at) FROM contacts WHERE project_id = '{project}' \
                        AND source = 'import') \
                AND (SELECT id FROM suppressions WHERE project_id = '{project}' \
                        ORDER BY id DESC LIMIT 1) \
                  < (SELECT id FROM contacts WHERE project_id = '{project}' \
                        AND source = 'import' ORDER BY id LIMIT 1)"
        ))
        .await;
    assert_eq!(order, ["true"], "suppressions come first");
    // Consent, names, merge fields as properties, TAGS as tags, attribution; Mailchimp's own
    // columns are not properties.
    let row = h
        .query(&format!(
            "SELECT c.first_name || ' ' || c.last_name || ' ' || (c.properties->>'phone_number') \
                    || ' ' || array_to_string(c.tags, ',') || ' ' \
                    || (c.properties->'imported_from'->>'platform') || ':' \
                    || (c.properties->'imported_from'->>'id') || ':' \
                    || (c.properties->'imported_from'->>'import_id') || ' ' || s.status \
               FROM contacts c JOIN contact_sites s ON s.contact_id = c.id \
              WHERE c.project_id = '{project}' AND c.email = 'sub0@example.com'"
        ))
        .await;
    assert_eq!(
        row,
        [format!(
            "First0 Last0 +33 1 00 00 0000 Early Bird,vip mailchimp:euid-sub0:{id} subscribed"
        )]
    );
    let system = format!(
        "SELECT count(*) FROM contacts WHERE project_id = '{project}' AND (properties ? \
         'member_rating' OR properties ? 'optin_time' OR properties ? 'tags' OR properties ? \
         'email_address')"
    );
    assert_eq!(count(&h, &system).await, 0);
    let held_row = h
        .query(&format!(
            "SELECT c.first_name || ' ' || s.status FROM contacts c \
               JOIN contact_sites s ON s.contact_id = c.id \
              WHERE c.project_id = '{project}' AND c.email = '{held}'"
        ))
        .await;
    assert_eq!(held_row, [format!("First{HELD} subscribed")]);
    let files = "SELECT count(*) FROM platform_import_files";
    assert_eq!(
        count(&h, files).await,
        0,
        "the upload is deleted when the run ends"
    );

    // The same export again creates nothing.
    let again = import(&h, &t.write, &body).await;
    let second = ended(&h, &t.read, again["id"].as_str().unwrap()).await;
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(
        second["counts"],
        counts(
            kind_counts(0, UNSUBSCRIBED + CLEANED, 0),
            kind_counts(0, SUBSCRIBED - BAD.len(), BAD.len())
        ),
        "{second}"
    );
    assert_eq!(count(&h, &contacts).await, (SUBSCRIBED - BAD.len()) as i64);
    let suppressions = format!("SELECT count(*) FROM suppressions WHERE project_id = '{project}'");
    assert_eq!(
        count(&h, &suppressions).await,
        (UNSUBSCRIBED + CLEANED) as i64
    );
    let notes = h
        .api(&t.read)
        .get("/api/v1/notifications")
        .expect(200)
        .await;
    let completed: Vec<&Value> = notes["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "platform_import.completed")
        .collect();
    assert_eq!(completed.len(), 2, "{notes}");
    workers.finish(&h).await;
}

/// A generic file: its columns named by a mapping; the others not imported.
const GENERIC: &str = "E-mail,Given,Family,Labels,State,City,Ignored
ann@example.com,Ann,Lee,\"vip, early\",subscribed,Paris,x
bob@example.com,Bob,,,UNSUBSCRIBED,,x
cat@example.com,Cat,,,,Lyon,x
dan@example.com,Dan,,,maybe,,x
not-an-address,Eve,,,,,x
fay@example.com,Fay,,,unsubscribed,,x
";

fn generic_body(site: &str) -> Value {
    json!({"site_id": site, "layout": "generic", "csv": GENERIC, "mapping": {
        "email": "E-mail", "first_name": "Given", "last_name": "Family", "tags": "Labels",
        "status": "State", "properties": {"city": "City"}}})
}

#[tokio::test]
async fn a_generic_file_lands_through_its_mapping_over_rest_and_mcp() {
    let h = harness().await;
    let t = h.tenant(Plan::Byod).await;
    let project = t.project;
    let site = h.site(&t.write, "shop").await;
    let workers = Workers::start(&h).await;
    let body = generic_body(&site);
    let run = import(&h, &t.write, &body).await;
    assert_eq!(run["platform"], "csv");
    let id = run["id"].as_str().unwrap();
    let done = ended(&h, &t.read, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["counts"],
        counts(kind_counts(2, 0, 0), kind_counts(2, 0, 2)),
        "{done}"
    );
    assert_eq!(
        done["errors"],
        json!([
            {"kind": "contacts", "remote_id": "line 5",
                "error": "status: neither subscribed nor unsubscribed"},
            {"kind": "contacts", "remote_id": "line 6", "error": "not a valid email address"},
        ])
    );
    let suppressed = h
        .query(&format!(
            "SELECT email || ' ' || reason FROM suppressions WHERE project_id = '{project}' \
             ORDER BY email"
        ))
        .await;
    assert_eq!(
        suppressed,
        [
            "bob@example.com unsubscribed",
            "fay@example.com unsubscribed"
        ]
    );
    let contacts = h
        .query(&format!(
            "SELECT c.email || ' ' || coalesce(c.first_name, '') || ' ' \
                    || coalesce(c.last_name, '') || ' ' || array_to_string(c.tags, ',') || ' ' \
                    || (c.properties - 'imported_from')::text || ' ' \
                    || (c.properties->'imported_from')::text || ' ' || s.status \
               FROM contacts c JOIN contact_sites s ON s.contact_id = c.id \
              WHERE c.project_id = '{project}' ORDER BY c.email"
        ))
        .await;
    assert_eq!(
        contacts,
        [
            format!(
                "ann@example.com Ann Lee early,vip {{\"city\": \"Paris\"}} {{\"id\": \"line 2\", \
                 \"platform\": \"csv\", \"import_id\": \"{id}\"}} subscribed"
            ),
            format!(
                "cat@example.com Cat   {{\"city\": \"Lyon\"}} {{\"id\": \"line 4\", \
                 \"platform\": \"csv\", \"import_id\": \"{id}\"}} subscribed"
            ),
        ]
    );

    // With an Idempotency-Key: a retry answers the first run again and records nothing more;
    // the key with another body is 409.
    let keyed = h
        .api(&t.write)
        .post("/api/v1/platforms/imports/csv", &body)
        .header("Idempotency-Key", "csv-once")
        .expect(202)
        .await;
    let res = h
        .api(&t.write)
        .post("/api/v1/platforms/imports/csv", &body)
        .header("Idempotency-Key", "csv-once")
        .await;
    assert_eq!(res.status(), 202);
    assert_eq!(res.headers()["idempotent-replayed"], "true");
    assert_eq!(json(res).await["id"], keyed["id"]);
    let mut other = body.clone();
    other["mapping"]["first_name"] = json!("Family");
    let res = h
        .api(&t.write)
        .post("/api/v1/platforms/imports/csv", &other)
        .header("Idempotency-Key", "csv-once")
        .await;
    expect_error(res, 409, "IDEMPOTENCY_KEY_REUSED").await;
    ended(&h, &t.read, keyed["id"].as_str().unwrap()).await;

    // The tool calls the same function: the same file again creates nothing.
    let args = body.clone();
    let tool_run = h
        .api(&t.write)
        .post("/api/mcp/tools/import_platform_csv", &args)
        .expect(200)
        .await;
    assert_eq!(tool_run["kind"], "csv", "{tool_run}");
    let again = ended(&h, &t.read, tool_run["id"].as_str().unwrap()).await;
    assert_eq!(
        again["counts"],
        counts(kind_counts(0, 2, 0), kind_counts(0, 2, 2)),
        "{again}"
    );
    let total = format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'");
    assert_eq!(count(&h, &total).await, 2);
    let history = h
        .api(&t.read)
        .get("/api/v1/platforms/imports")
        .expect(200)
        .await;
    assert_eq!(history["data"].as_array().unwrap().len(), 3, "{history}");

    // Another project: the run is 404, and its history has none of it; a site of another
    // project is 404.
    let theirs = h.tenant(Plan::Byod).await;
    let res = h
        .api(&theirs.read)
        .get(&format!("/api/v1/platforms/imports/{id}"))
        .await;
    expect_error(res, 404, "PLATFORM_IMPORT_NOT_FOUND").await;
    let listed = h
        .api(&theirs.read)
        .get("/api/v1/platforms/imports")
        .expect(200)
        .await;
    assert_eq!(listed["data"], json!([]));
    let res = h
        .api(&theirs.write)
        .post("/api/v1/platforms/imports/csv", &body)
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    workers.finish(&h).await;
}

#[tokio::test]
async fn refused_uploads_answer_400_naming_the_field_and_record_nothing() {
    let (h, t) = Harness::with_tenant(Plan::Byod).await;
    let site = h.site(&t.write, "shop").await;
    let post = |body: Value| h.api(&t.write).post("/api/v1/platforms/imports/csv", &body);
    let mapping = json!({"email": "E-mail"});
    let chimp_zip = |csv: &str| base64(&zip_of(&[("members.csv", csv)]));
    let cases = [
        (
            json!({"site_id": site, "layout": "generic", "mapping": mapping}),
            "csv",
        ),
        (
            json!({"site_id": site, "layout": "generic", "mapping": mapping, "csv": GENERIC,
                "zip_base64": chimp_zip(GENERIC)}),
            "zip_base64",
        ),
        (
            json!({"site_id": site, "layout": "hubspot", "csv": GENERIC}),
            "layout",
        ),
        (
            json!({"site_id": site, "layout": "generic", "csv": GENERIC}),
            "mapping",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp", "csv": COLUMNS, "mapping": mapping}),
            "mapping",
        ),
        (
            json!({"site_id": site, "layout": "generic", "csv": GENERIC,
                "mapping": {"email": "Email"}}),
            "mapping.email",
        ),
        (
            json!({"site_id": site, "layout": "generic", "csv": GENERIC,
                "mapping": {"email": "E-mail", "properties": {"city": "Town"}}}),
            "mapping.properties.city",
        ),
        (
            json!({"site_id": site, "layout": "generic", "csv": GENERIC,
                "mapping": {"email": "E-mail", "properties": {"imported_from": "City"}}}),
            "mapping.properties.imported_from",
        ),
        (
            json!({"site_id": site, "layout": "generic", "csv": GENERIC,
                "mapping": {"first_name": "Given"}}),
            "mapping.email",
        ),
        (
            json!({"site_id": site, "layout": "generic", "csv": GENERIC,
                "mapping": {"email": "E-mail", "phone": "Phone"}}),
            "mapping.phone",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp", "csv": GENERIC}),
            "csv",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp", "csv": "\n\n"}),
            "csv",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp", "zip_base64": "!!!"}),
            "zip_base64",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp", "zip_base64": base64(b"not a zip")}),
            "zip_base64",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp", "zip_base64": chimp_zip(GENERIC)}),
            "zip_base64",
        ),
        (
            json!({"site_id": site, "layout": "mailchimp",
                "zip_base64": base64(&zip_of(&[("readme.txt", "hello")]))}),
            "zip_base64",
        ),
        (
            json!({"site_id": site, "layuot": "mailchimp", "csv": COLUMNS}),
            "layuot",
        ),
    ];
    for (body, field) in cases {
        let res = post(body.clone()).await;
        let status = res.status();
        let text = res.text().await.unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status, 400, "{body}: {text}");
        assert_eq!(answer["code"], "VALIDATION_ERROR", "{body}: {text}");
        assert_eq!(answer["details"], json!({"field": field}), "{body}: {text}");
    }
    let res = post(json!({"site_id": site, "layuot": "mailchimp", "csv": COLUMNS})).await;
    let err = json(res).await;
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("did you mean `layout`"),
        "{err}"
    );

    // Over 10 MiB: the body is refused before it is read.
    let big = "a".repeat(http_kit::MAX_UPLOAD_BODY + 1);
    let res = post(json!({"site_id": site, "layout": "mailchimp", "csv": big})).await;
    expect_error(res, 400, "PAYLOAD_TOO_LARGE").await;
    let res = h
        .api(&t.read)
        .post(
            "/api/v1/platforms/imports/csv",
            &json!({"site_id": site, "layout": "mailchimp", "csv": COLUMNS}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let none = "SELECT count(*) FROM platform_imports";
    assert_eq!(count(&h, none).await, 0);
}
