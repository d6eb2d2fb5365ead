//! A client of one test server that carries one key, checks statuses and decodes JSON.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use reqwest::{Method, RequestBuilder, Response};
use serde::Serialize;
use serde_json::Value;

/// Requests to one server, each with the bearer key this client carries (if any).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
}

impl Client {
    /// A client of the server at `base` (`http://host:port`) with no key.
    pub fn new(http: reqwest::Client, base: impl Into<String>) -> Self {
        Self {
            http,
            base: base.into(),
            key: None,
        }
    }

    /// A client of `server` with no key.
    pub fn of(server: &service_kit::testing::TestServer) -> Self {
        Self::new(crate::http(), &server.base)
    }

    /// The same server, with `key`.
    pub fn with_key(&self, key: &str) -> Self {
        Self {
            key: Some(key.to_owned()),
            ..self.clone()
        }
    }

    pub fn request(&self, method: Method, path: &str) -> Call {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        Call(request)
    }

    /// A client of the same server that answers redirects instead of following them.
    pub fn not_following_redirects(&self) -> Self {
        Self {
            http: crate::http_builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("HTTP client"),
            ..self.clone()
        }
    }

    pub fn get(&self, path: &str) -> Call {
        self.request(Method::GET, path)
    }

    pub fn delete(&self, path: &str) -> Call {
        self.request(Method::DELETE, path)
    }

    /// `POST path` with `body` as JSON.
    pub fn post<T: Serialize + ?Sized>(&self, path: &str, body: &T) -> Call {
        self.request(Method::POST, path).json(body)
    }

    /// `PUT path` with `body` as JSON.
    pub fn put<T: Serialize + ?Sized>(&self, path: &str, body: &T) -> Call {
        self.request(Method::PUT, path).json(body)
    }

    /// `PATCH path` with `body` as JSON.
    pub fn patch<T: Serialize + ?Sized>(&self, path: &str, body: &T) -> Call {
        self.request(Method::PATCH, path).json(body)
    }
}

/// A request not sent yet: awaited, it answers the response; [`Call::expect`] checks the
/// status and answers the JSON body.
pub struct Call(RequestBuilder);

impl Call {
    pub fn header(self, name: &str, value: impl AsRef<str>) -> Self {
        Self(self.0.header(name, value.as_ref()))
    }

    pub fn body(self, body: impl Into<reqwest::Body>) -> Self {
        Self(self.0.body(body))
    }

    pub fn json<T: Serialize + ?Sized>(self, body: &T) -> Self {
        Self(self.0.json(body))
    }

    /// Sends; asserts the answer is `status` (showing the body when not) and answers its body
    /// as JSON.
    pub async fn expect(self, status: u16) -> Value {
        let response = self.await;
        let got = response.status().as_u16();
        let text = response.text().await.expect("body");
        assert_eq!(got, status, "status: {}", crate::excerpt(&text));
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("a JSON body ({e}): {}", crate::excerpt(&text)))
    }

    /// Sends; asserts the answer is `status` and has no body.
    pub async fn expect_empty(self, status: u16) {
        let response = self.await;
        let got = response.status().as_u16();
        let text = response.text().await.expect("body");
        assert_eq!(got, status, "status: {}", crate::excerpt(&text));
        assert!(text.is_empty(), "no body: {}", crate::excerpt(&text));
    }
}

impl IntoFuture for Call {
    type Output = Response;
    type IntoFuture = Pin<Box<dyn Future<Output = Response> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.0.send().await.expect("request") })
    }
}
