//! The OAuth authorization server of remote MCP clients, driven with the `oauth2` crate as the
//! client and a cookie-keeping HTTP client as the person's browser.

use oauth2::basic::BasicClient;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, RefreshToken, RevocationUrl, Scope as OScope, StandardRevocableToken,
    TokenResponse, TokenUrl,
};
use rate_limit::policy::Plan;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

pub const REDIRECT: &str = "http://127.0.0.1:9/callback";
pub const EMAIL: &str = "owner@example.com";
pub const PASSWORD: &str = "a long enough password";

/// The `oauth2` crate's HTTP client over reqwest (redirects are not followed, as RFC 6749
/// requires of token requests).
pub async fn http_client(
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, reqwest::Error> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let (parts, body) = request.into_parts();
    let mut builder = client
        .request(parts.method, parts.uri.to_string())
        .body(body);
    for (name, value) in &parts.headers {
        builder = builder.header(name, value);
    }
    let response = builder.send().await?;
    let mut out = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        out = out.header(name, value);
    }
    Ok(out
        .body(response.bytes().await?.to_vec())
        .expect("a response"))
}

/// A person's browser: keeps cookies, follows nothing by itself.
pub struct Browser {
    http: reqwest::Client,
    cookies: Vec<(String, String)>,
}

/// The value of a hidden `<input name=…>` of a page.
pub fn hidden(page: &str, name: &str) -> String {
    let pattern = format!(r#"name="{name}" value="([^"]*)""#);
    let re = regex::Regex::new(&pattern).unwrap();
    let raw = &re
        .captures(page)
        .unwrap_or_else(|| panic!("no {name} in {page}"))[1];
    raw.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

impl Browser {
    pub fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Vec::new(),
        }
    }

    fn keep_cookies(&mut self, res: &reqwest::Response) {
        for value in res.headers().get_all("set-cookie") {
            let value = value.to_str().unwrap();
            let (pair, _) = value.split_once(';').unwrap_or((value, ""));
            let (name, v) = pair.split_once('=').unwrap();
            self.cookies.retain(|(n, _)| n != name);
            self.cookies.push((name.to_owned(), v.to_owned()));
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub async fn get(&mut self, url: &str) -> reqwest::Response {
        let res = self
            .http
            .get(url)
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep_cookies(&res);
        res
    }

    pub async fn post_form(&mut self, url: &str, form: &[(&str, &str)]) -> reqwest::Response {
        let body = serde_urlencoded_body(form);
        let res = self
            .http
            .post(url)
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        self.keep_cookies(&res);
        res
    }

    /// Signs in (if asked) and approves at `authorize_url`; returns the redirect's URL.
    pub async fn approve(&mut self, base: &str, authorize_url: &str) -> url::Url {
        let res = self.get(authorize_url).await;
        assert_eq!(res.status(), StatusCode::OK);
        let mut page = res.text().await.unwrap();
        if page.contains(r#"name="password""#) {
            let res = self
                .post_form(
                    &format!("{base}/oauth/authorize/sign-in"),
                    &[
                        ("csrf", &hidden(&page, "csrf")),
                        ("request", &hidden(&page, "request")),
                        ("email", EMAIL),
                        ("password", PASSWORD),
                    ],
                )
                .await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER);
            let location = res.headers()["location"].to_str().unwrap().to_owned();
            let res = self.get(&format!("{base}{location}")).await;
            assert_eq!(res.status(), StatusCode::OK);
            page = res.text().await.unwrap();
        }
        assert!(page.contains("Allow"), "{page}");
        let res = self
            .post_form(
                &format!("{base}/oauth/authorize/consent"),
                &[
                    ("csrf", &hidden(&page, "csrf")),
                    ("request", &hidden(&page, "request")),
                    ("decision", "approve"),
                ],
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap()
    }
}

fn serde_urlencoded_body(form: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish()
}

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

type Client = oauth2::Client<
    oauth2::basic::BasicErrorResponse,
    oauth2::basic::BasicTokenResponse,
    oauth2::basic::BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    oauth2::basic::BasicRevocationErrorResponse,
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
    oauth2::EndpointSet,
>;

fn client(h: &Harness, client_id: &str) -> Client {
    BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_auth_uri(AuthUrl::new(h.server.url("/oauth/authorize")).unwrap())
        .set_token_uri(TokenUrl::new(h.server.url("/oauth/token")).unwrap())
        .set_revocation_url(RevocationUrl::new(h.server.url("/oauth/revoke")).unwrap())
        .set_redirect_uri(RedirectUrl::new(REDIRECT.to_owned()).unwrap())
}

/// Runs the browser part of the flow: (code, verifier).
async fn authorize(
    h: &Harness,
    client: &Client,
    browser: &mut Browser,
) -> (String, PkceCodeVerifier) {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(OScope::new("read".into()))
        .add_scope(OScope::new("write".into()))
        .add_extra_param("resource", h.server.url("/mcp"))
        .set_pkce_challenge(challenge)
        .url();
    let back = browser.approve(&h.server.base, url.as_str()).await;
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

fn error_code<RE: std::error::Error + 'static, T: oauth2::ErrorResponse + 'static>(
    err: oauth2::RequestTokenError<RE, T>,
) -> String {
    match err {
        oauth2::RequestTokenError::ServerResponse(resp) => {
            serde_json::to_value(&resp).unwrap()["error"]
                .as_str()
                .unwrap()
                .to_owned()
        }
        other => panic!("not an error answer: {other:?}"),
    }
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
        .add_extra_param("resource", h.server.url("/mcp"))
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
        .body(serde_urlencoded_body(&[
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
    let http = reqwest::Client::builder()
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
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");

    // An unknown client neither.
    let res = http
        .get(authorize("S256", REDIRECT).replace(&client_id, &uuid::Uuid::now_v7().to_string()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(res.headers().get("location").is_none());

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
    assert_eq!(res.status(), StatusCode::OK);
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
