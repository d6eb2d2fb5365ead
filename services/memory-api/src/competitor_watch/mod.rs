//! The competitor watch's reading of the web. A competitor may name URLs to follow (pages,
//! RSS/Atom feeds); a run reads each through the SSRF-safe client under the deployment's
//! policy (`MEMORY_COMPETITOR_WATCH__…`, see [`fetch`]), keeps its readable text (see
//! [`extract`]) as the owner's snapshot of that URL, and diffs it against the previous one
//! (see [`diff`]). A first read is a baseline; a change is summarised by the model (given the
//! changed lines only) and becomes an intelligence-feed item, `anomaly` when the changed lines
//! mention a price, else `state_change`, with its evidence (the URL and before/after
//! excerpts). The snapshot and the item are written together, and the snapshot only replaces
//! the one the run read: a redelivered or concurrent run never records a change twice.

pub mod diff;
pub mod extract;
pub mod fetch;
pub mod robots;

use std::sync::LazyLock;
use std::time::Duration;

use delivery::safe_http::{TargetPolicy, check_url};
use diesel_async::AsyncConnection;
use http_kit::ApiError;
use llm::ChatModel;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::Pool;

use crate::db::competitor_snapshots::{self as snapshots, Read};
use crate::db::feed::{self, NewFeedItem};
use crate::db::model_runs::Run;
use diff::Change;
use fetch::{Unread, WebReader};

/// Characters of each before/after excerpt kept as evidence.
pub const EXCERPT_CHARS: usize = 500;
/// Characters of a page's text kept as its snapshot.
pub const SNAPSHOT_CHARS: usize = 200_000;

/// `MEMORY_COMPETITOR_WATCH__ALLOW_PRIVATE_TARGETS`, `__TIMEOUT_MS`, `__MAX_BYTES`,
/// `__SCHEDULE_EVERY_SECS`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct WatchSettings {
    /// Lets URLs on loopback and private ranges through (an intranet, tests); never the
    /// metadata addresses. Off by default.
    pub allow_private_targets: bool,
    /// Each read's time limit (connect, send, answer), in milliseconds.
    pub timeout_ms: u64,
    /// Bytes of an answer read at most (the rest is not read).
    pub max_bytes: usize,
    /// Seconds between two passes of the stored watches' scheduler: how late after its
    /// `next_run_at` a watch may start. 0 turns the scheduler off in this process.
    pub schedule_every_secs: u64,
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            timeout_ms: 10_000,
            max_bytes: 2 * 1024 * 1024,
            schedule_every_secs: 60,
        }
    }
}

impl WatchSettings {
    pub fn policy(&self) -> TargetPolicy {
        TargetPolicy::new(self.allow_private_targets)
    }

    /// The time between two scheduler passes; `None`: no scheduler in this process.
    pub fn schedule_every(&self) -> Option<Duration> {
        (self.schedule_every_secs > 0).then(|| Duration::from_secs(self.schedule_every_secs))
    }

    pub fn reader(&self) -> anyhow::Result<WebReader> {
        WebReader::new(
            self.policy(),
            Duration::from_millis(self.timeout_ms.max(1)),
            self.max_bytes.max(1),
        )
    }
}

/// Why `url` cannot be watched under `policy` (checked at the request, before any read): not
/// http(s), credentials, or an address literal or `localhost` the policy does not allow.
pub fn refused(url: &str, policy: TargetPolicy) -> Option<String> {
    if let Err(e) = check_url(url, policy) {
        return Some(e.to_string());
    }
    let host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
        .unwrap_or_default();
    let local = host == "localhost" || host.ends_with(".localhost");
    (local && policy == TargetPolicy::PublicOnly)
        .then(|| format!("names {host}, which is not a public address"))
}

