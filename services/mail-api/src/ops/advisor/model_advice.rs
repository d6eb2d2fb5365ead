//! The model-backed advice: `optimize_subject_lines` (`POST /advisor/subject-lines`: other
//! subject lines for a campaign, from its steps' subjects and open rates) and
//! `suggest_content_topics` (`POST /advisor/content-topics`: what a site could write about
//! next, from its campaigns' figures), in the site's brand voice. Every suggested subject is
//! checked against the subject limit (one line, at most `max_length`, itself at most 998
//! characters): those over it are dropped and counted. Nothing is stored; without a model, 422
//! `LLM_NOT_CONFIGURED`.

use std::fmt::Write as _;

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::analytics::{self as figures, CampaignFilter};
use crate::db::{brand_voices, sites};
use crate::domain::insights::{DeliveryCounts, Window, rate};
use crate::flows;
use crate::llm;

/// The subject limit (RFC 5322's line length, the step routes' limit).
pub const SUBJECT_MAX: usize = 998;
/// Campaigns of the site whose figures inform the topics.
const INFORMING_CAMPAIGNS: i64 = 20;

fn default_count() -> u32 {
    5
}

fn default_max_length() -> u32 {
    SUBJECT_MAX as u32
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct OptimizeSubjectLines {
    /// A campaign of the site (404 `CAMPAIGN_NOT_FOUND` otherwise).
    pub campaign_id: Uuid,
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// How many subject lines to ask for, 1..=10 (default 5).
    #[serde(default = "default_count")]
    #[schema(minimum = 1, maximum = 10, default = 5)]
    pub count: u32,
    /// The longest subject kept, in characters, 10..=998 (default 998, the subject limit):
    /// suggestions over it are dropped and counted in `dropped`.
    #[serde(default = "default_max_length")]
    #[schema(minimum = 10, maximum = 998, default = 998)]
    pub max_length: u32,
}

impl Validate for OptimizeSubjectLines {
    fn validate(&mut self) -> Result<(), ApiError> {
        check_range("count", self.count, 1, 10)?;
        check_range("max_length", self.max_length, 10, SUBJECT_MAX as u32)
    }
}

fn check_range(field: &str, value: u32, min: u32, max: u32) -> Result<(), ApiError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            &format!("must be {min}..={max}"),
        ))
    }
}

/// A step's subject and how it did (the last 90 days).
#[derive(Debug, Serialize, ToSchema)]
pub struct CurrentSubject {
    pub step_id: Uuid,
    pub step_order: i32,
    pub subject: String,
    pub sent: i64,
    /// opened / sent (0 when nothing was sent).
    pub open_rate: f64,
}

/// A suggested subject line.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubjectSuggestion {
    /// One line, at most `max_length` characters.
    pub subject: String,
    /// Why the model suggests it, when it said.
    pub rationale: Option<String>,
    /// In characters.
    pub length: usize,
}

/// `optimize_subject_lines`' answer. Nothing is stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubjectLineAdvice {
    pub campaign_id: Uuid,
    /// The campaign's steps with their subjects and open rates, as given to the model.
    pub current: Vec<CurrentSubject>,
    /// The suggestions within the limit, in the model's order.
    pub suggestions: Vec<SubjectSuggestion>,
    /// Suggestions left out: over `max_length`, on several lines, or blank.
    pub dropped: usize,
    pub max_length: u32,
    /// The model that wrote them.
    pub model: String,
}

/// The site and its brand voice, as instructions (404 `SITE_NOT_FOUND` for another project's).
async fn voice_of(state: &AppState, project_id: Uuid, site_id: Uuid) -> Result<String, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let site = sites::get(&mut conn, project_id, site_id)
        .await?
        .ok_or_else(|| flows::site_not_found(site_id))?;
    let voice = brand_voices::get(&mut conn, project_id, site_id).await?;
    let mut out = format!("The sender is \"{}\" (\"{}\"). ", site.name, site.from_name);
    if let Some(voice) = voice {
        for (label, value) in [
            ("Tone", &voice.tone),
            ("Audience", &voice.audience),
            ("Guidelines", &voice.guidelines),
        ] {
            if let Some(value) = value {
                let _ = write!(out, "{label}: {value}. ");
            }
        }
        if !voice.words_to_avoid.is_empty() {
            let _ = write!(
                out,
                "Never use these words: {}. ",
                voice.words_to_avoid.join(", ")
            );
        }
    }
    Ok(out)
}

