//! memory's OAuth authorization server (connectors), its dashboard pages, and the dashboard
//! JWTs, driven with the `oauth2` crate as the client and a cookie-keeping HTTP client as the
//! person's browser.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oauth2::{
    AuthorizationCode, CsrfToken, PkceCodeChallenge, PkceCodeVerifier, Scope as OScope,
    TokenResponse,
};
use rate_limit::policy::Tier;
use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::oauth_client::{
    self, Browser, Client, error_code, form_body, hidden, http_client,
};
use uuid::Uuid;

use crate::common::*;

pub const REDIRECT: &str = "http://127.0.0.1:9/callback";
pub const PASSWORD: &str = "a long enough password";
const PATHS: (&str, &str, &str) = ("/oauth/authorize", "/api/oauth/token", "/api/oauth/revoke");

const ISSUER: &str = "https://dashboard.example";
const AUDIENCE: &str = "memory-api";
const HS_SECRET: &[u8] = b"the dashboard's HS256 test secret, 32+ bytes";
const RSA_PRIVATE: &str = include_str!("fixtures/dashboard-test-rsa.pem");
const RSA_PUBLIC: &str = include_str!("fixtures/dashboard-test-rsa.pub.pem");

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A harness whose gate takes dashboard JWTs: `hs1` (HS256) and `rs1` (RS256).
pub async fn harness() -> Harness {
    Harness::with(|url| {
        let mut s = settings(url);
        s.dashboard_jwt = auth::jwt::JwtSettings {
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            keys: format!(
                "hs1=HS256:{},rs1=RS256:{}",
                b64(HS_SECRET),
                b64(RSA_PUBLIC.as_bytes())
            ),
        };
        s
    })
    .await
}

/// A user with a sign-in account: (user id, email).
pub async fn person(h: &Harness) -> (Uuid, String) {
    let user = h.user(Tier::Pro).await;
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    oauth::db::create_account(&mut h.conn().await, &email, PASSWORD, user)
        .await
        .unwrap();
    (user, email)
}

