//! Products: named resources of a user in one environment.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::{products, users};

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

/// Replaces the sealed signing secret of an owned product, keeping the replaced one as the
/// previous secret; `None` when there is no such product. `seal` gets the product's id.
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
        // The replaced secret keeps verifying for a grace period (see `domain::signing`).
        products::previous_signing_secret.eq(products::signing_secret),
        products::signing_secret.eq(seal(id)),
        products::signing_secret_rotated_at.eq(diesel::dsl::now),
    ))
    .returning(products::signing_secret_rotated_at.assume_not_null())
    .get_result(conn)
    .await
    .optional()
}

/// An owned product by id.
pub async fn find_by_id(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Product>> {
    products::table
        .filter(products::id.eq(id))
        .filter(products::user_id.eq(owner.user_id))
        .filter(products::environment.eq(owner.environment))
        .select(Product::as_select())
        .first(conn)
        .await
        .optional()
}

/// What verifies a signed project signal: the product, its owner's tier and its sealed
/// secrets.
#[derive(Debug, Clone, Queryable)]
pub struct SigningKeys {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: String,
    pub name: String,
    pub tier: String,
    pub signing_secret: Option<Vec<u8>>,
    pub previous_signing_secret: Option<Vec<u8>>,
    pub signing_secret_rotated_at: Option<DateTime<Utc>>,
}

/// The product `id` of any owner (a signed request names its product; the signature, checked
/// next, proves the sender holds its secret).
pub async fn signing_keys(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> QueryResult<Option<SigningKeys>> {
    products::table
        .inner_join(users::table)
        .filter(products::id.eq(id))
        .select((
            products::id,
            products::user_id,
            products::environment,
            products::name,
            users::tier,
            products::signing_secret,
            products::previous_signing_secret,
            products::signing_secret_rotated_at,
        ))
        .first(conn)
        .await
        .optional()
}
