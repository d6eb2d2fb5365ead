//! The mail-api test harness: a database of its own per test, the real server on an ephemeral
//! port, and accounts, projects and keys made through the same code the admin CLI uses.

#![allow(dead_code)]

use std::path::Path;

use auth::Scope;
use diesel_async::AsyncPgConnection;
use mail_api::db::{credentials, tenants};
use mail_api::{MIGRATIONS, Settings};
use rate_limit::policy::Plan;
use reqwest::{RequestBuilder, Response};
use serde_json::{Value, json};
use service_kit::testing::{self, TestServer};
use store::testing::TestDatabase;
use uuid::Uuid;

pub use test_support::Client;
pub use test_support::response::*;

/// The shared sending domain the test servers are configured with.
pub const SHARED_DOMAIN: &str = "send.mail-test.example";

pub struct Harness {
    pub db: TestDatabase,
    pub server: TestServer,
    pub http: reqwest::Client,
    pub settings: Settings,
}

/// A project with one live key of each scope.
pub struct Tenant {
    pub project: Uuid,
    pub read: String,
    pub write: String,
    pub admin: String,
}

/// Settings for a server on `db_url`, bound to an ephemeral port.
pub fn settings(db_url: &str) -> Settings {
    let mut settings = Settings::load(None).expect("default settings load");
    testing::adapt(&mut settings.common, db_url);
    settings.sending.shared_domain = SHARED_DOMAIN.to_owned();
    settings.secrets.kek = secrets::Kek::generate_base64();
    settings.tracking.secret = TRACKING_SECRET.to_owned();
    // Queues of its own per server, so tests (and a local worker) never share a send queue.
    settings.common.broker.queue_prefix = format!("t{}.", Uuid::new_v4().simple());
    settings
}

/// The tracking-link key of the test servers.
pub const TRACKING_SECRET: &str = "tracking-secret-for-tests-0123456789abcdef";

/// Settings with the Redis limiter under a key prefix of their own.
pub fn redis_settings(db_url: &str, prefix: &str) -> Settings {
    let mut settings = settings(db_url);
    testing::use_redis(&mut settings.common, prefix);
    settings
}

pub async fn database() -> TestDatabase {
    TestDatabase::new("mail", || MIGRATIONS)
        .await
        .expect("test database")
}

pub async fn serve(settings: &Settings) -> TestServer {
    TestServer::start(mail_api::launch(settings).await.expect("launch"))
}

pub use test_support::sql::connect;

/// A project of `plan` in an account of its own.
pub async fn project(conn: &mut AsyncPgConnection, plan: Plan) -> Uuid {
    let account = tenants::create_account(conn, &format!("account {}", Uuid::new_v4()))
        .await
        .expect("account");
    tenants::create_project(conn, account.id, "project", plan)
        .await
        .expect("project")
        .id
}

/// A key of `scope` that never expires: returns (key id, plaintext).
pub async fn key(conn: &mut AsyncPgConnection, project: Uuid, scope: Scope) -> (Uuid, String) {
    let (key, credential) = credentials::create_key(conn, project, "test", scope, None, None)
        .await
        .expect("key");
    (key.id, credential.plaintext)
}

/// A server whose database is at `url` (one that does not answer, or refuses it).
pub async fn serve_on_database(url: &str) -> TestServer {
    serve(&settings(url)).await
}

impl Harness {
    pub async fn new() -> Self {
        Self::with(settings).await
    }

    pub async fn with(make: impl FnOnce(&str) -> Settings) -> Self {
        let db = database().await;
        let settings = make(&db.url);
        let server = serve(&settings).await;
        Self {
            db,
            server,
            http: test_support::http(),
            settings,
        }
    }

    pub async fn conn(&self) -> AsyncPgConnection {
        connect(&self.db.url).await
    }

    pub async fn project(&self, plan: Plan) -> Uuid {
        project(&mut self.conn().await, plan).await
    }

