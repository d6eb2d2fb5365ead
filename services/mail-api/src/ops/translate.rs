//! `translate_template`: a template's subject and HTML translated by the project's model
//! into a new template, its template tags and links kept (checked, never trusted: a
//! translation that loses, adds or changes one is refused with 422 `LLM_INVALID_OUTPUT`).

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::templates;
use crate::domain::translation::unfaithful;
use crate::llm::invalid_output;
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};
use crate::ops::input::check_template_syntax;
use crate::ops::language_model::model_for;
use crate::ops::templates::{CreateTemplate, insert_template, template_not_found};

const ROUTE: &str = "POST /api/v1/templates/{id}/translate";
/// The longest template name.
const NAME_MAX_CHARS: usize = 200;

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TranslateTemplate {
    /// The language to translate into, as a BCP 47 tag (`de`, `pt-BR`, `zh-Hant`): 2..=35
    /// characters.
    #[schema(
        min_length = 2,
        max_length = 35,
        pattern = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"
    )]
    pub language: String,
}

impl Validate for TranslateTemplate {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.language);
        Ok(())
    }
}

fn instructions(language: &str) -> String {
    format!(
        "You translate email templates into the language with the BCP 47 tag `{language}`. \
         Translate only the human-readable words. Copy every template tag exactly as written, \
         character for character, and leave the words inside them untranslated: `{{{{ … }}}}`, \
         `{{% … %}}` and `{{# … #}}`. Copy every URL (every href and src value) exactly. Keep \
         the HTML structure and attributes. Answer with one JSON object: {{\"subject\": the \
         translated subject or null when none is given, \"html\": the translated HTML or null \
         when none is given}}."
    )
}

/// The translation of the project's template `id` into `req.language`, written as a new
/// template named `<name> (<language>)` (`POST /templates/{id}/translate`,
/// `translate_template`), once per idempotency key.
pub async fn translate_template(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    key: &IdempotencyKey,
    req: &TranslateTemplate,
) -> Result<Answer, ApiError> {
    let fingerprint = serde_json::json!({"template_id": id, "language": req.language});
    let idempotent = Idempotent::new(project_id, ROUTE, key, &fingerprint)?;
    let original = {
        let mut conn = store::conn(&state.pool).await?;
        if let Some(earlier) = idempotent.replay(&mut conn).await? {
            return Ok(earlier);
        }
        templates::get(&mut conn, project_id, id)
            .await?
            .ok_or_else(|| template_not_found(id))?
    };
    if original.html.is_none() && original.subject_hint.is_none() {
        return Err(ApiError::unprocessable(format!(
            "template {id} has neither HTML nor a subject to translate"
        )));
    }
    let model = model_for(state, project_id).await?;
    let given = serde_json::json!({"subject": original.subject_hint, "html": original.html});
    let answer = model
        .json_object(&instructions(&req.language), &given.to_string())
        .await?;
    let subject = translated("subject", original.subject_hint.as_deref(), &answer)?;
    let html = translated("html", original.html.as_deref(), &answer)?;
    check_template_syntax(&[("subject", subject.as_deref()), ("html", html.as_deref())])
        .map_err(|_| invalid_output("the translation's template syntax is broken"))?;
    let suffix = format!(" ({})", req.language);
    let stem: String = original
        .name
        .chars()
        .take(NAME_MAX_CHARS.saturating_sub(suffix.chars().count()))
        .collect();
    let create = CreateTemplate {
        name: format!("{stem}{suffix}"),
        brief: original.brief,
        subject_hint: subject,
        category: original.category,
        tags: original.tags,
        html,
    };
    idempotent
        .create(&state.pool, async |conn| {
            insert_template(conn, project_id, &create).await
        })
        .await
}

/// The model's translation of `field` (absent when the original has none), checked against
/// the original.
fn translated(
    field: &str,
    original: Option<&str>,
    answer: &Value,
) -> Result<Option<String>, ApiError> {
    let Some(original) = original else {
        return Ok(None);
    };
    let Some(text) = answer[field].as_str().filter(|t| !t.trim().is_empty()) else {
        return Err(invalid_output(&format!(
            "the model gave no translated {field}"
        )));
    };
    if let Some(why) = unfaithful(field, original, text) {
        return Err(invalid_output(&why));
    }
    Ok(Some(text.to_owned()))
}
