//! Tracking links, public (no API key): the signature of the token is the credential.
//!
//! - `GET /t/o/{token}`: the open pixel (a 1×1 GIF, never cached); counts an open.
//! - `GET /t/c/{token}`: 302 to the destination signed into the token; counts a click. An
//!   altered or unsigned token answers 404 and never redirects (no open redirect); an expired
//!   one (its expiry is signed into it, `tracking.link_lifetime_days` after its email was accepted)
//!   answers a plain 410 page and never redirects (no permanent redirect on the tracking
//!   host). An expired open pixel is still served, and counts nothing.
//! - `GET /t/u/{token}`: a page confirming the unsubscribe with a button (a link scanner's
//!   GET changes nothing); `POST /t/u/{token}`: the unsubscribe itself, also RFC 8058's
//!   one-click `List-Unsubscribe=One-Click`.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops;
use crate::ops::tracking::{Click, check_unsubscribe_link, record_click, record_open};

/// The smallest transparent GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(open),
    route!(click),
    route!(unsubscribe_page),
    route!(unsubscribe),
];

/// The open pixel.
#[utoipa::path(get, path = "/t/o/{token}", operation_id = "trackOpen", tag = "tracking",
    params(("token" = String, Path, description = "Signed open token")),
    responses(
        (status = 200, description = "A 1×1 transparent GIF (`Cache-Control: no-store`)", content_type = "image/gif"),
        (status = 404, description = "Unsigned or altered token", body = MailError),
    ))]
pub async fn open(
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    record_open(&state, &token).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store, no-cache, must-revalidate"))
        .insert_header((header::PRAGMA, "no-cache"))
        .content_type("image/gif")
        .body(PIXEL))
}

/// A tracked link.
#[utoipa::path(get, path = "/t/c/{token}", operation_id = "trackClick", tag = "tracking",
    params(("token" = String, Path, description = "Signed click token (holds the destination)")),
    responses(
        (status = 302, description = "Redirect to the signed destination (`Location`), an `http` or `https` URL (the scheme in any case)"),
        (status = 404, description = "Unsigned or altered token, or a destination that is not `http`/`https`: no redirect", body = MailError),
        (status = 410, description = "The link has expired (`tracking.link_lifetime_days` after its email was accepted; the expiry is signed into the token): a plain HTML page, no redirect", content_type = "text/html"),
    ))]
pub async fn click(
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    match record_click(&state, &token).await? {
        Click::Expired => Ok(page_with(
            actix_web::http::StatusCode::GONE,
            "This link has expired",
            "<p>The link you followed is too old to work any more.</p>",
        )),
        Click::Redirect(url) => Ok(HttpResponse::Found()
            .insert_header((header::LOCATION, url))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish()),
    }
}

/// The policy of the pages served here: nothing loads, the only form posts back to this
/// origin, and no other site may frame a page (no clickjacked unsubscribe).
const PAGE_CSP: &str =
    "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

fn page(title: &str, body: &str) -> HttpResponse {
    page_with(actix_web::http::StatusCode::OK, title, body)
}

fn page_with(status: actix_web::http::StatusCode, title: &str, body: &str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .content_type("text/html; charset=utf-8")
        .body(format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
             <body><h1>{title}</h1>{body}</body></html>"
        ))
}

/// The unsubscribe page (changes nothing by itself).
#[utoipa::path(get, path = "/t/u/{token}", operation_id = "unsubscribePage", tag = "tracking",
    params(("token" = String, Path, description = "Signed unsubscribe token")),
    responses(
        (status = 200, description = "An HTML page with a button that unsubscribes", content_type = "text/html"),
        (status = 404, description = "Unsigned or altered token", body = MailError),
    ))]
pub async fn unsubscribe_page(
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    check_unsubscribe_link(&state, &token)?;
    // The token is URL-safe base64 and a dot: nothing to escape.
    Ok(page(
        "Unsubscribe",
        &format!(
            "<form method=\"post\" action=\"/t/u/{}\">\
             <input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\
             <button type=\"submit\">Unsubscribe</button></form>",
            token.as_str()
        ),
    ))
}

/// Unsubscribe (the page's button, or RFC 8058 one-click from the mail client).
#[utoipa::path(post, path = "/t/u/{token}", operation_id = "unsubscribe", tag = "tracking",
    params(("token" = String, Path, description = "Signed unsubscribe token")),
    request_body(content = Option<serde_json::Value>, content_type = "application/x-www-form-urlencoded",
        description = "Any form, or none: mail clients post `List-Unsubscribe=One-Click` (RFC 8058) and the page's button posts nothing. The body is not read, so that no client's variant of it keeps an unsubscribe from taking effect."),
    responses(
        (status = 200, description = "Unsubscribed: the address is suppressed for the project and its contact unsubscribed", content_type = "text/html"),
        (status = 404, description = "Unsigned or altered token", body = MailError),
    ))]
pub async fn unsubscribe(
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    ops::tracking::unsubscribe(&state, &token).await?;
    Ok(page(
        "Unsubscribed",
        "<p>You will not receive these emails any more.</p>",
    ))
}
