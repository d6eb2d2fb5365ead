//! Users (created by the admin CLI until sign-up exists).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rate_limit::policy::Tier;
use uuid::Uuid;

use super::schema::users;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = users)]
pub struct User {
    pub id: Uuid,
    pub email: String,
    pub tier: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = users)]
struct NewUser<'a> {
    id: Uuid,
    email: &'a str,
    tier: &'a str,
}

pub async fn create(conn: &mut AsyncPgConnection, email: &str, tier: Tier) -> QueryResult<User> {
    diesel::insert_into(users::table)
        .values(NewUser {
            id: Uuid::now_v7(),
            email,
            tier: tier.as_str(),
        })
        .returning(User::as_returning())
        .get_result(conn)
        .await
}

pub async fn set_tier(conn: &mut AsyncPgConnection, id: Uuid, tier: Tier) -> QueryResult<usize> {
    diesel::update(users::table.find(id))
        .set(users::tier.eq(tier.as_str()))
        .execute(conn)
        .await
}

pub async fn find(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<User>> {
    users::table
        .find(id)
        .select(User::as_select())
        .first(conn)
        .await
        .optional()
}
