//! Deliveries that race: duplicate and redelivered jobs, expired claims, and outcomes, checks and
//! claims written by batches.

use super::*;

/// Two deliveries of one job at once (a relay duplicate, a redelivery) to a slow SMTP server:
/// the first claims the email before calling the provider, the second finds the claim and
/// sends nothing. Both used to read the row as unsent and both sent.
#[tokio::test]
async fn duplicate_jobs_handled_at_once_send_one_message() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 200).await;
    let (t, id) = s.queued_alone("twice", "ada@example.com").await;
    let task = SendEmail {
        email_log_id: id,
        project_id: t.project,
    };
    let publisher = s.broker.publisher(send_queue(s.prefix()));
    for _ in 0..2 {
        publisher.publish(&task).await.expect("publish");
    }

    let slow = SmtpSink::start_slow(Duration::from_millis(1_500)).await;
    let worker = s.send_worker_to(slow.port);
    s.start_worker_with(worker);
    let email = s
        .wait_email(&t.read, &id.to_string(), |e| e["status"] == "sent")
        .await;
    // Give the other deliveries every chance to send a copy.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert_eq!(slow.received_count(), 1);
    assert_eq!(email["attempts"], 1);
    assert_eq!(event_kinds(&email), ["accepted", "sent"]);
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM email_log WHERE id = '{id}' AND claimed_at IS NULL"
        ))
        .await,
        ["1"]
    );
    s.finish().await;
}

/// A worker killed after claiming an email: the job's next delivery finds the claim and sends
/// nothing, and once the claim expires the relay publishes the job again and it is sent.
#[tokio::test]
async fn an_email_claimed_by_a_dead_worker_is_sent_once_the_claim_expires() {
    let mut s = Send::with(|s| {
        s.sending.reply_wait_ms = 200;
        s.sending.outbox_relay_secs = 1;
    })
    .await;
    let (t, id) = s.queued_alone("dead", "ada@example.com").await;
    // Claimed 41 s ago by a worker that died: the claim holds for 4 s more.
    let expires_in = 4;
    s.h.exec(&format!(
        "UPDATE email_log SET claimed_at = now() - make_interval(secs => {}) WHERE id = '{id}'",
        mail_api::db::emails::CLAIM_SECS - expires_in
    ))
    .await;
    s.start_worker();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(s.sink.received_count(), 0, "sent while the claim held");
    assert_eq!(s.email(&t.read, &id.to_string()).await["status"], "queued");
    s.wait_email(&t.read, &id.to_string(), |e| e["status"] == "sent")
        .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(s.sink.received_count(), 1);
    s.finish().await;
}

/// Many jobs finishing at once, each published twice: the outcomes are written in batches
/// (one statement for several emails), and every email ends `sent` once, with one message, one
/// attempt and one `sent` event.
#[tokio::test]
async fn many_concurrent_sends_each_record_their_outcome_exactly_once() {
    const EMAILS: usize = 40;
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 200).await;
    s.without_worker().await;
    let t = s.h.tenant(Plan::Managed).await;
    let site = s.h.site(&t.write, "many").await;
    let ids: Vec<String> = futures_util::future::join_all((0..EMAILS).map(|i| {
        let (s, t, site) = (&s, &t, &site);
        async move {
            s.queued(&t.write, site, &format!("reader{i}@example.com"))
                .await
        }
    }))
    .await;
    let publisher = s.broker.publisher(send_queue(s.prefix()));
    for id in &ids {
        let task = SendEmail {
            email_log_id: id.parse().unwrap(),
            project_id: t.project,
        };
        publisher.publish(&task).await.expect("publish");
    }

    // A long window and a small batch: the outcomes of the jobs handled at once share
    // statements.
    let worker = s
        .send_worker()
        .with_outcome_batching(mail_api::worker::OutcomeBatchSettings {
            max_batch: 8,
            window_ms: 200,
            writers: 2,
        });
    let batch_sizes = worker.collectors().remove(1);
    s.start_worker_prefetching(worker, 32);
    for id in &ids {
        let email = s.wait_email(&t.read, id, |e| e["status"] == "sent").await;
        assert_eq!(email["attempts"], 1, "{id}");
        assert_eq!(event_kinds(&email), ["accepted", "sent"], "{id}");
        assert!(email["provider_message_id"].is_string(), "{id}");
    }
    // Give the duplicate deliveries every chance to send or record again.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(s.sink.received_count(), EMAILS);
    let mut recipients: Vec<String> = s.sink.received().iter().map(|m| m.to.join(",")).collect();
    recipients.sort();
    recipients.dedup();
    assert_eq!(recipients.len(), EMAILS);
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) || '|' || count(DISTINCT email_log_id) FROM email_events \
             WHERE project_id = '{}' AND kind = 'sent'",
            t.project
        ))
        .await,
        [format!("{EMAILS}|{EMAILS}")]
    );
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM email_log WHERE project_id = '{}' \
             AND status = 'sent' AND claimed_at IS NULL",
            t.project
        ))
        .await,
        [EMAILS.to_string()]
    );
    // Every outcome went through a batch, and batches held several.
    let histogram = batch_sizes.collect()[0].get_metric()[0]
        .get_histogram()
        .clone();
    assert_eq!(histogram.get_sample_sum(), EMAILS as f64);
    assert!(histogram.get_sample_count() < EMAILS as u64);
    // The requests' emails were written by batches: each once, with one `accepted` event,
    // counted once against the month, and no job left in the outbox.
    assert_eq!(
        s.h.query(&format!(
            "SELECT (SELECT count(*) FROM email_log WHERE project_id = '{p}') || '|' || \
                    (SELECT count(*) FROM email_events WHERE project_id = '{p}' \
                       AND kind = 'accepted') || '|' || \
                    (SELECT sum(sends) FROM project_monthly_sends WHERE project_id = '{p}') || \
                    '|' || (SELECT count(*) FROM outbox WHERE project_id = '{p}')",
            p = t.project
        ))
        .await,
        [format!("{EMAILS}|{EMAILS}|{EMAILS}|0")]
    );
    s.finish().await;
}

