//! What happens to a sent email: its events, opens, clicks, deliveries, bounces.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::*;
use crate::db::schema::email_events;
use crate::domain::email_status::EmailStatus;

/// Events of one kind stored per email: opens and clicks can come by the thousand, and the
/// email's counters (`open_count`, `clicked_urls`, `last_opened_at`, `last_clicked_at`) stay
/// exact without them, so only the first ones of each kind are kept.
pub const EVENTS_PER_KIND: i64 = 50;

/// Records an event unless the email already has [`EVENTS_PER_KIND`] of that kind, or no longer
/// exists. Runs in the caller's transaction: the email's row is locked first (it usually is
/// already, by the change the event records), so that concurrent events of one email count one
/// after the other and the bound is exact, and the email cannot be deleted before the event is
/// committed (its delete trigger then removes the event with it). An event a score counts
/// brings the score of the email's contact up to date.
pub async fn add_event(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_log_id: Uuid,
    kind: &str,
    source: &str,
    data: Value,
) -> QueryResult<()> {
    Prepared(
        diesel::sql_query("SELECT 1 FROM email_log WHERE project_id = $1 AND id = $2 FOR UPDATE")
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(email_log_id),
    )
    .execute(conn)
    .await?;
    let inserted = Prepared(
        diesel::sql_query(
            "INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
         SELECT $3, $1, $2, $4, $5, $6 \
         WHERE EXISTS (SELECT 1 FROM email_log WHERE project_id = $1 AND id = $2) \
           AND (SELECT count(*) FROM email_events \
                WHERE project_id = $1 AND email_log_id = $2 AND kind = $4) < $7",
        )
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(email_log_id)
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<Text, _>(kind)
        .bind::<Text, _>(source)
        .bind::<Jsonb, _>(data)
        .bind::<BigInt, _>(EVENTS_PER_KIND),
    )
    .execute(conn)
    .await?;
    if inserted == 1 && crate::db::scoring::SCORED_EMAIL_EVENTS.contains(&kind) {
        crate::db::scoring::refresh_for_email(conn, project_id, email_log_id).await?;
    }
    Ok(())
}

/// Up to `limit` events of the email after `after`, oldest first.
pub async fn events(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_log_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<EmailEvent>> {
    let mut query = email_events::table
        .filter(email_events::project_id.eq(project_id))
        .filter(email_events::email_log_id.eq(email_log_id))
        .order(email_events::id)
        .limit(limit)
        .select(EmailEvent::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(email_events::id.gt(after));
    }
    query.load(conn).await
}

/// An open (pixel or provider event): counted once the provider took the message; the status
/// becomes `opened` from `sent` or `delivered`. `false` when the email does not exist or was
/// never sent.
pub async fn record_open(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(concat!(
        "UPDATE email_log SET open_count = open_count + 1, last_opened_at = now(), \
           status = CASE WHEN status IN ('sent', 'delivered') THEN 'opened' ELSE status END, \
           updated_at = now() \
         WHERE project_id = $1 AND id = $2 AND status IN ",
        engaged!()
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// A click: the URL joins `clicked_urls` (once); the status becomes `clicked` from `sent`,
/// `delivered` or `opened`.
pub async fn record_click(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    url: &str,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(concat!(
        "UPDATE email_log SET last_clicked_at = now(), \
           clicked_urls = CASE WHEN $3 = ANY (clicked_urls) THEN clicked_urls \
                               ELSE array_append(clicked_urls, $3) END, \
           status = CASE WHEN status IN ('sent', 'delivered', 'opened') THEN 'clicked' \
                         ELSE status END, \
           updated_at = now() \
         WHERE project_id = $1 AND id = $2 AND status IN ",
        engaged!()
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(url)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// `sent` → `delivered`; other statuses stay.
pub async fn record_delivered(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(
        "UPDATE email_log SET status = 'delivered', updated_at = now() \
         WHERE project_id = $1 AND id = $2 AND status = 'sent'",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// Any status → `status` (`bounced` or `complained`).
pub async fn record_terminal(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: EmailStatus,
) -> QueryResult<bool> {
    let changed = Prepared(
        diesel::sql_query(
            "UPDATE email_log SET status = $3, updated_at = now() \
             WHERE project_id = $1 AND id = $2",
        )
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(status.as_str()),
    )
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// The email a provider knows by this id (any project: provider ids are unique).
pub async fn find_by_provider_id(
    conn: &mut AsyncPgConnection,
    provider_message_id: &str,
) -> QueryResult<Option<Email>> {
    Prepared(
        diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM email_log WHERE provider_message_id = $1"
        ))
        .bind::<Text, _>(provider_message_id),
    )
    .get_result(conn)
    .await
    .optional()
}

/// The email with this id, whichever project it belongs to: for events that name it by a
/// token only the deployment can make (the VERP return path).
pub async fn find_by_id(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Email>> {
    Prepared(
        diesel::sql_query(format!("SELECT {COLUMNS} FROM email_log WHERE id = $1"))
            .bind::<SqlUuid, _>(id),
    )
    .get_result(conn)
    .await
    .optional()
}

/// Marks every site subscription of the project's contact with this address unsubscribed.
pub async fn unsubscribe_contact(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<usize> {
    Prepared(
        diesel::sql_query(
            "UPDATE contact_sites SET status = 'unsubscribed', updated_at = now() \
         WHERE status <> 'unsubscribed' AND contact_id IN \
           (SELECT id FROM contacts WHERE project_id = $1 AND email = $2)",
        )
        .bind::<SqlUuid, _>(project_id)
        .bind::<Text, _>(email),
    )
    .execute(conn)
    .await
}
