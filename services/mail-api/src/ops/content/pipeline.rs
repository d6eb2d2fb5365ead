//! The content pipeline (`POST /content/pipeline`, `trigger_content_pipeline`): reads each
//! source's feed through the SSRF-safe client, keeps the items the source has not seen, and
//! writes one digest draft per site (pending a person's approval; nothing is sent). The items
//! are marked seen in the draft's transaction: a retry after a success finds nothing new, and
//! two concurrent runs never put one item in two drafts.

use std::collections::BTreeMap;
use std::time::Duration;

use delivery::safe_http::{SafeClient, check_url};
use feed_rs::model::{Entry, Link, Text};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::source_not_found;
use crate::AppState;
use crate::db::content::{self, Source};
use crate::db::drafts::{self, NewDraft};
use crate::flows;

/// The most a feed's answer may weigh.
pub const FEED_MAX_BYTES: usize = 2 * 1024 * 1024;
/// Each read's time limit (connect, send, answer).
pub const FEED_TIMEOUT: Duration = Duration::from_secs(10);
/// The most items one digest lists (the rest stay new for the next run).
pub const DIGEST_MAX_ITEMS: usize = 100;
/// A summary's length in the digest, in characters.
const SUMMARY_CHARS: usize = 400;
/// The longest item key kept.
const ITEM_ID_CHARS: usize = 500;

/// What to read; both absent (or null): every source of the project. Unknown fields are
/// refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct TriggerContentPipeline {
    /// Only this site's sources (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only this source (404 `CONTENT_SOURCE_NOT_FOUND` when it is not a source of the
    /// project, or not of `site_id`).
    pub source_id: Option<Uuid>,
}

impl Validate for TriggerContentPipeline {}

/// One source's read.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentSourceRead {
    pub source_id: Uuid,
    pub site_id: Uuid,
    /// Items in the feed.
    pub items: usize,
    /// Items the source had not seen (each is in the site's digest).
    pub new_items: usize,
    /// Why the feed could not be read or parsed; null when it was.
    pub error: Option<String>,
}

/// A digest draft written by the run.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentDigest {
    pub site_id: Uuid,
    /// The draft (`GET /drafts/{id}`), pending a person's approval.
    pub draft_id: Uuid,
    /// The items it lists.
    pub items: usize,
}

/// What a run did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentPipelineRun {
    /// Sources whose feed was read and parsed.
    pub sources_read: usize,
    /// Sources whose feed could not be read or parsed (see `sources[].error`).
    pub sources_failed: usize,
    /// Items not seen before, in all.
    pub new_items: usize,
    /// One draft per site with new items; empty when there were none.
    pub drafts: Vec<ContentDigest>,
    pub sources: Vec<ContentSourceRead>,
}

/// A feed item as the digest lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestItem {
    /// The feed's id for it (or its link, or its title).
    pub key: String,
    pub title: String,
    /// An `http`/`https` link, if it has one.
    pub link: Option<String>,
    /// Plain text, cut.
    pub summary: Option<String>,
}

fn text_of(text: Option<&Text>) -> Option<String> {
    text.map(|t| plain(&t.content)).filter(|t| !t.is_empty())
}

/// Text without tags, its whitespace collapsed (it is escaped when the digest is written).
fn plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(text: String, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text;
    }
    let mut cut: String = text.chars().take(chars).collect();
    cut.push('…');
    cut
}

fn web_link(links: &[Link]) -> Option<String> {
    links
        .iter()
        .filter(|l| l.rel.as_deref().is_none_or(|rel| rel == "alternate"))
        .chain(links.iter())
        .map(|l| l.href.trim())
        .find(|href| {
            let lower = href.to_ascii_lowercase();
            lower.starts_with("https://") || lower.starts_with("http://")
        })
        .map(str::to_owned)
}

fn item_of(entry: &Entry) -> DigestItem {
    let link = web_link(&entry.links);
    let title = text_of(entry.title.as_ref())
        .or_else(|| link.clone())
        .unwrap_or_else(|| "(untitled)".to_owned());
    let summary = text_of(entry.summary.as_ref())
        .or_else(|| {
            entry
                .content
                .as_ref()
                .and_then(|c| c.body.as_deref())
                .map(plain)
                .filter(|t| !t.is_empty())
        })
        .map(|s| cut(s, SUMMARY_CHARS));
    DigestItem {
        key: cut(entry.id.clone(), ITEM_ID_CHARS),
        title: cut(title, 300),
        link,
        summary,
    }
}