/// Concurrent sends are written by batches; a batch that cannot be written hands its emails
/// back and each is written alone, so only the email at fault fails (and is not counted).
#[tokio::test]
async fn an_email_that_cannot_be_written_fails_alone_and_is_not_counted() {
    const GOOD: usize = 24;
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 100).await;
    s.without_worker().await;
    let t = s.h.tenant(Plan::Managed).await;
    let site = s.h.site(&t.write, "fault").await;
    // One address the database refuses, whatever batch it comes in.
    s.h.exec(
        "CREATE FUNCTION refuse_bad_recipient() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.to_email = 'bad@example.com' THEN \
           RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
    )
    .await;
    s.h.exec(
        "CREATE TRIGGER refuse_bad_recipient BEFORE INSERT ON email_log \
         FOR EACH ROW EXECUTE FUNCTION refuse_bad_recipient()",
    )
    .await;
    let recipients: Vec<String> = (0..GOOD)
        .map(|i| format!("good{i}@example.com"))
        .chain(["bad@example.com".to_owned()])
        .collect();
    let statuses: Vec<u16> = futures_util::future::join_all(recipients.iter().map(|to| {
        let (s, t, site) = (&s, &t, &site);
        async move { s.send(&t.write, &message(site, to)).await.status().as_u16() }
    }))
    .await;
    assert_eq!(statuses[..GOOD], [202; GOOD]);
    assert_eq!(statuses[GOOD], 500);
    assert_eq!(
        s.h.query(&format!(
            "SELECT (SELECT count(DISTINCT to_email) || '/' || count(*) FROM email_log \
                       WHERE project_id = '{p}') || '|' || \
                    (SELECT sum(sends) FROM project_monthly_sends WHERE project_id = '{p}')",
            p = t.project
        ))
        .await,
        [format!("{GOOD}/{GOOD}|{GOOD}")]
    );
    s.finish().await;
}

/// Concurrent sends are checked, counted and written by batches: each request still gets its
/// own check's answer, and the month's quota is exact, also when a batch holds more emails
/// than the quota has left (those are handed back and decided one by one).
#[tokio::test]
async fn concurrent_sends_get_their_own_checks_and_the_quota_admits_exactly_what_is_left() {
    const LEFT: usize = 10;
    const GOOD: usize = 30;
    const BAD: usize = 5;
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 100).await;
    s.without_worker().await;
    // Byod: 50,000 sends a month, 100 sends per five minutes.
    let t = s.h.tenant(Plan::Byod).await;
    let site = s.h.site(&t.write, "checks").await;
    let other = s.h.tenant(Plan::Byod).await;
    let foreign_site = s.h.site(&other.write, "foreign").await;
    s.h.post_json(
        &t.write,
        "/api/v1/suppressions",
        &json!({"email": "gone@example.com"}),
    )
    .await;
    s.h.exec(&format!(
        "INSERT INTO project_monthly_sends (project_id, month, sends) \
         VALUES ('{}', date_trunc('month', now() AT TIME ZONE 'UTC')::date, {})",
        t.project,
        50_000 - LEFT
    ))
    .await;
    let bodies: Vec<Value> = (0..GOOD)
        .map(|i| message(&site, &format!("good{i}@example.com")))
        .chain((0..BAD).map(|_| message(&site, "gone@example.com")))
        .chain((0..BAD).map(|i| message(&foreign_site, &format!("far{i}@example.com"))))
        .collect();
    let answers: Vec<(u16, Option<String>)> =
        futures_util::future::join_all(bodies.iter().map(|body| {
            let (s, t) = (&s, &t);
            async move {
                let res = s.send(&t.write, body).await;
                let status = res.status().as_u16();
                let body = json(res).await;
                (status, body["code"].as_str().map(str::to_owned))
            }
        }))
        .await;
    let count = |status: u16, code: Option<&str>| {
        answers
            .iter()
            .filter(|(s, c)| *s == status && c.as_deref() == code)
            .count()
    };
    assert_eq!(count(202, None), LEFT, "{answers:?}");
    assert_eq!(count(422, Some("PLAN_LIMIT")), GOOD - LEFT, "{answers:?}");
    assert!(
        answers[GOOD..GOOD + BAD]
            .iter()
            .all(|a| *a == (422, Some("SUPPRESSED_CONTACT".into()))),
        "{answers:?}"
    );
    assert!(
        answers[GOOD + BAD..]
            .iter()
            .all(|a| *a == (404, Some("SITE_NOT_FOUND".into()))),
        "{answers:?}"
    );
    assert_eq!(
        s.h.query(&format!(
            "SELECT (SELECT count(*) FROM email_log WHERE project_id = '{p}') || '|' || \
                    (SELECT count(*) FROM email_events WHERE project_id = '{p}' \
                       AND kind = 'accepted') || '|' || \
                    (SELECT sum(sends) FROM project_monthly_sends WHERE project_id = '{p}') || \
                    '|' || (SELECT count(*) FROM email_log WHERE project_id = '{o}')",
            p = t.project,
            o = other.project
        ))
        .await,
        [format!("{LEFT}|{LEFT}|50000|0")]
    );
    s.finish().await;
}

