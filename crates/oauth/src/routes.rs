//! The HTTP endpoints, mounted by each service on its own paths (`configure::<AppState>`).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::Markup;
use rate_limit::Quota;
use serde::Deserialize;

use crate::config::SESSION_TTL;
use crate::db;
use crate::flow::{self, AuthorizeFailure, AuthorizeRequest, TokenForm};
use crate::openapi::MAX_FIELD;
use crate::pages;
use crate::web_util::{self, CSRF_COOKIE, SESSION_COOKIE};
use crate::{OAuth, OAuthError, OAuthHost};

/// Where the sign-in and consent forms post, under the authorize path.
pub const SIGN_IN_SUFFIX: &str = "/sign-in";
pub const CONSENT_SUFFIX: &str = "/consent";

/// Mounts the metadata documents, the authorize, sign-in and consent pages, and the token,
/// registration and revocation endpoints.
pub fn configure<S: OAuthHost>(cfg: &mut web::ServiceConfig, paths: crate::config::Paths) {
    let resource = |path: &str, handler| web::resource(path.to_owned()).route(handler);
    cfg.service(resource(
        "/.well-known/oauth-authorization-server",
        web::get().to(server_metadata::<S>),
    ))
    .service(resource(
        "/.well-known/oauth-protected-resource",
        web::get().to(resource_metadata::<S>),
    ))
    .service(resource(
        "/.well-known/oauth-protected-resource/{path:.*}",
        web::get().to(resource_metadata::<S>),
    ))
    .service(resource(paths.authorize, web::get().to(authorize::<S>)))
    .service(resource(
        &format!("{}{SIGN_IN_SUFFIX}", paths.authorize),
        web::post().to(sign_in::<S>),
    ))
    .service(resource(
        &format!("{}{CONSENT_SUFFIX}", paths.authorize),
        web::post().to(consent::<S>),
    ))
    .service(resource(paths.token, web::post().to(token::<S>)))
    .service(resource(paths.register, web::post().to(register::<S>)))
    .service(resource(paths.revoke, web::post().to(revoke::<S>)));
    if let Some(base) = paths.account {
        crate::account::configure::<S>(cfg, base);
    }
}

pub(crate) async fn connection(oauth: &OAuth) -> Result<store::Conn, OAuthError> {
    oauth
        .pool
        .get()
        .await
        .map_err(|e| OAuthError::from(store::StoreError::from(e)))
}

fn json_no_store(
    status: actix_web::http::StatusCode,
    body: &impl serde::Serialize,
) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .json(body)
}

/// The public origin of `req`, or the 421 that says none can be trusted.
fn base(oauth: &OAuth, req: &HttpRequest) -> Result<String, OAuthError> {
    web_util::base_url(oauth, req).ok_or_else(OAuthError::no_public_origin)
}

async fn server_metadata<S: OAuthHost>(state: web::Data<S>, req: HttpRequest) -> HttpResponse {
    let oauth = state.oauth();
    match base(oauth, &req) {
        Ok(base) => HttpResponse::Ok().json(crate::metadata::authorization_server(oauth, &base)),
        Err(err) => err.response(),
    }
}

async fn resource_metadata<S: OAuthHost>(state: web::Data<S>, req: HttpRequest) -> HttpResponse {
    let oauth = state.oauth();
    let base = match base(oauth, &req) {
        Ok(base) => base,
        Err(err) => return err.response(),
    };
    let suffix = req
        .path()
        .strip_prefix("/.well-known/oauth-protected-resource")
        .unwrap_or("");
    let resource = if suffix.is_empty() {
        flow::resources(oauth, &base).remove(0)
    } else {
        match flow::resource(oauth, &base, Some(&format!("{base}{suffix}"))) {
            Ok(resource) => resource,
            Err(_) => return HttpResponse::NotFound().finish(),
        }
    };
    HttpResponse::Ok().json(crate::metadata::protected_resource(oauth, &base, &resource))
}

pub(crate) fn html(status: actix_web::http::StatusCode, markup: Markup) -> HttpResponse {
    html_posting_to(status, markup, None)
}

/// An HTML page whose forms may also lead to `origin` (the consent form's answer redirects to
/// the client, and browsers hold redirects after a form post to `form-action` too).
pub(crate) fn html_posting_to(
    status: actix_web::http::StatusCode,
    markup: Markup,
    origin: Option<&str>,
) -> HttpResponse {
    let form_action = match origin {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_owned(),
    };
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("x-frame-options", "DENY"))
        .insert_header((
            "content-security-policy",
            format!(
                "default-src 'none'; style-src 'unsafe-inline'; form-action {form_action}; frame-ancestors 'none'"
            ),
        ))
        .body(markup.into_string())
}

