//! The dashboard's proposals page: the signed-in person's pending proposals (live
//! environment), each with approve and reject forms. The sign-in, sign-out and connected-apps
//! pages are the shared crate's (`oauth::account`).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::html;
use oauth::account::{self, Csrf};
use serde::Deserialize;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::ops::proposals::{self, DecideError, Verdict};
use crate::state::AppState;

/// Under `crate::oauth::DASHBOARD`, with the account pages.
const PROPOSALS: &str = "/dashboard/proposals";
/// The most pending proposals one page shows (oldest first).
const PAGE_SIZE: i64 = 100;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(PROPOSALS).route(web::get().to(list)))
        .service(
            web::resource(format!("{PROPOSALS}/{{id}}/{{verdict}}")).route(web::post().to(decide)),
        );
}

fn owner(account: &oauth::db::Account) -> Owner<'static> {
    // The dashboard decides on the live environment's proposals.
    Owner {
        user_id: account.owner_id,
        environment: auth::Environment::Live.as_str(),
    }
}

async fn list(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let oauth = &state.oauth;
    let account = match account::require_account(oauth, &req, PROPOSALS).await {
        Ok(account) => account,
        Err(res) => return res,
    };
    let rows = proposals::pending(&state.pool, owner(&account), PAGE_SIZE).await;
    let rows = match rows {
        Ok(rows) => rows,
        Err(_) => {
            return account::message(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "The proposals could not be read. Try again.",
            );
        }
    };
    let csrf = Csrf::of(&req);
    let nav = account::nav(oauth, oauth.config.account_links, &csrf.token);
    let markup = oauth::pages::layout(
        "Pending proposals · memory",
        html! {
            (nav)
            h1 { "Pending proposals" }
            p { "Signed in as " (account.email) ". Connectors and autonomous marketing runs propose; nothing is applied or sent until you approve it." }
            @if rows.is_empty() {
                p id="no-proposals" { "No proposal is waiting." }
            }
            @for p in &rows {
                section.item id=(format!("proposal-{}", p.id)) aria-label="Proposal" {
                    @if let Some(run) = p.run_id {
                        p { "Marketing action of autonomous run " code { (run) } " · "
                            time { (p.created_at.format("%Y-%m-%d %H:%M UTC")) }
                            @if let Some(channel) = &p.channel { " · channel " strong { (channel) } }
                            @if let Some(priority) = p.priority { " · priority " (priority) }
                        }
                    } @else {
                        p { "From " strong { (p.ai_vendor) } " · " time { (p.created_at.format("%Y-%m-%d %H:%M UTC")) }
                            @if let Some(capability) = &p.requested_capability { " · asks for " code { (capability) } }
                        }
                    }
                    pre { (p.raw_content) }
                    @if let Some(rationale) = &p.rationale { p { "Why: " (rationale) } }
                    form method="post" action=(format!("{PROPOSALS}/{}/approve", p.id)) {
                        input type="hidden" name="csrf" value=(csrf.token);
                        button type="submit" { "Approve" }
                    }
                    " "
                    form method="post" action=(format!("{PROPOSALS}/{}/reject", p.id)) {
                        input type="hidden" name="csrf" value=(csrf.token);
                        button type="submit" { "Reject" }
                    }
                }
            }
        },
    );
    csrf.page(oauth, StatusCode::OK, markup)
}

#[derive(Debug, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn decide(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = &state.oauth;
    let account = match account::require_account(oauth, &req, PROPOSALS).await {
        Ok(account) => account,
        Err(res) => return res,
    };
    let form: CsrfForm = serde_urlencoded::from_bytes(&body).unwrap_or(CsrfForm {
        csrf: String::new(),
    });
    if !account::csrf_ok(&req, &form.csrf) {
        return account::csrf_refused();
    }
    let (id, verdict) = path.into_inner();
    let verdict = match verdict.as_str() {
        "approve" => Verdict::Approve,
        "reject" => Verdict::Reject,
        _ => return account::not_found("No such action."),
    };
    let Ok(id) = Uuid::parse_str(&id) else {
        return account::not_found("No such proposal.");
    };
    // The sign-in account stands for the credential that decided.
    let decided =
        proposals::decide_signed_in(&state, owner(&account), id, account.id, verdict).await;
    let Ok(decided) = decided else {
        return unavailable();
    };
    match decided {
        Ok(()) => account::see_other(PROPOSALS),
        Err(DecideError::NotFound) => account::not_found("No such proposal."),
        Err(DecideError::Decided(status)) => account::message(
            StatusCode::CONFLICT,
            "Already decided",
            &format!("This proposal was already {status}."),
        ),
        Err(DecideError::Database(_)) => unavailable(),
    }
}

fn unavailable() -> HttpResponse {
    account::message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "The decision could not be recorded. Try again.",
    )
}
