//! The public side of signup forms (no API key; [`crate::ops::forms::signup`]):
//!
//! - `GET /f/{id}`: the hosted page (counted as a view), with its signed render time;
//! - `POST /f/{id}`: a signup from that page or from the embedded snippet;
//! - `GET /f/confirm/{token}`: the confirmation link of the email a signup gets.
//!
//! The pages are server-rendered and escaped by the template library; nothing loads, forms
//! post back to this origin, and no other site may frame them.

use std::collections::HashMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use maud::{Markup, html};
use uuid::Uuid;

use crate::AppState;
use crate::db::forms::Refusal;
use crate::ops::forms::form_not_found;
use crate::ops::forms::signup::{self, Confirmation, EMAIL, HONEYPOT, Outcome, PublicForm, STAMP};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(page), route!(submit), route!(confirm)];

/// Nothing loads but the page's own style element; forms post to this origin only.
const PAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
                        frame-ancestors 'none'; base-uri 'none'";

fn html_page(status: StatusCode, title: &str, body: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .content_type("text/html; charset=utf-8")
        .body(oauth::pages::layout(title, html! { h1 { (title) } (body) }).into_string())
}

fn form_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| form_not_found())
}

/// The form, filled with `values`, and `problem` above it.
fn form_markup(
    form: &PublicForm,
    values: &HashMap<String, String>,
    problem: Option<&str>,
) -> Markup {
    let value = |name: &str| values.get(name).map(String::as_str).unwrap_or("");
    html! {
        @if let Some(problem) = problem {
            p.error role="alert" { (problem) }
        }
        form method="post" action={ "/f/" (form.id) } accept-charset="utf-8" {
            input type="hidden" name=(STAMP) value=(form.stamp);
            label { "Email" input type="email" name=(EMAIL) value=(value(EMAIL)) required autocomplete="email"; }
            @for field in &form.fields {
                label { (field.label) input type="text" name=(field.name) value=(value(&field.name)) required[field.required]; }
            }
            // The honeypot: people never see it, form-filling bots fill it.
            div hidden aria-hidden="true" {
                label { "Leave this empty" input type="text" name=(HONEYPOT) tabindex="-1" autocomplete="off"; }
            }
            p { (form.consent_text) }
            button type="submit" { "Subscribe" }
        }
    }
}

/// A signup form's hosted page.
#[utoipa::path(get, path = "/f/{id}", operation_id = "signupFormPage", tag = "forms",
    params(("id" = String, Path, description = "The form's id")),
    responses(
        (status = 200, description = "The form as an HTML page, with its signed render time (counted as a view)", content_type = "text/html"),
        (status = 404, description = "No such form (`FORM_NOT_FOUND`)", body = MailError),
    ))]
pub async fn page(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let form = signup::view(&state, form_id(&id)?).await?;
    let title = form.name.clone();
    Ok(html_page(
        StatusCode::OK,
        &title,
        form_markup(&form, &HashMap::new(), None),
    ))
}

/// A signup, from the hosted page or an embedded snippet.
#[utoipa::path(post, path = "/f/{id}", operation_id = "submitSignupForm", tag = "forms",
    params(("id" = String, Path, description = "The form's id")),
    request_body(content = Option<serde_json::Value>, content_type = "application/x-www-form-urlencoded",
        description = "The form's inputs: `email`, the form's fields by name, `rendered` (the page's signed render time) and the honeypot `website` (left empty by people). Unknown inputs are ignored."),
    responses(
        (status = 200, description = "Taken: a page asking to confirm through the email just sent; or, for a post without a valid render time (the embedded snippet's), the form again to send once more", content_type = "text/html"),
        (status = 400, description = "The form again, filled, with what to fix (an invalid address, a required field left blank, an answer over 500 characters)", content_type = "text/html"),
        (status = 404, description = "No such form (`FORM_NOT_FOUND`)", body = MailError),
        (status = 422, description = "Refused and counted: the honeypot was filled, or the form was sent less than a second after its page was rendered", content_type = "text/html"),
        (status = 429, description = "Refused and counted: past 3 signups per address per hour or 20 per client address per hour", content_type = "text/html"),
    ))]
pub async fn submit(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let id = form_id(&id)?;
    let mut posted = HashMap::new();
    for (name, value) in
        serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body).unwrap_or_default()
    {
        posted.entry(name).or_insert(value);
    }
    let client = oauth::web_util::client_address(&state.oauth, &req);
    Ok(match signup::submit(&state, id, &client, posted).await? {
        Outcome::Accepted => html_page(
            StatusCode::OK,
            "Check your inbox",
            html! { p { "We sent you an email with a link: follow it to confirm your subscription." } },
        ),
        Outcome::Again {
            form,
            values,
            problem,
        } => {
            let status = if problem.is_some() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            let problem = problem.unwrap_or_else(|| "Check your details and subscribe.".to_owned());
            let title = form.name.clone();
            html_page(status, &title, form_markup(&form, &values, Some(&problem)))
        }
        Outcome::Refused(Refusal::RateLimited) => html_page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many signups",
            html! { p { "Too many signups came from here or for this address. Try again later." } },
        ),
        Outcome::Refused(Refusal::Honeypot | Refusal::TooFast) => html_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Signup not taken",
            html! { p { "This signup looked automated and was not taken. Go back, and send the form again." } },
        ),
    })
}

/// The confirmation link of a signup's email.
#[utoipa::path(get, path = "/f/confirm/{token}", operation_id = "confirmSignup", tag = "forms",
    params(("token" = String, Path, description = "Signed confirmation token")),
    responses(
        (status = 200, description = "Confirmed: the contact is identified, subscribed to the form's site, given the form's tags, and `form.submitted` fired (once: a second visit changes nothing)", content_type = "text/html"),
        (status = 404, description = "Unsigned or altered token, or its signup is gone", body = MailError),
        (status = 410, description = "The link has expired (48 hours after the signup): nothing was subscribed", content_type = "text/html"),
    ))]
pub async fn confirm(
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(match signup::confirm(&state, &token).await? {
        Confirmation::Confirmed { site_name } => html_page(
            StatusCode::OK,
            "Subscription confirmed",
            html! { p { "Thank you: you will receive emails from " (site_name) "." } },
        ),
        Confirmation::AlreadyConfirmed => html_page(
            StatusCode::OK,
            "Subscription confirmed",
            html! { p { "This subscription was confirmed already." } },
        ),
        Confirmation::Expired => html_page(
            StatusCode::GONE,
            "This link has expired",
            html! { p { "Sign up again to get a new confirmation email." } },
        ),
    })
}
