//! The Memory Interchange Format (MIF 0.1): the shape of a document, its validation (errors
//! name the JSON path, e.g. `mif.decisions[3].decision`), and the JSON of exported items.
//!
//! The schema is declared in `domain/mif_schema.rs` (published as
//! `proto-docs/mif-0.1.schema.json`, and enforced on `POST /memory/import-mif` by the request
//! extractor); the rules here are that schema's again, for documents read back from staging,
//! plus what a JSON Schema cannot say (unique ids within a list, the metadata's size).

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::kernel;

pub const VERSION: &str = "0.1";

/// Limits of free-form entries (the `user_corpus` of MIF), shared with `/memory/free-form`.
pub const CONTENT_MAX: usize = 10_000;
pub const TAGS_MAX: usize = 20;
pub const TAG_MAX: usize = 50;
pub const SOURCE_MAX: usize = 200;
pub const METADATA_MAX_BYTES: usize = 16 * 1024;
/// Decisions, as `POST /memory/decisions` limits them.
pub const DECISION_MAX: usize = 2000;
pub const REASONING_MAX: usize = 5000;
pub const PRODUCT_NAME_MAX: usize = 100;
pub const PRODUCT_DESCRIPTION_MAX: usize = 2000;
pub const PRODUCT_STATUS_MAX: usize = 50;
/// A decision's `tags` and `affects_products`: the service sets no count limit on either (tags
/// are derived from hashtags, a product may affect any number of products), so import accepts
/// what an export can hold; the 10 MiB body bounds the rest.
pub const LIST_MAX: usize = 10_000;

/// A free-form memory entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusEntry {
    pub id: Option<Uuid>,
    pub content: String,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub metadata: Map<String, Value>,
    pub created_at: Option<DateTime<Utc>>,
}

/// A decision as MIF carries it. `tags` absent means "derive them".
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub id: Option<Uuid>,
    pub decision: String,
    pub reasoning: Option<String>,
    pub tags: Option<Vec<String>>,
    pub product_name: String,
    pub affects_products: Vec<String>,
    pub decided_at: Option<DateTime<Utc>>,
}

/// A product named in `metadata.products` (how an export carries product records).
#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub name: String,
    pub description: Option<String>,
    pub status: String,
}

/// A valid MIF document.
#[derive(Debug, Clone, Default)]
pub struct Document {
    pub identity_kernel: Map<String, Value>,
    pub user_corpus: Vec<CorpusEntry>,
    pub decisions: Vec<Decision>,
    pub products: Vec<Product>,
    /// Whether `user_corpus` / `decisions` were given (a `replace` replaces only what the
    /// document carries: an `identity_corpus` export leaves decisions alone).
    pub has_corpus: bool,
    pub has_decisions: bool,
}

/// What is wrong with a document, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub path: String,
    pub problem: String,
}

fn invalid<T>(path: impl Into<String>, problem: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid {
        path: path.into(),
        problem: problem.into(),
    })
}

/// Validates `value` (found at `root`, e.g. `mif`) as a MIF 0.1 document. Unknown members are
/// ignored, as everywhere in this API.
pub fn parse(value: &Value, root: &str) -> Result<Document, Invalid> {
    let Some(doc) = value.as_object() else {
        return invalid(root, "must be a JSON object");
    };
    match doc.get("mif_version") {
        Some(Value::String(v)) if v == VERSION => {}
        Some(_) => return invalid(format!("{root}.mif_version"), "must be \"0.1\""),
        None => return invalid(format!("{root}.mif_version"), "is required"),
    }
    match doc.get("provenance") {
        Some(Value::Object(_)) => {}
        Some(_) => return invalid(format!("{root}.provenance"), "must be an object"),
        None => return invalid(format!("{root}.provenance"), "is required"),
    }
    let kernel_path = format!("{root}.identity_kernel");
    let identity_kernel = match doc.get("identity_kernel") {
        Some(Value::Object(k)) => k.clone(),
        Some(_) => return invalid(kernel_path, "must be an object"),
        None => return invalid(kernel_path, "is required"),
    };
    // Null members delete keys in a merge; the types of the others are checked here, and the
    // resulting kernel's again when it is applied.
    let present: Map<String, Value> = identity_kernel
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_kernel(&present, &kernel_path)?;
    let user_corpus = match doc.get("user_corpus") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| corpus_entry(item, &format!("{root}.user_corpus[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(_) => return invalid(format!("{root}.user_corpus"), "must be an array"),
    };
    unique_ids(
        user_corpus.iter().map(|e| e.id),
        &format!("{root}.user_corpus"),
    )?;
    let decisions = match doc.get("decisions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| decision(item, &format!("{root}.decisions[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(_) => return invalid(format!("{root}.decisions"), "must be an array"),
    };
    unique_ids(decisions.iter().map(|d| d.id), &format!("{root}.decisions"))?;
    let products = match doc.get("metadata") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(meta)) => products(meta, &format!("{root}.metadata"))?,
        Some(_) => return invalid(format!("{root}.metadata"), "must be an object"),
    };
    let given = |key: &str| doc.get(key).is_some_and(|v| !v.is_null());
    Ok(Document {
        identity_kernel,
        user_corpus,
        decisions,
        products,
        has_corpus: given("user_corpus"),
        has_decisions: given("decisions"),
    })
}

