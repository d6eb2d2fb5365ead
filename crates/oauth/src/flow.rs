//! The protocol, without HTTP: validating an authorization request, approving it, and the
//! token endpoint's grants, registration and revocation.

use chrono::Utc;
use diesel_async::AsyncPgConnection;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::config::CODE_TTL;
use crate::db::{self, Account, Client, CodeUse, Grant};
use crate::{OAuth, OAuthError, pkce};

/// The query of `GET /oauth/authorize` (and the hidden fields of the pages' forms).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct AuthorizeRequest {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub resource: Option<String>,
}

/// An authorization request that may be shown to the person.
#[derive(Debug, Clone)]
pub struct Validated {
    pub client: Client,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub code_challenge: String,
    pub state: Option<String>,
}

/// Why an authorization request fails: before the redirect URI is known to be the client's, the
/// answer is an error page and never a redirect.
#[derive(Debug)]
pub enum AuthorizeFailure {
    NoRedirect(OAuthError),
    Redirect(String),
}

impl From<OAuthError> for AuthorizeFailure {
    fn from(err: OAuthError) -> Self {
        Self::NoRedirect(err)
    }
}

/// `redirect_uri` with the query parameters added.
pub fn with_query(redirect_uri: &str, pairs: &[(&str, &str)]) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            {
                let mut query = url.query_pairs_mut();
                for (k, v) in pairs {
                    query.append_pair(k, v);
                }
            }
            url.into()
        }
        Err(_) => redirect_uri.to_owned(),
    }
}

fn error_redirect(v: &Validated, err: &OAuthError, issuer: &str) -> AuthorizeFailure {
    let mut pairs = vec![
        ("error", err.error),
        ("error_description", err.error_description.as_str()),
        ("iss", issuer),
    ];
    if let Some(state) = &v.state {
        pairs.push(("state", state));
    }
    AuthorizeFailure::Redirect(with_query(&v.redirect_uri, &pairs))
}

pub fn parse_client_id(id: Option<&str>) -> Result<Uuid, OAuthError> {
    id.and_then(|id| Uuid::parse_str(id).ok())
        .ok_or_else(|| OAuthError::invalid_client("unknown client_id"))
}

/// The scopes a request gets: the named ones (or the defaults), all supported, within the
/// ceiling for third-party clients.
pub fn grant_scopes(oauth: &OAuth, requested: Option<&str>) -> Result<Vec<String>, OAuthError> {
    let config = &oauth.config;
    let names: Vec<&str> = match requested.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => s.split(' ').filter(|s| !s.is_empty()).collect(),
        None => config.default_scopes.to_vec(),
    };
    if let Some(bad) = names.iter().find(|n| !config.scopes_supported.contains(n)) {
        return Err(OAuthError::invalid_scope(format!("unknown scope {bad}")));
    }
    let mut granted: Vec<String> = Vec::new();
    for name in names {
        let allowed = config
            .client_scope_ceiling
            .is_none_or(|c| c.contains(&name));
        if allowed && !granted.iter().any(|g| g == name) {
            granted.push(name.to_owned());
        }
    }
    if granted.is_empty() {
        return Err(OAuthError::invalid_scope(
            "none of the requested scopes may be granted to this client",
        ));
    }
    Ok(granted)
}

/// The resource a grant is for (RFC 8707): one of the service's, the first by default.
pub fn resource(oauth: &OAuth, base: &str, requested: Option<&str>) -> Result<String, OAuthError> {
    let resources = resources(oauth, base);
    match requested {
        None => Ok(resources[0].clone()),
        Some(r) => resources
            .into_iter()
            .find(|known| known == r || known.trim_end_matches('/') == r.trim_end_matches('/'))
            .ok_or_else(|| {
                OAuthError::invalid_target(format!("{r} is not a resource of this server"))
            }),
    }
}

pub fn resources(oauth: &OAuth, base: &str) -> Vec<String> {
    oauth
        .config
        .resource_paths
        .iter()
        .map(|p| format!("{base}{p}"))
        .collect()
}

