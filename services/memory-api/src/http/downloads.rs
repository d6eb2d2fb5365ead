//! `GET /render/downloads/{key}`: rendered files behind time-limited signed URLs. No bearer
//! credential: the URL's signature is the credential (see the `objects` crate).

use std::time::SystemTime;

use actix_web::body::SizedStream;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use objects::{ObjectKey, SignedQuery, VerifyError};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::state::AppState;

/// The path download URLs start with, after the service's public base URL.
pub const PATH: &str = "/api/v1/render/downloads";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(format!("{PATH}/{{key:.*}}")).route(web::get().to(download)));
}

/// The signed part of a download URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DownloadParams {
    /// When the link expires (Unix seconds), as signed.
    #[param(minimum = 0)]
    pub expires: u64,
    /// HMAC-SHA256 of the key and the expiry, lowercase hex.
    #[param(min_length = 64, max_length = 64, pattern = "^[0-9a-f]{64}$")]
    pub signature: String,
}

impl Validate for DownloadParams {}

/// The base of download URLs answered to `req`: the configured public URL, else the public
/// origin the request may name (`oauth::origin`: a trusted proxy's, or a loopback host), else
/// the address the server listens on: never what an untrusted client claims
/// (`X-Forwarded-Host`, `Forwarded`, a foreign `Host`), which would let a link point anywhere.
pub fn base_url(state: &AppState, req: &HttpRequest) -> String {
    let public = state.downloads.public_url.trim_end_matches('/');
    if !public.is_empty() {
        return format!("{public}{PATH}");
    }
    let origin = oauth::web_util::base_of(&state.oauth.config, req)
        .unwrap_or_else(|| format!("http://{}", req.app_config().local_addr()));
    format!("{origin}{PATH}")
}

/// A signed download URL for `key`, valid from now for the configured lifetime.
pub fn signed_url(state: &AppState, req: &HttpRequest, key: &ObjectKey) -> String {
    state.downloads.signed_url(&base_url(state, req), key)
}

/// A rendered file.
#[utoipa::path(
    get,
    path = "/api/v1/render/downloads/{key}",
    operation_id = "downloadRenderedFile",
    tag = "render",
    security(()),
    description = "Serves a rendered file (a producible document, a video) through the \
        time-limited URL a job's `signedUrl` gives. No bearer credential: the signature \
        (HMAC-SHA256 over the key and the expiry) is the credential. An altered, foreign or \
        expired link answers 403; a valid link to a file since deleted, 404. The file is sent \
        as an attachment with its media type.",
    params(
        ("key" = String, Path, min_length = 1, max_length = 200,
            pattern = r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*){0,3}$",
            description = "The object's key, e.g. `producibles/{jobId}.pdf`"),
        DownloadParams,
    ),
    responses(
        (status = 200, description = "The file, as an attachment",
            content(
                ("application/pdf"), ("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                ("application/vnd.openxmlformats-officedocument.presentationml.presentation"),
                ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                ("text/csv"), ("image/svg+xml"), ("text/html"), ("video/mp4"), ("application/octet-stream"),
            ),
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"…\"`"))),
        (status = 400, description = "`expires` or `signature` is missing or malformed", body = MemoryError),
        (status = 403, description = "The link is altered, foreign or expired", body = MemoryError),
        (status = 404, description = "No such file (the key is invalid, or the file is gone)", body = MemoryError),
    )
)]
pub async fn download(
    state: web::Data<AppState>,
    key: web::Path<String>,
    params: http_kit::Query<DownloadParams>,
) -> Result<HttpResponse, ApiError> {
    let key = ObjectKey::parse(&key).ok_or_else(|| ApiError::not_found("no such file"))?;
    let query = SignedQuery {
        expires: params.expires,
        signature: params.signature.clone(),
    };
    match state
        .downloads
        .signer
        .verify(&key, &query, SystemTime::now())
    {
        Ok(()) => {}
        Err(VerifyError::Expired) => {
            return Err(ApiError::forbidden("the download link has expired"));
        }
        Err(VerifyError::Invalid) => {
            return Err(ApiError::forbidden("the download link is invalid"));
        }
    }
    let object = match state.downloads.objects.open(&key).await {
        Ok(object) => object,
        Err(objects::ObjectsError::NotFound) => return Err(ApiError::not_found("no such file")),
        Err(err) => return Err(ApiError::internal(err)),
    };
    let size = object.meta.size;
    let body = SizedStream::new(size, object.into_stream());
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, objects::content_type(&key)))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{}\"", key.file_name()),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // A downloaded HTML or SVG file runs nothing in this origin even if opened inline.
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'",
        ))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(body))
}

#[cfg(test)]
mod tests {
    use oauth::origin::is_loopback_host;

    #[test]
    fn only_loopback_hosts_are_taken_from_the_request() {
        for host in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:80",
            "127.1.2.3",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:80",
            "10.0.0.1:8080",
            "[2001:db8::1]:80",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
