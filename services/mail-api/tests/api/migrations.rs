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

    let h = Harness::new().await;
    let mine = h.tenant(Plan::Enterprise).await;
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