/// The documented kernel keys' types (as `PUT /memory/identity` checks them).
pub fn check_kernel(kernel: &Map<String, Value>, path: &str) -> Result<(), Invalid> {
    kernel::check_types(kernel).or_else(|why| {
        let key = why.split_whitespace().next().unwrap_or_default().to_owned();
        invalid(format!("{path}.{key}"), why)
    })
}

fn unique_ids(ids: impl Iterator<Item = Option<Uuid>>, path: &str) -> Result<(), Invalid> {
    let mut seen: HashMap<Uuid, usize> = HashMap::new();
    for (i, id) in ids.enumerate() {
        if let Some(id) = id
            && let Some(first) = seen.insert(id, i)
        {
            return invalid(
                format!("{path}[{i}].id"),
                format!("repeats the id of {path}[{first}]"),
            );
        }
    }
    Ok(())
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Invalid> {
    value
        .as_object()
        .map_or_else(|| invalid(path, "must be an object"), Ok)
}

fn text(
    item: &Map<String, Value>,
    key: &str,
    path: &str,
    max: usize,
    required: bool,
) -> Result<Option<String>, Invalid> {
    let path = join(path, key);
    match item.get(key) {
        None | Some(Value::Null) if required => invalid(path, "is required"),
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() && required => {
            invalid(path, "must not be empty")
        }
        Some(Value::String(s)) if s.chars().count() > max => {
            invalid(path, format!("must be at most {max} characters"))
        }
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => invalid(path, "must be a string"),
    }
}

fn strings(
    item: &Map<String, Value>,
    key: &str,
    path: &str,
    max_items: usize,
    max_len: usize,
) -> Result<Option<Vec<String>>, Invalid> {
    let path = join(path, key);
    let items = match item.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => return invalid(path, "must be an array of strings"),
    };
    if items.len() > max_items {
        return invalid(path, format!("must have at most {max_items} items"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) if !s.trim().is_empty() && s.chars().count() <= max_len => {
                Ok(s.clone())
            }
            _ => invalid(
                format!("{path}[{i}]"),
                format!("must be a string of 1 to {max_len} characters"),
            ),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn id(item: &Map<String, Value>, path: &str) -> Result<Option<Uuid>, Invalid> {
    match item.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Uuid::parse_str(s)
            .map(Some)
            .or_else(|_| invalid(join(path, "id"), "must be a UUID")),
        Some(_) => invalid(join(path, "id"), "must be a UUID"),
    }
}

fn timestamp(
    item: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<DateTime<Utc>>, Invalid> {
    match item.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
            .map(|t| Some(t.with_timezone(&Utc)))
            .or_else(|_| invalid(join(path, key), "must be an RFC 3339 date-time")),
        Some(_) => invalid(join(path, key), "must be an RFC 3339 date-time"),
    }
}

/// Validates one free-form entry (also the body of `POST /memory/free-form`, with `path` "").
pub fn corpus_entry(value: &Value, path: &str) -> Result<CorpusEntry, Invalid> {
    let item = object(value, path)?;
    let content = text(item, "content", path, CONTENT_MAX, true)?.unwrap_or_default();
    let tags = strings(item, "tags", path, TAGS_MAX, TAG_MAX)?.unwrap_or_default();
    let source = text(item, "source", path, SOURCE_MAX, false)?;
    let metadata = match item.get("metadata") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => {
            if Value::Object(m.clone()).to_string().len() > METADATA_MAX_BYTES {
                return invalid(
                    join(path, "metadata"),
                    format!("must be at most {METADATA_MAX_BYTES} bytes of JSON"),
                );
            }
            m.clone()
        }
        Some(_) => return invalid(join(path, "metadata"), "must be an object"),
    };
    Ok(CorpusEntry {
        id: id(item, path)?,
        content,
        tags: dedup(tags),
        source,
        metadata,
        created_at: timestamp(item, "created_at", path)?,
    })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn dedup(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn decision(value: &Value, path: &str) -> Result<Decision, Invalid> {
    let item = object(value, path)?;
    let decision = text(item, "decision", path, DECISION_MAX, true)?.unwrap_or_default();
    let reasoning = text(item, "reasoning", path, REASONING_MAX, false)?;
    let product_name = text(item, "product_name", path, PRODUCT_NAME_MAX, true)?
        .unwrap_or_default()
        .trim()
        .to_owned();
    let tags = strings(item, "tags", path, LIST_MAX, DECISION_MAX)?;
    let affects = strings(item, "affects_products", path, LIST_MAX, PRODUCT_NAME_MAX)?
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.trim().to_owned())
        .collect();
    Ok(Decision {
        id: id(item, path)?,
        decision,
        reasoning,
        tags,
        product_name,
        affects_products: dedup(affects),
        decided_at: timestamp(item, "decided_at", path)?,
    })
}

fn products(meta: &Map<String, Value>, path: &str) -> Result<Vec<Product>, Invalid> {
    let path = format!("{path}.products");
    let items = match meta.get("products") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return invalid(path, "must be an array"),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let path = format!("{path}[{i}]");
            let item = object(v, &path)?;
            Ok(Product {
                name: text(item, "name", &path, PRODUCT_NAME_MAX, true)?
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
                description: text(item, "description", &path, PRODUCT_DESCRIPTION_MAX, false)?,
                status: text(item, "status", &path, PRODUCT_STATUS_MAX, false)?
                    .map_or_else(|| "active".to_owned(), |s| s.trim().to_owned())
                    .chars()
                    .take(PRODUCT_STATUS_MAX)
                    .collect(),
            })
        })
        .collect()
}

