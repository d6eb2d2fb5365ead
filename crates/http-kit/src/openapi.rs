//! What both OpenAPI documents share: the error bodies, the bearer scheme, and the responses
//! and headers every authenticated route has (401, 429, 500, `X-RateLimit-*`), added to each
//! operation here so that no handler can forget them.

use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, OpenApi, Ref, RefOr, Response, Schema};

use crate::Flavor;

pub mod component_names;
pub mod schemas;

crate::error_codes! {
    /// Error codes of the memory service (a closed list).
    pub enum MemoryErrorCode {
        Unauthorized = "UNAUTHORIZED",
        Forbidden = "FORBIDDEN",
        NotFound = "NOT_FOUND",
        RateLimited = "RATE_LIMITED",
        ValidationError = "VALIDATION_ERROR",
        TierRequired = "TIER_REQUIRED",
        InternalError = "INTERNAL_ERROR",
    }
}

#[derive(Serialize, ToSchema)]
pub struct MemoryErrorDetail {
    pub code: MemoryErrorCode,
    /// Human-readable; names the field at fault for validation errors.
    pub message: String,
}

/// The memory service's error envelope.
#[derive(Serialize, ToSchema)]
pub struct MemoryError {
    pub error: MemoryErrorDetail,
}

/// The memory service's 429 body.
#[derive(Serialize, ToSchema)]
pub struct MemoryRateLimited {
    /// Always `rate_limit_exceeded`.
    #[schema(example = "rate_limit_exceeded")]
    pub error: String,
    /// Seconds to wait (also in `Retry-After`).
    #[schema(minimum = 1)]
    pub retry_after: u64,
    pub limit: u64,
    /// Always 0.
    pub remaining: u64,
    pub reset_at: chrono::DateTime<chrono::Utc>,
}

/// The mail service's error envelope.
#[derive(Serialize, ToSchema)]
pub struct MailError {
    /// Descriptive message.
    pub error: String,
    /// Machine-readable code, e.g. `VALIDATION_ERROR`, `PAYLOAD_TOO_LARGE`, `SUPPRESSED_CONTACT`.
    pub code: Option<String>,
    pub details: Option<serde_json::Value>,
}

const SCHEME: &str = "bearer";

/// Adds the shared components, and the bearer requirement, the 401/429/500/503 answers and the
/// rate-limit headers to every operation under `/api/v1` except `public` paths.
pub fn finish(doc: &mut OpenApi, flavor: Flavor, public: &[&str]) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        SCHEME.to_owned(),
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(match flavor {
                    Flavor::Memory => {
                        "API key (`mem_live_…`, `mem_test_…`) or OAuth access token (`memo_…`)"
                    }
                    Flavor::Mail => "Project API key (`mail_…`)",
                }))
                .build(),
        ),
    );
    let (error_name, limited_name) = match flavor {
        Flavor::Memory => {
            add_schema::<MemoryErrorCode>(components);
            add_schema::<MemoryErrorDetail>(components);
            add_schema::<MemoryError>(components);
            add_schema::<MemoryRateLimited>(components);
            ("MemoryError", "MemoryRateLimited")
        }
        Flavor::Mail => {
            add_schema::<MailError>(components);
            ("MailError", "MailError")
        }
    };
    let standard = [
        (
            "401",
            "Missing, malformed, expired or revoked credential",
            error_name,
        ),
        ("429", "Rate limit exceeded; see Retry-After", limited_name),
        ("500", "Internal error", error_name),
        (
            "503",
            "A dependency (the database, or a broker the route needs) is unavailable for now; retry after Retry-After",
            error_name,
        ),
    ];
    for (status, description, schema) in standard {
        let mut response = json_response(description, schema);
        if status == "429" || status == "503" {
            response.headers.insert(
                "Retry-After".to_owned(),
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1)),
                    )
                    .description(Some("Seconds to wait before retrying"))
                    .build(),
            );
        }
        // The gate refuses a credential before counting, so a 401 carries no rate-limit headers;
        // nor does a 503 of the credential lookup.
        if status != "401" && status != "503" {
            add_rate_limit_headers(&mut response);
        }
        components
            .responses
            .insert(response_name(status).to_owned(), RefOr::T(response));
    }

    for (path, item) in doc.paths.paths.iter_mut() {
        // `/api/integrations/…` routes (connecting third-party accounts) are gated too.
        let gated = (path.starts_with("/api/v1/") || path.starts_with("/api/integrations/"))
            && !public.contains(&path.as_str());
        for op in operations(item) {
            if !gated {
                op.security = Some(vec![SecurityRequirement::default()]);
                continue;
            }
            op.security = Some(vec![SecurityRequirement::new::<_, _, String>(SCHEME, [])]);
            for (status, _, _) in standard {
                op.responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| RefOr::Ref(Ref::from_response_name(response_name(status))));
            }
            for response in op.responses.responses.values_mut() {
                if let RefOr::T(response) = response {
                    add_rate_limit_headers(response);
                }
            }
        }
    }
}

