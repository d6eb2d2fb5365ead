//! The event tables partitioned by month (`email_events`, `events`): a send, a provider
//! webhook event and an export work across a partition boundary, with rows in the DEFAULT
//! partition and in partitions the upkeep made, and a month made after its rows arrived takes
//! them in.

use chrono::{DateTime, NaiveDate, Utc};
use mail_api::db::partitions;

use super::*;

/// A UUIDv7 of instant `at`, as the service makes them.
fn v7_at(at: &str) -> Uuid {
    let at: DateTime<Utc> = at.parse().unwrap();
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        u64::try_from(at.timestamp()).unwrap(),
        at.timestamp_subsec_nanos(),
    );
    Uuid::new_v7(ts)
}

/// The partition that holds row `id` of `table`.
async fn partition_of(h: &Harness, table: &str, id: impl std::fmt::Display) -> String {
    let found = h
        .query(&format!(
            "SELECT tableoid::regclass::text FROM {table} WHERE id = '{id}'"
        ))
        .await;
    assert_eq!(found.len(), 1, "{table} {id}: {found:?}");
    found[0].clone()
}

/// The month partition a row made now belongs in: that of its own id's month (so that a send
/// at the turn of a month is placed right either way).
async fn month_partition_of(h: &Harness, table: &str, id: impl std::fmt::Display) -> String {
    h.query(&format!(
        "SELECT '{table}_' || to_char(uuid_v7_time('{id}') AT TIME ZONE 'UTC', '\"y\"YYYY\"m\"MM')"
    ))
    .await
    .remove(0)
}

