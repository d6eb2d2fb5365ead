//! MailerLite's API (connect.mailerlite.com) for a migration: groups (the lists, paged by
//! `page`), subscribers paged by cursor (`cursor`, answered as `meta.next_cursor`; `status`
//! active, unsubscribed, bounced, junk), each group's subscribers, and campaigns (their
//! first email's content). It has no templates API.

use serde_json::{Map, Value};

use super::fetch::{FetchError, Fetcher};
use super::records::{
    Cursor, Fetched, Read, Records, RemoteCampaign, RemoteContact, RemoteList, RemoteSuppression,
    Stage, id, text,
};
use super::{MAX_LISTS, Paging, address, attribution};

/// The opted-out statuses, one pass each, and the suppression reason of each.
const OPTED_OUT: [(&str, &str); 3] = [
    ("unsubscribed", "unsubscribed"),
    ("bounced", "bounced"),
    ("junk", "complained"),
];

/// Groups and campaigns per page (paged by number).
const PAGE: u32 = 100;

fn data(answer: &Value) -> &[Value] {
    answer["data"].as_array().map_or(&[], Vec::as_slice)
}

fn cursor_query(cursor: &Cursor, limit: u32) -> String {
    match &cursor.after {
        Some(after) => format!("limit={limit}&cursor={after}"),
        None => format!("limit={limit}"),
    }
}

/// After a numbered page (`offset` holds the pages read): the next one while
/// `meta.last_page` is not reached.
fn by_page(cursor: &Cursor, answer: &Value, paging: Paging) -> Cursor {
    let read = cursor.offset + 1;
    match answer["meta"]["last_page"].as_u64() {
        Some(last) if read < last && !data(answer).is_empty() => cursor.at_offset(read),
        _ => cursor.next_stage(paging.campaigns_only),
    }
}

pub async fn fetch(
    f: &Fetcher<'_>,
    cursor: &Cursor,
    paging: Paging,
) -> Result<Fetched, FetchError> {
    let query = cursor_query(cursor, paging.page_size);
    let next_cursor = |answer: &Value| text(&answer["meta"]["next_cursor"]);
    match cursor.stage {
        Stage::Lists => {
            let answer = f
                .get(&format!("/groups?limit={PAGE}&page={}", cursor.offset + 1))
                .await?;
            let lists: Vec<RemoteList> = data(&answer)
                .iter()
                .map(|g| RemoteList {
                    id: id(&g["id"]),
                    name: text(&g["name"]).unwrap_or_else(|| id(&g["id"])),
                })
                .collect();
            let mut next = by_page(cursor, &answer, paging);
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
                .get(&format!("/subscribers?filter[status]={status}&{query}"))
                .await?;
            let records = data(&answer)
                .iter()
                .map(|s| {
                    address(&s["id"], &s["email"]).map(|email| RemoteSuppression { email, reason })
                })
                .collect();
            Ok(Fetched {
                records: Records::Suppressions(records),
                next: paging.by_token(cursor, next_cursor(&answer), true),
            })
        }
        Stage::Contacts => {
            // Pass 0: the active subscribers; then one pass per group, its subscribers tagged.
            let (path, tag) = match cursor.pass {
                0 => ("/subscribers?filter[status]=active".to_owned(), None),
                n => match cursor.lists.get(n - 1) {
                    Some(list) => (format!("/groups/{}/subscribers?", list.id), Some(list)),
                    None => {
                        return Ok(Fetched {
                            records: Records::Contacts(Vec::new()),
                            next: cursor.next_stage(paging.campaigns_only),
                        });
                    }
                },
            };
            let separator = if path.ends_with('?') { "" } else { "&" };
            let answer = f.get(&format!("{path}{separator}{query}")).await?;
            let records = data(&answer)
                .iter()
                .map(|s| contact(s, tag))
                // A group's pass reads again subscribers an earlier pass read (the active
                // ones in pass 0, the opted-out ones as suppressions): a rejected one is
                // reported once, there.
                .filter(|read| tag.is_none() || read.is_ok())
                .collect();
            Ok(Fetched {
                records: Records::Contacts(records),
                next: paging.by_token(cursor, next_cursor(&answer), true),
            })
        }
        Stage::Templates => Ok(Fetched {
            records: Records::Templates(Vec::new()),
            next: cursor.next_stage(paging.campaigns_only),
        }),
        Stage::Campaigns => {
            let answer = f
                .get(&format!(
                    "/campaigns?limit={PAGE}&page={}",
                    cursor.offset + 1
                ))
                .await?;
            let records = data(&answer)
                .iter()
                .map(|c| {
                    let email = &c["emails"][0];
                    RemoteCampaign {
                        remote_id: id(&c["id"]),
                        name: text(&c["name"])
                            .unwrap_or_else(|| format!("Campaign {}", id(&c["id"]))),
                        subject: text(&email["subject"]).unwrap_or_default(),
                        html: text(&email["content"]),
                    }
                })
                .collect();
            Ok(Fetched {
                records: Records::Campaigns(records),
                next: by_page(cursor, &answer, paging),
            })
        }
        Stage::Done => Ok(Fetched {
            records: Records::Lists(Vec::new()),
            next: cursor.clone(),
        }),
    }
}

/// A subscriber: `fields.name` and `fields.last_name` as the names, its other fields as
/// properties, `group` when read from one.
fn contact(s: &Value, group: Option<&RemoteList>) -> Read<RemoteContact> {
    let email = address(&s["id"], &s["email"])?;
    let mut properties = Map::new();
    let mut first_name = None;
    let mut last_name = None;
    if let Some(fields) = s["fields"].as_object() {
        for (name, value) in fields {
            match name.as_str() {
                "name" => first_name = text(value),
                "last_name" => last_name = text(value),
                _ if value.is_null() => {}
                _ => {
                    properties.insert(name.to_lowercase(), value.clone());
                }
            }
        }
    }
    properties.insert(
        "imported_from".to_owned(),
        attribution("mailerlite", &id(&s["id"])),
    );
    Ok(RemoteContact {
        email,
        first_name,
        last_name,
        properties,
        tags: group.map(|g| vec![g.name.clone()]).unwrap_or_default(),
        subscribed: s["status"] == "active",
    })
}
