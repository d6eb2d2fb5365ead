//! The OAuth authorization server of remote MCP clients, driven with the `oauth2` crate as the
//! client and a cookie-keeping HTTP client as the person's browser.

use oauth2::{
    AuthorizationCode, CsrfToken, PkceCodeChallenge, PkceCodeVerifier, RefreshToken,
    Scope as OScope, TokenResponse,
};
use rate_limit::policy::Plan;
use reqwest::StatusCode;
use serde_json::{Value, json};

use test_support::oauth_client::{
    self, Browser, Client, error_code, form_body, hidden, http_client,
};

use crate::common::*;

pub const REDIRECT: &str = "http://127.0.0.1:9/callback";
pub const EMAIL: &str = "owner@example.com";
pub const PASSWORD: &str = "a long enough password";

/// A harness with a project and a sign-in account of it.
pub async fn setup() -> (Harness, uuid::Uuid) {
    let h = Harness::new().await;
    let project = h.project(Plan::Managed).await;
    oauth::db::create_account(&mut h.conn().await, EMAIL, PASSWORD, project)
        .await
        .unwrap();
    (h, project)
}

pub async fn register(h: &Harness, redirect: &str) -> String {
    let res = h
        .http
        .post(h.server.url("/oauth/register"))
        .json(&json!({
            "redirect_uris": [redirect],
            "client_name": "Test MCP client",
            "token_endpoint_auth_method": "none",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    assert!(body.get("client_secret").is_none());
    body["client_id"].as_str().unwrap().to_owned()
}

fn client(h: &Harness, client_id: &str) -> Client {
    oauth_client::client(
        &h.server.base,
        client_id,
        REDIRECT,
        ("/oauth/authorize", "/oauth/token", "/oauth/revoke"),
    )
}

/// Runs the browser part of the flow for the REST API: (code, verifier).
async fn authorize(
    h: &Harness,
    client: &Client,
    browser: &mut Browser,
) -> (String, PkceCodeVerifier) {
    authorize_for(h, client, browser, "/api/v1").await
}

/// Runs the browser part of the flow for the resource at `resource` (a path).
async fn authorize_for(
    h: &Harness,
    client: &Client,
    browser: &mut Browser,
    resource: &str,
) -> (String, PkceCodeVerifier) {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(OScope::new("read".into()))
        .add_scope(OScope::new("write".into()))
        .add_extra_param("resource", h.server.url(resource))
        .set_pkce_challenge(challenge)
        .url();
    let back = browser
        .approve(
            &h.server.base,
            "/oauth/authorize",
            url.as_str(),
            (EMAIL, PASSWORD),
        )
        .await;
    assert!(back.as_str().starts_with(REDIRECT));
    let param = |name: &str| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    assert_eq!(param("state").as_deref(), Some(state.secret().as_str()));
    assert_eq!(param("iss").as_deref(), Some(h.server.base.as_str()));
    (param("code").expect("a code"), verifier)
}

/// An access token for `/mcp` of a new client, granted by the sign-in account of [`setup`].
pub async fn mcp_token(h: &Harness) -> String {
    token_for(h, "/mcp").await
}

/// An access token for the resource at `resource` (`/mcp`, `/api/v1`) of a new client.
pub async fn token_for(h: &Harness, resource: &str) -> String {
    let client = client(h, &register(h, REDIRECT).await);
    let mut browser = Browser::new();
    let (code, verifier) = authorize_for(h, &client, &mut browser, resource).await;
    let token = exchange(&client, code, verifier).await.expect("exchanged");
    token.access_token().secret().clone()
}

type Exchanged = Result<
    oauth2::basic::BasicTokenResponse,
    oauth2::RequestTokenError<reqwest::Error, oauth2::basic::BasicErrorResponse>,
>;

/// Exchanges `code` with `verifier` at the token endpoint.
async fn exchange(client: &Client, code: String, verifier: PkceCodeVerifier) -> Exchanged {
    client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .request_async(&http_client)
        .await
}

/// A new grant of `client`: the browser part of the flow, then the exchange.
async fn grant(
    h: &Harness,
    client: &Client,
    browser: &mut Browser,
) -> oauth2::basic::BasicTokenResponse {
    let (code, verifier) = authorize(h, client, browser).await;
    exchange(client, code, verifier)
        .await
        .expect("the code is exchanged")
}

async fn sites_status(h: &Harness, token: &str) -> StatusCode {
    h.http
        .get(h.server.url("/api/v1/sites"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn the_whole_flow_with_the_oauth2_crate() {
    let (h, _) = setup().await;
    let client_id = register(&h, REDIRECT).await;
    let client = client(&h, &client_id);
    let mut browser = Browser::new();
    let (code, verifier) = authorize(&h, &client, &mut browser).await;

    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", h.server.url("/api/v1"))
        .request_async(&http_client)
        .await
        .expect("the code is exchanged");
    let access = token.access_token().secret().clone();
    assert!(access.starts_with("mailo_"), "{access}");
    assert_eq!(token.expires_in().unwrap().as_secs(), 90 * 24 * 3600);
    let scopes: Vec<String> = token
        .scopes()
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(scopes, ["read", "write"]);
    assert_eq!(sites_status(&h, &access).await, StatusCode::OK);

    // Only hashes are stored.
    let stored = test_support::sql::query(
        &h.db.url,
        &format!("SELECT count(*) FROM oauth_tokens WHERE key_hash = sha256('{access}'::bytea)"),
    )
    .await;
    assert_eq!(stored, ["1"]);

    // Refresh rotates: a new pair, the old refresh token spent.
    let refresh = token.refresh_token().unwrap().clone();
    let rotated = client
        .exchange_refresh_token(&refresh)
        .request_async(&http_client)
        .await
        .expect("refreshed");
    let access2 = rotated.access_token().secret().clone();
    assert_ne!(access2, access);
    assert_eq!(sites_status(&h, &access2).await, StatusCode::OK);

    // The second browser visit skips the sign-in (the session cookie) and gets a new grant.
    let other = grant(&h, &client, &mut browser).await;

    // Revocation (RFC 7009) ends the grant at once. (The oauth2 crate sends revocations to
    // https URLs only, so the form is posted by hand, as the crate would.)
    let res = h
        .http
        .post(h.server.url("/oauth/revoke"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[
            ("token", rotated.refresh_token().unwrap().secret()),
            ("token_type_hint", "refresh_token"),
            ("client_id", &client_id),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(sites_status(&h, &access2).await, StatusCode::UNAUTHORIZED);
    assert_eq!(sites_status(&h, &access).await, StatusCode::UNAUTHORIZED);
    // Another grant of the same client is untouched.
    assert_eq!(
        sites_status(&h, other.access_token().secret()).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_reused_refresh_token_revokes_the_whole_grant() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let token = grant(&h, &client, &mut Browser::new()).await;
    let first_refresh = token.refresh_token().unwrap().clone();
    let rotated = client
        .exchange_refresh_token(&first_refresh)
        .request_async(&http_client)
        .await
        .unwrap();
    let err = client
        .exchange_refresh_token(&first_refresh)
        .request_async(&http_client)
        .await
        .unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");
    assert_eq!(
        sites_status(&h, rotated.access_token().secret()).await,
        StatusCode::UNAUTHORIZED
    );
    let err = client
        .exchange_refresh_token(&RefreshToken::new(
            rotated.refresh_token().unwrap().secret().clone(),
        ))
        .request_async(&http_client)
        .await
        .unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");
}

#[tokio::test]
async fn code_errors_answer_invalid_grant() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let mut browser = Browser::new();

    // A wrong verifier.
    let (code, _) = authorize(&h, &client, &mut browser).await;
    let err = exchange(&client, code, PkceCodeVerifier::new("x".repeat(50)))
        .await
        .unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");

    // A reused code: refused, and what its first use issued is revoked.
    let (code, verifier) = authorize(&h, &client, &mut browser).await;
    let verifier_copy = PkceCodeVerifier::new(verifier.secret().clone());
    let token = exchange(&client, code.clone(), verifier).await.unwrap();
    assert_eq!(
        sites_status(&h, token.access_token().secret()).await,
        StatusCode::OK
    );
    let err = exchange(&client, code, verifier_copy).await.unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");
    assert_eq!(
        sites_status(&h, token.access_token().secret()).await,
        StatusCode::UNAUTHORIZED
    );

    // An expired code (60 s).
    let (code, verifier) = authorize(&h, &client, &mut browser).await;
    test_support::sql::exec(
        &h.db.url,
        "UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL",
    )
    .await;
    let err = exchange(&client, code, verifier).await.unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");

    // An unknown grant type.
    let res = h
        .http
        .post(h.server.url("/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=password&client_id=x")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "unsupported_grant_type");
}

#[tokio::test]
async fn plain_pkce_and_unregistered_redirects_are_refused() {
    let (h, _) = setup().await;
    let client_id = register(&h, REDIRECT).await;
    let http = test_support::http_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let challenge = "a".repeat(43);
    let authorize = |method: &str, redirect: &str| {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", client_id.as_str()),
                ("redirect_uri", redirect),
                ("code_challenge", challenge.as_str()),
                ("code_challenge_method", method),
                ("state", "s1"),
            ])
            .finish();
        h.server.url(&format!("/oauth/authorize?{query}"))
    };

    // `plain`: back to the client with invalid_request.
    let res = http.get(authorize("plain", REDIRECT)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::FOUND);
    let location = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    let pairs: std::collections::HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(pairs["error"], "invalid_request");
    assert_eq!(pairs["state"], "s1");

    // An unregistered redirect URI never receives a redirect.
    let res = http
        .get(authorize("S256", "https://attacker.example/cb"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.headers().get("location").is_none());
    let page = res.text().await.unwrap();
    assert!(
        page.contains("redirect_uri is missing or not registered"),
        "{page}"
    );

    // An unknown client neither: a person's browser gets an error page (400), not JSON.
    let res = http
        .get(authorize("S256", REDIRECT).replace(&client_id, &uuid::Uuid::now_v7().to_string()))
        .send()
        .await
        .unwrap();
    let status = res.status();
    assert!(res.headers().get("location").is_none());
    let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
    let page = res.text().await.unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert_eq!(content_type, "text/html; charset=utf-8", "{page}");
    assert!(page.contains("unknown client_id"), "{page}");

    // Registration refuses a redirect URI it would not redirect to.
    let res = h
        .http
        .post(h.server.url("/oauth/register"))
        .json(&json!({"redirect_uris": ["http://example.com/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "invalid_redirect_uri");
}

#[tokio::test]
async fn metadata_and_the_mcp_challenge() {
    let h = Harness::new().await;
    let base = &h.server.base;
    let meta: Value = h
        .http
        .get(h.server.url("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["issuer"], base.as_str());
    assert_eq!(meta["token_endpoint"], format!("{base}/oauth/token"));
    assert_eq!(
        meta["registration_endpoint"],
        format!("{base}/oauth/register")
    );
    assert_eq!(meta["revocation_endpoint"], format!("{base}/oauth/revoke"));
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));

    let res = h
        .http
        .post(h.server.url("/mcp"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let challenge = res.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let expected = format!("{base}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{expected}\"")
    );
    let resource: Value = h
        .http
        .get(&expected)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resource["resource"], format!("{base}/mcp"));
    assert_eq!(resource["authorization_servers"], json!([base]));
}

#[tokio::test]
async fn sign_in_needs_the_csrf_token_and_the_right_password_and_is_rate_limited() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let mut browser = Browser::new();
    let page = browser.get(url.as_str()).await.text().await.unwrap();
    let request = hidden(&page, "request");
    let sign_in = h.server.url("/oauth/authorize/sign-in");

    let res = browser
        .post_form(
            &sign_in,
            &[
                ("csrf", "forged"),
                ("request", &request),
                ("email", EMAIL),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get("set-cookie").is_none());
    assert!(res.text().await.unwrap().contains("Form expired"));

    let csrf = hidden(&page, "csrf");
    for _ in 0..10 {
        let res = browser
            .post_form(
                &sign_in,
                &[
                    ("csrf", &csrf),
                    ("request", &request),
                    ("email", EMAIL),
                    ("password", "wrong"),
                ],
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.text().await.unwrap().contains("not right"));
    }
    // Over the per-account limit: even the right password waits.
    let res = browser
        .post_form(
            &sign_in,
            &[
                ("csrf", &csrf),
                ("request", &request),
                ("email", EMAIL),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().contains("Too many"));
}

#[tokio::test]
async fn a_disabled_account_loses_its_grants_and_cannot_sign_in() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let token = grant(&h, &client, &mut Browser::new()).await;
    let access = token.access_token().secret();
    assert_eq!(sites_status(&h, access).await, StatusCode::OK);

    // What `admin mail disable-sign-in` does.
    oauth::db::set_account_disabled(&mut h.conn().await, EMAIL, true)
        .await
        .unwrap()
        .expect("the account");
    assert_eq!(sites_status(&h, access).await, StatusCode::UNAUTHORIZED);

    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let mut browser = Browser::new();
    let page = browser.get(url.as_str()).await.text().await.unwrap();
    let res = browser
        .post_form(
            &h.server.url("/oauth/authorize/sign-in"),
            &[
                ("csrf", &hidden(&page, "csrf")),
                ("request", &hidden(&page, "request")),
                ("email", EMAIL),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().contains("not right"));
}

/// `POST /mcp` of one JSON-RPC request `method` with `token`: (status, `WWW-Authenticate`,
/// body).
pub async fn mcp_rpc(
    h: &Harness,
    token: &str,
    method: &str,
    params: Value,
) -> (u16, String, Value) {
    let res = h
        .http
        .post(h.server.url("/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let challenge = res
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = res.text().await.unwrap();
    (
        status,
        challenge,
        serde_json::from_str(&text).unwrap_or(json!(text)),
    )
}

/// RFC 8707: a token works on the resource its grant was issued for and nowhere else.
#[tokio::test]
async fn a_token_works_only_on_the_resource_it_was_issued_for() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let mut browser = Browser::new();
    let (code, verifier) = authorize_for(&h, &client, &mut browser, "/mcp").await;
    let for_mcp = exchange(&client, code, verifier).await.unwrap();
    let for_mcp = for_mcp.access_token().secret();
    let rest = grant(&h, &client, &mut browser).await;
    let rest = rest.access_token().secret();

    // The /mcp token on /mcp, and the REST token on the REST API.
    let (status, _, body) = mcp_rpc(&h, for_mcp, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{body}"
    );
    assert_eq!(sites_status(&h, rest).await, StatusCode::OK);

    // Crossed over: 401 invalid_token, before anything runs.
    let res = h
        .http
        .get(h.server.url("/api/v1/sites"))
        .bearer_auth(for_mcp)
        .send()
        .await
        .unwrap();
    let challenge = res.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let err = expect_error(res, 401, "UNAUTHORIZED").await;
    assert!(err.message.contains("/mcp"), "{err:?}");
    assert_eq!(challenge, "Bearer error=\"invalid_token\"");
    let (status, challenge, body) = mcp_rpc(&h, rest, "tools/list", json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(
        challenge.starts_with("Bearer resource_metadata="),
        "{challenge}"
    );
    // Nor the REST mirror of the tools, which is neither resource.
    let res = h
        .http
        .get(h.server.url("/api/mcp/tools"))
        .bearer_auth(for_mcp)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // A grant that names no resource is for /mcp, the first.
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    assert!(!url.as_str().contains("resource"));
    let page = browser.get(url.as_str()).await.text().await.unwrap();
    assert!(page.contains(&h.server.url("/mcp")), "{page}");
}

/// With no public base URL configured, no absolute link is built from a client's `Host` or
/// `X-Forwarded-Host`: only a loopback host is believed (421 otherwise), and forwarded headers
/// only from a configured proxy.
#[tokio::test]
async fn the_public_origin_is_never_taken_from_an_untrusted_host() {
    let h = Harness::new().await;
    let base = &h.server.base;
    let get = |path: &str, headers: &[(&str, &str)]| {
        let mut req = h.http.get(h.server.url(path));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        req.send()
    };
    let meta = "/.well-known/oauth-authorization-server";
    let res = get(meta, &[("host", "evil.example")]).await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{text}");
    assert!(!text.contains("evil"), "{text}");
    let res = get(
        "/.well-known/oauth-protected-resource/mcp",
        &[("host", "evil.example")],
    )
    .await
    .unwrap();
    assert_eq!(res.status(), StatusCode::MISDIRECTED_REQUEST);

    // Forwarded headers from a peer that is no configured proxy change nothing.
    for forwarded in [
        ("x-forwarded-host", "evil.example"),
        ("forwarded", "host=evil.example;proto=https"),
    ] {
        let res = get(meta, &[forwarded]).await.unwrap();
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["issuer"], base.as_str(), "{forwarded:?}: {body}");
    }

    // The /mcp challenge names no metadata address on an untrusted host.
    let res = h
        .http
        .post(h.server.url("/mcp"))
        .header("host", "evil.example")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    let res = h
        .http
        .post(h.server.url("/mcp"))
        .header("x-forwarded-host", "evil.example")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let challenge = res.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        !challenge.contains("evil") && challenge.contains(base.as_str()),
        "{challenge}"
    );

    // A configured proxy's forwarded host is believed; a configured issuer wins over all.
    let proxied = Harness::with(|url| {
        let mut settings = crate::common::settings(url);
        settings.oauth.trusted_proxies =
            oauth::origin::TrustedProxies::parse("127.0.0.0/8").unwrap();
        settings
    })
    .await;
    let res = proxied
        .http
        .get(proxied.server.url(meta))
        .header("x-forwarded-host", "mail.example.com")
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["issuer"], "https://mail.example.com", "{body}");
    let configured = Harness::with(|url| {
        let mut settings = crate::common::settings(url);
        settings.oauth.issuer = "https://mail.example.com".to_owned();
        settings
    })
    .await;
    let res = configured
        .http
        .get(configured.server.url(meta))
        .header("host", "evil.example")
        .header("x-forwarded-host", "evil.example")
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["issuer"], "https://mail.example.com", "{body}");
}

/// Dynamic registration is limited per address (`OAUTH__REGISTER_PER_ADDRESS`).
#[tokio::test]
async fn client_registration_is_limited_per_address() {
    let h = Harness::with(|url| {
        let mut settings = crate::common::settings(url);
        settings.oauth.register_per_address = 3;
        settings
    })
    .await;
    for _ in 0..3 {
        register(&h, REDIRECT).await;
    }
    let res = h
        .http
        .post(h.server.url("/oauth/register"))
        .json(&json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let retry_after = res.headers().get("retry-after").cloned();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"], "temporarily_unavailable", "{body}");
    assert_eq!(retry_after.unwrap(), "3600");
    let clients = h.query("SELECT count(*)::text FROM oauth_clients").await;
    assert_eq!(clients, ["3"]);
}

/// A sign-in form whose `request` carries a line break answers 400 and starts no session.
#[tokio::test]
async fn a_line_break_in_the_sign_in_request_is_400_and_starts_no_session() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let mut browser = Browser::new();
    let page = browser.get(url.as_str()).await.text().await.unwrap();
    let request = format!("{}\r\nX-Injected: yes", hidden(&page, "request"));
    let res = browser
        .post_form(
            &h.server.url("/oauth/authorize/sign-in"),
            &[
                ("csrf", &hidden(&page, "csrf")),
                ("request", &request),
                ("email", EMAIL),
                ("password", PASSWORD),
            ],
        )
        .await;
    let status = res.status();
    assert!(res.headers().get("x-injected").is_none());
    assert!(res.headers().get("set-cookie").is_none());
    let text = res.text().await.unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert_eq!(
        h.query("SELECT count(*)::text FROM oauth_sessions").await,
        ["0"]
    );
}

/// Native apps (RFC 8252 §7.1) register private-use scheme redirects and get their code
/// there; schemes that run or read something in the browser are refused.
#[tokio::test]
async fn native_apps_register_private_use_scheme_redirects() {
    const CURSOR: &str = "cursor://anysphere.cursor-mcp/oauth/callback";
    let (h, _) = setup().await;
    let client_id = register(&h, CURSOR).await;
    let client = oauth_client::client(
        &h.server.base,
        &client_id,
        CURSOR,
        ("/oauth/authorize", "/oauth/token", "/oauth/revoke"),
    );
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let back = Browser::new()
        .approve(
            &h.server.base,
            "/oauth/authorize",
            url.as_str(),
            (EMAIL, PASSWORD),
        )
        .await;
    assert!(back.as_str().starts_with(CURSOR), "{back}");
    let code = back
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .expect("a code");
    let token = exchange(&client, code, verifier).await.expect("exchanged");
    assert!(token.access_token().secret().starts_with("mailo_"));

    for refused in [
        "javascript://example.com/%0aalert(1)",
        "data:text/html,x",
        "file:///etc/passwd",
        "vbscript:msgbox",
        "about:blank",
        "blob:https://example.com/x",
    ] {
        let res = h
            .http
            .post(h.server.url("/oauth/register"))
            .json(&json!({"redirect_uris": [refused]}))
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body: Value = res.json().await.unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}: {body}");
        assert_eq!(body["error"], "invalid_redirect_uri", "{refused}: {body}");
    }
}

/// A consent whose CSRF token is missing or altered is 403 and issues no code.
#[tokio::test]
async fn a_consent_without_its_csrf_token_is_403_and_issues_no_code() {
    let (h, _) = setup().await;
    let client = client(&h, &register(&h, REDIRECT).await);
    let mut browser = Browser::new();
    // Signed in once, so the next authorization shows the consent form.
    grant(&h, &client, &mut browser).await;
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let page = browser.get(url.as_str()).await.text().await.unwrap();
    assert!(page.contains("Allow"), "{page}");
    let request = hidden(&page, "request");
    let csrf = hidden(&page, "csrf");
    let last = if csrf.ends_with('0') { "1" } else { "0" };
    let altered = format!("{}{last}", &csrf[..csrf.len() - 1]);
    let codes = "SELECT count(*)::text FROM oauth_codes";
    let before = h.query(codes).await;
    for form in [
        vec![("request", request.as_str()), ("decision", "approve")],
        vec![
            ("csrf", altered.as_str()),
            ("request", request.as_str()),
            ("decision", "approve"),
        ],
    ] {
        let res = browser
            .post_form(&h.server.url("/oauth/authorize/consent"), &form)
            .await;
        let status = res.status();
        assert!(res.headers().get("location").is_none());
        let text = res.text().await.unwrap();
        assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
        assert!(text.contains("Form expired"), "{text}");
    }
    assert_eq!(h.query(codes).await, before);
}
