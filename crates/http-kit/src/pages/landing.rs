//! `GET /` for a browser: what the service is and where to go from there (the API reference,
//! the OpenAPI document, the service's own pages). A request that does not prefer HTML is
//! not routed here, and so gets the JSON 404 it always got.

use actix_web::guard::{self, GuardContext};
use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpResponse, web};
use maud::{DOCTYPE, Markup, html};

use super::{Landing, REFERENCE, reference};

pub(super) fn configure(cfg: &mut web::ServiceConfig, landing: &'static Landing) {
    cfg.service(
        web::resource("/")
            .guard(guard::Get())
            .guard(guard::fn_guard(|ctx: &GuardContext<'_>| {
                prefers_html(ctx.head().headers())
            }))
            .to(move || async move { answer(landing) }),
    );
}

fn answer(landing: &Landing) -> HttpResponse {
    let mut res = super::page(render(landing).into_string());
    // The same address answers JSON clients otherwise.
    res.headers_mut()
        .insert(header::VARY, header::HeaderValue::from_static("Accept"));
    res
}

fn render(landing: &Landing) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (landing.service) }
                link rel="stylesheet" href=(reference::asset_path(reference::PAGES_CSS));
                link rel="icon" type="image/png" href=(reference::asset_path(reference::FAVICON));
            }
            body {
                main {
                    h1 { (landing.service) }
                    p { (landing.about) }
                    h2 { "API" }
                    ul {
                        li {
                            a id="reference" href=(REFERENCE) { "API reference" }
                            " — every operation, its parameters and answers, and a form to try it \
                               (paste a key under Authorize)."
                        }
                        li {
                            a id="openapi" href=(landing.openapi) { "OpenAPI document" }
                            " — the contract, OpenAPI 3.1 JSON, for client generators and agents."
                        }
                    }
                    p {
                        "Routes under " code { "/api/v1" } " take a key: "
                        code { "Authorization: Bearer <key>" } "."
                    }
                    @for section in landing.sections {
                        h2 { (section.title) }
                        ul {
                            @for link in section.links {
                                li { a href=(link.href) { (link.label) } @if !link.note.is_empty() { " — " (link.note) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether the request prefers an HTML page to JSON: `Accept` ranks `text/html` (or
/// `application/xhtml+xml`, `text/*`) above `application/json` (or `application/*`), with a
/// quality above zero. `*/*` alone, or no `Accept`, is not a preference: such a client is
/// answered as an API client.
pub fn prefers_html(headers: &HeaderMap) -> bool {
    let (mut html, mut json) = (0.0_f32, 0.0_f32);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let quality = parts
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .map_or(Some(1.0), |(_, q)| q.trim().parse::<f32>().ok())
                .filter(|q| (0.0..=1.0).contains(q))
                .unwrap_or(0.0);
            match media.as_str() {
                "text/html" | "application/xhtml+xml" | "text/*" => html = html.max(quality),
                "application/json" | "application/*" => json = json.max(quality),
                _ => {}
            }
        }
    }
    html > 0.0 && html > json
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{ACCEPT, HeaderValue};

    use super::*;

    fn accept(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(ACCEPT, HeaderValue::from_static(v));
        }
        headers
    }

    #[test]
    fn browsers_prefer_html() {
        for browser in [
            // Chromium, Firefox, Safari.
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "TEXT/HTML",
            "application/json;q=0.5, text/html",
        ] {
            assert!(prefers_html(&accept(&[browser])), "{browser}");
        }
        assert!(prefers_html(&accept(&[
            "application/json;q=0.1",
            "text/html"
        ])));
    }

    #[test]
    fn api_clients_do_not() {
        for client in [
            "*/*",
            "application/json",
            "application/json, text/html",
            "text/html;q=0.5, application/json",
            "text/html;q=0",
            "text/html;q=abc",
            "text/html;q=2",
            "text/plain",
            "application/*, text/html;q=0.9",
        ] {
            assert!(!prefers_html(&accept(&[client])), "{client}");
        }
        assert!(!prefers_html(&HeaderMap::new()));
    }
}
