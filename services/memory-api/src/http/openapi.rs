//! The OpenAPI 3.1 document of memory-api, generated from the handlers, and the routes that
//! serve it (`/api/v1/openapi.json`, `/api/v1/openapi.yaml`, `/openapi.yaml`; no credential).

use std::sync::OnceLock;

use actix_web::{HttpResponse, web};
use http_kit::Flavor;
use http_kit::openapi::Finish;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::http as routes;

const FINISH: Finish = Finish {
    flavor: Flavor::Memory,
    public: &["/api/v1/openapi.json", "/api/v1/openapi.yaml"],
};

/// The security scheme of signed project signals.
const SIGNATURE_SCHEME: &str = "memorySignature";

/// `POST /ingest/{project_id}` takes a bearer credential or, instead, a signature.
struct SignedIngest;

impl Modify for SignedIngest {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.security_schemes.insert(
            SIGNATURE_SCHEME.to_owned(),
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Memory-Signature",
                "sha256=<hex HMAC-SHA256(product signing secret, \"<X-Memory-Timestamp>.<raw \
                 body>\")>, with X-Memory-Timestamp in Unix seconds (300 s tolerance); for \
                 POST /ingest/{project_id} only, without Authorization",
            ))),
        );
        let operation = doc
            .paths
            .paths
            .get_mut("/api/v1/ingest/{project_id}")
            .and_then(|item| item.post.as_mut());
        if let Some(operation) = operation {
            operation
                .security
                .get_or_insert_with(Vec::new)
                .push(SecurityRequirement::new::<_, _, String>(
                    SIGNATURE_SCHEME,
                    [],
                ));
        }
    }
}

/// The download route of rendered files takes no credential: its signed URL is one.
struct PublicDownloads;

impl Modify for PublicDownloads {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let operation = doc
            .paths
            .paths
            .get_mut("/api/v1/render/downloads/{key}")
            .and_then(|item| item.get.as_mut());
        if let Some(operation) = operation {
            operation.security = Some(Vec::new());
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Memory and Context Service API",
        version = "1.0.0",
        description = "Persistent working memory for one user and the AI tools acting for them.\n\n\
            Every `/api/v1` route needs `Authorization: Bearer <credential>`: an API key \
            (`mem_live_…` for the live environment, `mem_test_…` for the separate test \
            environment) or an OAuth access token (`memo_…`; a third-party connector's token holds \
            `read` and `propose` only, and cannot approve or reject proposals), or a JWT of the \
            first-party dashboard. A dashboard JWT (`Authorization: Bearer <jwt>`) is signed HS256 \
            or RS256 by the configured issuer with a key named by its header's `kid` (`alg` must \
            be that key's; `none` is refused); it needs `iss`, `aud` (the configured audience), \
            `exp` and `sub` (the user's id), and acts first-party for that user on the live \
            environment, with the space-separated `scope` claim's scopes (`read`, `write`, \
            `propose`) or, without it, all three, so it may approve and reject proposals. An \
            expired or unverifiable JWT, or one for an unknown user, answers 401. Connectors get \
            tokens through OAuth 2.0 (`/oauth/authorize`, `/api/oauth/token`). Errors use the envelope \
            `{\"error\":{\"code\",\"message\"}}`; 429 answers use their own body. Bodies over \
            1 MiB answer 400 `VALIDATION_ERROR`; a wrong method answers 405 \
            `VALIDATION_ERROR` with `Allow`. A NUL character (`\\u0000`) in any JSON string, \
            key or value, or a `%00` in a query parameter or path segment answers 400 \
            `VALIDATION_ERROR` whose message starts with its path (`identity.nickname`, \
            `metadata.places[0].name`). The contract documents, `/healthz`, `/readyz` and \
            `/metrics` need no credential."
    ),
    paths(
        routes::downloads::download,
        crate::oauth::docs::server_metadata,
        crate::oauth::docs::resource_metadata,
        crate::oauth::docs::api_resource_metadata,
        crate::oauth::docs::token,
        crate::oauth::docs::register,
        crate::oauth::docs::revoke,
        openapi_json,
        openapi_yaml,
        openapi_yaml_root,
        http_kit::health::healthz,
        http_kit::health::readyz,
        http_kit::health::health_details,
        telemetry::metrics::serve,
    ),
    tags(
        (name = "memory", description = "The identity kernel, product state and the intelligence feed"),
        (name = "decisions", description = "The decision index"),
        (name = "ingest", description = "Business events (and AI cost telemetry as `ai_cost` events), datasets (JSONB rows with an inferred schema) and the two-step file upload"),
        (name = "mif", description = "Memory Interchange Format (MIF 0.1) export and import"),
        (name = "products", description = "Named products of the caller"),
        (name = "costs", description = "AI cost telemetry, summed in exact decimal"),
        (name = "signals", description = "Project signals (signed or with a credential) and producer signals"),
        (name = "connectors", description = "Approve-first connector intake: every intake is a ledger row; proposals wait for a first-party decision (connector tokens may submit and read, never decide)"),
        (name = "inbox", description = "Stored draft replies for mail threads"),
        (name = "credentials", description = "Credentials supplied by the user (BYOK), sealed at rest and shown as a hint only"),
        (name = "workspaces", description = "Workspaces (where agents work), the active workspace of each credential, snapshots of a workspace's files, syncs of its agent context file, drift and the sync log"),
        (name = "bridge", description = "The agent bridge: agent context files (such as AGENTS.md) written from memory within a token budget, and bring-your-own agents"),
        (name = "render", description = "Rendered files, made by the render worker and served by time-limited signed URLs: producible documents (pdf, docx, pptx, xlsx, csv, svg, html) from a document tree, and marketing videos (MP4, H.264) drawn from a brief; pro tier and above"),
        (name = "content", description = "Content briefs written by a model from memory, with the caller's own model credential"),
        (name = "marketing", description = "Autonomous marketing cycles and competitor watches planned by a model from memory, with the caller's own model credential"),
        (name = "accounts", description = "The account a credential is linked to"),
        (name = "oauth", description = "The OAuth 2.0 authorization server of connectors (authorization code with PKCE S256, rotating refresh tokens, RFC 7009 revocation, RFC 7591 registration, RFC 8414 and RFC 9728 metadata, RFC 8707 resource indicators); people sign in and consent at `/oauth/authorize`"),
        (name = "contract", description = "This document"),
        (name = "operations", description = "Health and metrics"),
    )
)]
struct ApiDoc;

