//! The first-party mail dashboard: server-rendered pages for the people of a project, signed
//! in with the same sign-in accounts as the OAuth pages (the shared crate's sign-in, sign-out
//! and connected apps live under the same base). Pending approvals, drafts, API keys, sending
//! domains, social accounts and the team; the join page turns an invitation into a sign-in. Every form carries
//! the CSRF token of the page; what a person may do follows their role
//! ([`crate::ops::people`]). Each page calls the same `ops` functions as the REST routes.

mod approvals;
mod domains;
mod drafts;
mod join;
mod keys;
mod social;
mod team;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::{ApiError, ErrorKind};
use maud::Markup;
use oauth::account::{self, Csrf};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::AppState;
use crate::oauth::{DASHBOARD, DASHBOARD_LINKS};
use crate::ops::people::{self, Person};

/// Mounts the dashboard's pages (the account pages are mounted with OAuth's).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(DASHBOARD).route(web::get().to(home)));
    approvals::configure(cfg);
    drafts::configure(cfg);
    keys::configure(cfg);
    domains::configure(cfg);
    social::configure(cfg);
    team::configure(cfg);
    join::configure(cfg);
}

async fn home() -> HttpResponse {
    account::see_other(DASHBOARD_LINKS[0].0)
}

/// The signed-in person on a page at `here`, or the answer that sends the browser to sign in.
async fn signed_in(
    state: &AppState,
    req: &HttpRequest,
    here: &str,
) -> Result<Person, HttpResponse> {
    let account = account::require_account(&state.oauth, req, here).await?;
    people::person_of(state, &account)
        .await
        .map_err(|err| error_page(&err))
}

/// A dashboard page: the navigation, then `body`, with the page's CSRF cookie.
fn page(state: &AppState, csrf: &Csrf, title: &str, body: Markup) -> HttpResponse {
    page_posting_to(state, csrf, title, body, None)
}

/// [`page`] whose forms may also lead to `origins` (space-separated origins).
fn page_posting_to(
    state: &AppState,
    csrf: &Csrf,
    title: &str,
    body: Markup,
    origins: Option<&str>,
) -> HttpResponse {
    let nav = account::nav(&state.oauth, DASHBOARD_LINKS, &csrf.token);
    let markup = oauth::pages::layout(
        &format!("{title} · mail"),
        maud::html! { (nav) h1 { (title) } (body) },
    );
    csrf.page_posting_to(&state.oauth, StatusCode::OK, markup, origins)
}

/// An error as a page: its status and message (a server fault's cause is not shown).
fn error_page(err: &ApiError) -> HttpResponse {
    let status = err.kind.status();
    let (title, text) = match err.kind {
        ErrorKind::Internal | ErrorKind::Unavailable => (
            "Something went wrong",
            "The page could not be served. Try again in a moment.".to_owned(),
        ),
        ErrorKind::NotFound => ("Not found", err.message.to_string()),
        ErrorKind::Forbidden | ErrorKind::TierRequired => ("Not allowed", err.message.to_string()),
        ErrorKind::Conflict => ("Not done", err.message.to_string()),
        _ => ("Check the form", err.message.to_string()),
    };
    account::message(status, title, &text)
}

/// A form post's fields, once its CSRF token matched the page's: `Err` is the answer to give.
fn form<T: DeserializeOwned>(req: &HttpRequest, body: &[u8]) -> Result<T, Box<HttpResponse>> {
    #[derive(Deserialize)]
    struct Token {
        #[serde(default)]
        csrf: String,
    }
    let token: Token = serde_urlencoded::from_bytes(body).unwrap_or(Token {
        csrf: String::new(),
    });
    if !account::csrf_ok(req, &token.csrf) {
        return Err(Box::new(account::csrf_refused()));
    }
    serde_urlencoded::from_bytes(body).map_err(|err| {
        Box::new(account::message(
            StatusCode::BAD_REQUEST,
            "Check the form",
            &format!("The form could not be read: {err}"),
        ))
    })
}

/// A path segment that must be an id: `Err` is the 404 page.
fn id_of(segment: &str, what: &str) -> Result<uuid::Uuid, Box<HttpResponse>> {
    uuid::Uuid::parse_str(segment)
        .map_err(|_| Box::new(account::not_found(&format!("No such {what}."))))
}

/// A form with only the CSRF token (approve, revoke…).
#[derive(Debug, Deserialize)]
struct Empty {}