pub async fn validate_authorize(
    oauth: &OAuth,
    conn: &mut AsyncPgConnection,
    base: &str,
    req: &AuthorizeRequest,
) -> Result<Validated, AuthorizeFailure> {
    let client_id = parse_client_id(req.client_id.as_deref())?;
    let client = db::find_client(conn, client_id)
        .await
        .map_err(OAuthError::from)?
        .ok_or_else(|| OAuthError::invalid_client("unknown client_id"))?;
    let redirect_uri = req
        .redirect_uri
        .as_deref()
        .filter(|uri| client.redirect_uris.iter().any(|r| r == uri))
        .ok_or_else(|| {
            OAuthError::invalid_request("redirect_uri is missing or not registered for this client")
        })?
        .to_owned();
    let mut v = Validated {
        client,
        redirect_uri,
        scopes: Vec::new(),
        resource: String::new(),
        code_challenge: String::new(),
        state: req.state.clone(),
    };
    let issuer = base;
    if req.response_type.as_deref() != Some("code") {
        let err = OAuthError::unsupported_response_type("response_type must be code");
        return Err(error_redirect(&v, &err, issuer));
    }
    if req.code_challenge_method.as_deref() != Some("S256") {
        let err = OAuthError::invalid_request("code_challenge_method must be S256");
        return Err(error_redirect(&v, &err, issuer));
    }
    match req
        .code_challenge
        .as_deref()
        .filter(|c| pkce::well_formed(c))
    {
        Some(challenge) => v.code_challenge = challenge.to_owned(),
        None => {
            let err = OAuthError::invalid_request("code_challenge must be 43 to 128 characters");
            return Err(error_redirect(&v, &err, issuer));
        }
    }
    match grant_scopes(oauth, req.scope.as_deref()) {
        Ok(scopes) => v.scopes = scopes,
        Err(err) => return Err(error_redirect(&v, &err, issuer)),
    }
    match resource(oauth, base, req.resource.as_deref()) {
        Ok(resource) => v.resource = resource,
        Err(err) => return Err(error_redirect(&v, &err, issuer)),
    }
    Ok(v)
}

/// The person approved: a grant and its code, and where to send the browser.
pub async fn approve(
    conn: &mut AsyncPgConnection,
    base: &str,
    v: &Validated,
    account: &Account,
) -> Result<String, OAuthError> {
    let code = crate::random_hex();
    db::create_grant(
        conn,
        db::NewGrant {
            client_id: v.client.id,
            account,
            scopes: &v.scopes,
            resource: &v.resource,
            code_hash: store::sha256(code.as_bytes()),
            redirect_uri: &v.redirect_uri,
            code_challenge: &v.code_challenge,
            code_expires_at: Utc::now() + CODE_TTL,
        },
    )
    .await?;
    let mut pairs = vec![("code", code.as_str()), ("iss", base)];
    if let Some(state) = &v.state {
        pairs.push(("state", state));
    }
    Ok(with_query(&v.redirect_uri, &pairs))
}

/// The person declined.
pub fn deny(base: &str, v: &Validated) -> String {
    match error_redirect(
        v,
        &OAuthError::access_denied("the request was declined"),
        base,
    ) {
        AuthorizeFailure::Redirect(url) => url,
        AuthorizeFailure::NoRedirect(_) => v.redirect_uri.clone(),
    }
}

/// The form of `POST /oauth/token` and `/oauth/revoke`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TokenForm {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
    pub token: Option<String>,
    pub token_type_hint: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenAnswer {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: String,
    pub scope: String,
}

/// The client that calls the token or revocation endpoint: `client_secret_basic` (the
/// `basic` pair), `client_secret_post`, or a public client naming itself.
pub async fn authenticate_client(
    conn: &mut AsyncPgConnection,
    form: &TokenForm,
    basic: Option<(String, String)>,
) -> Result<Client, OAuthError> {
    let (id, secret) = match basic {
        Some((id, secret)) => (Some(id), Some(secret)),
        None => (form.client_id.clone(), form.client_secret.clone()),
    };
    let client_id = parse_client_id(id.as_deref())?;
    let client = db::find_client(conn, client_id)
        .await?
        .ok_or_else(|| OAuthError::invalid_client("unknown client_id"))?;
    if let Some(stored) = &client.secret_hash {
        let given =
            secret.ok_or_else(|| OAuthError::invalid_client("client authentication required"))?;
        if !auth::credential::hashes_equal(stored, &store::sha256(given.as_bytes())) {
            return Err(OAuthError::invalid_client("client authentication failed"));
        }
    }
    Ok(client)
}

fn required<'a>(value: &'a Option<String>, name: &str) -> Result<&'a str, OAuthError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
}

