//! The OAuth tests' client side, shared by both services: the `oauth2` crate's HTTP client
//! over reqwest, a cookie-keeping "browser" that signs in and consents on the pages, and the
//! RFC error code of a failed token request.

use oauth2::basic::BasicClient;
use oauth2::{AuthUrl, ClientId, RedirectUrl, RevocationUrl, StandardRevocableToken, TokenUrl};
use reqwest::StatusCode;

/// The `oauth2` crate's client with an authorization, token and revocation endpoint.
pub type Client = oauth2::Client<
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

/// A public client of the server at `base` with the service's endpoint paths.
pub fn client(
    base: &str,
    client_id: &str,
    redirect: &str,
    (authorize, token, revoke): (&str, &str, &str),
) -> Client {
    BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_auth_uri(AuthUrl::new(format!("{base}{authorize}")).unwrap())
        .set_token_uri(TokenUrl::new(format!("{base}{token}")).unwrap())
        .set_revocation_url(RevocationUrl::new(format!("{base}{revoke}")).unwrap())
        .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).unwrap())
}

/// The `oauth2` crate's HTTP client over reqwest (redirects are not followed, as RFC 6749
/// requires of token requests).
pub async fn http_client(
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, reqwest::Error> {
    let client = crate::http_builder()
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

/// The `error` of a token endpoint's error answer.
pub fn error_code<RE: std::error::Error + 'static, T: oauth2::ErrorResponse + 'static>(
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

/// `form` as an `application/x-www-form-urlencoded` body.
pub fn form_body(form: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish()
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

/// A person's browser: keeps cookies, follows nothing by itself.
pub struct Browser {
    http: reqwest::Client,
    cookies: Vec<(String, String)>,
}

impl Default for Browser {
    fn default() -> Self {
        Self::new()
    }
}

impl Browser {
    pub fn new() -> Self {
        Self {
            http: crate::http_builder()
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
        let res = self
            .http
            .post(url)
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(form))
            .send()
            .await
            .unwrap();
        self.keep_cookies(&res);
        res
    }

    /// Signs in as `email` (if asked) and approves at `authorize_url`, a request to the
    /// authorization endpoint `authorize_path` of the server at `base`; returns the
    /// redirect's URL.
    pub async fn approve(
        &mut self,
        base: &str,
        authorize_path: &str,
        authorize_url: &str,
        (email, password): (&str, &str),
    ) -> url::Url {
        let res = self.get(authorize_url).await;
        assert_eq!(res.status(), StatusCode::OK);
        let mut page = res.text().await.unwrap();
        if page.contains(r#"name="password""#) {
            let res = self
                .post_form(
                    &format!("{base}{authorize_path}/sign-in"),
                    &[
                        ("csrf", &hidden(&page, "csrf")),
                        ("request", &hidden(&page, "request")),
                        ("email", email),
                        ("password", password),
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
                &format!("{base}{authorize_path}/consent"),
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