/// What a run found at one URL.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Observation {
    /// The first read: kept as the baseline, nothing reported.
    Baseline,
    /// The same text as the snapshot (or a change another run recorded first).
    Unchanged,
    /// A change, recorded as a feed item.
    Changed {
        kind: &'static str,
        summary: String,
        before: String,
        after: String,
    },
    /// Not read: robots.txt disallows it.
    Skipped { reason: String },
    /// Not read: the URL was refused or the read failed.
    Error { error: String },
}

/// A URL to read, and whose it is.
struct Watched {
    competitor: String,
    url: String,
}

fn watched(input: &Value) -> Vec<Watched> {
    let competitors = input["competitors"].as_array().cloned().unwrap_or_default();
    competitors
        .iter()
        .flat_map(|c| {
            let name = c["name"].as_str().unwrap_or_default().to_owned();
            let urls = c["urls"].as_array().cloned().unwrap_or_default();
            urls.into_iter().filter_map(move |u| {
                u.as_str().map(|url| Watched {
                    competitor: name.clone(),
                    url: url.to_owned(),
                })
            })
        })
        .collect()
}

/// Reads every URL of the run's competitors and records what changed: one entry per URL
/// (`competitor`, `url` and its [`Observation`]). `Ok(Err)`: the model failed summarising a
/// change (nothing of that URL was recorded: the next run finds the change again); `Err`: a
/// database failure, worth another attempt.
pub async fn observe(
    reader: &WebReader,
    pool: &Pool,
    run: &Run,
    model: &ChatModel,
) -> Result<Result<Vec<Value>, ApiError>, String> {
    let mut session = reader.session();
    let mut observed = Vec::new();
    for target in watched(&run.input) {
        let observation = match session.read(&target.url).await {
            Err(Unread::Disallowed) => Observation::Skipped {
                reason: "robots.txt disallows it".to_owned(),
            },
            Err(Unread::Failed(error)) => Observation::Error { error },
            Ok(page) => match extract::readable_text(&page.content_type, &page.body) {
                Err(error) => Observation::Error { error },
                Ok(text) => {
                    match record(pool, run, model, &target, &cut(&text, SNAPSHOT_CHARS)).await? {
                        Ok(observation) => observation,
                        Err(model_failure) => return Ok(Err(model_failure)),
                    }
                }
            },
        };
        let mut entry = serde_json::to_value(&observation).map_err(|e| e.to_string())?;
        entry["competitor"] = json!(target.competitor);
        entry["url"] = json!(target.url);
        observed.push(entry);
    }
    Ok(Ok(observed))
}

/// Compares `text` with the owner's snapshot of the URL and records it (with a feed item when
/// it changed). No connection is held while the model summarises the change: the snapshot
/// is replaced only if it is still the one compared.
async fn record(
    pool: &Pool,
    run: &Run,
    model: &ChatModel,
    target: &Watched,
    text: &str,
) -> Result<Result<Observation, ApiError>, String> {
    let owner = run.view().owner;
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let previous = snapshots::find(&mut conn, owner, &target.url)
        .await
        .map_err(|e| e.to_string())?;
    let sha256 = hex::encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()));
    let read = Read {
        url: &target.url,
        competitor: &target.competitor,
        content: text,
        sha256: &sha256,
    };
    let Some(previous) = previous else {
        snapshots::replace(&mut conn, owner, None, &read)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(Ok(Observation::Baseline));
    };
    let change = diff::line_diff(&previous.content, text);
    if previous.sha256 == sha256 || change.is_empty() {
        return Ok(Ok(Observation::Unchanged));
    }
    drop(conn);
    let summary = match summarise(model, &target.competitor, &change).await {
        Ok(summary) => summary,
        Err(failure) => return Ok(Err(failure)),
    };
    let kind = if mentions_price(&change) {
        "anomaly"
    } else {
        "state_change"
    };
    let before = cut(&change.removed.join("\n"), EXCERPT_CHARS);
    let after = cut(&change.added.join("\n"), EXCERPT_CHARS);
    let evidence = json!({
        "competitor": target.competitor,
        "url": target.url,
        "before": before,
        "after": after,
    });
    let item_summary = cut(&format!("{}: {summary}", target.competitor), 1_000);
    let view = run.view();
    let previous_sha = previous.sha256;
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let recorded = conn
        .transaction(async |conn| {
            if !snapshots::replace(conn, owner, Some(&previous_sha), &read).await? {
                return Ok(false);
            }
            let item = NewFeedItem {
                kind,
                product_name: None,
                summary: &item_summary,
                severity: if kind == "anomaly" { "warning" } else { "info" },
                workspace_id: view.workspace,
            };
            feed::add_with_evidence(conn, owner, item, Some(&evidence)).await?;
            Ok(true)
        })
        .await
        .map_err(|e: diesel::result::Error| e.to_string())?;
    // Another run read the same change first and reported it.
    if !recorded {
        return Ok(Ok(Observation::Unchanged));
    }
    Ok(Ok(Observation::Changed {
        kind,
        summary,
        before,
        after,
    }))
}