pub async fn token(
    oauth: &OAuth,
    conn: &mut AsyncPgConnection,
    base: &str,
    form: &TokenForm,
    basic: Option<(String, String)>,
) -> Result<TokenAnswer, OAuthError> {
    let grant_type = required(&form.grant_type, "grant_type")?;
    if !matches!(grant_type, "authorization_code" | "refresh_token") {
        return Err(OAuthError::unsupported_grant_type(format!(
            "grant_type {grant_type} is not supported"
        )));
    }
    let client = authenticate_client(conn, form, basic).await?;
    let grant = if grant_type == "authorization_code" {
        exchange_code(conn, base, form, &client).await?
    } else {
        refresh(conn, form, &client).await?
    };
    if let Some(r) = form.resource.as_deref() {
        let wanted = resource(oauth, base, Some(r))?;
        if wanted != grant.resource {
            return Err(OAuthError::invalid_target(
                "resource differs from the grant's",
            ));
        }
    }
    issue(oauth, conn, &grant).await
}

async fn exchange_code(
    conn: &mut AsyncPgConnection,
    _base: &str,
    form: &TokenForm,
    client: &Client,
) -> Result<Grant, OAuthError> {
    let code = required(&form.code, "code")?;
    let verifier = required(&form.code_verifier, "code_verifier")?;
    let (code, grant) = match db::use_code(conn, &store::sha256(code.as_bytes())).await? {
        CodeUse::First(found) => *found,
        CodeUse::Replayed => {
            return Err(OAuthError::invalid_grant(
                "the code was used already; what it issued is revoked",
            ));
        }
        CodeUse::Unknown => return Err(OAuthError::invalid_grant("unknown code")),
    };
    if grant.client_id != client.id {
        return Err(OAuthError::invalid_grant(
            "the code was issued to another client",
        ));
    }
    if code.expires_at <= Utc::now() {
        return Err(OAuthError::invalid_grant("the code expired"));
    }
    if form.redirect_uri.as_deref() != Some(code.redirect_uri.as_str()) {
        return Err(OAuthError::invalid_grant(
            "redirect_uri differs from the authorization request's",
        ));
    }
    if !pkce::verify(verifier, &code.code_challenge) {
        return Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge",
        ));
    }
    if grant.revoked_at.is_some() {
        return Err(OAuthError::invalid_grant("the grant was revoked"));
    }
    Ok(grant)
}