/// A subject within the limit, or `None`.
fn usable_subject(subject: Option<&str>, max_length: u32) -> Option<String> {
    let subject = subject?.trim();
    (!subject.is_empty()
        && !subject.contains(['\r', '\n'])
        && subject.chars().count() <= max_length as usize)
        .then(|| subject.to_owned())
}

/// The array under `key` of the model's answer, or 422 `LLM_INVALID_OUTPUT`.
fn items<'a>(answer: &'a Value, key: &str) -> Result<&'a Vec<Value>, ApiError> {
    answer
        .get(key)
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| llm::invalid_output(&format!("the model's answer has no \"{key}\" list")))
}

fn text(item: &Value, key: &str) -> Option<String> {
    item.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Other subject lines for the campaign (`POST /advisor/subject-lines`,
/// `optimize_subject_lines`).
pub async fn optimize_subject_lines(
    state: &AppState,
    project_id: Uuid,
    req: &OptimizeSubjectLines,
) -> Result<SubjectLineAdvice, ApiError> {
    let voice = voice_of(state, project_id, req.site_id).await?;
    let current = {
        let mut conn = store::conn(&state.pool).await?;
        let campaign = flows::require_campaign(&mut conn, project_id, req.campaign_id).await?;
        if campaign.site_id != req.site_id {
            return Err(flows::campaign_not_found(req.campaign_id));
        }
        let window = Window::of(Some(90));
        let steps = figures::campaign_steps(
            &mut conn,
            project_id,
            &[campaign.id],
            window.from,
            window.to,
        )
        .await?;
        steps
            .into_iter()
            .map(|s| CurrentSubject {
                step_id: s.id,
                step_order: s.step_order,
                subject: s.subject,
                sent: s.delivery.sent,
                open_rate: rate(s.delivery.opened, s.delivery.sent),
            })
            .collect::<Vec<_>>()
    };
    let client = crate::ops::language_model::model_for(state, project_id).await?;
    let system = format!(
        "You improve the subject lines of an email campaign. {voice}Answer only a JSON object \
         with the key \"suggestions\": a list of {} objects with \"subject\" (one line, at most \
         {} characters) and \"rationale\" (one sentence).",
        req.count,
        req.max_length.min(150)
    );
    let mut user = String::from("The campaign's steps, their subjects and open rates:\n");
    for s in &current {
        let _ = writeln!(
            user,
            "- step {}: \"{}\" ({} sent, {:.1} % opened)",
            s.step_order,
            s.subject,
            s.sent,
            s.open_rate * 100.0
        );
    }
    let answer = client.json_object(&system, &user).await?;
    let listed = items(&answer, "suggestions")?;
    let mut suggestions = Vec::new();
    let mut dropped = 0;
    for item in listed.iter().take(req.count as usize) {
        let subject = item
            .as_str()
            .map(str::to_owned)
            .or_else(|| text(item, "subject"));
        match usable_subject(subject.as_deref(), req.max_length) {
            Some(subject) => suggestions.push(SubjectSuggestion {
                length: subject.chars().count(),
                subject,
                rationale: text(item, "rationale"),
            }),
            None => dropped += 1,
        }
    }
    Ok(SubjectLineAdvice {
        campaign_id: req.campaign_id,
        current,
        suggestions,
        dropped,
        max_length: req.max_length,
        model: client.model.clone(),
    })
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SuggestContentTopics {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// How many topics to ask for, 1..=10 (default 5).
    #[serde(default = "default_count")]
    #[schema(minimum = 1, maximum = 10, default = 5)]
    pub count: u32,
    /// What to lean towards, up to 1,000 characters (e.g. "spring sale").
    #[schema(max_length = 1000)]
    pub focus: Option<String>,
}

impl Validate for SuggestContentTopics {
    fn validate(&mut self) -> Result<(), ApiError> {
        check_range("count", self.count, 1, 10)?;
        if let Some(focus) = &mut self.focus {
            http_kit::request::trim(focus);
            if focus.is_empty() {
                self.focus = None;
            }
        }
        Ok(())
    }
}

/// A campaign's figures the topics were informed by (the last 90 days).
#[derive(Debug, Serialize, ToSchema)]
pub struct InformingCampaign {
    pub campaign_id: Uuid,
    pub name: String,
    pub sent: i64,
    pub open_rate: f64,
    pub click_rate: f64,
}

/// A suggested topic.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentTopic {
    pub title: String,
    /// Why it should interest the site's readers, when the model said.
    pub angle: Option<String>,
    /// A subject line for it: one line, at most 998 characters (topics whose subject is over
    /// the limit are dropped).
    pub subject: String,
}

/// `suggest_content_topics`' answer. Nothing is stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentTopics {
    pub site_id: Uuid,
    /// The site's campaigns given to the model, the most opened first (at most 20).
    pub based_on: Vec<InformingCampaign>,
    pub topics: Vec<ContentTopic>,
    /// Topics left out: no title, or a subject over the limit.
    pub dropped: usize,
    pub model: String,
}

/// Topics the site could write about next (`POST /advisor/content-topics`,
/// `suggest_content_topics`).
pub async fn suggest_content_topics(
    state: &AppState,
    project_id: Uuid,
    req: &SuggestContentTopics,
) -> Result<ContentTopics, ApiError> {
    let voice = voice_of(state, project_id, req.site_id).await?;
    let mut based_on = {
        let mut conn = store::conn(&state.pool).await?;
        let window = Window::of(Some(90));
        let filter = CampaignFilter {
            site_id: Some(req.site_id),
            status: None,
            after: None,
            limit: INFORMING_CAMPAIGNS,
        };
        figures::campaigns(&mut conn, project_id, &filter, window.from, window.to)
            .await?
            .into_iter()
            .map(|c| {
                let d = DeliveryCounts::from(c.delivery);
                InformingCampaign {
                    campaign_id: c.id,
                    name: c.name,
                    sent: d.sent,
                    open_rate: rate(d.opened, d.sent),
                    click_rate: rate(d.clicked, d.sent),
                }
            })
            .collect::<Vec<_>>()
    };
    based_on.sort_by(|a, b| b.open_rate.total_cmp(&a.open_rate));
    let client = crate::ops::language_model::model_for(state, project_id).await?;
    let system = format!(
        "You suggest topics for a site's next emails. {voice}Answer only a JSON object with the \
         key \"topics\": a list of {} objects with \"title\", \"angle\" (one sentence: why the \
         readers will care) and \"subject\" (a subject line, one line, at most 150 characters).",
        req.count
    );
    let mut user = String::new();
    if based_on.is_empty() {
        user.push_str("The site has sent no campaigns yet.\n");
    } else {
        user.push_str("The site's campaigns of the last 90 days, the most opened first:\n");
        for c in &based_on {
            let _ = writeln!(
                user,
                "- \"{}\": {} sent, {:.1} % opened, {:.1} % clicked",
                c.name,
                c.sent,
                c.open_rate * 100.0,
                c.click_rate * 100.0
            );
        }
    }
    if let Some(focus) = &req.focus {
        let _ = writeln!(user, "Lean towards: {focus}");
    }
    let answer = client.json_object(&system, &user).await?;
    let listed = items(&answer, "topics")?;
    let mut topics = Vec::new();
    let mut dropped = 0;
    for item in listed.iter().take(req.count as usize) {
        let subject = usable_subject(text(item, "subject").as_deref(), SUBJECT_MAX as u32);
        match (text(item, "title"), subject) {
            (Some(title), Some(subject)) => topics.push(ContentTopic {
                title,
                angle: text(item, "angle"),
                subject,
            }),
            _ => dropped += 1,
        }
    }
    Ok(ContentTopics {
        site_id: req.site_id,
        based_on,
        topics,
        dropped,
        model: client.model.clone(),
    })
}
