//! `/dashboard/keys` (admins): the project's API keys; a new one is made with its scope, tool
//! groups, expiry and the agent mark (or the approve right), never broader than the person's
//! role, and its secret is shown once; a key is revoked at once.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{NaiveDate, TimeZone, Utc};
use http_kit::{ApiError, Validate};
use maud::{Markup, html};
use oauth::account::{self, Csrf};

use super::{Empty, error_page, form, id_of, page, signed_in};
use crate::AppState;
use crate::domain::tool_group::Group;
use crate::ops::account::{self as keys, CreateApiKey, KeyScope};
use crate::ops::people::Person;
use crate::ops::team::Role;

const KEYS: &str = "/dashboard/keys";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(KEYS)
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource(format!("{KEYS}/{{id}}/revoke")).route(web::post().to(revoke)));
}

async fn admin(state: &AppState, req: &HttpRequest) -> Result<Person, HttpResponse> {
    let person = signed_in(state, req, KEYS).await?;
    person
        .require(Role::Admin, "manage API keys")
        .map_err(|err| error_page(&err))?;
    Ok(person)
}

async fn list(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let person = match admin(&state, &req).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let csrf = Csrf::of(&req);
    match listing(&state, &person, &csrf, None).await {
        Ok(body) => page(&state, &csrf, "API keys", body),
        Err(err) => error_page(&err),
    }
}

/// The page's body: the secret of a key just made (once), the keys, the form for a new one.
async fn listing(
    state: &AppState,
    person: &Person,
    csrf: &Csrf,
    created: Option<(&str, &str)>,
) -> Result<Markup, ApiError> {
    let all = keys::list_api_keys(state, person.project_id).await?.keys;
    Ok(html! {
        @if let Some((name, secret)) = created {
            section id="new-key" role="status" aria-label="New key" {
                h2 { "Key \"" (name) "\" was made" }
                p { "Copy it now: it is shown only this once." }
                pre { code id="new-key-secret" { (secret) } }
            }
        }
        h2 { "Keys" }
        @if all.is_empty() { p { "The project has no key." } }
        @for key in &all {
            section.item id=(format!("key-{}", key.id)) aria-label=(format!("Key {}", key.name)) {
                p {
                    strong { (key.name) } " · " code { (key.prefix) "…" } " · " (key.scope)
                    @if key.agent { " · agent" }
                    @if key.approve { " · approves" }
                    @if let Some(groups) = &key.tool_groups { " · groups: " (groups.join(", ")) }
                    @if let Some(at) = key.expires_at { " · expires " time { (at.format("%Y-%m-%d")) } }
                    @if let Some(at) = key.revoked_at { " · revoked " time { (at.format("%Y-%m-%d %H:%M UTC")) } }
                }
                @if key.revoked_at.is_none() {
                    form method="post" action=(format!("{KEYS}/{}/revoke", key.id)) {
                        input type="hidden" name="csrf" value=(csrf.token);
                        button type="submit" { "Revoke " (key.name) }
                    }
                }
            }
        }
        h2 { "New key" }
        form method="post" action=(KEYS) {
            input type="hidden" name="csrf" value=(csrf.token);
            label for="key-name" { "Name" }
            input id="key-name" type="text" name="name" required maxlength="100";
            label for="key-scope" { "Scope" }
            select id="key-scope" name="scope" {
                option value="read" { "read" }
                option value="write" { "write" }
                option value="admin" { "admin" }
            }
            fieldset {
                legend { "Limit to tool groups (none checked: every group)" }
                @for group in Group::ALL {
                    label { input type="checkbox" name="tool_groups" value=(group.as_str()); " " (group.as_str()) }
                }
            }
            label for="key-expires" { "Expires on (optional)" }
            input id="key-expires" type="date" name="expires_on";
            label { input id="key-agent" type="checkbox" name="agent" value="true"; " An agent's key (its actions follow the approval policy)" }
            label { input id="key-approve" type="checkbox" name="approve" value="true"; " May approve agents' actions" }
            button type="submit" { "Make the key" }
        }
    })
}

/// The new key's request from the form's fields.
fn request_of(fields: &[(String, String)]) -> Result<CreateApiKey, ApiError> {
    let one = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let name = one("name").ok_or_else(|| ApiError::invalid_field("name", "is required"))?;
    if name.chars().count() > 100 {
        return Err(ApiError::invalid_field("name", "at most 100 characters"));
    }
    let scope = match one("scope").as_deref() {
        None | Some("read") => KeyScope::Read,
        Some("write") => KeyScope::Write,
        Some("admin") => KeyScope::Admin,
        Some(_) => return Err(ApiError::invalid_field("scope", "read, write or admin")),
    };
    let groups = fields
        .iter()
        .filter(|(k, _)| k == "tool_groups")
        .map(|(_, v)| crate::ops::campaigns::parse_name::<Group>(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ApiError::invalid_field("tool_groups", "not a tool group"))?;
    let expires_at = match one("expires_on") {
        Some(day) => {
            let day = NaiveDate::parse_from_str(&day, "%Y-%m-%d")
                .map_err(|_| ApiError::invalid_field("expires_on", "a date, YYYY-MM-DD"))?;
            let end = day.and_hms_opt(23, 59, 59).expect("a valid time of day");
            Some(Utc.from_utc_datetime(&end))
        }
        None => None,
    };
    let mut req = CreateApiKey {
        name,
        scope: Some(scope),
        tool_groups: (!groups.is_empty()).then_some(groups),
        expires_at,
        agent: Some(one("agent").is_some()),
        approve: Some(one("approve").is_some()),
    };
    req.validate()?;
    Ok(req)
}

async fn create(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let person = match admin(&state, &req).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    let fields = match form::<Vec<(String, String)>>(&req, &body) {
        Ok(fields) => fields,
        Err(res) => return *res,
    };
    let made = match request_of(&fields) {
        Ok(new) => keys::create_api_key_as_person(&state, &person, &new).await,
        Err(err) => Err(err),
    };
    let made = match made {
        Ok(made) => made,
        Err(err) => return error_page(&err),
    };
    let csrf = Csrf::of(&req);
    match listing(&state, &person, &csrf, Some((&made.key.name, &made.secret))).await {
        Ok(body) => page(&state, &csrf, "API keys", body),
        Err(err) => error_page(&err),
    }
}

async fn revoke(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let person = match admin(&state, &req).await {
        Ok(person) => person,
        Err(res) => return res,
    };
    if let Err(res) = form::<Empty>(&req, &body) {
        return *res;
    }
    let id = match id_of(&path, "key") {
        Ok(id) => id,
        Err(res) => return *res,
    };
    match keys::revoke_api_key(&state, person.project_id, id).await {
        Ok(_) => account::see_other(KEYS),
        Err(err) => error_page(&err),
    }
}
