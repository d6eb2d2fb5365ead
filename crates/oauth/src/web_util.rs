//! Request details the endpoints need: the base URL, cookies, HTTP Basic client credentials.

use actix_web::HttpRequest;
use actix_web::dev::ConnectionInfo;
use actix_web::http::header;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::{OAuth, OAuthConfig};

pub const SESSION_COOKIE: &str = "oauth_session";
pub const CSRF_COOKIE: &str = "oauth_csrf";

/// The configured issuer, or the request's scheme and host.
pub fn base_url(oauth: &OAuth, req: &HttpRequest) -> String {
    base_of(&oauth.config, &req.connection_info())
}

/// The configured issuer, or the scheme and host of the request `info` describes.
pub fn base_of(config: &OAuthConfig, info: &ConnectionInfo) -> String {
    let configured = config.issuer.trim_end_matches('/');
    if configured.is_empty() {
        format!("{}://{}", info.scheme(), info.host())
    } else {
        configured.to_owned()
    }
}

/// A cookie of the request.
pub fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax`, `Secure` unless configured off.
pub fn set_cookie(oauth: &OAuth, name: &str, value: &str, max_age_secs: u64) -> String {
    let secure = if oauth.config.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    format!("{name}={value}; Path=/; Max-Age={max_age_secs}; HttpOnly; SameSite=Lax{secure}")
}

/// `Authorization: Basic` client credentials (RFC 6749 §2.3.1: each part form-urlencoded).
pub fn basic_credentials(req: &HttpRequest) -> Option<(String, String)> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}

/// The caller's address, for the per-address sign-in limit.
pub fn client_address(req: &HttpRequest) -> String {
    req.peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "unknown".to_owned())
}
