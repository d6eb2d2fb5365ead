//! Content: reusable HTML blocks that templates and campaign steps include by name
//! (`{{ blocks.<name> }}`, this module), the feeds a site follows (content sources, this
//! module) and the pipeline that drafts a digest of their new items ([`pipeline`]).

pub mod pipeline;

use chrono::{DateTime, Utc};
use delivery::public_host::{HostError, resolve_public};
use delivery::safe_http::{TargetPolicy, check_url};
use diesel::result::{DatabaseErrorKind, Error as DbError};
use diesel_async::AsyncConnection as _;
use http_kit::request::trim;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::content::{self, Block, BlockUser, NewBlock, NewSource, Source};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// The longest block HTML, in characters.
pub const BLOCK_HTML_MAX: usize = 100_000;

/// A reusable piece of HTML of the project.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentBlock {
    pub id: Uuid,
    /// What templates include it by: `{{ blocks.<name> }}`.
    pub name: String,
    /// Rendered as written (not escaped) where a template includes it.
    pub html: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Block> for ContentBlock {
    fn from(row: Block) -> Self {
        Self {
            id: row.id,
            name: row.name,
            html: row.html,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A block to create. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateContentBlock {
    /// 1..=64 characters: a lowercase letter, then lowercase letters, digits or `_` (a name a
    /// template reads as `blocks.<name>`); unique in the project (409
    /// `CONTENT_BLOCK_NAME_TAKEN`).
    #[schema(min_length = 1, max_length = 64, pattern = "^[a-z][a-z0-9_]*$")]
    pub name: String,
    /// The block's HTML, 1..=100,000 characters, not blank; included as written (templates do
    /// not escape it, and it is not itself a template).
    #[schema(min_length = 1, max_length = 100000, pattern = r"[^\s\x85\uFEFF]")]
    pub html: String,
}

impl Validate for CreateContentBlock {}

/// A block's new HTML. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateContentBlock {
    /// The block's HTML, 1..=100,000 characters, not blank: mail rendered from now on
    /// includes it.
    #[schema(min_length = 1, max_length = 100000, pattern = r"[^\s\x85\uFEFF]")]
    pub html: String,
}

impl Validate for UpdateContentBlock {}

pub fn block_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("content block {id} not found"))
        .with_code(MailErrorCode::ContentBlockNotFound)
}

fn is_unique_violation(err: &DbError) -> bool {
    matches!(
        err,
        DbError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)
    )
}

/// Creates a block (`POST /content/blocks`, `create_content_block`): 409
/// `CONTENT_BLOCK_NAME_TAKEN` when the project has one of that name.
pub async fn create_block(
    state: &AppState,
    project_id: Uuid,
    req: &CreateContentBlock,
) -> Result<ContentBlock, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let now = Utc::now();
    let new = NewBlock {
        id: Uuid::now_v7(),
        project_id,
        name: &req.name,
        html: &req.html,
        created_at: now,
        updated_at: now,
    };
    match content::insert_block(&mut conn, &new).await {
        Ok(row) => Ok(row.into()),
        Err(err) if is_unique_violation(&err) => Err(ApiError::conflict(format!(
            "the project has a content block named {}",
            req.name
        ))
        .with_code(MailErrorCode::ContentBlockNameTaken)
        .with_details(serde_json::json!({"field": "name"}))),
        Err(err) => Err(err.into()),
    }
}

/// A page of the project's blocks, oldest first (`GET /content/blocks`,
/// `list_content_blocks`).
pub async fn list_blocks(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<ContentBlock>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = content::list_blocks(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows.into_iter().map(ContentBlock::from).collect();
    Ok(Page::from_rows(rows, limit, |b| b.id))
}

/// The project's block `id` (`GET /content/blocks/{id}`).
pub async fn get_block(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<ContentBlock, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    content::get_block(&mut conn, project_id, id)
        .await?
        .map(ContentBlock::from)
        .ok_or_else(|| block_not_found(id))
}

/// Replaces a block's HTML (`PATCH /content/blocks/{id}`).
pub async fn update_block(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &UpdateContentBlock,
) -> Result<ContentBlock, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    content::update_block(&mut conn, project_id, id, &req.html)
        .await?
        .map(ContentBlock::from)
        .ok_or_else(|| block_not_found(id))
}

/// Whether `source` includes block `name` (`blocks.<name>` or `blocks["<name>"]`).
pub fn includes_block(source: &str, name: &str) -> bool {
    // The name is `^[a-z][a-z0-9_]*$`: nothing in it needs escaping.
    let pattern = format!(r#"blocks\s*(\.\s*{name}\b|\[\s*["']{name}["']\s*\])"#);
    regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(source))
}

/// A template or campaign step that includes a block (in a 409's `details.users`).
#[derive(Debug, Serialize)]
pub struct ContentBlockUser {
    /// `template` or `campaign_step`.
    pub kind: String,
    pub id: Uuid,
    /// The template's name, or the step's campaign name and order (`Welcome #1`).
    pub name: String,
}