    pub async fn key(&self, project: Uuid, scope: Scope) -> (Uuid, String) {
        key(&mut self.conn().await, project, scope).await
    }

    /// A new harness and a project of `plan` with a read, a write and an admin key.
    pub async fn with_tenant(plan: Plan) -> (Self, Tenant) {
        let h = Self::new().await;
        let tenant = h.tenant(plan).await;
        (h, tenant)
    }

    /// A project of `plan` with a read, a write and an admin key.
    pub async fn tenant(&self, plan: Plan) -> Tenant {
        let mut conn = self.conn().await;
        let project = project(&mut conn, plan).await;
        let (_, read) = key(&mut conn, project, Scope::Read).await;
        let (_, write) = key(&mut conn, project, Scope::Write).await;
        let (_, admin) = key(&mut conn, project, Scope::Admin).await;
        Tenant {
            project,
            read,
            write,
            admin,
        }
    }

    /// A client of the server that carries `key`.
    pub fn api(&self, key: &str) -> Client {
        self.anonymous().with_key(key)
    }

    /// A client of the server without a key.
    pub fn anonymous(&self) -> Client {
        Client::new(self.http.clone(), &self.server.base)
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.http.get(self.server.url(path))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.http.post(self.server.url(path))
    }

    /// `POST /api/v1/sites` with `key`, named after `slug`.
    pub async fn create_site(&self, key: &str, slug: &str) -> Response {
        self.post("/api/v1/sites")
            .bearer_auth(key)
            .json(&serde_json::json!({
                "name": format!("Site {slug}"),
                "slug": slug,
                "from_name": format!("Sender {slug}"),
            }))
            .send()
            .await
            .expect("request")
    }

    pub async fn list_sites(&self, key: &str, query: &str) -> Response {
        self.get(&format!("/api/v1/sites{query}"))
            .bearer_auth(key)
            .send()
            .await
            .expect("request")
    }

