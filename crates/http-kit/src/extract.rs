//! Extractor configurations whose failures answer in the service's envelope (the envelope
//! middleware renders the [`ApiError`]s these produce).

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::OnceLock;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::{JsonPayloadError, PathError, PayloadError, QueryPayloadError};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::{LocalBoxFuture, Ready, ready};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa::openapi::OpenApi;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::nul;
use crate::request::{Validate, rules};
use crate::routes::{Route, actix_method};

/// A JSON request body, read like `web::Json` (same [`json_config`] limits and errors), then:
/// refused when any string in it, key or value, holds U+0000; checked against the rules its
/// schema states ([`rules`]); deserialized naming the failing field's path; and
/// [`Validate`]d. Every refusal is a 400 naming the field. A free-form body is a
/// `Json<serde_json::Value>`.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + ToSchema + Validate + 'static> FromRequest for Json<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = web::Json::<Value>::from_request(req, payload);
        Box::pin(async move {
            let value = body.await?.into_inner();
            Ok(Json(read_body(value)?))
        })
    }
}

/// What [`Json`] does with the parsed body, for a route that reads its body itself (one
/// whose body is optional).
pub fn read_body<T: DeserializeOwned + ToSchema + Validate + 'static>(
    mut value: Value,
) -> Result<T, ApiError> {
    nul::check_json(&value)?;
    rules::of_body::<T>().check(&mut value)?;
    let verbatim = take_verbatim(&mut value, T::VERBATIM);
    let mut typed: T = deserialize(value, "body")?;
    for (name, member) in verbatim {
        typed.restore(name, member);
    }
    typed.validate()?;
    Ok(typed)
}

/// The `names` members of `value` that are arrays or objects, each left empty in its place.
fn take_verbatim(value: &mut Value, names: &'static [&'static str]) -> Vec<(&'static str, Value)> {
    let Value::Object(members) = value else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| {
            let member = members.get_mut(*name)?;
            let empty = match member {
                Value::Array(_) => Value::Array(Vec::new()),
                Value::Object(_) => Value::Object(Map::new()),
                _ => return None,
            };
            Some((*name, std::mem::replace(member, empty)))
        })
        .collect()
}

/// A query string read into `T` the way [`Json`] reads a body, against the rules of `T`'s
/// parameters. Numbers and booleans are parsed as the parameter's schema types them (an empty
/// `limit=` is not a number); the first of repeated parameters counts.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<T> Query<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Query<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + IntoParams + Validate + 'static> FromRequest for Query<T> {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let documented = req
            .app_data::<web::Data<QueryParameters>>()
            .and_then(|index| index.of(req));
        ready(read_query(req.query_string(), documented).map_err(Into::into))
    }
}

/// The query parameters of every documented operation, read from the service's OpenAPI
/// document or its route tables (registered as app data). A route may read its query string
/// with more than one [`Query`]; a parameter is unknown when the route's operation does not
/// document it, and each extractor then takes its own. A route the index does not list is
/// held to the parameters of each extractor.
#[derive(Debug, Default)]
pub struct QueryParameters(HashMap<String, Vec<(Method, Documented)>>);

/// One operation's documented query parameters, read when first asked for: a route table's
/// operation is built when its route is first called, not every route's at start.
#[derive(Debug)]
struct Documented {
    operation: Option<fn() -> Operation>,
    names: OnceLock<Vec<String>>,
}

impl Documented {
    fn names(&self) -> &[String] {
        self.names.get_or_init(|| {
            self.operation
                .map(|operation| query_names(&operation()))
                .unwrap_or_default()
        })
    }
}

fn query_names(operation: &Operation) -> Vec<String> {
    operation
        .parameters
        .iter()
        .flatten()
        .filter(|p| matches!(p.parameter_in, ParameterIn::Query))
        .map(|p| p.name.clone())
        .collect()
}

impl QueryParameters {
    /// The index of `document`'s operations.
    pub fn from_openapi(document: &OpenApi) -> Self {
        let mut index = Self::default();
        for (path, item) in &document.paths.paths {
            let operations = [
                (Method::GET, &item.get),
                (Method::PUT, &item.put),
                (Method::POST, &item.post),
                (Method::DELETE, &item.delete),
                (Method::OPTIONS, &item.options),
                (Method::HEAD, &item.head),
                (Method::PATCH, &item.patch),
                (Method::TRACE, &item.trace),
            ];
            for (method, operation) in operations {
                if let Some(operation) = operation {
                    let documented = Documented {
                        operation: None,
                        names: OnceLock::from(query_names(operation)),
                    };
                    index.insert(path.clone(), method, documented);
                }
            }
        }
        index
    }

    /// Adds the operations of a route table (each read when its route is first called).
    pub fn add_routes(&mut self, table: &[&[Route]]) {
        for route in table.iter().flat_map(|routes| routes.iter()) {
            let path = (route.path)();
            for method in (route.methods)() {
                let documented = Documented {
                    operation: Some(route.operation),
                    names: OnceLock::new(),
                };
                self.insert(path.clone(), actix_method(&method), documented);
            }
        }
    }

