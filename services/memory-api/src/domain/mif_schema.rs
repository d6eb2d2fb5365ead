//! The schema of a MIF 0.1 document, declared once: the OpenAPI document's `MifDocument`
//! (the export's answer and the import's `mif`, whose rules the request extractor enforces)
//! and the published JSON Schema `proto-docs/mif-0.1.schema.json` ([`json_schema`]) are both
//! made from these types. `domain::mif::parse` checks the same rules again for staged
//! documents, plus what a schema cannot say (unique ids within a list, the metadata's size).

use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::{PartialSchema, ToSchema};

use crate::domain::mif;

/// The format version.
#[derive(Debug, Serialize, ToSchema)]
pub enum MifVersion {
    #[serde(rename = "0.1")]
    V0_1,
}

/// An export's scope.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MifScope {
    IdentityOnly,
    IdentityCorpus,
    Full,
}

/// A MIF 0.1 document: a user's memory (the identity kernel, an optional user corpus of
/// free-form entries, decisions). Unknown members are allowed and ignored on import; a null
/// member is an absent one, except in the identity kernel, where it deletes the key in a
/// `merge`. `provenance.content_sha256` is the SHA-256 (hex) of the document without
/// `provenance`, serialized with object members sorted by key and no whitespace.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MifDocument {
    pub mif_version: MifVersion,
    pub provenance: MifProvenance,
    #[schema(schema_with = kernel_schema)]
    pub identity_kernel: Value,
    /// Free-form memory entries (scopes `identity_corpus` and `full`).
    pub user_corpus: Option<Vec<MifCorpusEntry>>,
    /// Decisions (scope `full`).
    pub decisions: Option<Vec<MifDecision>>,
    pub metadata: Option<MifMetadata>,
}

/// Where a document comes from; exports write every member, imports need none.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MifProvenance {
    #[schema(schema_with = optional_date_time)]
    pub exported_at: Option<String>,
    /// `memory-api` in exports; at most 200 characters.
    #[schema(max_length = 200)]
    pub service: Option<String>,
    /// At most 200 characters.
    #[schema(max_length = 200)]
    pub service_version: Option<String>,
    pub scope: Option<MifScope>,
    #[schema(schema_with = optional_uuid)]
    pub workspace_id: Option<String>,
    /// SHA-256 (hex) of the document without `provenance`, object members sorted by key, no
    /// whitespace.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_sha256: Option<String>,
}

/// A free-form memory entry. `id` and `created_at` are optional on import (made when absent).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MifCorpusEntry {
    #[schema(schema_with = optional_uuid)]
    pub id: Option<String>,
    /// 1..=10,000 characters, not blank.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub content: String,
    /// At most 20, each 1..=50 characters, not blank.
    #[schema(schema_with = corpus_tags)]
    pub tags: Option<Vec<String>>,
    #[schema(max_length = 200)]
    pub source: Option<String>,
    /// Free-form, at most 16 KiB as JSON.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    #[schema(schema_with = optional_date_time)]
    pub created_at: Option<String>,
}

/// A decision. `product_name` is required (every decision is on a product); `tags` absent
/// means they are derived from hashtags on import.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MifDecision {
    #[schema(schema_with = optional_uuid)]
    pub id: Option<String>,
    /// 1..=2,000 characters, not blank.
    #[schema(min_length = 1, max_length = 2000, pattern = r"[^\s\x85\uFEFF]")]
    pub decision: String,
    #[schema(max_length = 5000)]
    pub reasoning: Option<String>,
    #[schema(schema_with = decision_tags)]
    pub tags: Option<Vec<String>>,
    /// 1..=100 characters, not blank.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub product_name: String,
    #[schema(schema_with = affected_products)]
    pub affects_products: Option<Vec<String>>,
    #[schema(schema_with = optional_date_time)]
    pub decided_at: Option<String>,
}

/// Free-form; full exports list the products their decisions can name under `products`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MifMetadata {
    pub products: Option<Vec<MifProduct>>,
}

/// A product named by the document (created by an import when the account lacks it).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct MifProduct {
    /// 1..=100 characters, not blank.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Default `active`.
    #[schema(max_length = 50)]
    pub status: Option<String>,
}

/// The identity kernel: free-form, with four documented keys whose types are checked. Null
/// members are kept (`additionalProperties: true`): in a `merge` they delete the key.
fn kernel_schema() -> Schema {
    let nullable = |kind: Type| SchemaType::from_iter([kind, Type::Null]);
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Free-form, with documented keys identity (object), products (array), constraints \
             (array of strings) and model_preferences (object). A null member deletes the key \
             in a `merge`.",
        ))
        .property(
            "identity",
            ObjectBuilder::new().schema_type(nullable(Type::Object)),
        )
        .property(
            "products",
            ArrayBuilder::new().schema_type(nullable(Type::Array)),
        )
        .property(
            "constraints",
            ArrayBuilder::new()
                .schema_type(nullable(Type::Array))
                .items(ObjectBuilder::new().schema_type(Type::String)),
        )
        .property(
            "model_preferences",
            ObjectBuilder::new().schema_type(nullable(Type::Object)),
        )
        .additional_properties(Some(AdditionalProperties::FreeForm(true)))
        .into()
}

fn corpus_tags() -> utoipa::openapi::schema::Array {
    http_kit::request::text_list(Some(mif::TAGS_MAX), mif::TAG_MAX)
}

fn decision_tags() -> utoipa::openapi::schema::Array {
    http_kit::request::text_list(Some(mif::LIST_MAX), mif::DECISION_MAX)
}

fn affected_products() -> utoipa::openapi::schema::Array {
    http_kit::request::text_list(Some(mif::LIST_MAX), mif::PRODUCT_NAME_MAX)
}

fn optional_uuid() -> Schema {
    http_kit::request::nullable_format(KnownFormat::Uuid, "A UUID; made when absent.")
}

fn optional_date_time() -> Schema {
    http_kit::request::nullable_format(KnownFormat::DateTime, "RFC 3339.")
}

/// The published JSON Schema (draft 2020-12) of a MIF 0.1 document, as committed in
/// `proto-docs/mif-0.1.schema.json`: `MifDocument` with the schemas it refers to as `$defs`.
pub fn json_schema() -> String {
    let mut schemas = Vec::new();
    <MifDocument as ToSchema>::schemas(&mut schemas);
    let mut defs = Map::new();
    for (name, schema) in schemas {
        defs.insert(name, to_value(&schema));
    }
    let mut root = to_value(&MifDocument::schema());
    let Value::Object(members) = &mut root else {
        unreachable!("MifDocument is an object schema")
    };
    let mut doc = Map::new();
    doc.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    doc.insert(
        "$id".into(),
        json!("https://memory.example/schemas/mif-0.1.schema.json"),
    );
    doc.insert("title".into(), json!("Memory Interchange Format (MIF) 0.1"));
    doc.append(members);
    doc.insert("$defs".into(), Value::Object(defs));
    let mut text = serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON serializes");
    text.push('\n');
    text
}

/// A schema as JSON, its references to components turned into references to `$defs`.
fn to_value(schema: &impl Serialize) -> Value {
    let mut value = serde_json::to_value(schema).expect("a schema serializes");
    rewrite_refs(&mut value);
    value
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(members) => {
            if let Some(Value::String(target)) = members.get_mut("$ref")
                && let Some(name) = target.strip_prefix("#/components/schemas/")
            {
                *target = format!("#/$defs/{name}");
            }
            members.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}