/// One statement claims several emails, each for its own delivery: an unsent one is claimed,
/// one whose claim another delivery holds is not (unless this delivery takes it over), and an
/// unknown id or another project's is not found.
#[tokio::test]
async fn a_batch_of_claims_claims_each_email_for_its_own_delivery() {
    use mail_api::db::emails::{Claim, claim_many_for_sending};
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 100).await;
    let (t, free) = s.queued_alone("claims", "free@example.com").await;
    let site = s.h.site(&t.write, "claims-2").await;
    let held: Uuid = s
        .queued(&t.write, &site, "held@example.com")
        .await
        .parse()
        .unwrap();
    let taken: Uuid = s
        .queued(&t.write, &site, "taken@example.com")
        .await
        .parse()
        .unwrap();
    s.h.exec(&format!(
        "UPDATE email_log SET claimed_at = now() WHERE id IN ('{held}', '{taken}')"
    ))
    .await;
    let claim = |id, take_over| Claim {
        project_id: t.project,
        id,
        take_over,
    };
    let batch = [
        claim(free, false),
        claim(held, false),
        claim(taken, true),
        claim(Uuid::now_v7(), false),
        Claim {
            project_id: Uuid::now_v7(),
            ..claim(free, false)
        },
    ];
    let mut conn = s.h.conn().await;
    let mut found: Vec<(Uuid, bool, String)> = claim_many_for_sending(&mut conn, &batch[..4])
        .await
        .unwrap()
        .into_iter()
        .map(|f| (f.email.id, f.claimed, f.email.to_email))
        .collect();
    found.sort();
    let mut expected = vec![
        (free, true, "free@example.com".to_owned()),
        (held, false, "held@example.com".to_owned()),
        (taken, true, "taken@example.com".to_owned()),
    ];
    expected.sort();
    assert_eq!(found, expected);
    assert!(
        claim_many_for_sending(&mut conn, &batch[4..])
            .await
            .unwrap()
            .is_empty()
    );
    // Claimed now: another delivery's claim of the free email is refused.
    let again = claim_many_for_sending(&mut conn, &batch[..1])
        .await
        .unwrap();
    assert!(!again[0].claimed);
    s.finish().await;
}

/// One batch naming an email twice (two deliveries of its job finished together) moves it
/// once, with one event; a batch over emails already finished moves nothing.
#[tokio::test]
async fn a_batch_naming_an_email_twice_records_it_once() {
    use mail_api::db::emails::{Finishing, Outcome, finish_many};
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 200).await;
    let (t, id) = s.queued_alone("twice-batch", "ada@example.com").await;
    let sent = Outcome::Sent {
        provider: "smtp",
        provider_message_id: "<one@example.com>",
    };
    let failed = Outcome::Failed {
        provider: "smtp",
        reason: "refused",
    };
    let batch = [
        Finishing::new(t.project, id, sent),
        Finishing::new(t.project, id, failed),
    ];
    let mut conn = s.h.conn().await;
    let moved = finish_many(&mut conn, &batch).await.unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].id, id);
    assert!(finish_many(&mut conn, &batch).await.unwrap().is_empty());
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(email["attempts"], 1);
    let kinds = event_kinds(&email);
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert_eq!(kinds[1], email["status"].as_str().unwrap());
    s.finish().await;
}

#[tokio::test]
async fn a_redelivered_job_sends_nothing_and_answers_the_stored_result() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("dup").await;
    let body = s.sent(&t.write, &site, "once@example.com").await;
    let id = id_of(&body);
    let worker = Arc::new(s.send_worker());
    let info = redelivery("again");
    let task = SendEmail {
        email_log_id: id,
        project_id: t.project,
    };
    let reply = task.run(&worker, info.clone()).await.unwrap().unwrap();
    assert_eq!(reply["status"], "sent");
    assert_eq!(reply["provider_message_id"], body["provider_message_id"]);
    assert_eq!(s.sink.received().len(), 1);
    // Another project's id for the same email: not found, nothing sent.
    let other = SendEmail {
        email_log_id: id,
        project_id: Uuid::now_v7(),
    };
    assert!(other.run(&worker, info).await.is_err());
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}
