//! Products: named resources of a user in one environment.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::products;

/// Whose products a query sees: one user, one environment.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub user_id: Uuid,
    pub environment: &'a str,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = products)]
pub struct Product {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = products)]
pub struct NewProduct<'a> {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub status: &'a str,
}

/// Up to `limit` products after `after` (id order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Product>> {
    let mut query = products::table
        .filter(products::user_id.eq(owner.user_id))
        .filter(products::environment.eq(owner.environment))
        .order(products::id)
        .limit(limit)
        .select(Product::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(products::id.gt(after));
    }
    query.load(conn).await
}

pub async fn find_by_name(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    name: &str,
) -> QueryResult<Option<Product>> {
    products::table
        .filter(products::user_id.eq(owner.user_id))
        .filter(products::environment.eq(owner.environment))
        .filter(products::name.eq(name))
        .select(Product::as_select())
        .first(conn)
        .await
        .optional()
}

/// Inserts a product; `None` when the owner already has one of that name.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    new: NewProduct<'_>,
) -> QueryResult<Option<Product>> {
    diesel::insert_into(products::table)
        .values(&new)
        .on_conflict((products::user_id, products::environment, products::name))
        .do_nothing()
        .returning(Product::as_returning())
        .get_result(conn)
        .await
        .optional()
}