/// Timestamps in exports: RFC 3339, UTC with `Z`, as many fraction digits as needed.
pub fn timestamp_json(t: DateTime<Utc>) -> Value {
    Value::String(t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// A stored decision as an exported item.
pub fn decision_json(
    id: Uuid,
    decision: &str,
    reasoning: Option<&str>,
    tags: &[String],
    product_name: &str,
    affects_products: &[String],
    decided_at: DateTime<Utc>,
) -> Value {
    json!({
        "id": id,
        "decision": decision,
        "reasoning": reasoning,
        "tags": tags,
        "product_name": product_name,
        "affects_products": affects_products,
        "decided_at": timestamp_json(decided_at),
    })
}

/// A stored free-form entry as an exported item (and as `/memory/free-form` answers it).
pub fn corpus_json(
    id: Uuid,
    content: &str,
    tags: &[String],
    source: Option<&str>,
    metadata: &Value,
    created_at: DateTime<Utc>,
) -> Value {
    json!({
        "id": id,
        "content": content,
        "tags": tags,
        "source": source,
        "metadata": metadata,
        "created_at": timestamp_json(created_at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(extra: Value) -> Value {
        let mut base = json!({"mif_version": "0.1", "provenance": {}, "identity_kernel": {}});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        base
    }

    fn err(value: Value) -> Invalid {
        parse(&value, "mif").unwrap_err()
    }

    #[test]
    fn errors_name_the_json_path() {
        assert_eq!(err(json!([])).path, "mif");
        assert_eq!(err(json!({"mif_version": "0.2"})).path, "mif.mif_version");
        let mut no_prov = doc(json!({}));
        no_prov.as_object_mut().unwrap().remove("provenance");
        assert_eq!(err(no_prov).path, "mif.provenance");
        let decisions = json!({"decisions": [
            {"decision": "a", "product_name": "p"},
            {"decision": "b", "product_name": "p"},
            {"decision": "c", "product_name": "p"},
            {"decision": "", "product_name": "p"},
        ]});
        assert_eq!(err(doc(decisions)).path, "mif.decisions[3].decision");
        let corpus = json!({"user_corpus": [{"content": "x", "tags": ["ok", 5]}]});
        assert_eq!(err(doc(corpus)).path, "mif.user_corpus[0].tags[1]");
        let kernel = json!({"identity_kernel": {"constraints": "not a list"}});
        assert_eq!(err(doc(kernel)).path, "mif.identity_kernel.constraints");
        let id = Uuid::now_v7();
        let twice =
            json!({"user_corpus": [{"content": "a", "id": id}, {"content": "b", "id": id}]});
        let e = err(doc(twice));
        assert_eq!(e.path, "mif.user_corpus[1].id");
        assert!(e.problem.contains("user_corpus[0]"));
        let long = "x".repeat(DECISION_MAX + 1);
        let too_long = json!({"decisions": [{"decision": long, "product_name": "p"}]});
        assert_eq!(err(doc(too_long)).path, "mif.decisions[0].decision");
    }

    #[test]
    fn a_minimal_document_parses_with_defaults() {
        let parsed = parse(
            &doc(json!({"decisions": [{"decision": "Use Rust", "product_name": " core "}]})),
            "mif",
        )
        .unwrap();
        assert!(parsed.user_corpus.is_empty());
        assert_eq!(parsed.decisions[0].product_name, "core");
        assert_eq!(parsed.decisions[0].tags, None);
        assert_eq!(parsed.decisions[0].decided_at, None);
    }
}
