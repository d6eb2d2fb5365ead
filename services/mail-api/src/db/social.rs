//! Social publishing: connected accounts (tokens sealed), the states of connections under way,
//! posts, their publication on each platform, the outbox that queues publishing, and social
//! campaigns.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::{
    social_accounts as a, social_campaigns as c, social_connect_states as s, social_posts as p,
    social_publications as pb, social_publish_outbox as o,
};

// --- accounts ---

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = a)]
pub struct AccountRow {
    pub project_id: Uuid,
    pub platform: String,
    pub handle: Option<String>,
    pub access_sealed: Vec<u8>,
    pub refresh_sealed: Option<Vec<u8>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub connected_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Connects (or reconnects) the project's account on the row's platform.
pub async fn upsert_account(conn: &mut AsyncPgConnection, row: &AccountRow) -> QueryResult<()> {
    diesel::insert_into(a::table)
        .values(row)
        .on_conflict((a::project_id, a::platform))
        .do_update()
        .set((
            a::handle.eq(&row.handle),
            a::access_sealed.eq(&row.access_sealed),
            a::refresh_sealed.eq(&row.refresh_sealed),
            a::expires_at.eq(row.expires_at),
            a::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// New tokens after a refresh.
pub async fn update_tokens(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platform: &str,
    access_sealed: &[u8],
    refresh_sealed: Option<Vec<u8>>,
    expires_at: Option<DateTime<Utc>>,
) -> QueryResult<()> {
    diesel::update(
        a::table
            .filter(a::project_id.eq(project_id))
            .filter(a::platform.eq(platform)),
    )
    .set((
        a::access_sealed.eq(access_sealed),
        a::refresh_sealed.eq(refresh_sealed),
        a::expires_at.eq(expires_at),
        a::updated_at.eq(Utc::now()),
    ))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn account(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platform: &str,
) -> QueryResult<Option<AccountRow>> {
    a::table
        .filter(a::project_id.eq(project_id))
        .filter(a::platform.eq(platform))
        .select(AccountRow::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn accounts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Vec<AccountRow>> {
    a::table
        .filter(a::project_id.eq(project_id))
        .order(a::platform)
        .select(AccountRow::as_select())
        .load(conn)
        .await
}

// --- connect states ---

pub async fn insert_state(
    conn: &mut AsyncPgConnection,
    state_hash: &[u8],
    project_id: Uuid,
    platform: &str,
    code_verifier: &str,
    started_by: Option<Uuid>,
    expires_at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(s::table)
        .values((
            s::state_hash.eq(state_hash),
            s::project_id.eq(project_id),
            s::platform.eq(platform),
            s::code_verifier.eq(code_verifier),
            s::started_by.eq(started_by),
            s::expires_at.eq(expires_at),
        ))
        .execute(conn)
        .await?;
    // States nobody came back with are of no use once expired.
    diesel::delete(s::table.filter(s::expires_at.lt(Utc::now() - chrono::TimeDelta::days(1))))
        .execute(conn)
        .await?;
    Ok(())
}

/// Uses the state once: `(project, verifier, started_by)` when it exists for `platform`, was never
/// used and has not expired.
pub async fn take_state(
    conn: &mut AsyncPgConnection,
    state_hash: &[u8],
    platform: &str,
) -> QueryResult<Option<(Uuid, String, Option<Uuid>)>> {
    diesel::update(
        s::table
            .filter(s::state_hash.eq(state_hash))
            .filter(s::platform.eq(platform))
            .filter(s::used_at.is_null())
            .filter(s::expires_at.gt(Utc::now())),
    )
    .set(s::used_at.eq(Utc::now()))
    .returning((s::project_id, s::code_verifier, s::started_by))
    .get_result(conn)
    .await
    .optional()
}

// --- posts ---

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = p)]
pub struct PostRow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub title: String,
    pub content: String,
    pub platforms: Vec<String>,
    pub campaign_id: Option<Uuid>,
    pub publisher: Option<String>,
    pub publish_at: Option<DateTime<Utc>>,
    pub approval_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// `[{url, kind, alt}]` (`social::Media`).
    pub media: serde_json::Value,
    /// `{reddit, pinterest}` (`social::PostOptions`).
    pub options: serde_json::Value,
}

pub async fn insert_post(conn: &mut AsyncPgConnection, row: &PostRow) -> QueryResult<PostRow> {
    diesel::insert_into(p::table)
        .values(row)
        .returning(PostRow::as_returning())
        .get_result(conn)
        .await
}

pub async fn post(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<PostRow>> {
    p::table
        .filter(p::project_id.eq(project_id))
        .filter(p::id.eq(id))
        .select(PostRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// The post, locked for the rest of the transaction.
pub async fn post_for_update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<PostRow>> {
    p::table
        .filter(p::project_id.eq(project_id))
        .filter(p::id.eq(id))
        .for_update()
        .select(PostRow::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn posts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<PostRow>> {
    let mut query = p::table
        .filter(p::project_id.eq(project_id))
        .order(p::id)
        .limit(limit)
        .select(PostRow::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(p::id.gt(after));
    }
    query.load(conn).await
}

/// Saves the post's editable fields.
pub async fn save_post(conn: &mut AsyncPgConnection, row: &PostRow) -> QueryResult<PostRow> {
    diesel::update(
        p::table
            .filter(p::project_id.eq(row.project_id))
            .filter(p::id.eq(row.id)),
    )
    .set((
        p::title.eq(&row.title),
        p::content.eq(&row.content),
        p::platforms.eq(&row.platforms),
        p::media.eq(&row.media),
        p::options.eq(&row.options),
        p::publish_at.eq(row.publish_at),
        p::approval_id.eq(row.approval_id),
        p::updated_at.eq(Utc::now()),
    ))
    .returning(PostRow::as_returning())
    .get_result(conn)
    .await
}

pub async fn delete_post(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let n = diesel::delete(
        p::table
            .filter(p::project_id.eq(project_id))
            .filter(p::id.eq(id)),
    )
    .execute(conn)
    .await?;
    Ok(n > 0)
}

// --- publications ---

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = pb)]
pub struct PublicationRow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub post_id: Uuid,
    pub platform: String,
    pub status: String,
    pub platform_post_id: Option<String>,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub claimed_until: Option<DateTime<Utc>>,
    pub published_at: Option<DateTime<Utc>>,
}

/// A pending publication per platform not already there.
pub async fn add_publications(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    post_id: Uuid,
    platforms: &[String],
) -> QueryResult<()> {
    let rows: Vec<_> = platforms
        .iter()
        .map(|platform| {
            (
                pb::id.eq(Uuid::now_v7()),
                pb::project_id.eq(project_id),
                pb::post_id.eq(post_id),
                pb::platform.eq(platform),
            )
        })
        .collect();
    diesel::insert_into(pb::table)
        .values(rows)
        .on_conflict((pb::post_id, pb::platform))
        .do_nothing()
        .execute(conn)
        .await?;
    // A platform taken off the post before it was published is no longer to publish.
    diesel::delete(
        pb::table
            .filter(pb::project_id.eq(project_id))
            .filter(pb::post_id.eq(post_id))
            .filter(pb::status.ne("published"))
            .filter(pb::platform.ne_all(platforms)),
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn publications(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    post_ids: &[Uuid],
) -> QueryResult<Vec<PublicationRow>> {
    pb::table
        .filter(pb::project_id.eq(project_id))
        .filter(pb::post_id.eq_any(post_ids))
        .order((pb::post_id, pb::platform))
        .select(PublicationRow::as_select())
        .load(conn)
        .await
}

/// Holds a pending publication until `until` unless another worker holds it: whether this
/// one got it.
pub async fn claim_publication(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    until: DateTime<Utc>,
) -> QueryResult<bool> {
    let now = Utc::now();
    let n = diesel::update(
        pb::table
            .filter(pb::id.eq(id))
            .filter(pb::status.eq("pending"))
            .filter(pb::claimed_until.is_null().or(pb::claimed_until.lt(now))),
    )
    .set((
        pb::claimed_until.eq(until),
        pb::attempts.eq(pb::attempts + 1),
    ))
    .execute(conn)
    .await?;
    Ok(n == 1)
}

pub async fn mark_published(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    platform_post_id: &str,
) -> QueryResult<()> {
    diesel::update(pb::table.filter(pb::id.eq(id)))
        .set((
            pb::status.eq("published"),
            pb::platform_post_id.eq(platform_post_id),
            pb::published_at.eq(Utc::now()),
            pb::claimed_until.eq(None::<DateTime<Utc>>),
            pb::last_error.eq(None::<String>),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Lets the publication go: failed for good, or pending with the error of this attempt.
pub async fn release(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    failed: bool,
    error: &str,
) -> QueryResult<()> {
    diesel::update(pb::table.filter(pb::id.eq(id)))
        .set((
            pb::status.eq(if failed { "failed" } else { "pending" }),
            pb::last_error.eq(error),
            pb::claimed_until.eq(None::<DateTime<Utc>>),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

// --- outbox ---

pub async fn enqueue(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    post_id: Uuid,
    due_at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(o::table)
        .values((
            o::id.eq(Uuid::now_v7()),
            o::project_id.eq(project_id),
            o::post_id.eq(post_id),
            o::due_at.eq(due_at),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Due rows not relayed yet: `(id, post, project)`.
pub async fn claim_due(
    conn: &mut AsyncPgConnection,
    limit: i64,
) -> QueryResult<Vec<(Uuid, Uuid, Uuid)>> {
    o::table
        .filter(o::relayed_at.is_null())
        .filter(o::due_at.le(Utc::now()))
        .order(o::due_at)
        .limit(limit)
        .for_update()
        .skip_locked()
        .select((o::id, o::post_id, o::project_id))
        .load(conn)
        .await
}

pub async fn mark_relayed(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<()> {
    diesel::update(o::table.filter(o::id.eq_any(ids)))
        .set(o::relayed_at.eq(Utc::now()))
        .execute(conn)
        .await?;
    Ok(())
}

/// Drops what waits to be relayed for a post (its publishing was cancelled).
pub async fn cancel_queued(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    post_id: Uuid,
) -> QueryResult<()> {
    diesel::delete(
        o::table
            .filter(o::project_id.eq(project_id))
            .filter(o::post_id.eq(post_id))
            .filter(o::relayed_at.is_null()),
    )
    .execute(conn)
    .await?;
    Ok(())
}

// --- campaigns ---

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = c)]
pub struct CampaignRow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: String,
    pub platform: String,
    pub destination_url: String,
    pub tracked_url: String,
    pub clicks: i64,
    pub created_at: DateTime<Utc>,
}

pub async fn insert_campaign(
    conn: &mut AsyncPgConnection,
    row: &CampaignRow,
) -> QueryResult<CampaignRow> {
    diesel::insert_into(c::table)
        .values(row)
        .returning(CampaignRow::as_returning())
        .get_result(conn)
        .await
}

pub async fn campaign(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<CampaignRow>> {
    c::table
        .filter(c::project_id.eq(project_id))
        .filter(c::id.eq(id))
        .select(CampaignRow::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn campaigns(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<CampaignRow>> {
    let mut query = c::table
        .filter(c::project_id.eq(project_id))
        .order(c::id)
        .limit(limit)
        .select(CampaignRow::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(c::id.gt(after));
    }
    query.load(conn).await
}

/// Counts a click of campaign `id`'s tracked link (the link names only the campaign):
/// whether it is a social campaign.
pub async fn record_click(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<bool> {
    let n = diesel::update(c::table.filter(c::id.eq(id)))
        .set(c::clicks.eq(c::clicks + 1))
        .execute(conn)
        .await?;
    Ok(n > 0)
}
