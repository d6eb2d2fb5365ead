//! Mailchimp's Marketing API 3.0 for a migration: audiences (`/lists`), their members paged
//! with `count`/`offset` (`status` subscribed, unsubscribed or cleaned; `merge_fields`;
//! `tags`), user templates, and campaigns with their `/content`.

use serde_json::{Map, Value};

use super::fetch::{FetchError, Fetcher};
use super::records::{
    Cursor, Fetched, Read, Records, RemoteCampaign, RemoteContact, RemoteList, RemoteSuppression,
    Stage, id, text,
};
use super::{Paging, address, attribution};

/// The member statuses that are opt-outs, one pass each, and the reason they are suppressed
/// for.
const OPTED_OUT: [(&str, &str); 2] = [("unsubscribed", "unsubscribed"), ("cleaned", "bounced")];

/// Campaigns per page: each needs its content read too.
const CAMPAIGN_PAGE: u32 = 50;

pub async fn fetch(
    f: &Fetcher<'_>,
    cursor: &Cursor,
    paging: Paging,
) -> Result<Fetched, FetchError> {
    let count = paging.page_size;
    match cursor.stage {
        Stage::Lists => {
            let answer = f
                .get(&format!(
                    "/3.0/lists?count={count}&offset={}&fields=lists.id,lists.name,total_items",
                    cursor.offset
                ))
                .await?;
            let lists: Vec<RemoteList> = items(&answer, "lists")
                .iter()
                .filter_map(|l| {
                    Some(RemoteList {
                        id: text(&l["id"])?,
                        name: text(&l["name"]).unwrap_or_else(|| id(&l["id"])),
                    })
                })
                .collect();
            let mut next = paging.by_offset(cursor, lists.len(), total(&answer));
            let mut all = cursor.lists.clone();
            all.extend(lists.iter().cloned());
            all.truncate(super::MAX_LISTS);
            next.lists = all;
            Ok(Fetched {
                records: Records::Lists(lists),
                next,
            })
        }
        Stage::Suppressions => {
            let Some((list, (status, reason))) = cursor
                .lists
                .get(cursor.pass / OPTED_OUT.len())
                .map(|l| (l, OPTED_OUT[cursor.pass % OPTED_OUT.len()]))
            else {
                return Ok(Fetched {
                    records: Records::Suppressions(Vec::new()),
                    next: cursor.next_stage(paging.campaigns_only),
                });
            };
            let answer = f
                .get(&format!(
                    "/3.0/lists/{}/members?status={status}&count={count}&offset={}\
                     &fields=members.id,members.email_address,total_items",
                    list.id, cursor.offset
                ))
                .await?;
            let members = items(&answer, "members");
            let records = members
                .iter()
                .map(|m| {
                    address(&m["id"], &m["email_address"])
                        .map(|email| RemoteSuppression { email, reason })
                })
                .collect();
            Ok(Fetched {
                records: Records::Suppressions(records),
                next: paging.by_offset_in_pass(cursor, members.len(), total(&answer)),
            })
        }
        Stage::Contacts => {
            let Some(list) = cursor.lists.get(cursor.pass) else {
                return Ok(Fetched {
                    records: Records::Contacts(Vec::new()),
                    next: cursor.next_stage(paging.campaigns_only),
                });
            };
            let answer = f
                .get(&format!(
                    "/3.0/lists/{}/members?count={count}&offset={}\
                     &fields=members.id,members.email_address,members.status,\
                     members.merge_fields,members.tags,total_items",
                    list.id, cursor.offset
                ))
                .await?;
            let members = items(&answer, "members");
            let records = members.iter().map(|m| contact(m, list)).collect();
            Ok(Fetched {
                records: Records::Contacts(records),
                next: paging.by_offset_in_pass(cursor, members.len(), total(&answer)),
            })
        }
        Stage::Templates => {
            let answer = f
                .get(&format!(
                    "/3.0/templates?type=user&count={count}&offset={}\
                     &fields=templates.id,templates.name,total_items",
                    cursor.offset
                ))
                .await?;
            let templates = items(&answer, "templates");
            let records = templates
                .iter()
                .map(|t| super::records::RemoteTemplate {
                    remote_id: id(&t["id"]),
                    name: text(&t["name"]).unwrap_or_else(|| format!("Template {}", id(&t["id"]))),
                    subject: None,
                    html: None,
                })
                .collect();
            Ok(Fetched {
                records: Records::Templates(records),
                next: paging.by_offset(cursor, templates.len(), total(&answer)),
            })
        }
        Stage::Campaigns => {
            let count = count.min(CAMPAIGN_PAGE);
            let answer = f
                .get(&format!(
                    "/3.0/campaigns?count={count}&offset={}\
                     &fields=campaigns.id,campaigns.settings,total_items",
                    cursor.offset
                ))
                .await?;
            let campaigns = items(&answer, "campaigns");
            let mut records = Vec::with_capacity(campaigns.len());
            for c in campaigns {
                let remote_id = id(&c["id"]);
                let content = f
                    .get(&format!("/3.0/campaigns/{remote_id}/content"))
                    .await?;
                let settings = &c["settings"];
                records.push(RemoteCampaign {
                    name: text(&settings["title"])
                        .or_else(|| text(&settings["subject_line"]))
                        .unwrap_or_else(|| format!("Campaign {remote_id}")),
                    subject: text(&settings["subject_line"]).unwrap_or_default(),
                    html: text(&content["html"]),
                    remote_id,
                });
            }
            Ok(Fetched {
                next: Paging {
                    page_size: count,
                    ..paging
                }
                .by_offset(cursor, campaigns.len(), total(&answer)),
                records: Records::Campaigns(records),
            })
        }
        Stage::Done => Ok(Fetched {
            records: Records::Lists(Vec::new()),
            next: cursor.clone(),
        }),
    }
}

fn items<'a>(answer: &'a Value, key: &str) -> &'a [Value] {
    answer[key].as_array().map_or(&[], Vec::as_slice)
}

fn total(answer: &Value) -> Option<u64> {
    answer["total_items"].as_u64()
}

/// A member of `list`: its merge fields as properties (`FNAME` and `LNAME` as the names), the
/// audience's name and its tags as tags.
fn contact(member: &Value, list: &RemoteList) -> Read<RemoteContact> {
    let email = address(&member["id"], &member["email_address"])?;
    let remote_id = text(&member["id"]).unwrap_or_default();
    let mut properties = Map::new();
    let mut first_name = None;
    let mut last_name = None;
    if let Some(fields) = member["merge_fields"].as_object() {
        for (name, value) in fields {
            match (name.as_str(), text(value)) {
                ("FNAME", Some(v)) => first_name = Some(v),
                ("LNAME", Some(v)) => last_name = Some(v),
                (_, _) if value.is_null() || value == "" => {}
                _ => {
                    properties.insert(name.to_lowercase(), value.clone());
                }
            }
        }
    }
    properties.insert(
        "imported_from".to_owned(),
        attribution("mailchimp", &remote_id),
    );
    let mut tags = vec![list.name.clone()];
    if let Some(member_tags) = member["tags"].as_array() {
        tags.extend(member_tags.iter().filter_map(|t| text(&t["name"])));
    }
    Ok(RemoteContact {
        email,
        first_name,
        last_name,
        properties,
        tags,
        subscribed: member["status"] == "subscribed",
    })
}
