//! `GET /docs`: the API reference, Swagger UI rendering the service's OpenAPI document, and
//! the files it loads, compiled in from `vendor/swagger-ui-dist` (pinned and checked by
//! `scripts/vendor-swagger-ui.sh`) and from this module's `assets/`. No inline script or
//! style: the page's policy allows the service's own files only.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use maud::{DOCTYPE, html};

use super::{Landing, REFERENCE};

/// The vendored swagger-ui-dist's version (its `VERSION` file; a test holds them equal). It is
/// part of the vendored files' paths, so they can be cached for good.
pub const SWAGGER_UI_VERSION: &str = "5.35.0";

/// One file the pages load: its name under the assets' path, type and bytes.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
    /// Vendored (the version is in the path: cached for a year) or the service's own (checked
    /// again before each reuse).
    pub vendored: bool,
}

macro_rules! vendored {
    ($name:literal, $type:literal) => {
        Asset {
            name: $name,
            content_type: $type,
            bytes: include_bytes!(concat!("../../vendor/swagger-ui-dist/", $name)),
            vendored: true,
        }
    };
}

macro_rules! own {
    ($name:literal, $type:literal) => {
        Asset {
            name: $name,
            content_type: $type,
            bytes: include_bytes!(concat!("assets/", $name)),
            vendored: false,
        }
    };
}

pub(super) const BUNDLE: &str = "swagger-ui-bundle.js";
pub(super) const STYLESHEET: &str = "swagger-ui.css";
pub(super) const FAVICON: &str = "favicon-32x32.png";
pub(super) const STARTER: &str = "reference.js";
pub(super) const PAGES_CSS: &str = "pages.css";

/// Every file served under `/docs/assets/`.
pub const ASSETS: &[Asset] = &[
    vendored!("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    vendored!("swagger-ui.css", "text/css; charset=utf-8"),
    vendored!("favicon-32x32.png", "image/png"),
    vendored!("LICENSE", "text/plain; charset=utf-8"),
    vendored!("NOTICE", "text/plain; charset=utf-8"),
    vendored!(
        "swagger-ui-bundle.js.LICENSE.txt",
        "text/plain; charset=utf-8"
    ),
    own!("reference.js", "text/javascript; charset=utf-8"),
    own!("pages.css", "text/css; charset=utf-8"),
];

/// Where `name` (one of [`ASSETS`]) is served.
pub fn asset_path(name: &str) -> String {
    let asset = ASSETS.iter().find(|a| a.name == name);
    match asset {
        Some(a) if a.vendored => {
            format!("{REFERENCE}/assets/swagger-ui-{SWAGGER_UI_VERSION}/{name}")
        }
        _ => format!("{REFERENCE}/assets/{name}"),
    }
}

pub(super) fn configure(cfg: &mut web::ServiceConfig, landing: &'static Landing) {
    cfg.service(
        web::resource(REFERENCE).route(web::get().to(move || async move { page(landing) })),
    );
    for asset in ASSETS {
        cfg.service(
            web::resource(asset_path(asset.name))
                .route(web::get().to(move || async move { serve(asset) })),
        );
    }
}

fn page(landing: &Landing) -> HttpResponse {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (landing.service) " · API reference" }
                link rel="stylesheet" href=(asset_path(STYLESHEET));
                link rel="stylesheet" href=(asset_path(PAGES_CSS));
                link rel="icon" type="image/png" href=(asset_path(FAVICON));
            }
            body.reference {
                header {
                    a href="/" { (landing.service) } " · API reference · "
                    a href=(landing.openapi) { "OpenAPI document" }
                }
                div id="swagger-ui" data-url=(landing.openapi) {}
                noscript {
                    p { "This page runs Swagger UI, which needs JavaScript. The "
                        a href=(landing.openapi) { "OpenAPI document" } " is plain JSON." }
                }
                script src=(asset_path(BUNDLE)) {}
                script src=(asset_path(STARTER)) {}
            }
        }
    };
    super::page(markup.into_string())
}

fn serve(asset: &'static Asset) -> HttpResponse {
    let cache = if asset.vendored {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    super::secured(HttpResponse::Ok())
        .content_type(asset.content_type)
        .insert_header((header::CACHE_CONTROL, cache))
        .body(asset.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_vendored_one() {
        let vendored = include_str!("../../vendor/swagger-ui-dist/VERSION");
        assert_eq!(vendored.trim(), SWAGGER_UI_VERSION);
    }

    #[test]
    fn the_page_loads_only_files_that_are_served() {
        for name in [BUNDLE, STYLESHEET, FAVICON, STARTER, PAGES_CSS] {
            assert!(ASSETS.iter().any(|a| a.name == name), "{name}");
        }
        assert_eq!(
            asset_path(BUNDLE),
            format!("/docs/assets/swagger-ui-{SWAGGER_UI_VERSION}/swagger-ui-bundle.js")
        );
        assert_eq!(asset_path(STARTER), "/docs/assets/reference.js");
    }
}
