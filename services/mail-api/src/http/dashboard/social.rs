//! `/dashboard/social`: the project's connected social accounts; an editor or admin connects an
//! OAuth platform's account (the deployment's client for it configured), through the platform's
//! authorization page and back here.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::html;
use oauth::account::Csrf;
use serde::Deserialize;

use super::{Empty, error_page, form, page_posting_to, signed_in};
use crate::AppState;
use crate::oauth::DASHBOARD_SOCIAL;
use crate::ops::social::connect::{
    ConnectOrigin, connectable_platforms, list_social_accounts, start_connect,
};
use crate::ops::team::Role;
use crate::social::Platform;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(DASHBOARD_SOCIAL).route(web::get().to(list)))
        .service(
            web::resource(format!("{DASHBOARD_SOCIAL}/{{platform}}/connect"))
                .route(web::post().to(connect)),
        );
}

/// The platform a connection just finished for (`?connected=`), shown as a notice.
#[derive(Debug, Deserialize)]
struct Notice {
    connected: Option<String>,
}

async fn list(
    state: web::Data<AppState>,
    req: HttpRequest,
    notice: web::Query<Notice>,
) -> HttpResponse {
    let person = match signed_in(&state, &req, DASHBOARD_SOCIAL).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let accounts = match list_social_accounts(&state, person.project_id).await {
        Ok(accounts) => accounts,
        Err(err) => return error_page(&err),
    };
    let csrf = Csrf::of(&req);
    let connects = person.role.rank() >= Role::Editor.rank();
    let connected = notice.connected.as_deref().and_then(Platform::parse);
    let platforms = if connects {
        connectable_platforms(&state)
    } else {
        Vec::new()
    };
    // A connect form's answer redirects to the platform's authorization page.
    let origins: Vec<String> = platforms
        .iter()
        .filter_map(|p| state.social.authorize_origin(*p))
        .collect();
    let body = html! {
        @if let Some(platform) = connected {
            p id="connected" role="status" { "Connected the " (platform.as_str()) " account." }
        }
        @if accounts.is_empty() {
            p id="no-accounts" { "No social account is connected." }
        } @else {
            table id="accounts" {
                caption { "Connected accounts" }
                thead { tr { th scope="col" { "Platform" } th scope="col" { "Account" } th scope="col" { "Connected" } } }
                tbody {
                    @for account in &accounts {
                        tr id=(format!("account-{}", account.platform.as_str())) {
                            td { (account.platform.as_str()) }
                            td { (account.handle.as_deref().unwrap_or("(unnamed)")) }
                            td { time { (account.connected_at.format("%Y-%m-%d %H:%M UTC")) } }
                        }
                    }
                }
            }
        }
        @if connects {
            @for platform in &platforms {
                form method="post" action=(format!("{DASHBOARD_SOCIAL}/{}/connect", platform.as_str())) {
                    input type="hidden" name="csrf" value=(csrf.token);
                    button type="submit" id=(format!("connect-{}", platform.as_str())) { "Connect " (platform.as_str()) }
                }
            }
            p { "Bluesky and Telegram connect with their credentials (POST /api/v1/social/accounts/{platform})." }
        }
    };
    let origins = (!origins.is_empty()).then(|| origins.join(" "));
    page_posting_to(&state, &csrf, "Social accounts", body, origins.as_deref())
}

async fn connect(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let person = match signed_in(&state, &req, DASHBOARD_SOCIAL).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    if let Err(res) = form::<Empty>(&req, &body) {
        return *res;
    }
    if let Err(err) = person.require(Role::Editor, "connect a social account") {
        return error_page(&err);
    }
    let Some(platform) = Platform::parse(&path) else {
        return oauth::account::not_found("No such platform.");
    };
    match start_connect(
        &state,
        person.project_id,
        platform,
        ConnectOrigin::Dashboard {
            account_id: person.account_id,
        },
    )
    .await
    {
        // The platform's own authorization page, from the deployment's configuration.
        Ok(location) => HttpResponse::SeeOther()
            .insert_header(("location", location))
            .finish(),
        Err(err) => error_page(&err),
    }
}
