//! Products: named resources of a user in one environment.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::products;

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
    /// Sealed (see `domain::signing`).
    pub signing_secret: &'a [u8],
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

/// Replaces the sealed signing secret of an owned product; `None` when there is no such
/// product. `seal` gets the product's id.
pub async fn rotate_signing_secret(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    name: &str,
    seal: impl FnOnce(Uuid) -> Vec<u8>,
) -> QueryResult<Option<DateTime<Utc>>> {
    let Some(id) = find_by_name(conn, owner, name).await?.map(|p| p.id) else {
        return Ok(None);
    };
    diesel::update(
        products::table
            .filter(products::id.eq(id))
            .filter(products::user_id.eq(owner.user_id))
            .filter(products::environment.eq(owner.environment)),
    )
    .set((
        products::signing_secret.eq(seal(id)),
        products::signing_secret_rotated_at.eq(diesel::dsl::now),
    ))
    .returning(products::signing_secret_rotated_at.assume_not_null())
    .get_result(conn)
    .await
    .optional()
}
