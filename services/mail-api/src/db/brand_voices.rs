//! The brand voice of a site: how its mail should sound.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::brand_voices;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = brand_voices)]
pub struct BrandVoice {
    pub site_id: Uuid,
    pub tone: Option<String>,
    pub audience: Option<String>,
    pub guidelines: Option<String>,
    pub words_to_avoid: Vec<String>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable, AsChangeset)]
#[diesel(table_name = brand_voices, treat_none_as_null = true)]
pub struct NewBrandVoice<'a> {
    pub site_id: Uuid,
    pub project_id: Uuid,
    pub tone: Option<&'a str>,
    pub audience: Option<&'a str>,
    pub guidelines: Option<&'a str>,
    pub words_to_avoid: &'a [String],
}

/// The brand voice of the project's site `site_id`, if one was set.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Option<BrandVoice>> {
    brand_voices::table
        .filter(brand_voices::project_id.eq(project_id))
        .filter(brand_voices::site_id.eq(site_id))
        .select(BrandVoice::as_select())
        .first(conn)
        .await
        .optional()
}

/// Sets the site's brand voice, replacing the one it had. The caller has checked that the
/// site is the project's (the foreign key refuses another project's site anyway).
pub async fn put(
    conn: &mut AsyncPgConnection,
    voice: NewBrandVoice<'_>,
) -> QueryResult<BrandVoice> {
    diesel::insert_into(brand_voices::table)
        .values(&voice)
        .on_conflict(brand_voices::site_id)
        .do_update()
        .set((&voice, brand_voices::updated_at.eq(diesel::dsl::now)))
        .returning(BrandVoice::as_returning())
        .get_result(conn)
        .await
}
