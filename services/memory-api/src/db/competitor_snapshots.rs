//! Competitor watch snapshots: the readable text of each watched URL as an owner's runs last
//! read it.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::owner::Owner;
use super::schema::competitor_snapshots as snapshots;

/// A URL's text as last read.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = snapshots)]
pub struct Snapshot {
    pub content: String,
    pub sha256: String,
}

/// The owner's snapshot of `url`, if any.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    url: &str,
) -> QueryResult<Option<Snapshot>> {
    snapshots::table
        .filter(snapshots::user_id.eq(owner.user_id))
        .filter(snapshots::environment.eq(owner.environment))
        .filter(snapshots::url.eq(url))
        .select(Snapshot::as_select())
        .first(conn)
        .await
        .optional()
}

/// A new read of a URL.
pub struct Read<'a> {
    pub url: &'a str,
    pub competitor: &'a str,
    pub content: &'a str,
    pub sha256: &'a str,
}

/// Records `read` as the owner's snapshot if the stored one is still `previous` (its hash;
/// `None`: there was none). `false`: another run recorded a read first, and this one's change
/// is its to report.
pub async fn replace(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    previous: Option<&str>,
    read: &Read<'_>,
) -> QueryResult<bool> {
    let written = match previous {
        None => {
            diesel::insert_into(snapshots::table)
                .values((
                    snapshots::user_id.eq(owner.user_id),
                    snapshots::environment.eq(owner.environment),
                    snapshots::url.eq(read.url),
                    snapshots::competitor.eq(read.competitor),
                    snapshots::content.eq(read.content),
                    snapshots::sha256.eq(read.sha256),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await?
        }
        Some(previous) => {
            diesel::update(snapshots::table)
                .filter(snapshots::user_id.eq(owner.user_id))
                .filter(snapshots::environment.eq(owner.environment))
                .filter(snapshots::url.eq(read.url))
                .filter(snapshots::sha256.eq(previous))
                .set((
                    snapshots::competitor.eq(read.competitor),
                    snapshots::content.eq(read.content),
                    snapshots::sha256.eq(read.sha256),
                    snapshots::fetched_at.eq(diesel::dsl::now),
                ))
                .execute(conn)
                .await?
        }
    };
    Ok(written == 1)
}
