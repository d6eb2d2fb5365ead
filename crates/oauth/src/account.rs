//! The first-party account pages under `Paths::account`: sign-in outside an authorization
//! request, sign-out, and the connected apps (the grants the person gave) with revoke; and
//! what a service's own pages need: the signed-in account, the CSRF token, the page answer.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use maud::Markup;
use serde::Deserialize;
use uuid::Uuid;

use crate::config::SESSION_TTL;
use crate::routes::{self, SignIn};
use crate::web_util::{self, CSRF_COOKIE, SESSION_COOKIE};
use crate::{OAuth, OAuthError, OAuthHost, db, pages};

/// Mounts `{base}/sign-in`, `{base}/sign-out`, `{base}/apps` and
/// `{base}/apps/{id}/revoke`.
pub fn configure<S: OAuthHost>(cfg: &mut web::ServiceConfig, base: &'static str) {
    cfg.service(
        web::resource(format!("{base}/sign-in"))
            .route(web::get().to(sign_in_page::<S>))
            .route(web::post().to(sign_in::<S>)),
    )
    .service(web::resource(format!("{base}/sign-out")).route(web::post().to(sign_out::<S>)))
    .service(web::resource(format!("{base}/apps")).route(web::get().to(apps::<S>)))
    .service(
        web::resource(format!("{base}/apps/{{id}}/revoke")).route(web::post().to(revoke::<S>)),
    );
}

fn base(oauth: &OAuth) -> &'static str {
    oauth.config.paths.account.unwrap_or("/account")
}

/// The CSRF token of a page: the request's, or a new one set as a cookie with the page.
pub struct Csrf {
    pub token: String,
    fresh: bool,
}

impl Csrf {
    pub fn of(req: &HttpRequest) -> Self {
        let (token, fresh) = routes::csrf_token(req);
        Self { token, fresh }
    }

    /// The page as an answer (no caching, no framing), with the CSRF cookie when new.
    pub fn page(&self, oauth: &OAuth, status: StatusCode, markup: Markup) -> HttpResponse {
        self.page_posting_to(oauth, status, markup, None)
    }

    /// [`Self::page`] whose forms may also lead to `origins` (space-separated): a form whose
    /// answer redirects there is otherwise held by the page's `form-action`.
    pub fn page_posting_to(
        &self,
        oauth: &OAuth,
        status: StatusCode,
        markup: Markup,
        origins: Option<&str>,
    ) -> HttpResponse {
        let mut res = routes::html_posting_to(status, markup, origins);
        if self.fresh {
            let cookie =
                web_util::set_cookie(oauth, CSRF_COOKIE, &self.token, SESSION_TTL.as_secs());
            if let Ok(value) = header::HeaderValue::from_str(&cookie) {
                res.headers_mut().append(header::SET_COOKIE, value);
            }
        }
        res
    }
}

/// Whether a form's `csrf` field matches the request's CSRF cookie.
pub fn csrf_ok(req: &HttpRequest, submitted: &str) -> bool {
    routes::csrf_ok(req, submitted)
}

/// The answer to a form whose CSRF token did not match.
pub fn csrf_refused() -> HttpResponse {
    routes::csrf_refused()
}

/// A plain message page.
pub fn message(status: StatusCode, title: &str, text: &str) -> HttpResponse {
    routes::html(status, pages::message(title, text))
}

/// `303 See Other` to `location` (after a form post).
pub fn see_other(location: &str) -> HttpResponse {
    routes::see_other(location).finish()
}

/// The id of the account signed in on this browser, if any (no redirect: for an answer that
/// only checks who is there).
pub async fn signed_in_account_id(oauth: &OAuth, req: &HttpRequest) -> Option<uuid::Uuid> {
    let mut conn = routes::connection(oauth).await.ok()?;
    routes::session_account(oauth, &mut conn, req)
        .await
        .ok()
        .flatten()
        .map(|account| account.id)
}

/// The signed-in account, or the answer that sends the browser to sign in and come back to
/// `next` (a path of this service).
pub async fn require_account(
    oauth: &OAuth,
    req: &HttpRequest,
    next: &str,
) -> Result<db::Account, HttpResponse> {
    let mut conn = routes::connection(oauth).await.map_err(|e| e.response())?;
    match routes::session_account(oauth, &mut conn, req).await {
        Ok(Some(account)) => Ok(account),
        Ok(None) => {
            let query = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
            Err(see_other(&format!("{}/sign-in?{query}", base(oauth))))
        }
        Err(err) => Err(err.response()),
    }
}

/// The navigation of the account pages: the service's `links`, then sign-out.
pub fn nav(oauth: &OAuth, links: &[(&str, &str)], csrf: &str) -> Markup {
    pages::nav(links, &format!("{}/sign-out", base(oauth)), csrf)
}

/// A `next` the sign-in may send the browser to: a path of this service, nothing else.
fn local_path(next: Option<&str>) -> Option<&str> {
    next.filter(|n| {
        n.starts_with('/')
            && !n.starts_with("//")
            && !n.contains('\\')
            && n.len() <= 2000
            && n.bytes().all(|b| b.is_ascii_graphic())
    })
}

#[derive(Debug, Default, Deserialize)]
struct NextQuery {
    next: Option<String>,
}