/// The request's CSRF token, or a new one (set as a cookie with the page).
pub(crate) fn csrf_token(req: &HttpRequest) -> (String, bool) {
    match web_util::cookie(req, CSRF_COOKIE).filter(|c| c.len() == 64) {
        Some(existing) => (existing, false),
        None => (crate::random_hex(), true),
    }
}

pub(crate) fn csrf_ok(req: &HttpRequest, submitted: &str) -> bool {
    web_util::cookie(req, CSRF_COOKIE).is_some_and(|cookie| {
        !cookie.is_empty()
            && auth::credential::hashes_equal(cookie.as_bytes(), submitted.as_bytes())
    })
}

fn redirect(location: &str) -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

pub(crate) fn see_other(location: &str) -> actix_web::HttpResponseBuilder {
    let mut res = HttpResponse::SeeOther();
    res.insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"));
    res
}

pub(crate) async fn session_account(
    oauth: &OAuth,
    conn: &mut diesel_async::AsyncPgConnection,
    req: &HttpRequest,
) -> Result<Option<db::Account>, OAuthError> {
    let Some(token) = web_util::cookie(req, SESSION_COOKIE) else {
        return Ok(None);
    };
    let _ = oauth;
    Ok(db::session_account(conn, &store::sha256(token.as_bytes())).await?)
}

/// Validates the request and answers the page the person needs next (sign-in or consent).
async fn authorize<S: OAuthHost>(state: web::Data<S>, req: HttpRequest) -> HttpResponse {
    let oauth = state.oauth();
    match authorize_page(oauth, &req, req.query_string(), None).await {
        Ok(res) => res,
        Err(err) => error_page(&err),
    }
}

/// A refused request of a person's browser, as a page (never a redirect): an unknown client
/// is a bad request here (400), not a failed client authentication (401).
pub(crate) fn error_page(err: &OAuthError) -> HttpResponse {
    let status = match err.status {
        401 => 400,
        other => other,
    };
    html(
        actix_web::http::StatusCode::from_u16(status)
            .unwrap_or(actix_web::http::StatusCode::BAD_REQUEST),
        pages::message("This request cannot be completed", &err.error_description),
    )
}

/// The authorization request a form carries, checked and written again in canonical form
/// (percent-encoded ASCII, so it can go into a `Location`); 400 when it is not one.
fn form_request(request: &str) -> Result<(AuthorizeRequest, String), OAuthError> {
    let malformed = || OAuthError::invalid_request("the authorization request is malformed");
    if request.chars().any(char::is_control) {
        return Err(malformed());
    }
    let parsed: AuthorizeRequest = serde_urlencoded::from_str(request).map_err(|_| malformed())?;
    let canonical = serde_urlencoded::to_string(&parsed).map_err(|_| malformed())?;
    Ok((parsed, canonical))
}

