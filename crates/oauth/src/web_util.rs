//! Request details the endpoints need: the base URL, cookies, HTTP Basic client credentials.

use actix_web::HttpRequest;
use actix_web::http::header;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::{OAuth, OAuthConfig};

pub const SESSION_COOKIE: &str = "oauth_session";
pub const CSRF_COOKIE: &str = "oauth_csrf";

/// The public origin of links answered to `req` ([`crate::origin`]); `None`: none can be
/// trusted.
pub fn base_url(oauth: &OAuth, req: &HttpRequest) -> Option<String> {
    base_of(&oauth.config, req)
}

/// The configured issuer, else the origin `req` names when it can be trusted.
pub fn base_of(config: &OAuthConfig, req: &HttpRequest) -> Option<String> {
    crate::origin::public_origin(&config.issuer, &config.trusted_proxies, req)
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

/// The caller's address, for the per-address limits (sign-in, registration).
pub fn client_address(oauth: &OAuth, req: &HttpRequest) -> String {
    crate::origin::client_address(&oauth.config.trusted_proxies, req)
}
