//! The project's team: the people invited to it and their roles.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::team_members;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = team_members)]
pub struct Member {
    pub id: Uuid,
    pub email: String,
    pub role: String,
    pub status: String,
    pub invited_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub accepted_at: Option<DateTime<Utc>>,
}

#[derive(Insertable)]
#[diesel(table_name = team_members)]
pub struct NewMember<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub email: &'a str,
    pub role: &'a str,
    pub invitation_hash: &'a [u8],
    pub invited_by_key_id: Uuid,
    pub expires_at: DateTime<Utc>,
}

/// Records an invitation; `None` when the project has a member (or an invitation) of this
/// email already.
pub async fn invite(
    conn: &mut AsyncPgConnection,
    new: NewMember<'_>,
) -> QueryResult<Option<Member>> {
    diesel::insert_into(team_members::table)
        .values(&new)
        .on_conflict((team_members::project_id, team_members::email))
        .do_nothing()
        .returning(Member::as_returning())
        .get_result(conn)
        .await
        .optional()
}

/// Up to `limit` of the project's members after `after` (id order: invitation order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Member>> {
    let mut query = team_members::table
        .filter(team_members::project_id.eq(project_id))
        .order(team_members::id)
        .limit(limit)
        .select(Member::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(team_members::id.gt(after));
    }
    query.load(conn).await
}

/// A pending invitation and its project.
pub struct Invitation {
    pub member: Member,
    pub project_id: Uuid,
}

/// The member still `invited` under the invitation hash `hash` (expired or not).
pub async fn find_invitation(
    conn: &mut AsyncPgConnection,
    hash: &[u8],
) -> QueryResult<Option<Member>> {
    team_members::table
        .filter(team_members::invitation_hash.eq(hash))
        .filter(team_members::status.eq("invited"))
        .select(Member::as_select())
        .first(conn)
        .await
        .optional()
}

/// [`find_invitation`] with its project, locked for the transaction that accepts it.
pub async fn lock_invitation(
    conn: &mut AsyncPgConnection,
    hash: &[u8],
) -> QueryResult<Option<Invitation>> {
    let row: Option<(Member, Uuid)> = team_members::table
        .filter(team_members::invitation_hash.eq(hash))
        .filter(team_members::status.eq("invited"))
        .select((Member::as_select(), team_members::project_id))
        .for_update()
        .first(conn)
        .await
        .optional()?;
    Ok(row.map(|(member, project_id)| Invitation { member, project_id }))
}

/// Marks the member `id` active: its invitation is spent (its hash forgotten).
pub async fn accept(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Member> {
    diesel::update(team_members::table.find(id))
        .set((
            team_members::status.eq("active"),
            team_members::accepted_at.eq(diesel::dsl::now),
            team_members::invitation_hash.eq(None::<Vec<u8>>),
        ))
        .returning(Member::as_returning())
        .get_result(conn)
        .await
}

/// The role of the project's active member of `email`, if there is one.
pub async fn active_role(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<Option<String>> {
    team_members::table
        .filter(team_members::project_id.eq(project_id))
        .filter(team_members::email.eq(email))
        .filter(team_members::status.eq("active"))
        .select(team_members::role)
        .first(conn)
        .await
        .optional()
}