fn sign_in_markup(oauth: &OAuth, csrf: &str, next: &str, error: Option<&str>) -> Markup {
    pages::sign_in(&pages::SignIn {
        service: oauth.config.service_name,
        client_name: None,
        action: &format!("{}/sign-in", base(oauth)),
        csrf,
        request: None,
        next: Some(next),
        error,
    })
}

fn default_next(oauth: &OAuth) -> String {
    format!("{}/apps", base(oauth))
}

async fn sign_in_page<S: OAuthHost>(state: web::Data<S>, req: HttpRequest) -> HttpResponse {
    let oauth = state.oauth();
    let query: NextQuery = serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let next = local_path(query.next.as_deref())
        .map(str::to_owned)
        .unwrap_or_else(|| default_next(oauth));
    let csrf = Csrf::of(&req);
    csrf.page(
        oauth,
        StatusCode::OK,
        sign_in_markup(oauth, &csrf.token, &next, None),
    )
}

#[derive(Debug, Deserialize)]
struct SignInForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    next: Option<String>,
}

async fn sign_in<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    let result = async {
        let f: SignInForm = routes::form(&body)?;
        if !csrf_ok(&req, &f.csrf) {
            return Ok(csrf_refused());
        }
        let next = local_path(f.next.as_deref())
            .map(str::to_owned)
            .unwrap_or_else(|| default_next(oauth));
        let account = match routes::check_sign_in(oauth, &req, &f.email, &f.password).await? {
            SignIn::Verified(account) => account,
            SignIn::Refused(message) => {
                let csrf = Csrf::of(&req);
                return Ok(csrf.page(
                    oauth,
                    StatusCode::OK,
                    sign_in_markup(oauth, &csrf.token, &next, Some(message)),
                ));
            }
            SignIn::Limited => return Ok(routes::too_many_attempts()),
        };
        let cookie = routes::start_session(oauth, &account).await?;
        Ok::<_, OAuthError>(
            routes::see_other(&next)
                .insert_header((header::SET_COOKIE, cookie))
                .finish(),
        )
    }
    .await;
    result.unwrap_or_else(|err| err.response())
}

#[derive(Debug, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn sign_out<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    let result = async {
        let f: CsrfForm = routes::form(&body)?;
        if !csrf_ok(&req, &f.csrf) {
            return Ok(csrf_refused());
        }
        if let Some(token) = web_util::cookie(&req, SESSION_COOKIE) {
            let mut conn = routes::connection(oauth).await?;
            db::delete_session(&mut conn, &store::sha256(token.as_bytes())).await?;
        }
        Ok::<_, OAuthError>(
            routes::see_other(&format!("{}/sign-in", base(oauth)))
                .insert_header((
                    header::SET_COOKIE,
                    web_util::set_cookie(oauth, SESSION_COOKIE, "", 0),
                ))
                .finish(),
        )
    }
    .await;
    result.unwrap_or_else(|err| err.response())
}

async fn apps<S: OAuthHost>(state: web::Data<S>, req: HttpRequest) -> HttpResponse {
    let oauth = state.oauth();
    let here = default_next(oauth);
    let account = match require_account(oauth, &req, &here).await {
        Ok(account) => account,
        Err(res) => return res,
    };
    let result = async {
        let mut conn = routes::connection(oauth).await?;
        Ok::<_, OAuthError>(db::active_grants(&mut conn, account.owner_id).await?)
    }
    .await;
    let grants = match result {
        Ok(grants) => grants,
        Err(err) => return err.response(),
    };
    let apps: Vec<pages::ConnectedApp> = grants
        .into_iter()
        .map(|(grant, client)| pages::ConnectedApp {
            grant_id: grant.id.to_string(),
            client_name: client.client_name,
            scopes: grant.scopes,
            resource: grant.resource,
            granted_at: grant.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        })
        .collect();
    let csrf = Csrf::of(&req);
    let markup = pages::connected_apps(&pages::ConnectedApps {
        service: oauth.config.service_name,
        account: &account.email,
        nav: nav(oauth, oauth.config.account_links, &csrf.token),
        apps: &apps,
        revoke_action: &format!("{}/apps/{{id}}/revoke", base(oauth)),
        csrf: &csrf.token,
    });
    csrf.page(oauth, StatusCode::OK, markup)
}

async fn revoke<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    let apps = default_next(oauth);
    let account = match require_account(oauth, &req, &apps).await {
        Ok(account) => account,
        Err(res) => return res,
    };
    let result = async {
        let f: CsrfForm = routes::form(&body)?;
        if !csrf_ok(&req, &f.csrf) {
            return Ok(csrf_refused());
        }
        let Ok(id) = Uuid::parse_str(&path) else {
            return Ok(not_found("No such connected app."));
        };
        let mut conn = routes::connection(oauth).await?;
        if !db::revoke_owned_grant(&mut conn, account.owner_id, id).await? {
            return Ok(not_found("No such connected app."));
        }
        Ok::<_, OAuthError>(see_other(&apps))
    }
    .await;
    result.unwrap_or_else(|err| err.response())
}

/// A 404 page: what another person's id answers, like an id that never existed.
pub fn not_found(text: &str) -> HttpResponse {
    message(StatusCode::NOT_FOUND, "Not found", text)
}
