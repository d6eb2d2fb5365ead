//! Content blocks (reusable HTML included by name), content sources (the feeds a site
//! follows) and the feed items already put in a digest.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::{
    campaign_steps as st, campaigns as c, content_blocks as b, content_seen_items as seen,
    content_sources as src, templates as t,
};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = b)]
pub struct Block {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: String,
    pub html: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = b)]
pub struct NewBlock<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: &'a str,
    pub html: &'a str,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn insert_block(conn: &mut AsyncPgConnection, new: &NewBlock<'_>) -> QueryResult<Block> {
    diesel::insert_into(b::table)
        .values(new)
        .returning(Block::as_returning())
        .get_result(conn)
        .await
}

/// The project's block `id`.
pub async fn get_block(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Block>> {
    b::table
        .filter(b::project_id.eq(project_id))
        .filter(b::id.eq(id))
        .select(Block::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` blocks of the project after `after` (id order).
pub async fn list_blocks(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Block>> {
    let mut query = b::table
        .filter(b::project_id.eq(project_id))
        .order(b::id)
        .limit(limit)
        .select(Block::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(b::id.gt(after));
    }
    query.load(conn).await
}

/// Every block of the project as `(name, html)`: what templates render `blocks` with.
pub async fn all_blocks(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Vec<(String, String)>> {
    b::table
        .filter(b::project_id.eq(project_id))
        .select((b::name, b::html))
        .load(conn)
        .await
}

/// Replaces the HTML of the project's block `id`.
pub async fn update_block(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    html: &str,
) -> QueryResult<Option<Block>> {
    diesel::update(b::table)
        .filter(b::project_id.eq(project_id))
        .filter(b::id.eq(id))
        .set((b::html.eq(html), b::updated_at.eq(Utc::now())))
        .returning(Block::as_returning())
        .get_result(conn)
        .await
        .optional()
}

/// Deletes the project's block `id`; `false` when it has none.
pub async fn delete_block(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let deleted = diesel::delete(b::table)
        .filter(b::project_id.eq(project_id))
        .filter(b::id.eq(id))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}

/// The project's block `id`, locked until the transaction ends (a delete checks its users
/// under this lock).
pub async fn lock_block(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Block>> {
    b::table
        .filter(b::project_id.eq(project_id))
        .filter(b::id.eq(id))
        .select(Block::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// A template or campaign step whose sources mention `blocks` (the candidates that may
/// include a block; the caller checks which block each names).
#[derive(Debug, Clone)]
pub struct BlockUser {
    pub id: Uuid,
    pub name: String,
    /// Subject, HTML and text joined: what to look for the block's name in.
    pub sources: String,
}

/// The project's templates whose HTML or subject hint mentions `blocks`.
pub async fn templates_mentioning_blocks(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Vec<BlockUser>> {
    let rows: Vec<(Uuid, String, Option<String>, Option<String>)> = t::table
        .filter(t::project_id.eq(project_id))
        .filter(
            t::html
                .like("%blocks%")
                .or(t::subject_hint.like("%blocks%")),
        )
        .order(t::id)
        .select((t::id, t::name, t::html, t::subject_hint))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, name, html, subject)| BlockUser {
            id,
            name,
            sources: format!(
                "{}\n{}",
                subject.unwrap_or_default(),
                html.unwrap_or_default()
            ),
        })
        .collect())
}

/// A step's id, campaign name, order, subject, HTML and text.
type StepMentioning = (Uuid, String, i32, String, Option<String>, Option<String>);

/// The project's campaign steps whose subject, HTML or text mentions `blocks`, named
/// `<campaign name> #<step order>`.
pub async fn steps_mentioning_blocks(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Vec<BlockUser>> {
    let rows: Vec<StepMentioning> = st::table
        .inner_join(c::table)
        .filter(st::project_id.eq(project_id))
        .filter(c::project_id.eq(project_id))
        .filter(
            st::subject
                .like("%blocks%")
                .or(st::html.like("%blocks%"))
                .or(st::text_body.like("%blocks%")),
        )
        .order(st::id)
        .select((
            st::id,
            c::name,
            st::step_order,
            st::subject,
            st::html,
            st::text_body,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, campaign, order, subject, html, text)| BlockUser {
            id,
            name: format!("{campaign} #{order}"),
            sources: format!(
                "{subject}\n{}\n{}",
                html.unwrap_or_default(),
                text.unwrap_or_default()
            ),
        })
        .collect())
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = src)]
pub struct Source {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub url: String,
    pub created_at: DateTime<Utc>,
    pub last_fetched_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
}

#[derive(Insertable)]
#[diesel(table_name = src)]
pub struct NewSource<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub url: &'a str,
    pub created_at: DateTime<Utc>,
}

pub async fn insert_source(
    conn: &mut AsyncPgConnection,
    new: &NewSource<'_>,
) -> QueryResult<Source> {
    diesel::insert_into(src::table)
        .values(new)
        .returning(Source::as_returning())
        .get_result(conn)
        .await
}

/// The project's source `id`.
pub async fn get_source(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Source>> {
    src::table
        .filter(src::project_id.eq(project_id))
        .filter(src::id.eq(id))
        .select(Source::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` sources of the project after `after` (id order), optionally of one site
/// and one source; `limit` `None`: all of them.
pub async fn list_sources(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    source_id: Option<Uuid>,
    after: Option<Uuid>,
    limit: Option<i64>,
) -> QueryResult<Vec<Source>> {
    let mut query = src::table
        .filter(src::project_id.eq(project_id))
        .order(src::id)
        .select(Source::as_select())
        .into_boxed();
    if let Some(limit) = limit {
        query = query.limit(limit);
    }
    if let Some(site_id) = site_id {
        query = query.filter(src::site_id.eq(site_id));
    }
    if let Some(source_id) = source_id {
        query = query.filter(src::id.eq(source_id));
    }
    if let Some(after) = after {
        query = query.filter(src::id.gt(after));
    }
    query.load(conn).await
}

/// Deletes the project's source `id` and its seen items; `false` when it has none.
pub async fn delete_source(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let deleted = diesel::delete(src::table)
        .filter(src::project_id.eq(project_id))
        .filter(src::id.eq(id))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}

/// Records a read of source `id`: when, and its error (`None`: it succeeded).
pub async fn note_fetch(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    error: Option<&str>,
) -> QueryResult<()> {
    diesel::update(src::table)
        .filter(src::project_id.eq(project_id))
        .filter(src::id.eq(id))
        .set((
            src::last_fetched_at.eq(Utc::now()),
            src::last_error.eq(error),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Marks `item_ids` of source `source_id` seen: the ids that were not seen before (a
/// concurrent run that marked one first keeps it).
pub async fn mark_seen(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    source_id: Uuid,
    item_ids: &[String],
) -> QueryResult<Vec<String>> {
    if item_ids.is_empty() {
        return Ok(Vec::new());
    }
    let now = Utc::now();
    let rows: Vec<_> = item_ids
        .iter()
        .map(|item| {
            (
                seen::project_id.eq(project_id),
                seen::source_id.eq(source_id),
                seen::item_id.eq(item.as_str()),
                seen::seen_at.eq(now),
            )
        })
        .collect();
    diesel::insert_into(seen::table)
        .values(rows)
        .on_conflict_do_nothing()
        .returning(seen::item_id)
        .get_results(conn)
        .await
}

/// Which of `item_ids` source `source_id` has seen already.
pub async fn seen_among(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    source_id: Uuid,
    item_ids: &[String],
) -> QueryResult<Vec<String>> {
    seen::table
        .filter(seen::project_id.eq(project_id))
        .filter(seen::source_id.eq(source_id))
        .filter(seen::item_id.eq_any(item_ids))
        .select(seen::item_id)
        .load(conn)
        .await
}