/// The document: the routes without a module table, then every module's table
/// ([`routes::ROUTES`]), finished for the memory envelope.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut document = routes_document();
    for modifier in [&FINISH as &dyn Modify, &SignedIngest, &PublicDownloads] {
        modifier.modify(&mut document);
    }
    document
}

/// The routes as their modules document them, before the envelope, headers and public
/// downloads are added.
fn routes_document() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    http_kit::routes::document(&mut document, routes::ROUTES);
    document
}

/// The document as committed (response links spelled as OpenAPI spells them).
pub fn json() -> String {
    http_kit::openapi::to_json(&document())
}

pub fn yaml() -> String {
    http_kit::openapi::to_yaml(&document())
}

fn cached_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(json)
}

fn cached_yaml() -> &'static str {
    static YAML: OnceLock<String> = OnceLock::new();
    YAML.get_or_init(yaml)
}

/// Public routes serving this document.
/// The query parameters each operation documents: the rest are refused by name
/// ([`http_kit::Query`]).
fn query_parameters() -> web::Data<http_kit::QueryParameters> {
    static INDEX: OnceLock<web::Data<http_kit::QueryParameters>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            // The route tables' operations are read when their routes are first called.
            let mut index = http_kit::QueryParameters::from_openapi(&ApiDoc::openapi());
            index.add_routes(routes::ROUTES);
            web::Data::new(index)
        })
        .clone()
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(query_parameters());
    cfg.service(web::resource("/api/v1/openapi.json").route(web::get().to(openapi_json)))
        .service(web::resource("/api/v1/openapi.yaml").route(web::get().to(openapi_yaml)))
        .service(web::resource("/openapi.yaml").route(web::get().to(openapi_yaml_root)));
}

/// This document, as JSON.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "contract",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(cached_json())
}

/// This document, as YAML.
#[utoipa::path(get, path = "/api/v1/openapi.yaml", tag = "contract",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/yaml")))]
pub async fn openapi_yaml() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/yaml")
        .body(cached_yaml())
}

/// This document, as YAML (root alias).
#[utoipa::path(get, path = "/openapi.yaml", tag = "contract",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/yaml")))]
pub async fn openapi_yaml_root() -> HttpResponse {
    openapi_yaml().await
}