async fn refresh(
    conn: &mut AsyncPgConnection,
    form: &TokenForm,
    client: &Client,
) -> Result<Grant, OAuthError> {
    let presented = required(&form.refresh_token, "refresh_token")?;
    let found = db::find_token(conn, &store::sha256(presented.as_bytes())).await?;
    let Some((token, mut grant)) = found.filter(|(t, _)| t.kind == db::REFRESH) else {
        return Err(OAuthError::invalid_grant("unknown refresh token"));
    };
    if grant.client_id != client.id {
        return Err(OAuthError::invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    if token.revoked_at.is_some() || grant.revoked_at.is_some() {
        return Err(OAuthError::invalid_grant("the refresh token was revoked"));
    }
    if token.expires_at <= Utc::now() {
        return Err(OAuthError::invalid_grant("the refresh token expired"));
    }
    if token.used_at.is_some() || !db::spend_refresh(conn, token.id).await? {
        // A rotated-out token came back: someone holds a copy. End the whole grant.
        db::revoke_grant(conn, grant.id).await?;
        return Err(OAuthError::invalid_grant(
            "the refresh token was used already; the grant is revoked",
        ));
    }
    if let Some(scope) = form.scope.as_deref().filter(|s| !s.trim().is_empty()) {
        let narrower: Vec<String> = scope
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if narrower.iter().any(|s| !grant.scopes.contains(s)) {
            return Err(OAuthError::invalid_scope(
                "a refresh may only narrow the grant's scopes",
            ));
        }
        grant.scopes = narrower;
    }
    Ok(grant)
}

async fn issue(
    oauth: &OAuth,
    conn: &mut AsyncPgConnection,
    grant: &Grant,
) -> Result<TokenAnswer, OAuthError> {
    let config = &oauth.config;
    let access = auth::credential::generate(config.access_kind);
    let (refresh, refresh_hash) = crate::new_secret(config.refresh_prefix);
    let now = Utc::now();
    let access_ttl =
        chrono::Duration::from_std(config.access_ttl).unwrap_or(chrono::Duration::days(90));
    let refresh_ttl =
        chrono::Duration::from_std(config.refresh_ttl).unwrap_or(chrono::Duration::days(365));
    db::insert_token(conn, grant.id, db::ACCESS, &access.hash, now + access_ttl).await?;
    db::insert_token(
        conn,
        grant.id,
        db::REFRESH,
        &refresh_hash,
        now + refresh_ttl,
    )
    .await?;
    Ok(TokenAnswer {
        access_token: access.plaintext,
        token_type: "Bearer",
        expires_in: config.access_ttl.as_secs(),
        refresh_token: refresh,
        scope: grant.scopes.join(" "),
    })
}

/// RFC 7009: revokes the token's whole grant when the token is the client's; answers the same
/// whatever the token was.
pub async fn revoke(
    conn: &mut AsyncPgConnection,
    form: &TokenForm,
    basic: Option<(String, String)>,
) -> Result<(), OAuthError> {
    let token = required(&form.token, "token")?;
    let client = authenticate_client(conn, form, basic).await?;
    if let Some((_, grant)) = db::find_token(conn, &store::sha256(token.as_bytes())).await?
        && grant.client_id == client.id
    {
        db::revoke_grant(conn, grant.id).await?;
    }
    Ok(())
}

/// RFC 7591 registration request.
#[derive(Debug, Clone, Deserialize)]
pub struct RegistrationRequest {
    pub redirect_uris: Option<Vec<String>>,
    pub client_name: Option<String>,
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
    pub scope: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegistrationAnswer {
    pub client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub client_id_issued_at: i64,
    pub client_secret_expires_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: String,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
}

pub const MAX_REDIRECT_URIS: usize = 10;
pub const MAX_URI_LEN: usize = 2000;
pub const MAX_CLIENT_NAME: usize = 200;
pub const AUTH_METHODS: &[&str] = &["none", "client_secret_post", "client_secret_basic"];
pub const GRANT_TYPES: &[&str] = &["authorization_code", "refresh_token"];

/// What a web redirect URI looks like: `https` to a host name, or `http` to a loopback host
/// (native apps, RFC 8252 §7.3); an optional port and path; no query, no fragment.
pub const REDIRECT_URI_PATTERN: &str = r"^(https://[a-z0-9.-]+|http://(127\.0\.0\.1|localhost|\[::1\]))(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$";

/// What the OpenAPI document states of a redirect URI: [`REDIRECT_URI_PATTERN`], or a
/// private-use scheme and a path (the refused schemes are named in the description).
pub const DOCUMENTED_REDIRECT_URI_PATTERN: &str = r"^((https://[a-z0-9.-]+|http://(127\.0\.0\.1|localhost|\[::1\]))(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?|[a-z][a-z0-9+.-]+:/[A-Za-z0-9._~/-]*)$";

/// Schemes a redirect URI may never use: the web's own (other than https and loopback http,
/// checked by [`REDIRECT_URI_PATTERN`]), and those that run, read or embed something in the
/// browser rather than hand the code to an app.
pub const REFUSED_SCHEMES: &[&str] = &[
    "http",
    "https",
    "javascript",
    "vbscript",
    "data",
    "file",
    "about",
    "blob",
    "filesystem",
    "view-source",
    "ws",
    "wss",
    "ftp",
    "ftps",
    "mailto",
    "tel",
    "sms",
    "jar",
    "chrome",
    "chrome-extension",
    "moz-extension",
    "resource",
];

/// A redirect URI a client may register: a web one ([`REDIRECT_URI_PATTERN`]), or a native
/// app's private-use scheme (RFC 8252 §7.1: `cursor://anysphere.cursor-mcp/oauth/callback`,
/// `com.example.app:/callback`) that is none of [`REFUSED_SCHEMES`]; a URL without query or
/// fragment either way.
pub fn acceptable_redirect_uri(uri: &str) -> bool {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        regex::Regex::new(REDIRECT_URI_PATTERN).expect("the redirect URI pattern compiles")
    });
    if uri.len() > MAX_URI_LEN {
        return false;
    }
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if matches!(url.scheme(), "http" | "https") {
        return pattern.is_match(uri);
    }
    // Written exactly as parsed (a lowercase scheme, nothing dropped or escaped), and a path
    // after the scheme (`scheme:/…` or `scheme://…`), not an opaque `scheme:anything`.
    private_use_scheme(url.scheme())
        && url.query().is_none()
        && url.fragment().is_none()
        && !url.cannot_be_a_base()
        && url.as_str() == uri
}

fn private_use_scheme(scheme: &str) -> bool {
    scheme.len() >= 2 && !REFUSED_SCHEMES.contains(&scheme) && !scheme.ends_with("script")
}

pub async fn register(
    conn: &mut AsyncPgConnection,
    req: RegistrationRequest,
) -> Result<RegistrationAnswer, OAuthError> {
    let redirect_uris = req.redirect_uris.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::invalid_redirect_uri(format!(
            "redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs"
        )));
    }
    if let Some(bad) = redirect_uris.iter().find(|u| !acceptable_redirect_uri(u)) {
        return Err(OAuthError::invalid_redirect_uri(format!(
            "{bad} is not an acceptable redirect URI (https, http to a loopback host, or a \
             native app's private-use scheme; no query or fragment)"
        )));
    }
    let method = req
        .token_endpoint_auth_method
        .unwrap_or_else(|| "client_secret_basic".to_owned());
    if !AUTH_METHODS.contains(&method.as_str()) {
        return Err(OAuthError::invalid_client_metadata(format!(
            "token_endpoint_auth_method must be one of {}",
            AUTH_METHODS.join(", ")
        )));
    }
    let grant_types = req
        .grant_types
        .unwrap_or_else(|| vec!["authorization_code".to_owned(), "refresh_token".to_owned()]);
    if grant_types.is_empty()
        || grant_types
            .iter()
            .any(|g| !GRANT_TYPES.contains(&g.as_str()))
    {
        return Err(OAuthError::invalid_client_metadata(
            "grant_types may list authorization_code and refresh_token only",
        ));
    }
    let response_types = req
        .response_types
        .unwrap_or_else(|| vec!["code".to_owned()]);
    if response_types.is_empty() || response_types.iter().any(|r| r != "code") {
        return Err(OAuthError::invalid_client_metadata(
            "response_types may list code only",
        ));
    }
    let name = req
        .client_name
        .unwrap_or_else(|| "Unnamed client".to_owned());
    if name.is_empty() || name.chars().count() > MAX_CLIENT_NAME || name.contains('\0') {
        return Err(OAuthError::invalid_client_metadata(format!(
            "client_name must be 1 to {MAX_CLIENT_NAME} characters"
        )));
    }
    let secret = (method != "none").then(crate::random_hex);
    let client = db::register_client(
        conn,
        db::NewClient {
            client_name: &name,
            redirect_uris: &redirect_uris,
            secret_hash: secret.as_ref().map(|s| store::sha256(s.as_bytes())),
            token_endpoint_auth_method: &method,
        },
    )
    .await?;
    Ok(RegistrationAnswer {
        client_id: client.id.to_string(),
        client_secret: secret,
        client_id_issued_at: client.created_at.timestamp(),
        client_secret_expires_at: 0,
        client_name: client.client_name,
        redirect_uris: client.redirect_uris,
        token_endpoint_auth_method: client.token_endpoint_auth_method,
        grant_types,
        response_types,
    })
}

