//! `/dashboard/approvals`: the project's pending approvals, each with what it would send (the
//! first email rendered for the sample contact), how many contacts it reaches and the
//! credential that asked; an admin approves (the action runs once, with the arguments shown)
//! or rejects it saying why.

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::PageParams;
use maud::{Markup, html};
use oauth::account::{self, Csrf};
use serde::Deserialize;

use super::{Empty, error_page, form, id_of, page, signed_in};
use crate::AppState;
use crate::ops::approvals::review::{self, Review};
use crate::ops::approvals::{self, ApprovalRecord, RejectApproval};
use crate::ops::team::Role;

const APPROVALS: &str = "/dashboard/approvals";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(APPROVALS).route(web::get().to(list)))
        .service(
            web::resource(format!("{APPROVALS}/{{id}}/approve")).route(web::post().to(approve)),
        )
        .service(web::resource(format!("{APPROVALS}/{{id}}/reject")).route(web::post().to(reject)));
}

async fn list(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let person = match signed_in(&state, &req, APPROVALS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let pending =
        approvals::list_pending_approvals(&state, person.project_id, &PageParams::default()).await;
    let pending = match pending {
        Ok(page) => page.data,
        Err(err) => return error_page(&err),
    };
    let mut reviewed = Vec::with_capacity(pending.len());
    for record in pending {
        match review::review(&state, person.project_id, &record).await {
            Ok(review) => reviewed.push((record, review)),
            Err(err) => return error_page(&err),
        }
    }
    let csrf = Csrf::of(&req);
    let decides = person.role == Role::Admin;
    let body = html! {
        p { "Signed in as " (person.email) " (" (person.role.as_str()) "). Agents' actions wait here; nothing is sent until a person approves." }
        @if !decides {
            p { "Only an admin of the project approves or rejects." }
        }
        @if reviewed.is_empty() {
            p id="no-approvals" { "No approval is waiting." }
        }
        @for (record, review) in &reviewed {
            (approval(record, review, decides, &csrf.token))
        }
    };
    page(&state, &csrf, "Pending approvals", body)
}

fn approval(record: &ApprovalRecord, review: &Review, decides: bool, csrf: &str) -> Markup {
    let id = record.id;
    html! {
        section.item id=(format!("approval-{id}")) aria-labelledby=(format!("approval-{id}-title")) {
            h2 id=(format!("approval-{id}-title")) { (record.summary) }
            p {
                "Asked by " strong { (requester(&record.requester)) } " " code { (record.requested_by) }
                " · " time { (record.created_at.format("%Y-%m-%d %H:%M UTC")) }
                " · expires " time { (record.expires_at.format("%Y-%m-%d %H:%M UTC")) }
            }
            p.audience {
                @match review.audience {
                    Some(n) => { "Reaches " strong { (n) } " contact" @if n != 1 { "s" } " now." }
                    None => { "Reaches no contact now: contacts join it later." }
                }
            }
            @if let Some(sample) = &review.sample {
                p { "First email, for the sample contact " code { (sample.to) } ": " strong { (sample.subject) } }
                // The tenant's HTML, shown inert: no script, no form, no navigation.
                iframe title=(format!("First email of {}", record.summary)) sandbox=""
                    srcdoc=(sample.html) style="width:100%;height:16rem;border:1px solid #ccc" {}
            }
            details {
                summary { "Arguments (SHA-256 " code { (&record.arguments_sha256[..12]) } "…)" }
                pre { (serde_json::to_string_pretty(&record.arguments).unwrap_or_default()) }
            }
            @if decides {
                form method="post" action=(format!("{APPROVALS}/{id}/approve")) {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" { "Approve" }
                }
                form method="post" action=(format!("{APPROVALS}/{id}/reject")) {
                    input type="hidden" name="csrf" value=(csrf);
                    label for=(format!("reason-{id}")) { "Why reject it" }
                    input id=(format!("reason-{id}")) type="text" name="reason" required maxlength="1000";
                    button type="submit" { "Reject" }
                }
            }
        }
    }
}

fn requester(kind: &str) -> &str {
    match kind {
        "oauth_client" => "an OAuth client",
        "agent_key" => "an agent's key",
        _ => "an API key",
    }
}

async fn approve(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let person = match signed_in(&state, &req, APPROVALS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    if let Err(res) = form::<Empty>(&req, &body) {
        return *res;
    }
    let id = match id_of(&path, "approval") {
        Ok(id) => id,
        Err(res) => return *res,
    };
    if let Err(err) = person.require(Role::Admin, "approve an action") {
        return error_page(&err);
    }
    match approvals::approve(&state, person.project_id, person.account_id, id).await {
        Ok(_) => account::see_other(APPROVALS),
        Err(err) => error_page(&err),
    }
}

#[derive(Debug, Deserialize)]
struct RejectForm {
    #[serde(default)]
    reason: String,
}

async fn reject(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let person = match signed_in(&state, &req, APPROVALS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let reason = match form::<RejectForm>(&req, &body) {
        Ok(f) => f.reason.trim().to_owned(),
        Err(res) => return *res,
    };
    let id = match id_of(&path, "approval") {
        Ok(id) => id,
        Err(res) => return *res,
    };
    if let Err(err) = person.require(Role::Admin, "reject an action") {
        return error_page(&err);
    }
    if reason.is_empty() || reason.chars().count() > 1000 {
        return error_page(&http_kit::ApiError::invalid_field(
            "reason",
            "say why, in 1 to 1,000 characters",
        ));
    }
    let req = RejectApproval { reason };
    match approvals::reject(&state, person.project_id, person.account_id, id, &req).await {
        Ok(_) => account::see_other(APPROVALS),
        Err(err) => error_page(&err),
    }
}
