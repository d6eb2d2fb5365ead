//! Component names unique by construction. utoipa keys `components.schemas` by a type's bare
//! name, so two Rust types of the same name publish one component and the last one registered
//! silently replaces the other: every `$ref` to the loser then describes the wrong shape.
//!
//! [`check`] takes every handler of a document with the schemas utoipa collects from it (the
//! same collection the `OpenApi` derive merges into `components.schemas`) and reports a name
//! published with two different shapes, a component of the document that differs from what a
//! handler published under its name, and any operation of the document without its handler
//! (so the list a test passes cannot fall behind the document).

use std::collections::BTreeMap;

use utoipa::openapi::path::HttpMethod;
use utoipa::openapi::{OpenApi, RefOr, Schema};

/// One `#[utoipa::path]` handler: its operations and every schema it references, nested ones
/// included.
pub struct Handler {
    path: String,
    methods: Vec<HttpMethod>,
    schemas: Vec<(String, RefOr<Schema>)>,
}

impl Handler {
    /// `P` is the handler's generated `__path_<name>` type.
    pub fn of<P: utoipa::Path + utoipa::__dev::SchemaReferences>() -> Self {
        let mut schemas = Vec::new();
        P::schemas(&mut schemas);
        Self {
            path: P::path(),
            methods: P::methods(),
            schemas,
        }
    }

    fn operations(&self) -> impl Iterator<Item = String> + '_ {
        self.methods
            .iter()
            .map(|method| format!("{} {}", method_name(method), self.path))
    }
}

/// Every violation, one sentence each; empty when the document's component names are unique.
pub fn check(doc: &OpenApi, handlers: &[Handler]) -> Vec<String> {
    let mut problems = Vec::new();

    let documented = documented_operations(doc);
    let listed: Vec<String> = handlers.iter().flat_map(Handler::operations).collect();
    for operation in &documented {
        if !listed.contains(operation) {
            problems.push(format!(
                "{operation} is in the document but not in the handler list"
            ));
        }
    }
    for operation in &listed {
        if !documented.contains(operation) {
            problems.push(format!(
                "{operation} is in the handler list but not in the document"
            ));
        }
    }

    // name -> each distinct shape with the first operation that published it
    let mut shapes: BTreeMap<&str, Vec<(serde_json::Value, String)>> = BTreeMap::new();
    for handler in handlers {
        let operation = handler.operations().next().unwrap_or_default();
        for (name, schema) in &handler.schemas {
            let shape = serde_json::to_value(schema).expect("a schema serializes");
            let seen = shapes.entry(name).or_default();
            if !seen.iter().any(|(known, _)| *known == shape) {
                seen.push((shape, operation.clone()));
            }
        }
    }
    let components = doc.components.as_ref().map(|c| &c.schemas);
    for (name, seen) in &shapes {
        if seen.len() > 1 {
            let publishers: Vec<String> = seen
                .iter()
                .map(|(shape, operation)| format!("{operation}: {shape}"))
                .collect();
            problems.push(format!(
                "component `{name}` is published by {} different types (rename one): {}",
                seen.len(),
                publishers.join(" | ")
            ));
            continue;
        }
        let in_doc = components
            .and_then(|schemas| schemas.get(*name))
            .map(|schema| serde_json::to_value(schema).expect("a schema serializes"));
        if in_doc.as_ref() != Some(&seen[0].0) {
            problems.push(format!(
                "component `{name}` of the document is not the type {} publishes under that name",
                seen[0].1
            ));
        }
    }
    problems
}

fn documented_operations(doc: &OpenApi) -> Vec<String> {
    let mut operations = Vec::new();
    for (path, item) in &doc.paths.paths {
        let methods = [
            (HttpMethod::Get, item.get.is_some()),
            (HttpMethod::Put, item.put.is_some()),
            (HttpMethod::Post, item.post.is_some()),
            (HttpMethod::Delete, item.delete.is_some()),
            (HttpMethod::Patch, item.patch.is_some()),
            (HttpMethod::Head, item.head.is_some()),
            (HttpMethod::Options, item.options.is_some()),
            (HttpMethod::Trace, item.trace.is_some()),
        ];
        for (method, present) in methods {
            if present {
                operations.push(format!("{} {path}", method_name(&method)));
            }
        }
    }
    operations
}

fn method_name(method: &HttpMethod) -> &'static str {
    match method {
        HttpMethod::Get => "GET",
        HttpMethod::Put => "PUT",
        HttpMethod::Post => "POST",
        HttpMethod::Delete => "DELETE",
        HttpMethod::Patch => "PATCH",
        HttpMethod::Head => "HEAD",
        HttpMethod::Options => "OPTIONS",
        HttpMethod::Trace => "TRACE",
    }
}
