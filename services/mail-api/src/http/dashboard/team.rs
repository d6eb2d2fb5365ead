//! `/dashboard/team`: the project's members and invitations; an admin invites someone with a
//! role and hands over the join link shown once (`/dashboard/join?token=…`).

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::{ApiError, PageParams, Validate};
use maud::{Markup, html};
use oauth::account::Csrf;
use serde::Deserialize;

use super::{error_page, form, page, signed_in};
use crate::AppState;
use crate::ops::people::Person;
use crate::ops::team::{self, InviteTeamMember, Role};

const TEAM: &str = "/dashboard/team";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(TEAM)
            .route(web::get().to(list))
            .route(web::post().to(invite)),
    );
}

async fn list(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let person = match signed_in(&state, &req, TEAM).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let csrf = Csrf::of(&req);
    match listing(&state, &person, &csrf, None).await {
        Ok(body) => page(&state, &csrf, "Team", body),
        Err(err) => error_page(&err),
    }
}

async fn listing(
    state: &AppState,
    person: &Person,
    csrf: &Csrf,
    invited: Option<(&str, &str)>,
) -> Result<Markup, ApiError> {
    let members = team::list_team_members(state, person.project_id, &PageParams::default())
        .await?
        .data;
    Ok(html! {
        @if let Some((email, link)) = invited {
            section id="invitation" role="status" aria-label="New invitation" {
                h2 { (email) " is invited" }
                p { "Send them this link; it works once, for 7 days, and is shown only now." }
                pre { code id="join-link" { (link) } }
            }
        }
        table {
            caption { "Members and invitations" }
            thead { tr { th scope="col" { "Email" } th scope="col" { "Role" } th scope="col" { "State" } } }
            tbody {
                @for m in &members {
                    tr { td { (m.email) } td { (m.role) } td { (m.status) } }
                }
            }
        }
        @if person.role == Role::Admin {
            h2 { "Invite someone" }
            form method="post" action=(TEAM) {
                input type="hidden" name="csrf" value=(csrf.token);
                label for="invite-email" { "Email" }
                input id="invite-email" type="email" name="email" required;
                label for="invite-role" { "Role" }
                select id="invite-role" name="role" {
                    option value="viewer" { "viewer: reads" }
                    option value="editor" selected { "editor: reads and writes, decides drafts" }
                    option value="admin" { "admin: everything, keys, team and approvals" }
                }
                button type="submit" { "Invite" }
            }
        }
    })
}

#[derive(Debug, Deserialize)]
struct InviteForm {
    #[serde(default)]
    email: String,
    role: Option<Role>,
}

async fn invite(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let person = match signed_in(&state, &req, TEAM).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let fields = match form::<InviteForm>(&req, &body) {
        Ok(fields) => fields,
        Err(res) => return *res,
    };
    if let Err(err) = person.require(Role::Admin, "invite someone") {
        return error_page(&err);
    }
    let mut new = InviteTeamMember {
        email: fields.email,
        role: fields.role,
    };
    let invited = match new.validate() {
        Ok(()) => team::invite_team_member(&state, &person.caller(), &new).await,
        Err(err) => Err(err),
    };
    let invited = match invited {
        Ok(invited) => invited,
        Err(err) => return error_page(&err),
    };
    let base = oauth::web_util::base_url(&state.oauth, &req).unwrap_or_default();
    let query =
        serde_urlencoded::to_string([("token", &invited.invitation_token)]).unwrap_or_default();
    let link = format!("{base}{}?{query}", super::join::JOIN);
    let csrf = Csrf::of(&req);
    match listing(&state, &person, &csrf, Some((&invited.member.email, &link))).await {
        Ok(body) => page(&state, &csrf, "Team", body),
        Err(err) => error_page(&err),
    }
}