    /// `POST path` with `key` and a JSON body.
    pub async fn post_json(&self, key: &str, path: &str, body: &Value) -> Response {
        self.post(path)
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// `GET path` with `key`.
    pub async fn get_with(&self, key: &str, path: &str) -> Response {
        self.get(path)
            .bearer_auth(key)
            .send()
            .await
            .expect("request")
    }

    /// A new site's id.
    pub async fn site(&self, key: &str, slug: &str) -> String {
        let res = self.create_site(key, slug).await;
        assert_eq!(res.status(), 201);
        json(res).await["id"].as_str().unwrap().to_owned()
    }

    /// A campaign created over HTTP (a draft), made `active` in the database when asked (the
    /// activation route comes later). Returns its id.
    pub async fn campaign(
        &self,
        tenant: &Tenant,
        site: &str,
        name: &str,
        trigger: Option<&str>,
        active: bool,
    ) -> Uuid {
        let mut body = serde_json::json!({"name": name, "site_id": site});
        if let Some(event) = trigger {
            body["type"] = "triggered".into();
            body["trigger_event_name"] = event.into();
        }
        let res = self
            .post_json(&tenant.write, "/api/v1/campaigns", &body)
            .await;
        assert_eq!(res.status(), 201);
        let campaign = json(res).await;
        assert_eq!(campaign["status"], "draft");
        let id: Uuid = campaign["id"].as_str().unwrap().parse().unwrap();
        if active {
            self.set_campaign_status(tenant.project, id, "active").await;
        }
        id
    }

    pub async fn set_campaign_status(&self, project: Uuid, id: Uuid, status: &str) {
        let changed =
            mail_api::db::campaigns::set_status(&mut self.conn().await, project, id, status)
                .await
                .unwrap();
        assert!(changed);
    }

    /// Runs `sql` (a query of one column) on the test database and returns that column of
    /// every row, as text.
    pub async fn query(&self, sql: &str) -> Vec<String> {
        test_support::sql::query(&self.db.url, sql).await
    }

    /// Runs a statement on the test database.
    pub async fn exec(&self, sql: &str) {
        test_support::sql::exec(&self.db.url, sql).await;
    }

    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// The members of a tenant export, in their documented order; the full export adds more after.
pub const EXPORT_MEMBERS: [&str; 7] = [
    "project_id",
    "site_id",
    "exported_at",
    "contacts",
    "email_log",
    "events",
    "conversions",
];

/// The `email` of every item of a page.
pub fn emails(page: &Value) -> Vec<String> {
    field_of_each(page, "email")
}

/// A mail error envelope, as [`expect_error`] found it.
#[derive(Debug)]
pub struct MailError {
    pub message: String,
    /// `Value::Null` when the envelope has no `details`.
    pub details: Value,
}

/// Asserts the mail error envelope `{"error": "<message>", "code": "<CODE>", "details"?: {}}`
/// with `status` and `code`, and returns it.
pub async fn expect_error(response: Response, status: u16, code: &str) -> MailError {
    assert_eq!(response.status().as_u16(), status, "status");
    let headers = response.headers().clone();
    assert_eq!(
        headers["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert_eq!(headers["cache-control"], "no-store");
    let body = json(response).await;
    let object = body.as_object().expect("an object");
    assert_eq!(body["code"], code, "{body}");
    let message = body["error"].as_str().expect("`error` is a string");
    assert!(!message.is_empty(), "{body}");
    for key in object.keys() {
        assert!(
            ["error", "code", "details"].contains(&key.as_str()),
            "unexpected key {key}: {body}"
        );
    }
    if let Some(details) = object.get("details") {
        assert!(details.is_object(), "`details` is an object: {body}");
    }
    MailError {
        message: message.to_owned(),
        details: object.get("details").cloned().unwrap_or(Value::Null),
    }
}

/// Asserts a 400 `VALIDATION_ERROR` that names `field`.
pub async fn expect_invalid(response: Response, field: &str) {
    let err = expect_error(response, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details, json!({ "field": field }));
}

/// The committed OpenAPI document of mail-api.
pub fn committed_document() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto-docs/mail-api.openapi.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Where `answer` holds a null that the document's component `schema` does not allow (a
/// generated client refuses such an answer): the dotted paths, empty when none.
pub fn undeclared_nulls(doc: &Value, schema: &str, answer: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk_nulls(
        doc,
        &json!({ "$ref": format!("#/components/schemas/{schema}") }),
        answer,
        schema,
        &mut found,
    );
    found
}

fn walk_nulls(doc: &Value, schema: &Value, value: &Value, at: &str, found: &mut Vec<String>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return walk_nulls(doc, &doc["components"]["schemas"][name], value, at, found);
    }
    for combined in ["allOf", "oneOf", "anyOf"] {
        if let Some(parts) = schema[combined].as_array() {
            if value.is_null() && combined != "allOf" {
                if !parts.iter().any(|p| allows_null(doc, p)) {
                    found.push(at.to_owned());
                }
                return;
            }
            for part in parts {
                walk_nulls(doc, part, value, at, found);
            }
            return;
        }
    }
    match value {
        Value::Null if !allows_null(doc, schema) => found.push(at.to_owned()),
        Value::Object(members) => {
            for (name, member) in members {
                if let Some(property) = schema["properties"].get(name) {
                    walk_nulls(doc, property, member, &format!("{at}.{name}"), found);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_nulls(doc, &schema["items"], item, &format!("{at}[{i}]"), found);
            }
        }
        _ => {}
    }
}

fn allows_null(doc: &Value, schema: &Value) -> bool {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return allows_null(doc, &doc["components"]["schemas"][name]);
    }
    match &schema["type"] {
        Value::String(t) => t == "null",
        Value::Array(types) => types.iter().any(|t| t == "null"),
        // No type at all: any value, null included.
        Value::Null => !["allOf", "oneOf", "anyOf", "properties", "enum"]
            .iter()
            .any(|k| schema.get(*k).is_some()),
        _ => false,
    }
}
