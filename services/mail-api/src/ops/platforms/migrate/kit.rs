//! Kit's (ConvertKit's) API v4 for a migration, paged by cursor (`after`, answered as
//! `pagination.end_cursor` while `pagination.has_next_page`): tags (the lists), subscribers
//! (`state` active, cancelled, bounced, complained), each tag's subscribers, email templates
//! and broadcasts (the campaigns).

use serde_json::{Map, Value};

use super::fetch::{FetchError, Fetcher};
use super::records::{
    Cursor, Fetched, Read, Records, RemoteCampaign, RemoteContact, RemoteList, RemoteSuppression,
    RemoteTemplate, Stage, id, text,
};
use super::{MAX_LISTS, Paging, address, attribution};

/// The opted-out states, one pass each, and the suppression reason of each.
const OPTED_OUT: [(&str, &str); 3] = [
    ("cancelled", "unsubscribed"),
    ("bounced", "bounced"),
    ("complained", "complained"),
];

fn items<'a>(answer: &'a Value, key: &str) -> &'a [Value] {
    answer[key].as_array().map_or(&[], Vec::as_slice)
}

/// The cursor of the next page, when there is one.
fn end_cursor(answer: &Value) -> Option<String> {
    let pagination = &answer["pagination"];
    if pagination["has_next_page"] == true {
        text(&pagination["end_cursor"])
    } else {
        None
    }
}

fn page_query(cursor: &Cursor, per_page: u32) -> String {
    match &cursor.after {
        Some(after) => format!("per_page={per_page}&after={after}"),
        None => format!("per_page={per_page}"),
    }
}

pub async fn fetch(
    f: &Fetcher<'_>,
    cursor: &Cursor,
    paging: Paging,
) -> Result<Fetched, FetchError> {
    let query = page_query(cursor, paging.page_size);
    match cursor.stage {
        Stage::Lists => {
            let answer = f.get(&format!("/tags?{query}")).await?;
            let lists: Vec<RemoteList> = items(&answer, "tags")
                .iter()
                .map(|t| RemoteList {
                    id: id(&t["id"]),
                    name: text(&t["name"]).unwrap_or_else(|| id(&t["id"])),
                })
                .collect();
            let mut next = paging.by_token(cursor, end_cursor(&answer), false);
            let mut all = cursor.lists.clone();
            all.extend(lists.iter().cloned());
            all.truncate(MAX_LISTS);
            next.lists = all;
            Ok(Fetched {
                records: Records::Lists(lists),
                next,
            })
        }
        Stage::Suppressions => {
            let Some((status, reason)) = OPTED_OUT.get(cursor.pass).copied() else {
                return Ok(Fetched {
                    records: Records::Suppressions(Vec::new()),
                    next: cursor.next_stage(paging.campaigns_only),
                });
            };
            let answer = f
                .get(&format!("/subscribers?status={status}&{query}"))
                .await?;
            let records = items(&answer, "subscribers")
                .iter()
                .map(|s| {
                    address(&s["id"], &s["email_address"])
                        .map(|email| RemoteSuppression { email, reason })
                })
                .collect();
            Ok(Fetched {
                records: Records::Suppressions(records),
                next: paging.by_token(cursor, end_cursor(&answer), true),
            })
        }
        Stage::Contacts => {
            // Pass 0: every subscriber; then one pass per tag, its subscribers tagged.
            let (path, tag) = match cursor.pass {
                0 => ("/subscribers?status=all".to_owned(), None),
                n => match cursor.lists.get(n - 1) {
                    Some(list) => (
                        format!("/tags/{}/subscribers?status=all", list.id),
                        Some(list),
                    ),
                    None => {
                        return Ok(Fetched {
                            records: Records::Contacts(Vec::new()),
                            next: cursor.next_stage(paging.campaigns_only),
                        });
                    }
                },
            };
            let answer = f.get(&format!("{path}&{query}")).await?;
            let records = items(&answer, "subscribers")
                .iter()
                .map(|s| contact(s, tag))
                // A tag's pass reads again subscribers pass 0 read: a rejected one is
                // reported once, there.
                .filter(|read| tag.is_none() || read.is_ok())
                .collect();
            Ok(Fetched {
                records: Records::Contacts(records),
                next: paging.by_token(cursor, end_cursor(&answer), true),
            })
        }
        Stage::Templates => {
            let answer = f.get(&format!("/email_templates?{query}")).await?;
            let records = items(&answer, "email_templates")
                .iter()
                .map(|t| RemoteTemplate {
                    remote_id: id(&t["id"]),
                    name: text(&t["name"]).unwrap_or_else(|| format!("Template {}", id(&t["id"]))),
                    subject: None,
                    html: None,
                })
                .collect();
            Ok(Fetched {
                records: Records::Templates(records),
                next: paging.by_token(cursor, end_cursor(&answer), false),
            })
        }
        Stage::Campaigns => {
            let answer = f.get(&format!("/broadcasts?{query}")).await?;
            let records = items(&answer, "broadcasts")
                .iter()
                .map(|b| RemoteCampaign {
                    remote_id: id(&b["id"]),
                    name: text(&b["subject"])
                        .unwrap_or_else(|| format!("Broadcast {}", id(&b["id"]))),
                    subject: text(&b["subject"]).unwrap_or_default(),
                    html: text(&b["content"]),
                })
                .collect();
            Ok(Fetched {
                records: Records::Campaigns(records),
                next: paging.by_token(cursor, end_cursor(&answer), false),
            })
        }
        Stage::Done => Ok(Fetched {
            records: Records::Lists(Vec::new()),
            next: cursor.clone(),
        }),
    }
}

/// A subscriber: `first_name`, its custom `fields` as properties, `tag` when read from one.
fn contact(s: &Value, tag: Option<&RemoteList>) -> Read<RemoteContact> {
    let email = address(&s["id"], &s["email_address"])?;
    let mut properties: Map<String, Value> = s["fields"]
        .as_object()
        .map(|fields| {
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.to_lowercase(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    properties.insert(
        "imported_from".to_owned(),
        attribution("kit", &id(&s["id"])),
    );
    Ok(RemoteContact {
        email,
        first_name: text(&s["first_name"]),
        last_name: None,
        properties,
        tags: tag.map(|t| vec![t.name.clone()]).unwrap_or_default(),
        subscribed: s["state"] == "active",
    })
}
