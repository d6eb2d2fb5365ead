//! Checks a job against the published schema of queue messages
//! (`proto-docs/queue-task.schema.json`): its kind is listed, and the data it writes has
//! exactly the fields described there, all required. For the services' tests.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Job;

/// The committed schema (read from the workspace the crate was built in).
pub fn published() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../proto-docs/queue-task.schema.json"
    );
    let text = std::fs::read_to_string(path).expect("the schema is committed");
    serde_json::from_str(&text).expect("the schema is JSON")
}

/// Panics, naming the difference, unless the schema describes `sample`'s kind and fields.
pub fn check<J: Job>(sample: &J) {
    let schema = published();
    assert_eq!(schema["properties"]["v"]["const"], crate::TASK_VERSION);
    let listed = schema["properties"]["type"]["enum"]
        .as_array()
        .expect("the schema lists the kinds")
        .iter()
        .any(|kind| kind == J::KIND);
    assert!(listed, "{}: not listed in the schema", J::KIND);

    let message = crate::to_value(sample);
    let data_schema = &schema["$defs"][J::KIND]["properties"]["data"];
    let written: BTreeSet<&str> = message["data"]
        .as_object()
        .expect("a job's data is an object")
        .keys()
        .map(String::as_str)
        .collect();
    let described: BTreeSet<&str> = data_schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no schema for {}", J::KIND))
        .keys()
        .map(String::as_str)
        .collect();
    let required: BTreeSet<&str> = data_schema["required"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no required fields", J::KIND))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(written, described, "{}: fields", J::KIND);
    assert_eq!(written, required, "{}: required fields", J::KIND);

    let bytes = crate::encode(sample).expect("a job encodes");
    let back = crate::Envelope::from_json(&bytes)
        .and_then(crate::Envelope::decode::<J>)
        .unwrap_or_else(|e| panic!("{}: does not round-trip: {e}", J::KIND));
    assert_eq!(
        crate::encode(&back).expect("a job encodes"),
        bytes,
        "{}: round trip",
        J::KIND
    );
}

/// The kinds the schema lists.
pub fn kinds() -> Vec<String> {
    published()["properties"]["type"]["enum"]
        .as_array()
        .map(|kinds| {
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
