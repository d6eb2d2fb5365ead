//! Content: `GET`/`POST /api/v1/content/blocks`, `GET`/`PATCH`/`DELETE
//! /api/v1/content/blocks/{id}`, `GET`/`POST /api/v1/content/sources`, `DELETE
//! /api/v1/content/sources/{id}` and `POST /api/v1/content/pipeline` ([`crate::ops::content`]).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::content::pipeline::{ContentPipelineRun, TriggerContentPipeline, trigger};
use crate::ops::content::{
    ContentBlock, ContentSource, ContentSourceFilter, CreateContentBlock, CreateContentSource,
    UpdateContentBlock, create_block, create_source, delete_block, delete_source, get_block,
    list_blocks, list_sources, update_block,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list_content_blocks),
    route!(create_content_block),
    route!(get_content_block),
    route!(update_content_block),
    route!(delete_content_block),
    route!(list_content_sources),
    route!(create_content_source),
    route!(delete_content_source),
    route!(trigger_content_pipeline),
];

/// The project's content blocks, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/content/blocks",
    operation_id = "listContentBlocks",
    tag = "content",
    params(PageParams),
    responses(
        (status = 200, description = "A page of blocks", body = Page<ContentBlock>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list_content_blocks(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<ContentBlock>>, ApiError> {
    list_blocks(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Create a content block: HTML that templates and campaign steps include as
/// `{{ blocks.<name> }}`.
#[utoipa::path(
    post,
    path = "/api/v1/content/blocks",
    operation_id = "createContentBlock",
    tag = "content",
    request_body = CreateContentBlock,
    responses(
        (status = 201, description = "Created", body = ContentBlock),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "The project has a block of that name (`CONTENT_BLOCK_NAME_TAKEN`)", body = MailError),
    )
)]
pub async fn create_content_block(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateContentBlock>,
) -> Result<HttpResponse, ApiError> {
    let block = create_block(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(block))
}

/// One content block of the project.
#[utoipa::path(
    get,
    path = "/api/v1/content/blocks/{id}",
    operation_id = "getContentBlock",
    tag = "content",
    params(("id" = Uuid, Path, description = "The block's id")),
    responses(
        (status = 200, description = "The block", body = ContentBlock),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a block of this project (`CONTENT_BLOCK_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get_content_block(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ContentBlock>, ApiError> {
    get_block(&state, caller.owner_id, *id).await.map(web::Json)
}

/// Replace a content block's HTML (its name stays: templates include it by name).
#[utoipa::path(
    patch,
    path = "/api/v1/content/blocks/{id}",
    operation_id = "updateContentBlock",
    tag = "content",
    params(("id" = Uuid, Path, description = "The block's id")),
    request_body = UpdateContentBlock,
    responses(
        (status = 200, description = "Updated", body = ContentBlock),
        (status = 400, description = "`id` is not a UUID, or a missing or invalid field", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a block of this project (`CONTENT_BLOCK_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn update_content_block(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateContentBlock>,
) -> Result<web::Json<ContentBlock>, ApiError> {
    update_block(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Delete a content block no template or campaign step includes.
#[utoipa::path(
    delete,
    path = "/api/v1/content/blocks/{id}",
    operation_id = "deleteContentBlock",
    tag = "content",
    params(("id" = Uuid, Path, description = "The block's id")),
    responses(
        (status = 200, description = "Deleted: the block as it was", body = ContentBlock),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a block of this project (`CONTENT_BLOCK_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Templates or campaign steps include it (`CONTENT_BLOCK_IN_USE`; `details.users` lists each one's `kind`, `id` and `name`)", body = MailError),
    )
)]
pub async fn delete_content_block(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ContentBlock>, ApiError> {
    delete_block(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// The feeds the project's sites follow, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/content/sources",
    operation_id = "listContentSources",
    tag = "content",
    params(ContentSourceFilter, PageParams),
    responses(
        (status = 200, description = "A page of sources", body = Page<ContentSource>),
        (status = 400, description = "Invalid site_id, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list_content_sources(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<ContentSourceFilter>,
) -> Result<web::Json<Page<ContentSource>>, ApiError> {
    list_sources(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Follow an RSS or Atom feed for a site: the content pipeline drafts digests of its new
/// items.
#[utoipa::path(
    post,
    path = "/api/v1/content/sources",
    operation_id = "createContentSource",
    tag = "content",
    request_body = CreateContentSource,
    responses(
        (status = 201, description = "Created", body = ContentSource),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`): a `url` the service may not read (not http or https, credentials, a private, loopback or metadata address)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The site already follows this feed (`CONTENT_SOURCE_EXISTS`)", body = MailError),
    )
)]
pub async fn create_content_source(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateContentSource>,
) -> Result<HttpResponse, ApiError> {
    let source = create_source(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(source))
}

/// Stop following a feed (the items it had seen are forgotten with it).
#[utoipa::path(
    delete,
    path = "/api/v1/content/sources/{id}",
    operation_id = "deleteContentSource",
    tag = "content",
    params(("id" = Uuid, Path, description = "The source's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a source of this project (`CONTENT_SOURCE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete_content_source(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_source(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Read the sources' feeds now and write a digest draft (pending approval) per site with
/// items not seen before; nothing is sent.
#[utoipa::path(
    post,
    path = "/api/v1/content/pipeline",
    operation_id = "triggerContentPipeline",
    tag = "content",
    request_body = TriggerContentPipeline,
    responses(
        (status = 200, description = "What the run read and wrote (a feed that could not be read is reported in `sources[].error`)", body = ContentPipelineRun),
        (status = 400, description = "Invalid field (named in the message and in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`), or `source_id` not one of its sources (`CONTENT_SOURCE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn trigger_content_pipeline(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<TriggerContentPipeline>,
) -> Result<web::Json<ContentPipelineRun>, ApiError> {
    trigger(&state, caller.owner_id, &body).await.map(web::Json)
}