#[cfg(test)]
mod tests {
    use super::acceptable_redirect_uri as ok;

    #[test]
    fn redirect_uris() {
        assert!(ok("https://app.example.com/oauth/callback"));
        assert!(ok("http://127.0.0.1:33418/callback"));
        assert!(ok("http://localhost/cb"));
        assert!(ok("http://[::1]:8080/cb"));
        assert!(!ok("http://example.com/cb"));
        assert!(!ok("https://app.example.com/cb#frag"));
        assert!(!ok("https://app.example.com/cb?x=1"));
        assert!(!ok("javascript:alert(1)"));
        assert!(!ok("http://127.0.0.1:99999/cb"));
        assert!(!ok(""));
    }

    #[test]
    fn native_app_schemes() {
        assert!(ok("cursor://anysphere.cursor-mcp/oauth/callback"));
        assert!(ok("com.example.app:/oauth2redirect"));
        assert!(ok("vscode://vscode.github-authentication/did-authenticate"));
        for refused in [
            "javascript://%0aalert(1)",
            "JavaScript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "vbscript:msgbox(1)",
            "about:blank",
            "blob:https://app.example.com/uuid",
            "view-source:https://app.example.com/",
            "livescript:x",
            "ws://127.0.0.1/cb",
            "cursor://anysphere.cursor-mcp/cb?x=1",
            "cursor://anysphere.cursor-mcp/cb#f",
            "cursor://anysphere.cursor-mcp/c b",
            "x:/cb",
        ] {
            assert!(!ok(refused), "{refused}");
        }
    }
}
