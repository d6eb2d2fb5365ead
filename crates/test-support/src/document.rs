//! The operations of a committed OpenAPI document, as suites that walk every route read them.

use std::path::Path;

use reqwest::Method;
use serde_json::Value;

/// An operation of the document.
#[derive(Debug, Clone)]
pub struct Operation {
    pub method: Method,
    pub path: String,
    pub params: Vec<Param>,
    pub has_body: bool,
    /// The operation declares the bearer credential.
    pub needs_credential: bool,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    /// `path`, `query` or `header`.
    pub location: String,
    pub required: bool,
}

/// Reads `proto-docs/<file>` of the repository whose crate sits at `manifest_dir`
/// (`env!("CARGO_MANIFEST_DIR")` of a service).
pub fn load(manifest_dir: &str, file: &str) -> Value {
    let path = Path::new(manifest_dir).join("../../proto-docs").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every operation of `document`, in its order.
pub fn operations(document: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            let params = op["parameters"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| Param {
                            name: p["name"].as_str().expect("a name").to_owned(),
                            location: p["in"].as_str().expect("a location").to_owned(),
                            required: p["required"].as_bool().unwrap_or(false),
                        })
                        .collect()
                })
                .unwrap_or_default();
            operations.push(Operation {
                method: method.to_uppercase().parse().expect("a method"),
                path: path.clone(),
                params,
                has_body: op.get("requestBody").is_some(),
                needs_credential: op["security"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some())),
            });
        }
    }
    operations
}

/// The operations an isolation suite calls with another owner's ids: GET, PUT, PATCH and
/// DELETE, and POST on a path id. Those on a path of `public` must be declared without a
/// credential and are left out; every other must declare one.
pub fn probed(document: &Value, public: &[&str]) -> Vec<Operation> {
    let probed: Vec<Operation> = operations(document)
        .into_iter()
        .filter(|op| {
            [Method::GET, Method::PUT, Method::PATCH, Method::DELETE].contains(&op.method)
                || (op.method == Method::POST && op.path.contains('{'))
        })
        .filter(|op| {
            if public.contains(&op.path.as_str()) {
                assert!(
                    !op.needs_credential,
                    "{} {} needs a credential: isolate it",
                    op.method, op.path
                );
                return false;
            }
            assert!(
                op.needs_credential,
                "{} {} has no credential and is not in PUBLIC",
                op.method, op.path
            );
            true
        })
        .collect();
    assert!(probed.len() >= 10, "the document's routes were read");
    probed
}

/// When an isolation suite runs an operation: reads before writes and deletes, so that no
/// owner's data has been changed by the suite itself while others look for it.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Phase {
    Read,
    Write,
    Delete,
}

impl Operation {
    pub fn phase(&self) -> Phase {
        match self.method {
            Method::GET => Phase::Read,
            Method::DELETE => Phase::Delete,
            _ => Phase::Write,
        }
    }
}
