//! Brevo's API v3 for a migration: lists (`/contacts/lists`, 50 a page), contacts paged with
//! `limit`/`offset` (`emailBlacklisted` is the opt-out, `attributes` the properties, `listIds`
//! the lists), transactional templates (`/smtp/templates`) and email campaigns.

use serde_json::{Map, Value};

use super::fetch::{FetchError, Fetcher};
use super::records::{
    Cursor, Fetched, Read, Records, RemoteCampaign, RemoteContact, RemoteList, RemoteSuppression,
    RemoteTemplate, Stage, id, text,
};
use super::{MAX_LISTS, Paging, address, attribution};

/// Brevo's page limits: lists 50, campaigns 100 (contacts and templates 1000).
const LIST_PAGE: u32 = 50;
const CAMPAIGN_PAGE: u32 = 100;

fn items<'a>(answer: &'a Value, key: &str) -> &'a [Value] {
    answer[key].as_array().map_or(&[], Vec::as_slice)
}

pub async fn fetch(
    f: &Fetcher<'_>,
    cursor: &Cursor,
    paging: Paging,
) -> Result<Fetched, FetchError> {
    let offset = cursor.offset;
    let (path, key, limit) = match cursor.stage {
        Stage::Lists => ("/contacts/lists", "lists", LIST_PAGE),
        Stage::Suppressions | Stage::Contacts => ("/contacts", "contacts", 1000),
        Stage::Templates => ("/smtp/templates", "templates", 1000),
        Stage::Campaigns => ("/emailCampaigns", "campaigns", CAMPAIGN_PAGE),
        Stage::Done => {
            return Ok(Fetched {
                records: Records::Lists(Vec::new()),
                next: cursor.clone(),
            });
        }
    };
    let limit = limit.min(paging.page_size);
    let answer = f
        .get(&format!("{path}?limit={limit}&offset={offset}"))
        .await?;
    let page = items(&answer, key);
    let paging_here = Paging {
        page_size: limit,
        ..paging
    };
    let mut next = paging_here.by_offset(cursor, page.len(), answer["count"].as_u64());
    let records = match cursor.stage {
        Stage::Lists => {
            let lists: Vec<RemoteList> = page
                .iter()
                .map(|l| RemoteList {
                    id: id(&l["id"]),
                    name: text(&l["name"]).unwrap_or_else(|| id(&l["id"])),
                })
                .collect();
            let mut all = cursor.lists.clone();
            all.extend(lists.iter().cloned());
            all.truncate(MAX_LISTS);
            next.lists = all;
            Records::Lists(lists)
        }
        Stage::Suppressions => Records::Suppressions(
            page.iter()
                .filter(|c| c["emailBlacklisted"] == true)
                .map(|c| {
                    address(&c["id"], &c["email"]).map(|email| RemoteSuppression {
                        email,
                        reason: "unsubscribed",
                    })
                })
                .collect(),
        ),
        Stage::Contacts => {
            Records::Contacts(page.iter().map(|c| contact(c, &cursor.lists)).collect())
        }
        Stage::Templates => Records::Templates(
            page.iter()
                .map(|t| RemoteTemplate {
                    remote_id: id(&t["id"]),
                    name: text(&t["name"]).unwrap_or_else(|| format!("Template {}", id(&t["id"]))),
                    subject: text(&t["subject"]),
                    html: text(&t["htmlContent"]),
                })
                .collect(),
        ),
        Stage::Campaigns | Stage::Done => Records::Campaigns(
            page.iter()
                .map(|c| RemoteCampaign {
                    remote_id: id(&c["id"]),
                    name: text(&c["name"]).unwrap_or_else(|| format!("Campaign {}", id(&c["id"]))),
                    subject: text(&c["subject"]).unwrap_or_default(),
                    html: text(&c["htmlContent"]),
                })
                .collect(),
        ),
    };
    Ok(Fetched { records, next })
}

/// A contact: `FIRSTNAME` and `LASTNAME` as the names, the other attributes as properties,
/// its lists' names as tags.
fn contact(c: &Value, lists: &[RemoteList]) -> Read<RemoteContact> {
    let email = address(&c["id"], &c["email"])?;
    let mut properties = Map::new();
    let mut first_name = None;
    let mut last_name = None;
    if let Some(attributes) = c["attributes"].as_object() {
        for (name, value) in attributes {
            match name.as_str() {
                "FIRSTNAME" => first_name = text(value),
                "LASTNAME" => last_name = text(value),
                _ if value.is_null() => {}
                _ => {
                    properties.insert(name.to_lowercase(), value.clone());
                }
            }
        }
    }
    properties.insert(
        "imported_from".to_owned(),
        attribution("brevo", &id(&c["id"])),
    );
    let tags = c["listIds"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|list| lists.iter().find(|l| l.id == id(list)))
                .map(|l| l.name.clone())
                .collect()
        })
        .unwrap_or_default();
    Ok(RemoteContact {
        email,
        first_name,
        last_name,
        properties,
        tags,
        subscribed: c["emailBlacklisted"] != true,
    })
}
