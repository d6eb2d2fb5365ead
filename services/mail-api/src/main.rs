//! `mail-api serve [--migrate] | migrate | openapi [--yaml] | schema mail-mcp-tools.openapi.json`.

use mail_api::http::openapi;
use mail_api::mcp::mirror;
use mail_api::{MIGRATIONS, Settings, app};
use service_kit::cli::{ApiBinary, api_main};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    api_main(ApiBinary {
        service: app::SERVICE,
        about: "Email operations service",
        env_prefix: "MAIL",
        load: Settings::load,
        common: |s| &s.common,
        migrations: MIGRATIONS,
        launch: |s| async move { app::launch(&s).await },
        openapi_json: openapi::json,
        openapi_yaml: openapi::yaml,
        // The REST mirror of the MCP tools as a key with every tool group sees it.
        schemas: &[("mail-mcp-tools.openapi.json", mirror::published_document)],
    })
    .await
}
