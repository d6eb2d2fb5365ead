//! Accounts and projects (created by the admin CLI until sign-up exists).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rate_limit::policy::Plan;
use uuid::Uuid;

use super::schema::{accounts, projects};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = accounts)]
pub struct Account {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = projects)]
pub struct Project {
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: String,
    pub plan: String,
    pub created_at: DateTime<Utc>,
}

pub async fn create_account(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<Account> {
    diesel::insert_into(accounts::table)
        .values((accounts::id.eq(Uuid::now_v7()), accounts::name.eq(name)))
        .returning(Account::as_returning())
        .get_result(conn)
        .await
}

pub async fn create_project(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    name: &str,
    plan: Plan,
) -> QueryResult<Project> {
    diesel::insert_into(projects::table)
        .values((
            projects::id.eq(Uuid::now_v7()),
            projects::account_id.eq(account_id),
            projects::name.eq(name),
            projects::plan.eq(plan.as_str()),
        ))
        .returning(Project::as_returning())
        .get_result(conn)
        .await
}

pub async fn set_plan(conn: &mut AsyncPgConnection, id: Uuid, plan: Plan) -> QueryResult<usize> {
    diesel::update(projects::table.find(id))
        .set(projects::plan.eq(plan.as_str()))
        .execute(conn)
        .await
}

pub async fn find_project(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Project>> {
    projects::table
        .find(id)
        .select(Project::as_select())
        .first(conn)
        .await
        .optional()
}
