/// Every `down.sql` undoes its `up.sql`: run, revert all, run again.
#[tokio::test]
async fn mail_migrations_run_revert_and_run_again() {
    store::testing::assert_migrations_round_trip("mail", || mail_api::MIGRATIONS).await;
}

/// The schema itself refuses a row that points at another project's rows.
#[tokio::test]
async fn rows_cannot_reference_another_projects_rows() {
    use diesel_async::RunQueryDsl as _;
    use rate_limit::policy::Plan;
    use serde_json::json;

    use crate::common::*;

    let (h, mine) = Harness::with_tenant(Plan::Enterprise).await;
    let theirs = h.tenant(Plan::Enterprise).await;
    let their_site = h.site(&theirs.write, "theirs").await;
    let their_campaign = h.campaign(&theirs, &their_site, "c", Some("e"), true).await;
    let res = h
        .post_json(
            &mine.write,
            "/api/v1/identify",
            &json!({"email": "me@x.io"}),
        )
        .await;
    let my_contact = json(res).await["contact_id"].as_str().unwrap().to_owned();
    let (p, id) = (mine.project, uuid::Uuid::now_v7());
    for sql in [
        format!(
            "INSERT INTO enrollments (id, project_id, campaign_id, contact_id, source) \
             VALUES ('{id}', '{p}', '{their_campaign}', '{my_contact}', 'manual')"
        ),
        format!(
            "INSERT INTO campaigns (id, project_id, site_id, name, type) \
             VALUES ('{id}', '{p}', '{their_site}', 'x', 'drip')"
        ),
        format!(
            "INSERT INTO email_log (id, project_id, site_id, to_email, subject) \
             VALUES ('{id}', '{p}', '{their_site}', 'a@x.io', 's')"
        ),
    ] {
        let err = diesel::sql_query(&sql)
            .execute(&mut h.conn().await)
            .await
            .expect_err(&sql);
        assert!(err.to_string().contains("foreign key"), "{sql}: {err}");
    }
    h.stop().await;
}

/// An email's events go with it (a trigger, not a foreign key): deleted alone, with its site
/// or with its project; the events of the other emails, and the other project's, stay.
#[tokio::test]
async fn an_emails_events_are_deleted_with_it() {
    use rate_limit::policy::Plan;

    use crate::common::*;

    let (h, mine) = Harness::with_tenant(Plan::Enterprise).await;
    let theirs = h.tenant(Plan::Enterprise).await;
    let (first_site, second_site) = (
        h.site(&mine.write, "one").await,
        h.site(&mine.write, "two").await,
    );
    let their_site = h.site(&theirs.write, "theirs").await;
    let email = |project: uuid::Uuid, site: &str| {
        let id = uuid::Uuid::now_v7();
        let sql = format!(
            "WITH email AS ( \
               INSERT INTO email_log (id, project_id, site_id, to_email, subject) \
               VALUES ('{id}', '{project}', '{site}', 'a@x.io', 's') RETURNING id, project_id) \
             INSERT INTO email_events (id, project_id, email_log_id, kind, source) \
             SELECT uuid_v7(), project_id, id, kind, 'api' FROM email, \
               (VALUES ('accepted'), ('sent')) AS k(kind)"
        );
        (id, sql)
    };
    let (alone, with_site, with_project, other_project) = (
        email(mine.project, &first_site),
        email(mine.project, &second_site),
        email(mine.project, &first_site),
        email(theirs.project, &their_site),
    );
    for (_, sql) in [&alone, &with_site, &with_project, &other_project] {
        h.exec(sql).await;
    }
    let events_of = |id: uuid::Uuid| {
        let h = &h;
        async move {
            h.query(&format!(
                "SELECT count(*) FROM email_events WHERE email_log_id = '{id}'"
            ))
            .await
        }
    };
    assert_eq!(events_of(alone.0).await, ["2"]);

    h.exec(&format!("DELETE FROM email_log WHERE id = '{}'", alone.0))
        .await;
    assert_eq!(events_of(alone.0).await, ["0"]);
    assert_eq!(events_of(with_site.0).await, ["2"]);

    h.exec(&format!("DELETE FROM sites WHERE id = '{second_site}'"))
        .await;
    assert_eq!(events_of(with_site.0).await, ["0"]);
    assert_eq!(events_of(with_project.0).await, ["2"]);

    h.exec(&format!(
        "DELETE FROM projects WHERE id = '{}'",
        mine.project
    ))
    .await;
    assert_eq!(events_of(with_project.0).await, ["0"]);
    assert_eq!(events_of(other_project.0).await, ["2"]);
    h.stop().await;
}