/// The items of a feed (RSS 0.9x/1.0/2.0, Atom or JSON Feed), in the feed's order. An item
/// without an id is keyed by its link, or its title, so that it stays the same item between
/// reads.
pub fn parse_feed(bytes: &[u8]) -> Result<Vec<DigestItem>, String> {
    let parser = feed_rs::parser::Builder::new()
        .id_generator(|links, title, _| {
            links
                .iter()
                .map(|l| format!("link:{}", l.href.trim()))
                .next()
                .or_else(|| {
                    title
                        .as_ref()
                        .map(|t| format!("title:{}", t.content.trim()))
                })
                .unwrap_or_default()
        })
        .build();
    let feed = parser
        .parse(bytes)
        .map_err(|e| format!("not a feed: {e}"))?;
    Ok(feed
        .entries
        .iter()
        .map(item_of)
        .filter(|item| !item.key.is_empty())
        .collect())
}

/// Reads a feed through the SSRF-safe client: its bytes, or why not.
async fn fetch(client: &SafeClient, url: &str) -> Result<Vec<u8>, String> {
    let url = check_url(url, client.policy()).map_err(|e| format!("the url {e}"))?;
    let mut response = client
        .http()
        .get(url)
        .header(
            "accept",
            "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| format!("the feed could not be read: {}", describe(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the feed answered HTTP {}", status.as_u16()));
    }
    if response
        .content_length()
        .is_some_and(|n| n > FEED_MAX_BYTES as u64)
    {
        return Err(format!("the feed is larger than {FEED_MAX_BYTES} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("the feed could not be read: {}", describe(&e)))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > FEED_MAX_BYTES {
            return Err(format!("the feed is larger than {FEED_MAX_BYTES} bytes"));
        }
    }
    Ok(body)
}

fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The digest's HTML: each item's title (linked when it has a link) and summary, escaped.
pub fn digest_html(site_name: &str, items: &[(String, DigestItem)]) -> String {
    maud::html! {
        h1 { "New from " (site_name) }
        ul {
            @for (_, item) in items {
                li {
                    @if let Some(link) = &item.link {
                        a href=(link) { (item.title) }
                    } @else {
                        (item.title)
                    }
                    @if let Some(summary) = &item.summary {
                        p { (summary) }
                    }
                }
            }
        }
    }
    .into_string()
}

