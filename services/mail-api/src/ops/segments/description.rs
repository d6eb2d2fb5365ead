//! `POST /segments/from-description` and `create_segment_nl`: a segment whose rules the language model writes
//! from a description in plain words (ruled: a model-backed tool). The model only proposes:
//! its rules are read by the same rules as a request's (`rules.any[1].op` and all), sites
//! included; refused rules go back to it once with the refusal, and refused again they answer
//! 422 `LLM_INVALID_RULES`. Nothing is saved unless the rules hold.

use diesel_async::AsyncPgConnection;
use http_kit::request::trim;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{CreateSegment, Segment, SegmentOrigin, foreign_site, insert_segment};
use crate::AppState;
use crate::db::{segments, sites};
use crate::domain::error_code::MailErrorCode;
use crate::domain::segment_rules::{MAX_CONDITIONS, MAX_DEPTH, MAX_GROUP_ITEMS};
use crate::domain::segment_schema::{CONDITION_DESCRIPTION, SegmentRules};
use crate::llm::{Message, json_object};

/// Sites named to the model, at most.
const SITES_SHOWN: i64 = 50;

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DescribeSegment {
    /// Required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Who the segment is, in plain words (1..=2,000 characters, not blank, stored trimmed as
    /// the segment's description), e.g. "VIP customers who opened nothing in 60 days".
    #[schema(min_length = 1, max_length = 2000, pattern = r"[^\s\x85\uFEFF]")]
    pub description: String,
}

impl Validate for DescribeSegment {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        trim(&mut self.description);
        Ok(())
    }
}

/// What the model must answer: `{"rules": …}`, read like a request body.
#[derive(Debug, Deserialize, ToSchema)]
struct ModelAnswer {
    rules: SegmentRules,
}

impl Validate for ModelAnswer {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.rules.compile("rules").map(drop)
    }
}

/// The segment the model writes for `req` (`POST /segments/from-description`,
/// `create_segment_nl`), ready for [`insert_segment`]: 422 `LLM_NOT_CONFIGURED` without a
/// model, `LLM_FAILED` when it fails, `LLM_INVALID_RULES` when its rules are refused twice.
pub async fn describe_segment(
    state: &AppState,
    project_id: Uuid,
    req: &DescribeSegment,
) -> Result<CreateSegment, ApiError> {
    let model = crate::ops::language_model::model_for(state, project_id).await?;
    let mut conn = store::conn(&state.pool).await?;
    let context = project_context(&mut conn, project_id).await?;
    // No connection is held while the model thinks.
    drop(conn);
    let mut messages = vec![
        Message::system(instructions(&context)),
        Message::user(req.description.clone()),
    ];
    let mut refusal = String::new();
    for _ in 0..2 {
        let answer = model.complete(&messages).await?;
        match checked(state, project_id, &answer).await? {
            Ok(rules) => {
                return Ok(CreateSegment {
                    name: req.name.clone(),
                    description: Some(req.description.clone()),
                    rules,
                });
            }
            Err(problem) => {
                messages.push(Message::assistant(answer));
                messages.push(Message::user(format!(
                    "Those rules were refused: {problem}. Answer again with the corrected \
                     JSON object only."
                )));
                refusal = problem;
            }
        }
    }
    Err(ApiError::unprocessable(format!(
        "the language model's rules were refused: {refusal}"
    ))
    .with_code(MailErrorCode::LlmInvalidRules))
}

/// The model's rules if they hold, else why not (for the model to correct).
async fn checked(
    state: &AppState,
    project_id: Uuid,
    answer: &str,
) -> Result<Result<SegmentRules, String>, ApiError> {
    let Some(value) = json_object(answer) else {
        return Ok(Err("the answer holds no JSON object".to_owned()));
    };
    let read = match http_kit::read_body::<ModelAnswer>(value) {
        Ok(read) => read,
        Err(refused) => return Ok(Err(refused.message.into_owned())),
    };
    let compiled = read.rules.compile("rules")?;
    let mut conn = store::conn(&state.pool).await?;
    match foreign_site(&mut conn, project_id, &compiled).await? {
        None => Ok(Ok(read.rules)),
        Some(foreign) => Ok(Err(format!("{}: not a site of this project", foreign.path))),
    }
}

/// What the model is told of the project: its sites and the names its contacts use.
async fn project_context(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> Result<Value, ApiError> {
    let vocabulary = segments::vocabulary(conn, project_id).await?;
    let sites: Vec<Value> = sites::list(conn, project_id, None, SITES_SHOWN)
        .await?
        .into_iter()
        .map(|s| json!({"site_id": s.id, "name": s.name, "slug": s.slug}))
        .collect();
    Ok(json!({
        "sites": sites,
        "tags": vocabulary.tags,
        "property_keys": vocabulary.properties,
        "events": vocabulary.events,
    }))
}

fn instructions(context: &Value) -> String {
    format!(
        "You write segment rules for an email service: conditions on a project's contacts. \
         Answer with one JSON object {{\"rules\": GROUP}} and nothing else.\n\n\
         A GROUP is {{\"all\": [ITEM, ...]}} (every item holds) or {{\"any\": [ITEM, ...]}} (at \
         least one holds); an ITEM is a condition or a GROUP. Groups nest at most {MAX_DEPTH} \
         deep, hold 1 to {MAX_GROUP_ITEMS} items, and hold at most {MAX_CONDITIONS} conditions \
         in all. A condition is {{\"field\": …, \"op\": …, \"value\": …}} and nothing else.\n\n\
         {CONDITION_DESCRIPTION}\n\n\
         The project (JSON): {context}\n\
         Use these sites, tags, property keys and event names where the description means \
         them; name a site only by its site_id. Do not invent conditions the description does \
         not ask for."
    )
}

/// The segment written from a description and saved (`create_segment_nl`).
pub async fn create_segment_from_description(
    state: &AppState,
    project_id: Uuid,
    req: &DescribeSegment,
) -> Result<Segment, ApiError> {
    let segment = describe_segment(state, project_id, req).await?;
    let mut conn = store::conn(&state.pool).await?;
    insert_segment(&mut conn, project_id, &segment, SegmentOrigin::Description).await
}
