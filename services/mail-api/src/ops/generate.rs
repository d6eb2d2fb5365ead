//! The use case of writing an email with the deployment's language model.
//!
//! `POST /api/v1/emails/generate`: an email written by the deployment's language model from a
//! brief, in the site's brand voice (`generate_email`). Nothing is stored or sent; without a
//! model configured it answers 422 `LLM_NOT_CONFIGURED`.

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::{brand_voices, sites};
use crate::llm;

/// The longest subject a generated email may have (the subject limit).
const SUBJECT_MAX: usize = 998;

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct GenerateEmail {
    /// The site it is written for (its name and brand voice): a site of the project (404
    /// `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// Required, 1..=10,000 characters, not blank: what the email is for.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub brief: String,
}

impl Validate for GenerateEmail {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.brief);
        Ok(())
    }
}

/// A generated email: not stored, not sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct GeneratedEmail {
    /// One line, at most 998 characters.
    pub subject: String,
    pub html: String,
    /// The plain-text version, when the model wrote one.
    pub text: Option<String>,
    /// The model that wrote it.
    pub model: String,
}

/// The instructions: who the email is from, the site's brand voice, and the answer's shape.
fn instructions(site: &sites::Site, voice: Option<&brand_voices::BrandVoice>) -> String {
    let mut out = format!(
        "You write one marketing email for \"{}\", sent as \"{}\". ",
        site.name, site.from_name
    );
    if let Some(voice) = voice {
        for (label, value) in [
            ("Tone", &voice.tone),
            ("Audience", &voice.audience),
            ("Guidelines", &voice.guidelines),
        ] {
            if let Some(value) = value {
                out.push_str(&format!("{label}: {value}. "));
            }
        }
        if !voice.words_to_avoid.is_empty() {
            out.push_str(&format!(
                "Never use these words: {}. ",
                voice.words_to_avoid.join(", ")
            ));
        }
    }
    out.push_str(
        "Answer only a JSON object with the keys \"subject\" (one line, at most 150 \
         characters), \"html\" (the email's HTML body: no scripts, no unsubscribe link, the \
         service adds one) and \"text\" (the same email as plain text).",
    );
    out
}

/// The model's answer as an email, or 422 `LLM_INVALID_OUTPUT`.
fn email_of(answer: &Value, model: &str) -> Result<GeneratedEmail, ApiError> {
    let text_of = |key: &str| {
        answer
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let subject = text_of("subject")
        .filter(|s| !s.contains(['\r', '\n']) && s.chars().count() <= SUBJECT_MAX)
        .ok_or_else(|| llm::invalid_output("the model's email has no usable one-line subject"))?;
    let html =
        text_of("html").ok_or_else(|| llm::invalid_output("the model's email has no HTML"))?;
    Ok(GeneratedEmail {
        subject: subject.to_owned(),
        html: html.to_owned(),
        text: text_of("text").map(str::to_owned),
        model: model.to_owned(),
    })
}

/// Writes an email for the project's site from `brief` (`POST /emails/generate`,
/// `generate_email`).
pub async fn generate_email(
    state: &AppState,
    project_id: Uuid,
    req: &GenerateEmail,
) -> Result<GeneratedEmail, ApiError> {
    let (site, voice) = {
        let mut conn = store::conn(&state.pool).await?;
        let site = sites::get(&mut conn, project_id, req.site_id)
            .await?
            .ok_or_else(|| crate::flows::site_not_found(req.site_id))?;
        let voice = brand_voices::get(&mut conn, project_id, req.site_id).await?;
        (site, voice)
    };
    let client = crate::ops::language_model::model_for(state, project_id).await?;
    let answer = client
        .json_object(&instructions(&site, voice.as_ref()), &req.brief)
        .await?;
    email_of(&answer, &client.model)
}