/// Slugs becoming deployment-wide: on a database where several projects hold one slug and
/// sites hold reserved ones, the oldest holder keeps each slug, every other site is renamed
/// to `<slug>-<last 12 hex digits of its id>`, and the unique index then holds.
#[tokio::test]
async fn deployment_wide_slugs_migration_renames_duplicates_and_reserved_slugs() {
    use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};

    const MIGRATION: &str = "2026-11-24-000001";
    let db = store::testing::TestDatabase::empty("mail")
        .await
        .expect("empty database");
    store::run_migrations_before(&db.url, mail_api::MIGRATIONS, MIGRATION)
        .await
        .expect("migrations before");
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let sql = |s: &str| diesel::sql_query(s.to_owned());
    sql("INSERT INTO accounts (id, name) VALUES ('00000000-0000-7000-8000-000000000001', 'a')")
        .execute(&mut conn)
        .await
        .unwrap();
    let projects = ["p1", "p2", "p3"];
    for (i, p) in projects.iter().enumerate() {
        sql(&format!(
            "INSERT INTO projects (id, account_id, name, plan) VALUES \
             ('00000000-0000-7000-8000-00000000010{i}', '00000000-0000-7000-8000-000000000001', \
              '{p}', 'free')"
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    }
    // (site id, project, slug, created_at): `acme` three times (the oldest is not the
    // smallest id), `solo` once, `postmaster` and `no-reply` reserved.
    let sites = [
        (
            "00000000-0000-7000-8000-aaaaaaaaaaa1",
            0,
            "acme",
            "2026-01-03",
        ),
        (
            "00000000-0000-7000-8000-aaaaaaaaaaa2",
            1,
            "acme",
            "2026-01-01",
        ),
        (
            "00000000-0000-7000-8000-aaaaaaaaaaa3",
            2,
            "acme",
            "2026-01-02",
        ),
        (
            "00000000-0000-7000-8000-bbbbbbbbbbb1",
            0,
            "solo",
            "2026-01-01",
        ),
        (
            "00000000-0000-7000-8000-ccccccccccc1",
            1,
            "postmaster",
            "2026-01-01",
        ),
        (
            "00000000-0000-7000-8000-ccccccccccc2",
            2,
            "no-reply",
            "2026-01-01",
        ),
    ];
    for (id, project, slug, at) in sites {
        sql(&format!(
            "INSERT INTO sites (id, project_id, name, slug, from_name, created_at) VALUES \
             ('{id}', '00000000-0000-7000-8000-00000000010{project}', 'n', '{slug}', 'f', '{at}')"
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    }

    let applied = store::run_migrations(&db.url, mail_api::MIGRATIONS)
        .await
        .expect("the migration");
    assert!(
        applied
            .iter()
            .any(|v| v.replace('-', "") == MIGRATION.replace('-', "")),
        "{applied:?}"
    );

    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        slug: String,
    }
    let rows: Vec<Row> = sql("SELECT id::text, slug FROM sites ORDER BY id")
        .load(&mut conn)
        .await
        .unwrap();
    let got: Vec<(String, String)> = rows.into_iter().map(|r| (r.id, r.slug)).collect();
    let want = [
        ("00000000-0000-7000-8000-aaaaaaaaaaa1", "acme-aaaaaaaaaaa1"),
        ("00000000-0000-7000-8000-aaaaaaaaaaa2", "acme"),
        ("00000000-0000-7000-8000-aaaaaaaaaaa3", "acme-aaaaaaaaaaa3"),
        ("00000000-0000-7000-8000-bbbbbbbbbbb1", "solo"),
        (
            "00000000-0000-7000-8000-ccccccccccc1",
            "postmaster-ccccccccccc1",
        ),
        (
            "00000000-0000-7000-8000-ccccccccccc2",
            "no-reply-ccccccccccc2",
        ),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(id, slug)| ((*id).to_owned(), (*slug).to_owned()))
        .collect();
    assert_eq!(got, want);

    // The index now refuses a second holder in any project.
    let err = sql(
        "INSERT INTO sites (id, project_id, name, slug, from_name) VALUES \
         ('00000000-0000-7000-8000-ddddddddddd1', '00000000-0000-7000-8000-000000000100', \
          'n', 'solo', 'f')",
    )
    .execute(&mut conn)
    .await
    .expect_err("a duplicate slug");
    assert!(err.to_string().contains("sites_slug_key"), "{err}");
}

/// `schema.rs` says what the migrations made: every declared table, column, type and
/// nullability.
#[tokio::test]
async fn schema_rs_matches_the_migrated_database() {
    store::testing::assert_schema_matches_migrations(
        "mail",
        || mail_api::MIGRATIONS,
        // The OAuth tables are declared by the shared authorization-server crate.
        concat!(
            include_str!("../../src/db/schema.rs"),
            include_str!("../../../../crates/oauth/src/schema.rs")
        ),
    )
    .await;
}

/// The event tables becoming partitioned by month: the rows already there move into the
/// partition of their id's month (made for them), a row whose id is not a UUIDv7 into the
/// DEFAULT partition, and what pointed at them (an enrollment's event) still does.
#[tokio::test]
async fn monthly_partitions_migration_moves_the_rows_into_their_months() {
    const MIGRATION: &str = "2027-01-11-000100";
    let db = store::testing::TestDatabase::empty("mail")
        .await
        .expect("empty database");
    store::run_migrations_before(&db.url, mail_api::MIGRATIONS, MIGRATION)
        .await
        .expect("migrations before");
    // An account, project, site, contact and campaign; a contact event of November 2025 that
    // an enrollment points at, one whose id is random, and an email event of November 2025.
    for sql in [
        "INSERT INTO accounts (id, name) VALUES ('00000000-0000-7000-8000-000000000001', 'a')",
        "INSERT INTO projects (id, account_id, name, plan) VALUES \
           ('00000000-0000-7000-8000-000000000002', '00000000-0000-7000-8000-000000000001', \
            'p', 'free')",
        "INSERT INTO sites (id, project_id, name, slug, from_name) VALUES \
           ('00000000-0000-7000-8000-000000000003', '00000000-0000-7000-8000-000000000002', \
            's', 's', 'f')",
        "INSERT INTO contacts (id, project_id, email, source) VALUES \
           ('00000000-0000-7000-8000-000000000004', '00000000-0000-7000-8000-000000000002', \
            'a@x.io', 'api')",
        "INSERT INTO campaigns (id, project_id, site_id, name, type) VALUES \
           ('00000000-0000-7000-8000-000000000005', '00000000-0000-7000-8000-000000000002', \
            '00000000-0000-7000-8000-000000000003', 'c', 'drip')",
        "INSERT INTO events (id, project_id, contact_id, name) VALUES \
           ('019a4a00-0000-7000-8000-000000000010', '00000000-0000-7000-8000-000000000002', \
            '00000000-0000-7000-8000-000000000004', 'old'), \
           ('10000000-0000-4000-8000-000000000011', '00000000-0000-7000-8000-000000000002', \
            '00000000-0000-7000-8000-000000000004', 'random')",
        "INSERT INTO enrollments (id, project_id, campaign_id, contact_id, source, event_id) \
           VALUES ('00000000-0000-7000-8000-000000000006', \
            '00000000-0000-7000-8000-000000000002', '00000000-0000-7000-8000-000000000005', \
            '00000000-0000-7000-8000-000000000004', 'event', \
            '019a4a00-0000-7000-8000-000000000010')",
        "INSERT INTO email_events (id, project_id, email_log_id, kind, source) VALUES \
           ('019a4a00-0000-7000-8000-000000000020', '00000000-0000-7000-8000-000000000002', \
            '00000000-0000-7000-8000-000000000099', 'accepted', 'api')",
    ] {
        test_support::sql::exec(&db.url, sql).await;
    }

    let applied = store::run_migrations(&db.url, mail_api::MIGRATIONS)
        .await
        .expect("the migration");
    assert!(
        applied
            .iter()
            .any(|v| v.replace('-', "") == MIGRATION.replace('-', "")),
        "{applied:?}"
    );
    let q = |sql: &'static str| test_support::sql::query(&db.url, sql);
    assert_eq!(
        q("SELECT name || ' ' || tableoid::regclass::text FROM events ORDER BY id").await,
        ["old events_y2025m11", "random events_default"]
    );
    assert_eq!(
        q("SELECT kind || ' ' || tableoid::regclass::text FROM email_events").await,
        ["accepted email_events_y2025m11"]
    );
    assert_eq!(
        q("SELECT event_id::text FROM enrollments").await,
        ["019a4a00-0000-7000-8000-000000000010"]
    );
    // The month of the old rows, this month and the next (whichever they are), the DEFAULT.
    assert_eq!(
        q("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass").await,
        ["4"]
    );
}
