//! The project's contacts, filtered and a page at a time (`GET /contacts`,
//! `list_subscribers`).

use http_kit::request::trim_optional;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use super::{Contact, with_sites};
use crate::AppState;
use crate::db::contacts::{self, Filter};
use crate::flows;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContactFilter {
    /// Only contacts subscribed to this site (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only contacts carrying this tag (exact match, trimmed; blank is no filter).
    pub tag: Option<String>,
    /// Case-insensitive substring of the email, first or last name (at most 200 characters,
    /// trimmed; blank is no filter).
    #[param(max_length = 200)]
    pub search: Option<String>,
}

impl Validate for ContactFilter {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim_optional(&mut self.tag);
        trim_optional(&mut self.search);
        Ok(())
    }
}

/// A page of the project's contacts (`GET /contacts`, `list_subscribers`).
pub async fn list_contacts(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &ContactFilter,
) -> Result<Page<Contact>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let site_id = filter.site_id;
    let search = filter.search.as_deref();
    let tag = filter.tag.as_deref();
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let filter = Filter {
        site_id,
        tag,
        search,
    };
    let rows = contacts::list(&mut conn, project_id, &filter, after, i64::from(limit) + 1).await?;
    let rows = with_sites(&mut conn, rows).await?;
    Ok(Page::from_rows(rows, limit, |c| c.contact_id))
}
