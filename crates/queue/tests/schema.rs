//! The published schema of queue messages (`proto-docs/queue-task.schema.json`) describes what
//! this crate writes: the same kinds, and for each the same data fields, all required; and every
//! kind round-trips through the wire format.

use std::collections::BTreeSet;

use queue::{KINDS, Task};
use serde_json::Value;
use uuid::Uuid;

fn schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../proto-docs/queue-task.schema.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("the schema is committed"))
        .expect("the schema is JSON")
}

/// One task of every kind.
fn samples() -> Vec<Task> {
    vec![
        Task::Echo {
            message: "hi".into(),
        },
        Task::SendEmail {
            email_log_id: Uuid::now_v7(),
            project_id: Uuid::now_v7(),
        },
        Task::Render {
            job_id: Uuid::now_v7(),
            user_id: Uuid::now_v7(),
        },
        Task::ProviderEvent {
            receipt_id: Uuid::now_v7(),
        },
        Task::BridgeGenerate {
            run_id: Uuid::now_v7(),
            user_id: Uuid::now_v7(),
        },
        Task::WebhookDeliver {
            delivery_id: Uuid::now_v7(),
            project_id: Uuid::now_v7(),
        },
        Task::ModelRun {
            run_id: Uuid::now_v7(),
            user_id: Uuid::now_v7(),
        },
        Task::RenderVideo {
            job_id: Uuid::now_v7(),
            user_id: Uuid::now_v7(),
        },
    ]
}

#[test]
fn every_variant_round_trips_and_kind_matches_the_wire_type() {
    let kinds: Vec<&str> = samples().iter().map(Task::kind).collect();
    assert_eq!(kinds, KINDS);
    for task in samples() {
        let bytes = task.to_json().unwrap();
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value["type"], task.kind());
        assert_eq!(Task::from_json(&bytes).unwrap(), task);
    }
}

#[test]
fn the_schema_lists_every_kind_and_its_fields() {
    let schema = schema();
    let listed: BTreeSet<&str> = schema["properties"]["type"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, KINDS.iter().copied().collect());
    assert_eq!(samples().len(), KINDS.len(), "a sample per kind");
    assert_eq!(schema["properties"]["v"]["const"], queue::TASK_VERSION);

    for task in samples() {
        let message = task.to_value();
        let kind = message["type"].as_str().unwrap();
        let data_schema = &schema["$defs"][kind]["properties"]["data"];
        let written: BTreeSet<&str> = message["data"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let described: BTreeSet<&str> = data_schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no schema for {kind}"))
            .keys()
            .map(String::as_str)
            .collect();
        let required: BTreeSet<&str> = data_schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(written, described, "{kind}: fields");
        assert_eq!(written, required, "{kind}: required fields");
    }
}
