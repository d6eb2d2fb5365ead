//! `memory-api serve [--migrate] | migrate | openapi [--yaml] | schema mif-0.1.schema.json`.

use memory_api::domain::mif_schema;
use memory_api::http::openapi;
use memory_api::{MIGRATIONS, SERVICE, Settings, app};
use service_kit::cli::{ApiBinary, api_main};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    api_main(ApiBinary {
        service: SERVICE,
        about: "Memory and context service",
        env_prefix: "MEMORY",
        load: Settings::load,
        common: |s| &s.common,
        migrations: MIGRATIONS,
        launch: |s| async move { app::launch(&s).await },
        openapi_json: openapi::json,
        openapi_yaml: openapi::yaml,
        schemas: &[("mif-0.1.schema.json", mif_schema::json_schema)],
    })
    .await
}