    fn insert(&mut self, path: String, method: Method, documented: Documented) {
        let methods = self.0.entry(path).or_default();
        methods.retain(|(known, _)| *known != method);
        methods.push((method, documented));
    }

    /// The documented query parameters of the operation `req` was routed to.
    fn of(&self, req: &HttpRequest) -> Option<&[String]> {
        let pattern = req.match_pattern()?;
        self.0
            .get(&pattern)?
            .iter()
            .find(|(method, _)| method == req.method())
            .map(|(_, documented)| documented.names())
    }
}

/// Query parameters given as a JSON object (an MCP tool's arguments) read like [`Query`]:
/// against the rules of `T`'s parameters, naming the failing one.
pub fn read_params<T: DeserializeOwned + IntoParams + Validate + 'static>(
    mut value: Value,
) -> Result<T, ApiError> {
    nul::check_json(&value)?;
    rules::of_query::<T>().check(&mut value)?;
    let mut typed: T = deserialize(value, "arguments")?;
    typed.validate()?;
    Ok(typed)
}

fn read_query<T: DeserializeOwned + IntoParams + Validate + 'static>(
    query: &str,
    documented: Option<&[String]>,
) -> Result<Query<T>, ApiError> {
    let pairs = web::Query::<Vec<(String, String)>>::from_query(query)
        .map_err(|_| ApiError::invalid_field("query", "is not a valid query string"))?;
    let rules = rules::of_query::<T>();
    let ours = rules.property_names();
    let pairs = pairs.into_inner();
    rules::refuse_unknown(
        pairs.iter().map(|(name, _)| name),
        documented.unwrap_or(ours),
    )?;
    let mut members = Map::new();
    for (name, raw) in pairs {
        if ours.contains(&name) && !members.contains_key(&name) {
            let value = typed_param(rules.property_type(&name), raw);
            members.insert(name, value);
        }
    }
    let mut value = Value::Object(members);
    rules.check(&mut value)?;
    let mut typed: T = deserialize(value, "query")?;
    typed.validate()?;
    Ok(Query(typed))
}

/// The parameter as its schema types it; left a string when it does not parse, for the
/// rules to refuse with the expected range.
fn typed_param(schema_type: Option<&str>, raw: String) -> Value {
    let parsed = match schema_type {
        Some("integer") => raw.parse::<i64>().ok().map(Value::from),
        Some("number") => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Some("boolean") => raw.parse::<bool>().ok().map(Value::Bool),
        _ => None,
    };
    parsed.unwrap_or(Value::String(raw))
}

/// Deserializes `value`, naming the path of the field serde refused (`root` when it is the
/// whole value).
fn deserialize<T: DeserializeOwned>(value: Value, root: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { root } else { path.as_str() };
        ApiError::invalid_field(field, &err.into_inner().to_string())
    })
}

/// Refuses a request whose path or query string carries an encoded U+0000 (`%00`), before
/// any extractor hands it to a handler.
pub async fn reject_nul_in_uri(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Err(err) = nul::check_uri(req.uri()) {
        return Ok(req.error_response(err).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

/// JSON bodies: `limit` bytes at most; wrong content type, malformed JSON and oversized bodies
/// are 400s.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(limit)
        .error_handler(move |err, _req| json_error(err, limit).into())
}

fn json_error(err: JsonPayloadError, limit: usize) -> ApiError {
    match err {
        JsonPayloadError::OverflowKnownLength { .. }
        | JsonPayloadError::Overflow { .. }
        | JsonPayloadError::Payload(PayloadError::Overflow) => ApiError::payload_too_large(limit),
        JsonPayloadError::ContentType => {
            ApiError::invalid_field("body", "is required, with Content-Type application/json")
        }
        JsonPayloadError::Deserialize(e) if e.is_data() => {
            ApiError::invalid_field("body", &format!("is invalid: {e}"))
        }
        JsonPayloadError::Deserialize(e) => {
            ApiError::invalid_field("body", &format!("is malformed JSON: {e}"))
        }
        other => ApiError::invalid_field("body", &format!("is unreadable: {other}")),
    }
}

/// Raw bodies (`web::Bytes`) get the same size limit.
pub fn payload_config(limit: usize) -> web::PayloadConfig {
    web::PayloadConfig::new(limit)
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req| {
        let QueryPayloadError::Deserialize(e) = err else {
            return ApiError::invalid_field("query", "is not a valid query string").into();
        };
        ApiError::invalid_field("query", &format!("is invalid: {e}")).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err, _req| {
        let PathError::Deserialize(e) = err else {
            return ApiError::bad_request("invalid path parameter").into();
        };
        ApiError::bad_request(format!("invalid path parameter: {e}")).into()
    })
}