pub async fn register(h: &Harness, name: &str) -> String {
    let res = h
        .http
        .post(h.server.url("/api/oauth/register"))
        .json(&json!({
            "redirect_uris": [REDIRECT],
            "client_name": name,
            "token_endpoint_auth_method": "none",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    body["client_id"].as_str().unwrap().to_owned()
}

fn client(h: &Harness, client_id: &str) -> Client {
    oauth_client::client(&h.server.base, client_id, REDIRECT, PATHS)
}

/// The browser part of the flow, asking for every scope: (code, verifier).
async fn authorize(
    h: &Harness,
    client: &Client,
    browser: &mut Browser,
    email: &str,
) -> (String, PkceCodeVerifier) {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(OScope::new("read".into()))
        .add_scope(OScope::new("write".into()))
        .add_scope(OScope::new("propose".into()))
        .add_extra_param("resource", h.server.url("/api/v1"))
        .set_pkce_challenge(challenge)
        .url();
    let back = browser
        .approve(&h.server.base, PATHS.0, url.as_str(), (email, PASSWORD))
        .await;
    assert!(back.as_str().starts_with(REDIRECT));
    let param = |name: &str| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    assert_eq!(param("state").as_deref(), Some(state.secret().as_str()));
    (param("code").expect("a code"), verifier)
}

type Exchanged = Result<
    oauth2::basic::BasicTokenResponse,
    oauth2::RequestTokenError<reqwest::Error, oauth2::basic::BasicErrorResponse>,
>;

async fn exchange(client: &Client, code: String, verifier: PkceCodeVerifier) -> Exchanged {
    client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .request_async(&http_client)
        .await
}

/// A connector's access token for the person `email`.
pub async fn connector_token(h: &Harness, email: &str, client_name: &str) -> String {
    let client = client(h, &register(h, client_name).await);
    let (code, verifier) = authorize(h, &client, &mut Browser::new(), email).await;
    exchange(&client, code, verifier)
        .await
        .unwrap()
        .access_token()
        .secret()
        .clone()
}

async fn status(h: &Harness, token: &str, method: reqwest::Method, path: &str) -> StatusCode {
    let mut req = h
        .http
        .request(method, h.server.url(path))
        .bearer_auth(token);
    if path.ends_with("/approve") || path.ends_with("/reject") {
        req = req.json(&json!({}));
    }
    req.send().await.unwrap().status()
}

async fn proposals_status(h: &Harness, token: &str) -> StatusCode {
    status(h, token, reqwest::Method::GET, "/api/v1/proposals").await
}

/// A pending proposal submitted with `token`.
pub async fn propose(h: &Harness, token: &str, content: &str) -> Uuid {
    let res = h
        .http
        .post(h.server.url("/api/v1/connectors/intake"))
        .bearer_auth(token)
        .json(&json!({"raw_content": content, "ai_vendor": "claude"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["outcome"], "proposed", "{body}");
    body["proposal_id"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn the_whole_flow_with_the_oauth2_crate() {
    let h = harness().await;
    let (_, email) = person(&h).await;
    let client_id = register(&h, "Test connector").await;
    let client = client(&h, &client_id);
    let mut browser = Browser::new();
    let (code, verifier) = authorize(&h, &client, &mut browser, &email).await;
    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", h.server.url("/api/v1"))
        .request_async(&http_client)
        .await
        .expect("the code is exchanged");
    let access = token.access_token().secret().clone();
    assert!(access.starts_with("memo_"), "{access}");
    assert_eq!(token.expires_in().unwrap().as_secs(), 3600);
    // A connector asked for everything and got `read propose`.
    let scopes: Vec<String> = token
        .scopes()
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(scopes, ["read", "propose"]);

    // The token on memory's API: reads and proposes, never writes.
    assert_eq!(proposals_status(&h, &access).await, StatusCode::OK);
    propose(&h, &access, "remember the launch date").await;
    let res = h
        .http
        .post(h.server.url("/api/v1/products"))
        .bearer_auth(&access)
        .json(&json!({"name": "atlas"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // Only hashes are stored.
    let stored = h
        .query(&format!(
            "SELECT count(*) FROM oauth_tokens WHERE key_hash = sha256('{access}'::bytea)"
        ))
        .await;
    assert_eq!(stored, ["1"]);

    // Refresh rotates.
    let rotated = client
        .exchange_refresh_token(token.refresh_token().unwrap())
        .request_async(&http_client)
        .await
        .expect("refreshed");
    let access2 = rotated.access_token().secret().clone();
    assert_ne!(access2, access);
    assert!(access2.starts_with("memo_"));
    assert_eq!(proposals_status(&h, &access2).await, StatusCode::OK);

    // Revocation (RFC 7009) ends the grant at once.
    let res = h
        .http
        .post(h.server.url("/api/oauth/revoke"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[
            ("token", &access2),
            ("token_type_hint", "access_token"),
            ("client_id", &client_id),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        proposals_status(&h, &access2).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        proposals_status(&h, &access).await,
        StatusCode::UNAUTHORIZED
    );
    let err = client
        .exchange_refresh_token(rotated.refresh_token().unwrap())
        .request_async(&http_client)
        .await
        .unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");
}

#[tokio::test]
async fn code_and_request_errors_answer_the_rfc_codes() {
    let h = harness().await;
    let (_, email) = person(&h).await;
    let client_id = register(&h, "Test connector").await;
    let client = client(&h, &client_id);
    let mut browser = Browser::new();

    // A wrong verifier.
    let (code, _) = authorize(&h, &client, &mut browser, &email).await;
    let err = exchange(&client, code, PkceCodeVerifier::new("x".repeat(50)))
        .await
        .unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");

    // A reused code: refused, and what its first use issued is revoked.
    let (code, verifier) = authorize(&h, &client, &mut browser, &email).await;
    let copy = PkceCodeVerifier::new(verifier.secret().clone());
    let token = exchange(&client, code.clone(), verifier).await.unwrap();
    let access = token.access_token().secret().clone();
    assert_eq!(proposals_status(&h, &access).await, StatusCode::OK);
    let err = exchange(&client, code, copy).await.unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");
    assert_eq!(
        proposals_status(&h, &access).await,
        StatusCode::UNAUTHORIZED
    );

    // An expired code (they live 60 s).
    let (code, verifier) = authorize(&h, &client, &mut browser, &email).await;
    h.exec("UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL")
        .await;
    let err = exchange(&client, code, verifier).await.unwrap_err();
    assert_eq!(error_code(err), "invalid_grant");

    // `plain` PKCE: the client's redirect URI hears `invalid_request`.
    let query = form_body(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &"a".repeat(43)),
        ("code_challenge_method", "plain"),
        ("state", "s1"),
    ]);
    let res = browser
        .get(&h.server.url(&format!("/oauth/authorize?{query}")))
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    let location = res.headers()["location"].to_str().unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert!(location.contains("error=invalid_request"), "{location}");

    // An unregistered redirect URI never receives a redirect.
    let query = form_body(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", "http://127.0.0.1:9/elsewhere"),
        ("code_challenge", &"a".repeat(43)),
        ("code_challenge_method", "S256"),
    ]);
    let res = browser
        .get(&h.server.url(&format!("/oauth/authorize?{query}")))
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.headers().get("location").is_none());
    // A person's browser gets an error page, not JSON.
    assert_eq!(res.headers()["content-type"], "text/html; charset=utf-8");
    let page = res.text().await.unwrap();
    assert!(
        page.contains("redirect_uri is missing or not registered"),
        "{page}"
    );

    // Registering an unacceptable redirect URI.
    let res = h
        .http
        .post(h.server.url("/api/oauth/register"))
        .json(&json!({"redirect_uris": ["http://example.com/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "invalid_redirect_uri");
}

#[tokio::test]
async fn metadata_and_the_api_challenge() {
    let h = harness().await;
    let meta: Value = h
        .http
        .get(h.server.url("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let base = &h.server.base;
    assert_eq!(meta["issuer"], json!(base));
    assert_eq!(
        meta["authorization_endpoint"],
        json!(format!("{base}/oauth/authorize"))
    );
    assert_eq!(
        meta["token_endpoint"],
        json!(format!("{base}/api/oauth/token"))
    );
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    let res = h
        .http
        .get(h.server.url("/api/v1/proposals"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let challenge = res.headers()["www-authenticate"].to_str().unwrap();
    let expected = format!("{base}/.well-known/oauth-protected-resource/api/v1");
    assert!(challenge.contains(&expected), "{challenge}");
    let resource: Value = h
        .http
        .get(&expected)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resource["resource"], json!(format!("{base}/api/v1")));
}

fn jwt(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

fn claims(user: Uuid, exp_in: i64) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": user.to_string(),
           "exp": chrono::Utc::now().timestamp() + exp_in})
}

/// A valid dashboard JWT of `user` (HS256, kid `hs1`).
pub fn dashboard_jwt(user: Uuid) -> String {
    jwt(
        Algorithm::HS256,
        Some("hs1"),
        &EncodingKey::from_secret(HS_SECRET),
        claims(user, 600),
    )
}

#[tokio::test]
async fn a_connector_token_cannot_decide_and_the_dashboard_jwt_can() {
    let h = harness().await;
    let (user, email) = person(&h).await;
    let connector = connector_token(&h, &email, "Connector").await;
    let first = propose(&h, &connector, "first").await;
    let second = propose(&h, &connector, "second").await;
    let post = reqwest::Method::POST;

    let approve = format!("/api/v1/proposals/{first}/approve");
    assert_eq!(
        status(&h, &connector, post.clone(), &approve).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(
            &h,
            &connector,
            post.clone(),
            &format!("/api/v1/proposals/{first}/reject")
        )
        .await,
        StatusCode::FORBIDDEN
    );

    // HS256 under kid hs1 approves.
    let hs = dashboard_jwt(user);
    assert_eq!(
        status(&h, &hs, post.clone(), &approve).await,
        StatusCode::OK
    );
    // RS256 under kid rs1 rejects (keys rotate by kid).
    let rs = jwt(
        Algorithm::RS256,
        Some("rs1"),
        &EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap(),
        claims(user, 600),
    );
    assert_eq!(
        status(
            &h,
            &rs,
            post.clone(),
            &format!("/api/v1/proposals/{second}/reject")
        )
        .await,
        StatusCode::OK
    );
    assert_eq!(proposals_status(&h, &rs).await, StatusCode::OK);

    // Refused: 401.
    let hs_key = EncodingKey::from_secret(HS_SECRET);
    let mut wrong_iss = claims(user, 600);
    wrong_iss["iss"] = json!("https://elsewhere.example");
    let mut wrong_aud = claims(user, 600);
    wrong_aud["aud"] = json!("mail-api");
    let none = {
        let enc =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.",
            enc(&json!({"alg": "none", "typ": "JWT", "kid": "hs1"})),
            enc(&claims(user, 600))
        )
    };
    let refused = [
        (
            "expired",
            jwt(Algorithm::HS256, Some("hs1"), &hs_key, claims(user, -600)),
        ),
        (
            "wrong issuer",
            jwt(Algorithm::HS256, Some("hs1"), &hs_key, wrong_iss),
        ),
        (
            "wrong audience",
            jwt(Algorithm::HS256, Some("hs1"), &hs_key, wrong_aud),
        ),
        (
            "unknown kid",
            jwt(Algorithm::HS256, Some("hs9"), &hs_key, claims(user, 600)),
        ),
        (
            "no kid",
            jwt(Algorithm::HS256, None, &hs_key, claims(user, 600)),
        ),
        (
            "HS256 keyed with the RSA public key under the RSA kid",
            jwt(
                Algorithm::HS256,
                Some("rs1"),
                &EncodingKey::from_secret(RSA_PUBLIC.as_bytes()),
                claims(user, 600),
            ),
        ),
        (
            "another secret",
            jwt(
                Algorithm::HS256,
                Some("hs1"),
                &EncodingKey::from_secret(b"another secret of thirty-two bytes!!"),
                claims(user, 600),
            ),
        ),
        ("alg none", none),
        ("unknown user", dashboard_jwt(Uuid::now_v7())),
    ];
    for (why, token) in refused {
        assert_eq!(
            proposals_status(&h, &token).await,
            StatusCode::UNAUTHORIZED,
            "{why}"
        );
    }

    // A JWT naming only `read` reads but cannot decide.
    let third = propose(&h, &connector, "third").await;
    let mut read_only = claims(user, 600);
    read_only["scope"] = json!("read");
    let read_only = jwt(Algorithm::HS256, Some("hs1"), &hs_key, read_only);
    assert_eq!(proposals_status(&h, &read_only).await, StatusCode::OK);
    assert_eq!(
        status(
            &h,
            &read_only,
            post,
            &format!("/api/v1/proposals/{third}/approve")
        )
        .await,
        StatusCode::FORBIDDEN
    );
}

/// Signs in on the dashboard's own sign-in page.
pub async fn dashboard_sign_in(h: &Harness, browser: &mut Browser, email: &str) {
    let res = browser.get(&h.server.url("/dashboard/proposals")).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/dashboard/sign-in?next="),
        "{location}"
    );
    let res = browser.get(&h.server.url(&location)).await;
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap();
    let res = browser
        .post_form(
            &h.server.url("/dashboard/sign-in"),
            &[
                ("csrf", &hidden(&page, "csrf")),
                ("next", &hidden(&page, "next")),
                ("email", email),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/dashboard/proposals");
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    for flag in ["HttpOnly", "SameSite=Lax", "Secure"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
}

#[tokio::test]
async fn the_dashboard_pages_list_revoke_and_decide() {
    let h = harness().await;
    let (user, email) = person(&h).await;
    let connector = connector_token(&h, &email, "Proposing connector").await;
    let proposal = propose(&h, &connector, "call the supplier on Monday").await;
    let mut browser = Browser::new();

    // A form without the CSRF token changes nothing.
    let res = browser
        .post_form(
            &h.server.url("/dashboard/sign-in"),
            &[("email", &email), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.text().await.unwrap().contains("Form expired"));

    dashboard_sign_in(&h, &mut browser, &email).await;
    let page = browser
        .get(&h.server.url("/dashboard/proposals"))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("call the supplier on Monday"), "{page}");
    let csrf = hidden(&page, "csrf");
    let res = browser
        .post_form(
            &h.server
                .url(&format!("/dashboard/proposals/{proposal}/approve")),
            &[],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.text().await.unwrap().contains("Form expired"));
    let res = browser
        .post_form(
            &h.server
                .url(&format!("/dashboard/proposals/{proposal}/approve")),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let got: Value = h
        .http
        .get(h.server.url(&format!("/api/v1/proposals/{proposal}")))
        .bearer_auth(dashboard_jwt(user))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["status"], "approved", "{got}");
    let res = browser
        .post_form(
            &h.server
                .url(&format!("/dashboard/proposals/{proposal}/reject")),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);

    // Connected apps: the connector is listed; revoking it ends its token at once.
    let page = browser
        .get(&h.server.url("/dashboard/apps"))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Proposing connector"), "{page}");
    let grant = h
        .query("SELECT id FROM oauth_grants WHERE revoked_at IS NULL")
        .await;
    assert_eq!(grant.len(), 1);
    assert_eq!(proposals_status(&h, &connector).await, StatusCode::OK);
    let res = browser
        .post_form(
            &h.server
                .url(&format!("/dashboard/apps/{}/revoke", grant[0])),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        proposals_status(&h, &connector).await,
        StatusCode::UNAUTHORIZED
    );
    let page = browser
        .get(&h.server.url("/dashboard/apps"))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("No app is connected"), "{page}");

    // Sign-out ends the session.
    let res = browser
        .post_form(&h.server.url("/dashboard/sign-out"), &[("csrf", &csrf)])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = browser.get(&h.server.url("/dashboard/apps")).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
}

/// Another person's connected app or proposal: 404 on the pages, and nothing of theirs shown.
#[tokio::test]
async fn the_dashboard_pages_isolate_people() {
    let h = harness().await;
    let (_, alice) = person(&h).await;
    let (_, bob) = person(&h).await;
    let alice_token = connector_token(&h, &alice, "Alice's connector").await;
    let alice_proposal = propose(&h, &alice_token, "alice's secret plan").await;
    let alice_grant = h
        .query("SELECT id FROM oauth_grants WHERE revoked_at IS NULL")
        .await
        .remove(0);

    let mut browser = Browser::new();
    dashboard_sign_in(&h, &mut browser, &bob).await;
    let page = browser
        .get(&h.server.url("/dashboard/proposals"))
        .await
        .text()
        .await
        .unwrap();
    assert!(!page.contains("alice's secret plan"));
    let csrf = hidden(&page, "csrf");
    let apps = browser
        .get(&h.server.url("/dashboard/apps"))
        .await
        .text()
        .await
        .unwrap();
    assert!(!apps.contains("Alice's connector"));
    for action in ["approve", "reject"] {
        let res = browser
            .post_form(
                &h.server
                    .url(&format!("/dashboard/proposals/{alice_proposal}/{action}")),
                &[("csrf", &csrf)],
            )
            .await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{action}");
    }
    let res = browser
        .post_form(
            &h.server
                .url(&format!("/dashboard/apps/{alice_grant}/revoke")),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = browser
        .post_form(
            &h.server.url("/dashboard/apps/not-an-id/revoke"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    // Alice's token and proposal are untouched.
    assert_eq!(proposals_status(&h, &alice_token).await, StatusCode::OK);
    let got: Value = h
        .http
        .get(h.server.url(&format!("/api/v1/proposals/{alice_proposal}")))
        .bearer_auth(&alice_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["status"], "pending");
}

#[tokio::test]
async fn the_dashboard_jwt_activates_a_workspace_of_its_own() {
    let h = harness().await;
    let (user, _) = person(&h).await;
    let token = dashboard_jwt(user);
    let send = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut req = h
            .http
            .request(method, h.server.url(path))
            .bearer_auth(&token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        req.send()
    };
    let created = send(
        reqwest::Method::POST,
        "/api/v1/workspaces",
        Some(json!({"name": "dashboard"})),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let workspace: Value = created.json().await.unwrap();
    let id = workspace["id"].as_str().unwrap().to_owned();

    let set = send(
        reqwest::Method::PATCH,
        "/api/v1/scope",
        Some(json!({"workspace_id": id})),
    )
    .await
    .unwrap();
    assert_eq!(set.status(), StatusCode::OK, "{:?}", set.text().await);
    let scope: Value = send(reqwest::Method::GET, "/api/v1/scope", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(scope["active_workspace_id"], json!(id));
}

/// With no public base URL configured, memory names no origin a client's `Host` or
/// `X-Forwarded-Host` chose: a non-loopback host gets 421 on the metadata and a challenge
/// without a metadata address; forwarded headers from a peer that is no proxy are ignored.
#[tokio::test]
async fn the_public_origin_is_never_taken_from_an_untrusted_host() {
    let h = harness().await;
    let base = &h.server.base;
    let meta = h.server.url("/.well-known/oauth-authorization-server");
    let res = h
        .http
        .get(&meta)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{text}");
    assert!(!text.contains("evil"), "{text}");
    let res = h
        .http
        .get(&meta)
        .header("x-forwarded-host", "evil.example")
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["issuer"], base.as_str(), "{body}");
    let res = h
        .http
        .get(h.server.url("/api/v1/proposals"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
}
