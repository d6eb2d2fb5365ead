//! `/dashboard/join?token=…`: the page of an invitation's link. The invited person chooses a
//! password; that makes their sign-in on the project with the invited role, once.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::html;
use oauth::account::{self, Csrf};
use serde::Deserialize;

use super::{error_page, form};
use crate::AppState;
use crate::oauth::DASHBOARD;
use crate::ops::team::{self, MIN_PASSWORD_CHARS};

pub const JOIN: &str = "/dashboard/join";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(JOIN)
            .route(web::get().to(show))
            .route(web::post().to(join)),
    );
}

#[derive(Debug, Deserialize)]
struct TokenQuery {
    #[serde(default)]
    token: String,
}

async fn show(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<TokenQuery>,
) -> HttpResponse {
    let member = match team::invitation_of(&state, &query.token).await {
        Ok(member) => member,
        Err(err) => return error_page(&err),
    };
    let csrf = Csrf::of(&req);
    let markup = oauth::pages::layout(
        "Join the project · mail",
        html! {
            h1 { "Join the project" }
            p { "You were invited as " strong { (member.role) } " with the address " strong { (member.email) } ". Choose a password to make your sign-in." }
            form method="post" action=(JOIN) {
                input type="hidden" name="csrf" value=(csrf.token);
                input type="hidden" name="token" value=(query.token);
                label for="password" { "Password (at least " (MIN_PASSWORD_CHARS) " characters)" }
                input id="password" type="password" name="password" autocomplete="new-password" required minlength=(MIN_PASSWORD_CHARS);
                label for="password-again" { "The same password again" }
                input id="password-again" type="password" name="password_again" autocomplete="new-password" required minlength=(MIN_PASSWORD_CHARS);
                button type="submit" { "Join" }
            }
        },
    );
    csrf.page(&state.oauth, StatusCode::OK, markup)
}

#[derive(Debug, Deserialize)]
struct JoinForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_again: String,
}

async fn join(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let fields = match form::<JoinForm>(&req, &body) {
        Ok(fields) => fields,
        Err(res) => return *res,
    };
    if fields.password != fields.password_again {
        return account::message(
            StatusCode::BAD_REQUEST,
            "Check the form",
            "The two passwords differ. Go back and type the same password twice.",
        );
    }
    match team::accept_invitation(&state, &fields.token, &fields.password).await {
        Ok(member) => {
            let markup = oauth::pages::layout(
                "Welcome · mail",
                html! {
                    h1 { "Welcome" }
                    p { "You joined the project as " strong { (member.role) } ". " a href=(format!("{DASHBOARD}/sign-in")) { "Sign in" } " with " (member.email) " and your password." }
                },
            );
            Csrf::of(&req).page(&state.oauth, StatusCode::OK, markup)
        }
        Err(err) => error_page(&err),
    }
}