fn response_name(status: &str) -> &'static str {
    match status {
        "401" => "Unauthorized",
        "429" => "RateLimited",
        "503" => "ServiceUnavailable",
        _ => "InternalError",
    }
}

fn add_schema<T: ToSchema>(components: &mut utoipa::openapi::Components) {
    components
        .schemas
        .insert(T::name().into_owned(), T::schema());
}

fn json_response(description: &str, schema: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            Content::new(Some(RefOr::<Schema>::Ref(Ref::from_schema_name(schema)))),
        )
        .build()
}

fn add_rate_limit_headers(response: &mut Response) {
    let count_or_unlimited = || {
        ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                Type::Integer,
                Type::String,
            ]))
            .description(Some("An integer, or `unlimited`"))
    };
    let headers = [
        (
            "X-RateLimit-Limit",
            count_or_unlimited(),
            "Requests allowed in the window nearest exhaustion",
        ),
        (
            "X-RateLimit-Remaining",
            count_or_unlimited(),
            "Requests left in that window",
        ),
        (
            "X-RateLimit-Reset",
            ObjectBuilder::new().schema_type(Type::Integer),
            "Unix time (seconds) at which that window resets",
        ),
    ];
    for (name, schema, description) in headers {
        response.headers.entry(name.to_owned()).or_insert_with(|| {
            HeaderBuilder::new()
                .schema(schema)
                .description(Some(description))
                .build()
        });
    }
}

fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
        item.head.as_mut(),
        item.options.as_mut(),
        item.trace.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// A [`utoipa::Modify`] that calls [`finish`].
pub struct Finish {
    pub flavor: Flavor,
    pub public: &'static [&'static str],
}

impl utoipa::Modify for Finish {
    fn modify(&self, openapi: &mut OpenApi) {
        finish(openapi, self.flavor, self.public);
    }
}

/// A document as committed under `proto-docs/`: pretty JSON with a trailing newline, the same
/// on every run.
pub fn to_json(doc: &OpenApi) -> String {
    let mut value = as_value(doc);
    conditionals_last(&mut value);
    let mut text = serde_json::to_string_pretty(&value).expect("JSON serializes");
    text.push('\n');
    text
}

/// Moves `if`, `then` and `else` to the end of each object, in that order. utoipa has no
/// such keywords: schemas carry them as extensions, a hash map, whose order changes from run
/// to run.
fn conditionals_last(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(members) => {
            for key in ["if", "then", "else"] {
                if let Some(member) = members.shift_remove(key) {
                    members.insert(key.to_owned(), member);
                }
            }
            members.values_mut().for_each(conditionals_last);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(conditionals_last),
        _ => {}
    }
}

pub fn to_yaml(doc: &OpenApi) -> String {
    serde_norway::to_string(&as_value(doc)).expect("an OpenAPI document serializes")
}

/// The document as JSON, response links spelled as OpenAPI spells them: utoipa 5 writes a
/// link's `operationId`, `operationRef` and `requestBody` in snake case.
fn as_value(doc: &OpenApi) -> serde_json::Value {
    let mut value = serde_json::to_value(doc).expect("an OpenAPI document serializes");
    schemas::state_what_is_enforced(&mut value);
    let links = value["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|op| {
            op.get_mut("responses")
                .and_then(serde_json::Value::as_object_mut)
        })
        .flat_map(|responses| responses.values_mut())
        .filter_map(|response| {
            response
                .get_mut("links")
                .and_then(serde_json::Value::as_object_mut)
        })
        .flat_map(|links| links.values_mut())
        .filter_map(serde_json::Value::as_object_mut);
    for link in links {
        for (snake, camel) in [
            ("operation_id", "operationId"),
            ("operation_ref", "operationRef"),
            ("request_body", "requestBody"),
        ] {
            if let Some(field) = link.remove(snake) {
                link.insert(camel.to_owned(), field);
            }
        }
    }
    value
}
