//! `/dashboard/domains`: the project's sending domains, each with the DNS records to publish
//! and what the last check found; an editor or admin checks one again now.

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::PageParams;
use maud::html;
use oauth::account::{self, Csrf};
use serde::Serialize;

use super::{Empty, error_page, form, id_of, page, signed_in};
use crate::AppState;
use crate::ops::domains;
use crate::ops::team::Role;

const DOMAINS: &str = "/dashboard/domains";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(DOMAINS).route(web::get().to(list)))
        .service(web::resource(format!("{DOMAINS}/{{id}}/check")).route(web::post().to(check)));
}

/// The wire name of one of the API's enums (`verified`, `TXT`…).
fn name_of(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

async fn list(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let person = match signed_in(&state, &req, DOMAINS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let all = domains::list_domains(&state, person.project_id, &PageParams::default()).await;
    let all = match all {
        Ok(page) => page.data,
        Err(err) => return error_page(&err),
    };
    let csrf = Csrf::of(&req);
    let checks = person.role.rank() >= Role::Editor.rank();
    let body = html! {
        p { "Until its domain is verified, a site sends from the shared domain." }
        @if all.is_empty() {
            p id="no-domains" { "No sending domain is registered (register one with the API or the register_domain tool)." }
        }
        @for domain in &all {
            section.item id=(format!("domain-{}", domain.id)) aria-labelledby=(format!("domain-{}-title", domain.id)) {
                h2 id=(format!("domain-{}-title", domain.id)) { (domain.domain) }
                p { "State: " strong.state { (name_of(&domain.status)) }
                    @if let Some(at) = domain.checked_at { " · checked " time { (at.format("%Y-%m-%d %H:%M UTC")) } }
                }
                table {
                    caption { "DNS records to publish for " (domain.domain) }
                    thead { tr { th scope="col" { "Purpose" } th scope="col" { "Type" } th scope="col" { "Name" } th scope="col" { "Value" } th scope="col" { "Found" } } }
                    tbody {
                        @for record in &domain.records {
                            tr {
                                td { (name_of(&record.purpose)) }
                                td { (name_of(&record.record_type)) }
                                td { code { (record.name) } }
                                td { code style="word-break:break-all" { (record.value) } }
                                td { (name_of(&record.status)) }
                            }
                        }
                    }
                }
                @if checks {
                    form method="post" action=(format!("{DOMAINS}/{}/check", domain.id)) {
                        input type="hidden" name="csrf" value=(csrf.token);
                        button type="submit" { "Check " (domain.domain) " now" }
                    }
                }
            }
        }
    };
    page(&state, &csrf, "Sending domains", body)
}

async fn check(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let person = match signed_in(&state, &req, DOMAINS).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    if let Err(res) = form::<Empty>(&req, &body) {
        return *res;
    }
    let id = match id_of(&path, "domain") {
        Ok(id) => id,
        Err(res) => return *res,
    };
    if let Err(err) = person.require(Role::Editor, "check a domain") {
        return error_page(&err);
    }
    match domains::refresh_domain(&state, person.project_id, id).await {
        Ok(_) => account::see_other(DOMAINS),
        Err(err) => error_page(&err),
    }
}