/// The model's summary of a change, given the changed lines only.
async fn summarise(
    model: &ChatModel,
    competitor: &str,
    change: &Change,
) -> Result<String, ApiError> {
    let system = "You watch competitors for a team. A competitor's web page changed; you are \
                  given only the lines removed and the lines added. Summarise what changed in \
                  one or two sentences, without guessing beyond these lines. Answer with one \
                  JSON object with the key \"summary\" (string).";
    let request = json!({
        "competitor": competitor,
        "removed": change.removed.iter().take(50).collect::<Vec<_>>(),
        "added": change.added.iter().take(50).collect::<Vec<_>>(),
    });
    let answer = model.json_object(system, &request.to_string()).await?;
    answer["summary"]
        .as_str()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::unprocessable("the model's summary has no \"summary\" string")
                .with_code(llm::LlmErrorCode::InvalidOutput)
        })
}

/// Whether the changed lines mention a price (a currency symbol or code beside an amount).
pub fn mentions_price(change: &Change) -> bool {
    static PRICE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)([$€£¥₹]\s?\d)|(\d[\d.,]*\s?(usd|eur|gbp|jpy|inr|chf|cad|aud|€|£|\$))|\b(price|pricing)\b.*\d",
        )
        .expect("the price pattern")
    });
    change
        .removed
        .iter()
        .chain(&change.added)
        .any(|line| PRICE.is_match(line))
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_metadata_urls_are_refused_under_the_production_policy() {
        let public = TargetPolicy::PublicOnly;
        for url in [
            "http://169.254.169.254/latest/meta-data",
            "http://127.0.0.1:8080/pricing",
            "http://[::1]/",
            "http://10.1.2.3/",
            "http://localhost/pricing",
            "http://app.localhost/",
            "http://LOCALHOST./",
            "ftp://example.com/",
        ] {
            assert!(refused(url, public).is_some(), "{url}");
        }
        assert_eq!(refused("https://example.com/pricing", public), None);
        let private = TargetPolicy::AllowPrivate;
        assert_eq!(refused("http://127.0.0.1:8080/pricing", private), None);
        assert!(refused("http://169.254.169.254/", private).is_some());
    }

    #[test]
    fn a_price_change_is_an_anomaly_and_other_changes_are_not() {
        let change = |removed: &str, added: &str| Change {
            removed: vec![removed.to_owned()],
            added: vec![added.to_owned()],
        };
        assert!(mentions_price(&change("Pro: $29/month", "Pro: $39/month")));
        assert!(mentions_price(&change("Pro 29 EUR", "Pro 35 EUR")));
        assert!(!mentions_price(&change(
            "We are hiring",
            "We launched a blog"
        )));
    }

    #[test]
    fn excerpts_are_cut_on_characters() {
        assert_eq!(cut("ééé", 2), "éé…");
        assert_eq!(cut("ab", 2), "ab");
    }
}
