//! Checks of the pages a browser finds on either API without a credential
//! ([`http_kit::pages`]): the landing page at `/`, the API reference and every file it loads.

use std::sync::LazyLock;

use http_kit::pages::{ASSETS, CSP, REFERENCE, asset_path};
use regex::Regex;
use reqwest::Response;

use crate::Client;

/// What Chromium sends for a page.
pub const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,\
image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";

/// The addresses a page links to or loads (`href` and `src`).
pub fn references(html: &str) -> Vec<String> {
    static REF: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"\b(?:href|src)="([^"]+)""#).expect("pattern"));
    REF.captures_iter(html).map(|c| c[1].to_owned()).collect()
}

fn header<'r>(res: &'r Response, name: &str) -> &'r str {
    res.headers()
        .get(name)
        .unwrap_or_else(|| panic!("{} answered without {name}", res.url()))
        .to_str()
        .expect("a visible header")
}

/// The headers every page and file of [`http_kit::pages`] carries.
fn assert_secured(res: &Response) {
    assert_eq!(header(res, "content-security-policy"), CSP, "{}", res.url());
    assert_eq!(header(res, "x-content-type-options"), "nosniff");
    assert_eq!(header(res, "referrer-policy"), "no-referrer");
    assert_eq!(header(res, "x-frame-options"), "DENY");
}

/// An HTML page of the module, its body.
async fn page(res: Response) -> String {
    assert_eq!(res.status().as_u16(), 200, "{}", res.url());
    assert_eq!(header(&res, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&res, "cache-control"), "no-cache");
    assert_secured(&res);
    let body = res.text().await.expect("body");
    assert!(
        body.starts_with("<!DOCTYPE html>"),
        "{}",
        crate::excerpt(&body)
    );
    body
}

/// `GET /` as a browser: the landing page, linking the API reference, `openapi` and each of
/// `links`; every address of it answers without a credential (redirects followed). Answers
/// the page.
pub async fn check_landing(client: &Client, openapi: &str, links: &[&str]) -> String {
    let res = client.get("/").header("accept", BROWSER_ACCEPT).await;
    assert_eq!(header(&res, "vary"), "Accept");
    let body = page(res).await;
    let found = references(&body);
    for wanted in [REFERENCE, openapi].iter().chain(links) {
        assert!(
            found.iter().any(|f| f == wanted),
            "the landing page links {wanted}: {found:?}"
        );
    }
    for address in &found {
        let res = client.get(address).await;
        assert!(
            res.status().is_success(),
            "{address} (linked from the landing page) answered {}",
            res.status()
        );
    }
    body
}

/// `GET /docs`: Swagger UI on `openapi`, every file it loads served with its type, the policy
/// and its caching; and every vendored file and license served as compiled in.
pub async fn check_reference(client: &Client, openapi: &str) {
    // Whatever the client asks for: the page has no other form.
    let body = page(client.get(REFERENCE).header("accept", "*/*").await).await;
    assert!(
        body.contains(&format!(r#"id="swagger-ui" data-url="{openapi}""#)),
        "{}",
        crate::excerpt(&body)
    );
    let loaded = references(&body);
    for asset in ASSETS {
        let path = asset_path(asset.name);
        let res = client.get(&path).await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
        assert_secured(&res);
        assert_eq!(header(&res, "content-type"), asset.content_type, "{path}");
        let cache = if asset.vendored {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        };
        assert_eq!(header(&res, "cache-control"), cache, "{path}");
        let bytes = res.bytes().await.expect("body");
        assert!(bytes == asset.bytes, "{path}: not the compiled-in file");
        if asset.name.ends_with(".js") || asset.name.ends_with(".css") {
            assert!(loaded.contains(&path), "the reference page loads {path}");
        }
    }
    for address in loaded {
        assert!(
            address.starts_with('/') && !address.starts_with("//"),
            "the reference page loads nothing from elsewhere: {address}"
        );
    }
}
