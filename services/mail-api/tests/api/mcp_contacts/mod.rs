//! The contacts group's tools through the REST mirror, each effect checked through a REST
//! route: one contact (get, update), tags, unsubscribe, import, export, timeline, schema,
//! duplicates and merge, inactivity and list hygiene; and another project's ids through them.

use std::time::Duration;

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

mod hygiene;
mod import_export;
mod isolation;
mod one_contact;
mod schema_duplicates;

/// `GET path` with `key`, answered 200.
pub(crate) async fn get_ok(h: &Harness, key: &str, path: &str) -> Value {
    let res = h.get_with(key, path).await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// A contact added through `add_subscriber`: its id.
async fn subscriber(h: &Harness, key: &str, body: Value) -> String {
    let contact = h.tool_ok(key, "add_subscriber", body).await;
    contact["contact_id"].as_str().unwrap().to_owned()
}

fn statuses(contact: &Value) -> Vec<(String, String)> {
    contact["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["site_id"].as_str().unwrap().to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ids_of(page: &Value) -> Vec<String> {
    field_of_each(page, "contact_id")
}

/// Apart in time, so that UUID v7 ids made by the test and by the server order as made.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}