async fn authorize_page(
    oauth: &OAuth,
    req: &HttpRequest,
    query: &str,
    error: Option<&str>,
) -> Result<HttpResponse, OAuthError> {
    let (parsed, query) = form_request(query)?;
    let query = query.as_str();
    let base = base(oauth, req)?;
    let mut conn = connection(oauth).await?;
    let v = match flow::validate_authorize(oauth, &mut conn, &base, &parsed).await {
        Ok(v) => v,
        Err(AuthorizeFailure::NoRedirect(err)) => return Err(err),
        Err(AuthorizeFailure::Redirect(url)) => return Ok(redirect(&url)),
    };
    let (csrf, fresh) = csrf_token(req);
    let authorize_path = oauth.config.paths.authorize;
    let account = session_account(oauth, &mut conn, req).await?;
    let markup = match &account {
        None => pages::sign_in(&pages::SignIn {
            service: oauth.config.service_name,
            client_name: Some(&v.client.client_name),
            action: &format!("{authorize_path}{SIGN_IN_SUFFIX}"),
            csrf: &csrf,
            request: Some(query),
            next: None,
            error,
        }),
        Some(account) => pages::consent(&pages::Consent {
            service: oauth.config.service_name,
            client_name: &v.client.client_name,
            account: &account.email,
            scopes: &v.scopes,
            resource: &v.resource,
            action: &format!("{authorize_path}{CONSENT_SUFFIX}"),
            csrf: &csrf,
            request: query,
        }),
    };
    // The consent form's answer redirects to the client's redirect URI.
    let origin = account
        .as_ref()
        .and_then(|_| url::Url::parse(&v.redirect_uri).ok())
        .map(|u| match u.origin() {
            origin @ url::Origin::Tuple(..) => origin.ascii_serialization(),
            // A native app's private-use scheme: the CSP source is the scheme itself.
            url::Origin::Opaque(_) => format!("{}:", u.scheme()),
        });
    let mut res = html_posting_to(actix_web::http::StatusCode::OK, markup, origin.as_deref());
    if fresh {
        let cookie = web_util::set_cookie(oauth, CSRF_COOKIE, &csrf, SESSION_TTL.as_secs());
        if let Ok(value) = header::HeaderValue::from_str(&cookie) {
            res.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    Ok(res)
}

#[derive(Debug, Deserialize)]
struct SignInForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    request: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

pub(crate) fn form<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, OAuthError> {
    serde_urlencoded::from_bytes(body)
        .map_err(|_| OAuthError::invalid_request("the form is malformed"))
}

/// The token and revocation forms: every field at most [`MAX_FIELD`] characters.
fn token_form(body: &[u8]) -> Result<TokenForm, OAuthError> {
    let f: TokenForm = form(body)?;
    let fields = [
        &f.grant_type,
        &f.code,
        &f.redirect_uri,
        &f.code_verifier,
        &f.refresh_token,
        &f.client_id,
        &f.client_secret,
        &f.resource,
        &f.scope,
        &f.token,
        &f.token_type_hint,
    ];
    if fields
        .iter()
        .any(|v| v.as_ref().is_some_and(|v| v.chars().count() > MAX_FIELD))
    {
        return Err(OAuthError::invalid_request(format!(
            "form fields are at most {MAX_FIELD} characters"
        )));
    }
    Ok(f)
}

/// A form whose CSRF token is missing or altered: 403, and nothing done.
pub(crate) fn csrf_refused() -> HttpResponse {
    html(
        actix_web::http::StatusCode::FORBIDDEN,
        pages::message(
            "Form expired",
            "The form's security token did not match. Go back and reload the page.",
        ),
    )
}

/// Counts a sign-in attempt per account and per address; `false` when either is over its limit.
async fn attempt_allowed(oauth: &OAuth, email: &str, address: &str) -> bool {
    let config = &oauth.config;
    let window = config.sign_in_window;
    let service = config.service_name;
    let checks = [
        (
            format!("oauth-sign-in:{service}:account:{email}"),
            config.sign_in_per_account,
        ),
        (
            format!("oauth-sign-in:{service}:address:{address}"),
            config.sign_in_per_address,
        ),
    ];
    for (key, limit) in checks {
        let quota = [Quota::sliding(limit, window)];
        if let Some(decision) = auth::middleware::count(&oauth.limiter, &key, &quota).await
            && !decision.allowed
        {
            return false;
        }
    }
    true
}

async fn sign_in<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    match sign_in_inner(oauth, &req, &body).await {
        Ok(res) => res,
        Err(err) => error_page(&err),
    }
}

async fn sign_in_inner(
    oauth: &OAuth,
    req: &HttpRequest,
    body: &[u8],
) -> Result<HttpResponse, OAuthError> {
    let f: SignInForm = form(body)?;
    if !csrf_ok(req, &f.csrf) {
        return Ok(csrf_refused());
    }
    // Checked before anything is counted or a session starts.
    let (_, request) = form_request(&f.request)?;
    let account = match check_sign_in(oauth, req, &f.email, &f.password).await? {
        SignIn::Verified(account) => account,
        SignIn::Refused(message) => {
            return authorize_page(oauth, req, &request, Some(message)).await;
        }
        SignIn::Limited => return Ok(too_many_attempts()),
    };
    let cookie = start_session(oauth, &account).await?;
    let location = format!("{}?{request}", oauth.config.paths.authorize);
    Ok(see_other(&location)
        .insert_header((header::SET_COOKIE, cookie))
        .finish())
}

/// What a sign-in form's email and password came to.
pub(crate) enum SignIn {
    Verified(db::Account),
    /// Not signed in; the message says why, without telling which of the two was wrong.
    Refused(&'static str),
    /// Over the per-account or per-address limit.
    Limited,
}

pub(crate) fn too_many_attempts() -> HttpResponse {
    html(
        actix_web::http::StatusCode::OK,
        pages::message(
            "Too many attempts",
            "Too many sign-in attempts for this account or from this address. Wait a few minutes and try again.",
        ),
    )
}

/// Checks an email and password, counting the attempt against both rate limits.
pub(crate) async fn check_sign_in(
    oauth: &OAuth,
    req: &HttpRequest,
    email: &str,
    password: &str,
) -> Result<SignIn, OAuthError> {
    let email = db::normalize_email(email);
    if email.is_empty() || email.len() > 320 || email.contains('\0') {
        return Ok(SignIn::Refused("Enter your email and password."));
    }
    if !attempt_allowed(oauth, &email, &web_util::client_address(oauth, req)).await {
        return Ok(SignIn::Limited);
    }
    let mut conn = connection(oauth).await?;
    let account = db::find_account_by_email(&mut conn, &email).await?;
    let verified = match &account {
        Some(a) => crate::password::verify(password, &a.password_hash) && a.disabled_at.is_none(),
        None => {
            crate::password::dummy_verify(password);
            false
        }
    };
    match account.filter(|_| verified) {
        Some(account) => Ok(SignIn::Verified(account)),
        None => {
            tracing::info!("oauth sign-in refused");
            Ok(SignIn::Refused("The email or password is not right."))
        }
    }
}

/// A new browser session of `account`: its `Set-Cookie` value.
pub(crate) async fn start_session(
    oauth: &OAuth,
    account: &db::Account,
) -> Result<String, OAuthError> {
    let mut conn = connection(oauth).await?;
    let (session, hash) = crate::new_secret("");
    let expires = chrono::Utc::now() + SESSION_TTL;
    db::create_session(&mut conn, account.id, &hash, expires).await?;
    Ok(web_util::set_cookie(
        oauth,
        SESSION_COOKIE,
        &session,
        SESSION_TTL.as_secs(),
    ))
}

#[derive(Debug, Deserialize)]
struct ConsentForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    request: String,
    #[serde(default)]
    decision: String,
}

async fn consent<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    match consent_inner(oauth, &req, &body).await {
        Ok(res) => res,
        Err(err) => error_page(&err),
    }
}