/// Deletes a block (`DELETE /content/blocks/{id}`, `delete_content_block`): 409
/// `CONTENT_BLOCK_IN_USE` naming the templates and campaign steps that include it.
pub async fn delete_block(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<ContentBlock, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let block = content::lock_block(conn, project_id, id)
            .await?
            .ok_or_else(|| block_not_found(id))?;
        let using = |kind: &str, rows: Vec<BlockUser>| -> Vec<ContentBlockUser> {
            rows.into_iter()
                .filter(|row| includes_block(&row.sources, &block.name))
                .map(|row| ContentBlockUser {
                    kind: kind.to_owned(),
                    id: row.id,
                    name: row.name,
                })
                .collect()
        };
        let mut users = using(
            "template",
            content::templates_mentioning_blocks(conn, project_id).await?,
        );
        users.extend(using(
            "campaign_step",
            content::steps_mentioning_blocks(conn, project_id).await?,
        ));
        if !users.is_empty() {
            let named: Vec<String> = users
                .iter()
                .map(|u| format!("{} {} ({})", u.kind.replace('_', " "), u.name, u.id))
                .collect();
            return Err(ApiError::conflict(format!(
                "content block {} is included by {}: change them first",
                block.name,
                named.join(", ")
            ))
            .with_code(MailErrorCode::ContentBlockInUse)
            .with_details(serde_json::json!({ "users": users })));
        }
        content::delete_block(conn, project_id, id).await?;
        Ok(ContentBlock::from(block))
    })
    .await
}

/// The project's blocks as the `blocks` variable of templates: `{name: html}`.
pub async fn blocks_variable(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
) -> Result<serde_json::Value, ApiError> {
    let blocks = content::all_blocks(conn, project_id).await?;
    Ok(serde_json::Value::Object(
        blocks
            .into_iter()
            .map(|(name, html)| (name, serde_json::Value::String(html)))
            .collect(),
    ))
}

/// An RSS or Atom feed a site follows.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentSource {
    pub id: Uuid,
    pub site_id: Uuid,
    pub url: String,
    pub created_at: DateTime<Utc>,
    /// The pipeline's last read of it; null before the first.
    pub last_fetched_at: Option<DateTime<Utc>>,
    /// Why the last read failed; null when it did not.
    pub last_error: Option<String>,
}

impl From<Source> for ContentSource {
    fn from(row: Source) -> Self {
        Self {
            id: row.id,
            site_id: row.site_id,
            url: row.url,
            created_at: row.created_at,
            last_fetched_at: row.last_fetched_at,
            last_error: row.last_error,
        }
    }
}

/// A feed to follow. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateContentSource {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): its digests are drafted for
    /// it.
    pub site_id: Uuid,
    /// The feed's address: an `http` or `https` URL of at most 2,048 characters, without
    /// credentials, whose host is public (400 otherwise); unique per site (409
    /// `CONTENT_SOURCE_EXISTS`).
    #[schema(
        min_length = 1,
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://"
    )]
    pub url: String,
}

impl Validate for CreateContentSource {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.url);
        Ok(())
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContentSourceFilter {
    /// Only this site's sources (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
}

impl Validate for ContentSourceFilter {}

pub fn source_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("content source {id} not found"))
        .with_code(MailErrorCode::ContentSourceNotFound)
}

/// Checks a feed's address against the outbound policy: 400 naming `url` for one the
/// service may not read (a private, loopback or metadata address unless the deployment
/// allows private targets; a name resolving to one).
pub async fn check_feed_url(url: &str, policy: TargetPolicy) -> Result<(), ApiError> {
    let parsed =
        check_url(url, policy).map_err(|e| ApiError::invalid_field("url", &e.to_string()))?;
    // A name that resolves to an internal address is refused now; one that does not resolve
    // yet is checked again by the client's resolver at every read.
    if policy == TargetPolicy::PublicOnly
        && let Some(host) = parsed.host_str()
        && let Err(err @ HostError::NotPublic { .. }) =
            resolve_public(host, parsed.port_or_known_default().unwrap_or(443)).await
    {
        return Err(ApiError::invalid_field("url", &err.to_string()));
    }
    Ok(())
}

/// Follows a feed for a site (`POST /content/sources`).
pub async fn create_source(
    state: &AppState,
    project_id: Uuid,
    req: &CreateContentSource,
) -> Result<ContentSource, ApiError> {
    check_feed_url(&req.url, state.outbound.target_policy()).await?;
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, req.site_id).await?;
    let new = NewSource {
        id: Uuid::now_v7(),
        project_id,
        site_id: req.site_id,
        url: &req.url,
        created_at: Utc::now(),
    };
    match content::insert_source(&mut conn, &new).await {
        Ok(row) => Ok(row.into()),
        Err(err) if is_unique_violation(&err) => {
            Err(ApiError::conflict("the site already follows this feed")
                .with_code(MailErrorCode::ContentSourceExists)
                .with_details(serde_json::json!({"field": "url"})))
        }
        Err(err) => Err(err.into()),
    }
}

/// A page of the project's sources, oldest first (`GET /content/sources`,
/// `list_content_sources`).
pub async fn list_sources(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &ContentSourceFilter,
) -> Result<Page<ContentSource>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let rows = content::list_sources(
        &mut conn,
        project_id,
        filter.site_id,
        None,
        after,
        Some(i64::from(limit) + 1),
    )
    .await?;
    let rows = rows.into_iter().map(ContentSource::from).collect();
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// Stops following a feed (`DELETE /content/sources/{id}`); the items it had seen are
/// forgotten with it.
pub async fn delete_source(state: &AppState, project_id: Uuid, id: Uuid) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if !content::delete_source(&mut conn, project_id, id).await? {
        return Err(source_not_found(id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::includes_block;

    #[test]
    fn a_block_is_included_by_attribute_or_item() {
        assert!(includes_block("<p>{{ blocks.footer }}</p>", "footer"));
        assert!(includes_block("{{ blocks [ 'footer' ] }}", "footer"));
        assert!(includes_block(r#"{{blocks["footer"]}}"#, "footer"));
        assert!(!includes_block("{{ blocks.footer_2 }}", "footer"));
        assert!(!includes_block("{{ blocks.header }}", "footer"));
    }
}
