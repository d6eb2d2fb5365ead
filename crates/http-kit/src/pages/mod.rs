//! The pages a person's browser finds on either API without a credential: the landing page
//! at `/` (for requests that prefer HTML; other clients keep the JSON 404) and the API
//! reference at `/docs`, Swagger UI from the vendored, pinned copy compiled into the binary.
//! None of them is in the OpenAPI documents, and every one is served with a
//! Content-Security-Policy that allows the service's own files only.

mod landing;
mod reference;

use actix_web::http::header;
use actix_web::{HttpResponse, HttpResponseBuilder, web};

pub use landing::prefers_html;
pub use reference::{ASSETS, Asset, SWAGGER_UI_VERSION, asset_path};

/// Where the API reference page is.
pub const REFERENCE: &str = "/docs";

/// The pages' policy: scripts, styles, requests and fonts from the service itself only;
/// images from it or inline `data:` URIs (Swagger UI's stylesheet draws its icons with them);
/// no plugin, no frame, no form posting anywhere, no `<base>`.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What one service's landing page shows besides the API reference and the OpenAPI document.
pub struct Landing {
    /// The service's name, the page's title.
    pub service: &'static str,
    /// One or two sentences: what the service is for.
    pub about: &'static str,
    /// The OpenAPI document (JSON) the reference page renders.
    pub openapi: &'static str,
    /// More links, by section (the dashboard pages, `/llms.txt`, health).
    pub sections: &'static [Section],
}

/// A heading and its links.
pub struct Section {
    pub title: &'static str,
    pub links: &'static [Link],
}

/// A link of the landing page: where, its text, and a few words after it.
pub struct Link {
    pub href: &'static str,
    pub label: &'static str,
    pub note: &'static str,
}

/// Mounts `/` (browsers), `/docs` and the reference page's assets. The service's own routes
/// keep everything else, and `/` answers other clients as before (the JSON 404).
pub fn configure(cfg: &mut web::ServiceConfig, landing: &'static Landing) {
    landing::configure(cfg, landing);
    reference::configure(cfg, landing);
}

/// A page of this module: HTML, its policy, never stored by shared caches, checked again
/// before a browser reuses it.
fn page(body: String) -> HttpResponse {
    secured(HttpResponse::Ok())
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

/// The headers every answer of this module carries.
fn secured(mut builder: HttpResponseBuilder) -> HttpResponseBuilder {
    builder
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"));
    builder
}