async fn consent_inner(
    oauth: &OAuth,
    req: &HttpRequest,
    body: &[u8],
) -> Result<HttpResponse, OAuthError> {
    let f: ConsentForm = form(body)?;
    if !csrf_ok(req, &f.csrf) {
        return Ok(csrf_refused());
    }
    let (parsed, request) = form_request(&f.request)?;
    let base = base(oauth, req)?;
    let mut conn = connection(oauth).await?;
    let v = match flow::validate_authorize(oauth, &mut conn, &base, &parsed).await {
        Ok(v) => v,
        Err(AuthorizeFailure::NoRedirect(err)) => return Err(err),
        Err(AuthorizeFailure::Redirect(url)) => return Ok(see_other(&url).finish()),
    };
    let Some(account) = session_account(oauth, &mut conn, req).await? else {
        // The session ended meanwhile: back to the sign-in page.
        let location = format!("{}?{request}", oauth.config.paths.authorize);
        return Ok(see_other(&location).finish());
    };
    let location = match f.decision.as_str() {
        "approve" => flow::approve(&mut conn, &base, &v, &account).await?,
        _ => flow::deny(&base, &v),
    };
    Ok(see_other(&location).finish())
}

async fn token<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    let result = async {
        let f = token_form(&body)?;
        let base = base(oauth, &req)?;
        let mut conn = connection(oauth).await?;
        flow::token(
            oauth,
            &mut conn,
            &base,
            &f,
            web_util::basic_credentials(&req),
        )
        .await
    }
    .await;
    match result {
        Ok(answer) => json_no_store(actix_web::http::StatusCode::OK, &answer),
        Err(err) => err.response(),
    }
}

async fn revoke<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    let result = async {
        let f = token_form(&body)?;
        let mut conn = connection(oauth).await?;
        flow::revoke(&mut conn, &f, web_util::basic_credentials(&req)).await
    }
    .await;
    match result {
        Ok(()) => HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        Err(err) => err.response(),
    }
}

/// Counts a registration per address; `false` when the address is over its limit.
async fn registration_allowed(oauth: &OAuth, req: &HttpRequest) -> bool {
    let config = &oauth.config;
    let key = format!(
        "oauth-register:{}:address:{}",
        config.service_name,
        web_util::client_address(oauth, req)
    );
    let quota = [Quota::sliding(
        config.register_per_address,
        config.register_window,
    )];
    auth::middleware::count(&oauth.limiter, &key, &quota)
        .await
        .is_none_or(|decision| decision.allowed)
}

async fn register<S: OAuthHost>(
    state: web::Data<S>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let oauth = state.oauth();
    if !registration_allowed(oauth, &req).await {
        let mut res = OAuthError::too_many_requests(
            "too many client registrations from this address; try again later",
        )
        .response();
        res.headers_mut().insert(
            header::RETRY_AFTER,
            header::HeaderValue::from(oauth.config.register_window.as_secs()),
        );
        return res;
    }
    let result = async {
        let request: flow::RegistrationRequest = serde_json::from_slice(&body).map_err(|e| {
            OAuthError::invalid_client_metadata(format!(
                "the body is not valid client metadata: {e}"
            ))
        })?;
        let mut conn = connection(oauth).await?;
        flow::register(&mut conn, request).await
    }
    .await;
    match result {
        Ok(answer) => json_no_store(actix_web::http::StatusCode::CREATED, &answer),
        Err(err) => err.response(),
    }
}