#[tokio::test]
async fn a_send_a_webhook_and_an_export_work_across_a_partition_boundary() {
    let s = Send::new().await;
    let t = s.h.tenant(Plan::Enterprise).await;
    let site = s.h.site(&t.write, "parts").await;
    s.use_resend(&t).await;
    let identified =
        s.h.api(&t.write)
            .post(
                "/api/v1/identify",
                &json!({"email": "ada@example.com", "site_id": site}),
            )
            .expect(201)
            .await;
    let contact = identified["contact_id"].as_str().unwrap().to_owned();

    // A send: its rows land in the partition of this month, made when the server started.
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = id_of(&body);
    assert_eq!(body["status"], "sent", "{body}");
    let message_id = body["provider_message_id"].as_str().unwrap().to_owned();
    let accepted =
        s.h.query(&format!(
            "SELECT id::text FROM email_events WHERE email_log_id = '{id}' AND kind = 'accepted'"
        ))
        .await
        .remove(0);
    assert_eq!(
        partition_of(&s.h, "email_events", &accepted).await,
        month_partition_of(&s.h, "email_events", &accepted).await
    );

    // Its `accepted` event as if written long ago, in a month no partition holds: it moves
    // to the DEFAULT partition.
    let old = v7_at("2001-02-03T04:05:06Z");
    s.h.exec(&format!(
        "UPDATE email_events SET id = '{old}' WHERE id = '{accepted}'"
    ))
    .await;
    assert_eq!(
        partition_of(&s.h, "email_events", old).await,
        "email_events_default"
    );

    // A provider's webhook event on that email: written in this month's partition, the email's
    // history read across both.
    let delivered = json!({"type": "email.delivered", "created_at": "2026-11-22T08:00:00Z",
                           "data": {"email_id": message_id, "to": ["ada@example.com"]}})
    .to_string();
    let res = s
        .webhook(
            "/api/webhooks/resend",
            WEBHOOK_SECRET,
            "msg_parts_1",
            &delivered,
        )
        .await;
    let status = res.status();
    let answer = res.text().await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).unwrap()["status"],
        "applied",
        "{answer}"
    );
    let email =
        s.h.api(&t.read)
            .get(&format!("/api/v1/emails/{id}"))
            .expect(200)
            .await;
    assert_eq!(email["status"], "delivered", "{email}");
    assert_eq!(
        event_kinds(&email),
        ["accepted", "sent", "delivered"],
        "{email}"
    );
    assert_eq!(
        email["events"][0]["id"],
        old.to_string().as_str(),
        "{email}"
    );
    let page =
        s.h.api(&t.read)
            .get(&format!("/api/v1/emails/{id}/events?limit=2"))
            .expect(200)
            .await;
    let kinds: Vec<&str> = page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["accepted", "sent"], "{page}");
    let delivered_id = email["events"][2]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        partition_of(&s.h, "email_events", &delivered_id).await,
        month_partition_of(&s.h, "email_events", &delivered_id).await
    );

    // The upkeep makes the months of its `now` and the next, once.
    let mut conn = s.h.conn().await;
    let far: DateTime<Utc> = "2099-06-15T12:00:00Z".parse().unwrap();
    let made = partitions::upkeep(&mut conn, far).await.expect("upkeep");
    assert_eq!(
        made,
        [
            "email_events_y2099m06",
            "email_events_y2099m07",
            "events_y2099m06",
            "events_y2099m07"
        ]
    );
    assert!(
        partitions::upkeep(&mut conn, far)
            .await
            .expect("upkeep again")
            .is_empty()
    );

    // Contact events in three months: one over the API (this month), one in the DEFAULT
    // partition, one in a partition the upkeep made. The export lists them all, in id order.
    s.h.api(&t.write)
        .post(
            "/api/v1/events",
            &json!({"email": "ada@example.com", "event": "now"}),
        )
        .expect(200)
        .await;
    let (past, future) = (v7_at("2001-02-03T04:05:06Z"), v7_at("2099-06-20T00:00:00Z"));
    let p = t.project;
    s.h.exec(&format!(
        "INSERT INTO events (id, project_id, contact_id, name) VALUES \
         ('{past}', '{p}', '{contact}', 'past'), ('{future}', '{p}', '{contact}', 'future')"
    ))
    .await;
    assert_eq!(partition_of(&s.h, "events", past).await, "events_default");
    assert_eq!(
        partition_of(&s.h, "events", future).await,
        "events_y2099m06"
    );
    let doc =
        s.h.api(&t.admin)
            .get("/api/v1/export?format=json")
            .expect(200)
            .await;
    let names: Vec<&str> = doc["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["past", "now", "future"], "{doc}");
    assert_eq!(doc["events"][0]["id"], past.to_string().as_str(), "{doc}");
    let log = doc["email_log"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(log.len(), 1, "{doc}");
    assert_eq!(log[0]["status"], "delivered", "{doc}");
    s.finish().await;
}

/// A month made after some of its rows landed in the DEFAULT partition takes them in, with
/// what points at them (an enrollment's event) unchanged.
#[tokio::test]
async fn a_month_made_late_takes_in_its_rows_from_the_default_partition() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "late").await;
    let identified = h
        .api(&t.write)
        .post(
            "/api/v1/identify",
            &json!({"email": "bo@example.com", "site_id": site}),
        )
        .expect(201)
        .await;
    let contact = identified["contact_id"].as_str().unwrap().to_owned();
    let (p, event, campaign, enrollment) = (
        t.project,
        v7_at("2098-03-05T10:00:00Z"),
        Uuid::now_v7(),
        Uuid::now_v7(),
    );
    for sql in [
        format!(
            "INSERT INTO events (id, project_id, contact_id, name) \
             VALUES ('{event}', '{p}', '{contact}', 'early')"
        ),
        format!(
            "INSERT INTO campaigns (id, project_id, site_id, name, type) \
             VALUES ('{campaign}', '{p}', '{site}', 'c', 'drip')"
        ),
        format!(
            "INSERT INTO enrollments (id, project_id, campaign_id, contact_id, source, event_id) \
             VALUES ('{enrollment}', '{p}', '{campaign}', '{contact}', 'event', '{event}')"
        ),
    ] {
        h.exec(&sql).await;
    }
    assert_eq!(partition_of(&h, "events", event).await, "events_default");

    let mut conn = h.conn().await;
    let month = NaiveDate::from_ymd_opt(2098, 3, 1).unwrap();
    let made = partitions::create_month(&mut conn, "events", month)
        .await
        .expect("create");
    assert_eq!(made.as_deref(), Some("events_y2098m03"));
    assert_eq!(partition_of(&h, "events", event).await, "events_y2098m03");
    assert_eq!(
        h.query(&format!(
            "SELECT event_id::text FROM enrollments WHERE id = '{enrollment}'"
        ))
        .await,
        [event.to_string()]
    );
    // The key pointing at the table is back and still acts: the event's deletion clears it.
    assert_eq!(
        h.query(
            "SELECT count(*) FROM pg_constraint \
             WHERE conname = 'enrollments_event_id_fkey' AND confrelid = 'events'::regclass"
        )
        .await,
        ["1"]
    );
    let doc = h
        .api(&t.admin)
        .get("/api/v1/export?format=json")
        .expect(200)
        .await;
    assert_eq!(doc["events"][0]["event"], "early", "{doc}");
    h.exec(&format!("DELETE FROM events WHERE id = '{event}'"))
        .await;
    assert_eq!(
        h.query(&format!(
            "SELECT coalesce(event_id::text, 'null') FROM enrollments WHERE id = '{enrollment}'"
        ))
        .await,
        ["null"]
    );
    h.stop().await;
}
