//! `/dashboard/drafts`: the project's drafts waiting for a decision (what agents wrote, never
//! sent as they are), each rendered inert; an editor or admin approves (it may then become a
//! campaign's step) or rejects it.

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::PageParams;
use maud::html;
use oauth::account::{self, Csrf};
use serde::Deserialize;

use super::{Empty, error_page, form, id_of, page, signed_in};
use crate::AppState;
use crate::ops::drafts::{self, DraftFilter, DraftStatus, RejectDraft};
use crate::ops::team::Role;

const DRAFTS: &str = "/dashboard/drafts";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(DRAFTS).route(web::get().to(list)))
        .service(web::resource(format!("{DRAFTS}/{{id}}/approve")).route(web::post().to(approve)))
        .service(web::resource(format!("{DRAFTS}/{{id}}/reject")).route(web::post().to(reject)));
}

async fn list(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let person = match signed_in(&state, &req, DRAFTS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let filter = DraftFilter {
        site_id: None,
        status: Some(DraftStatus::Pending),
    };
    let pending =
        drafts::list_drafts(&state, person.project_id, &PageParams::default(), &filter).await;
    let pending = match pending {
        Ok(page) => page.data,
        Err(err) => return error_page(&err),
    };
    let csrf = Csrf::of(&req);
    let decides = person.role.rank() >= Role::Editor.rank();
    let body = html! {
        @if pending.is_empty() {
            p id="no-drafts" { "No draft is waiting." }
        }
        @for draft in &pending {
            section.item id=(format!("draft-{}", draft.id)) aria-labelledby=(format!("draft-{}-title", draft.id)) {
                h2 id=(format!("draft-{}-title", draft.id)) { (draft.subject) }
                p { "Site " code { (draft.site_id) } " · written " time { (draft.created_at.format("%Y-%m-%d %H:%M UTC")) } }
                iframe title=(format!("Draft: {}", draft.subject)) sandbox=""
                    srcdoc=(draft.body_html) style="width:100%;height:16rem;border:1px solid #ccc" {}
                @if decides {
                    form method="post" action=(format!("{DRAFTS}/{}/approve", draft.id)) {
                        input type="hidden" name="csrf" value=(csrf.token);
                        button type="submit" { "Approve" }
                    }
                    form method="post" action=(format!("{DRAFTS}/{}/reject", draft.id)) {
                        input type="hidden" name="csrf" value=(csrf.token);
                        label for=(format!("draft-reason-{}", draft.id)) { "Why reject it (optional)" }
                        input id=(format!("draft-reason-{}", draft.id)) type="text" name="reason" maxlength="1000";
                        button type="submit" { "Reject" }
                    }
                }
            }
        }
    };
    page(&state, &csrf, "Drafts", body)
}

async fn approve(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let person = match signed_in(&state, &req, DRAFTS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    if let Err(res) = form::<Empty>(&req, &body) {
        return *res;
    }
    let id = match id_of(&path, "draft") {
        Ok(id) => id,
        Err(res) => return *res,
    };
    if let Err(err) = person.require(Role::Editor, "approve a draft") {
        return error_page(&err);
    }
    match drafts::approve_draft(&state, &person.caller(), id).await {
        Ok(_) => account::see_other(DRAFTS),
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
    let person = match signed_in(&state, &req, DRAFTS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let reason = match form::<RejectForm>(&req, &body) {
        Ok(f) => f.reason.trim().to_owned(),
        Err(res) => return *res,
    };
    let id = match id_of(&path, "draft") {
        Ok(id) => id,
        Err(res) => return *res,
    };
    if let Err(err) = person.require(Role::Editor, "reject a draft") {
        return error_page(&err);
    }
    if reason.chars().count() > 1000 {
        return error_page(&http_kit::ApiError::invalid_field(
            "reason",
            "at most 1,000 characters",
        ));
    }
    let req = RejectDraft {
        reason: (!reason.is_empty()).then_some(reason),
    };
    match drafts::reject_draft(&state, &person.caller(), id, &req).await {
        Ok(_) => account::see_other(DRAFTS),
        Err(err) => error_page(&err),
    }
}