fn digest_text(items: &[(String, DigestItem)]) -> String {
    items
        .iter()
        .map(|(_, item)| {
            let mut line = format!("- {}", item.title);
            if let Some(link) = &item.link {
                line.push_str(&format!("\n  {link}"));
            }
            if let Some(summary) = &item.summary {
                line.push_str(&format!("\n  {summary}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Runs the pipeline over the project's sources (of `site_id`, or `source_id` only).
pub async fn trigger(
    state: &AppState,
    project_id: Uuid,
    req: &TriggerContentPipeline,
) -> Result<ContentPipelineRun, ApiError> {
    let sources: Vec<Source> = {
        let mut conn = store::conn(&state.pool).await?;
        if let Some(site_id) = req.site_id {
            flows::require_site(&mut conn, project_id, site_id).await?;
        }
        let sources = content::list_sources(
            &mut conn,
            project_id,
            req.site_id,
            req.source_id,
            None,
            None,
        )
        .await?;
        if let Some(id) = req.source_id
            && sources.is_empty()
        {
            return Err(source_not_found(id));
        }
        sources
    };
    let client = SafeClient::new(state.outbound.target_policy(), FEED_TIMEOUT, 0)
        .map_err(|e| ApiError::internal(format!("the feed client: {e}")))?;
    // Read without a connection held: a slow feed must not keep one.
    let mut reads = Vec::with_capacity(sources.len());
    for source in &sources {
        let items = match fetch(&client, &source.url).await {
            Ok(bytes) => parse_feed(&bytes),
            Err(err) => Err(err),
        };
        reads.push(items);
    }
    let mut conn = store::conn(&state.pool).await?;
    let mut run = ContentPipelineRun {
        sources_read: 0,
        sources_failed: 0,
        new_items: 0,
        drafts: Vec::new(),
        sources: Vec::new(),
    };
    // Per site: (source, its items not seen yet).
    let mut by_site: BTreeMap<Uuid, Vec<(&Source, Vec<DigestItem>)>> = BTreeMap::new();
    for (source, read) in sources.iter().zip(reads) {
        let error = read.as_ref().err().cloned();
        content::note_fetch(&mut conn, project_id, source.id, error.as_deref()).await?;
        let mut entry = ContentSourceRead {
            source_id: source.id,
            site_id: source.site_id,
            items: 0,
            new_items: 0,
            error,
        };
        if let Ok(items) = read {
            run.sources_read += 1;
            entry.items = items.len();
            let keys: Vec<String> = items.iter().map(|i| i.key.clone()).collect();
            let seen = content::seen_among(&mut conn, project_id, source.id, &keys).await?;
            let mut fresh: Vec<DigestItem> = Vec::new();
            for item in items {
                if !seen.contains(&item.key) && !fresh.iter().any(|f| f.key == item.key) {
                    fresh.push(item);
                }
            }
            if !fresh.is_empty() {
                by_site
                    .entry(source.site_id)
                    .or_default()
                    .push((source, fresh));
            }
        } else {
            run.sources_failed += 1;
        }
        run.sources.push(entry);
    }
    for (site_id, per_source) in by_site {
        let written = crate::db::transaction::run_on(&mut conn, async |conn| {
            let Some(site) = crate::db::sites::get(conn, project_id, site_id).await? else {
                return Ok::<_, ApiError>(None);
            };
            let mut listed: Vec<(String, DigestItem)> = Vec::new();
            let mut counts: Vec<(Uuid, usize)> = Vec::new();
            for (source, items) in &per_source {
                let room = DIGEST_MAX_ITEMS.saturating_sub(listed.len());
                let items: Vec<&DigestItem> = items.iter().take(room).collect();
                let keys: Vec<String> = items.iter().map(|i| i.key.clone()).collect();
                // Only what this run marked: a concurrent run keeps what it marked first.
                let marked = content::mark_seen(conn, project_id, source.id, &keys).await?;
                let mine: Vec<&DigestItem> = items
                    .into_iter()
                    .filter(|i| marked.contains(&i.key))
                    .collect();
                counts.push((source.id, mine.len()));
                listed.extend(mine.into_iter().map(|i| (source.url.clone(), i.clone())));
            }
            if listed.is_empty() {
                return Ok(None);
            }
            let subject = format!(
                "New from {}: {} item{}",
                site.name,
                listed.len(),
                if listed.len() == 1 { "" } else { "s" }
            );
            let subject = cut(subject.replace(['\r', '\n'], " "), 990);
            let html = digest_html(&site.name, &listed);
            let text = digest_text(&listed);
            let draft = drafts::insert(
                conn,
                NewDraft {
                    id: Uuid::now_v7(),
                    project_id,
                    site_id,
                    subject: &subject,
                    body_html: &html,
                    text_body: Some(text.as_str()),
                },
            )
            .await?;
            Ok(Some((draft.id, listed.len(), counts)))
        })
        .await?;
        if let Some((draft_id, items, counts)) = written {
            run.new_items += items;
            for (source_id, count) in counts {
                if let Some(read) = run.sources.iter_mut().find(|r| r.source_id == source_id) {
                    read.new_items = count;
                }
            }
            run.drafts.push(ContentDigest {
                site_id,
                draft_id,
                items,
            });
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_and_atom_items_are_read_and_escaped_in_the_digest() {
        let rss = br#"<?xml version="1.0"?><rss version="2.0"><channel><title>T</title>
            <item><title>One &lt;b&gt;</title><link>https://example.com/1</link>
            <description>&lt;p&gt;First &amp;amp; best&lt;/p&gt;</description><guid>a1</guid></item>
            <item><title>Two</title><link>javascript:alert(1)</link></item>
            </channel></rss>"#;
        let items = parse_feed(rss).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].key, "a1");
        assert_eq!(items[0].link.as_deref(), Some("https://example.com/1"));
        assert_eq!(items[0].summary.as_deref(), Some("First & best"));
        assert_eq!(items[1].link, None);
        let html = digest_html("Site", &[(String::new(), items[0].clone())]);
        // Markup in a title is dropped, the text kept.
        assert!(html.contains(">One</a>") && !html.contains("<b>"), "{html}");
        assert!(html.contains("First &amp; best"), "{html}");
        let atom = br#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">
            <title>A</title><id>urn:a</id><updated>2026-01-01T00:00:00Z</updated>
            <entry><title>E1</title><id>urn:e1</id><updated>2026-01-01T00:00:00Z</updated>
            <link href="https://example.com/e1"/><summary>S1</summary></entry></feed>"#;
        let items = parse_feed(atom).unwrap();
        assert_eq!(items[0].key, "urn:e1");
        assert_eq!(items[0].title, "E1");
        assert!(parse_feed(b"not a feed").is_err());
    }
}
