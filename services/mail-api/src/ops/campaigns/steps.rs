//! The steps of a campaign, ordered by `step_order` (1, 2, …): inserting, moving and deleting
//! renumber the others, so the order stays dense. A campaign that sends keeps steps that all
//! have something to send.

use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat,
    Type,
};
use uuid::Uuid;

use crate::AppState;
use crate::db::campaign_steps::{self, Content, NewStep, Step, StepChanges};
use crate::db::campaigns;
use crate::domain::campaign::MAX_STEPS;
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};
use crate::ops::input::check_template_syntax;

const ROUTE: &str = "POST /api/v1/campaigns/{id}/steps";

/// The longest HTML a step may hold (the schemas say 524,288 too).
const HTML_MAX: usize = 524_288;

/// A step of a campaign.
#[derive(Debug, Serialize, ToSchema)]
pub struct StepRecord {
    pub id: Uuid,
    pub campaign_id: Uuid,
    /// Its place: 1, 2, … (dense).
    pub step_order: i32,
    /// Minutes after the previous step's email left the queue (after enrollment for step 1).
    pub delay_minutes: f64,
    pub subject: String,
    /// Its HTML, or null when it sends a template's.
    pub html: Option<String>,
    /// The template whose HTML it sends; absent when it sends its own HTML.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub template_id: Option<Uuid>,
    /// The plain-text part, if any.
    pub text: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Step> for StepRecord {
    fn from(s: Step) -> Self {
        Self {
            id: s.id,
            campaign_id: s.campaign_id,
            step_order: s.step_order,
            delay_minutes: s.delay_minutes,
            subject: s.subject,
            html: s.html,
            template_id: s.template_id,
            text: s.text_body,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// A step to add; exactly one of `html` and `template_id`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StepFields {
    /// Where it goes, from 1 (the steps from there move one place down); default (and past
    /// the end): last. In a list of steps, each is placed in turn.
    #[schema(minimum = 1, maximum = 50)]
    pub step_order: Option<i32>,
    /// Required: 1..=998 characters on one line, not blank.
    #[schema(
        min_length = 1,
        max_length = 998,
        pattern = r"^[^\r\n]*[^\s\x85\uFEFF][^\r\n]*$"
    )]
    pub subject: String,
    /// The email's HTML: not blank, at most 524,288 characters. Or `template_id`.
    #[schema(min_length = 1, max_length = 524288, pattern = r"[^\s\x85\uFEFF]")]
    pub html: Option<String>,
    #[schema(schema_with = template_schema)]
    pub template_id: Option<Uuid>,
    /// The plain-text part, at most 524,288 characters; empty is absent.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
    /// Minutes after the previous step's email left the queue (after enrollment for step 1):
    /// 0..=525,600 (a year), fractions allowed; default 0.
    #[schema(minimum = 0, maximum = 525600)]
    pub delay_minutes: Option<f64>,
}

/// [`StepFields`] with the rule that a step has exactly one of `html` and `template_id`,
/// stated in its schema.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StepInput(pub StepFields);

impl utoipa::PartialSchema for StepInput {
    fn schema() -> RefOr<Schema> {
        AllOfBuilder::new()
            .item(StepFields::schema())
            .item(content_rules(true))
            .into()
    }
}

impl ToSchema for StepInput {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <StepFields as ToSchema>::schemas(schemas);
    }
}

/// A step's optional `template_id`: null or a UUID.
fn template_schema() -> Schema {
    http_kit::request::nullable_format(
        KnownFormat::Uuid,
        "A template of the project (404 `TEMPLATE_NOT_FOUND` otherwise) whose HTML the step \
         sends instead of `html`; the template cannot be deleted while a step names it.",
    )
}

/// Exactly one of `html` and `template_id` (`required`), or at most one (updates).
fn content_rules(required: bool) -> Schema {
    let only = |given: &str, absent: &str| {
        let mut variant = ObjectBuilder::new()
            .title(Some(given.to_owned()))
            .property(absent, ObjectBuilder::new().schema_type(Type::Null));
        if required {
            // Present and not null.
            let mut present = ObjectBuilder::new().schema_type(Type::String);
            if given == "template_id" {
                present = present.format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)));
            } else {
                present = present.min_length(Some(1)).max_length(Some(HTML_MAX));
            }
            variant = variant.property(given, present).required(given);
        }
        variant
    };
    let (html, template) = (only("html", "template_id"), only("template_id", "html"));
    if required {
        Schema::OneOf(OneOfBuilder::new().item(html).item(template).build())
    } else {
        Schema::AnyOf(AnyOfBuilder::new().item(html).item(template).build())
    }
}

impl Validate for StepInput {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.0.text.as_deref().is_some_and(str::is_empty) {
            self.0.text = None;
        }
        check_template_syntax(&[
            ("subject", Some(&self.0.subject)),
            ("html", self.0.html.as_deref()),
            ("text", self.0.text.as_deref()),
        ])
    }
}

impl StepFields {
    fn content(&self) -> Result<Content<'_>, ApiError> {
        match (&self.html, self.template_id) {
            (Some(html), None) => Ok(Content::Html(html)),
            (None, Some(id)) => Ok(Content::Template(id)),
            // The schema says so already: one of the two.
            _ => Err(ApiError::invalid_field(
                "html",
                "give either html or template_id",
            )),
        }
    }
}

fn template_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("template {id} not found"))
        .with_code(MailErrorCode::TemplateNotFound)
}

fn step_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("campaign step {id} not found"))
        .with_code(MailErrorCode::StepNotFound)
}

/// 404 unless a template the step names is the project's.
async fn check_template(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    content: Option<Content<'_>>,
) -> Result<(), ApiError> {
    if let Some(Content::Template(id)) = content
        && !campaign_steps::template_exists(conn, project_id, id).await?
    {
        return Err(template_not_found(id));
    }
    Ok(())
}

/// A campaign that sends (active or paused) keeps steps that all have something to send.
async fn check_sendable(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign: &campaigns::Campaign,
) -> Result<(), ApiError> {
    if matches!(campaign.status.as_str(), "active" | "paused")
        && !campaign_steps::all_have_content(conn, project_id, campaign.id).await?
    {
        return Err(ApiError::conflict(
            "an active or paused campaign keeps at least one step, each with HTML or a template \
             that has HTML",
        )
        .with_code(MailErrorCode::CampaignNotReady));
    }
    Ok(())
}

/// Adds `steps` to the campaign in turn, each at its `step_order` (default last), in the
/// caller's transaction; 409 `TOO_MANY_STEPS` past 50.
pub async fn insert_steps(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    steps: &[StepInput],
) -> Result<Vec<StepRecord>, ApiError> {
    let mut added = Vec::with_capacity(steps.len());
    if steps.is_empty() {
        return Ok(added);
    }
    let existing = campaign_steps::count(conn, project_id, campaign_id).await?;
    if usize::try_from(existing).unwrap_or(usize::MAX) + steps.len() > MAX_STEPS {
        return Err(
            ApiError::conflict(format!("a campaign has at most {MAX_STEPS} steps"))
                .with_code(MailErrorCode::TooManySteps),
        );
    }
    for StepInput(step) in steps {
        let content = step.content()?;
        check_template(conn, project_id, Some(content)).await?;
        let new = NewStep {
            subject: &step.subject,
            content,
            text: step.text.as_deref(),
            delay_minutes: step.delay_minutes.unwrap_or(0.0),
        };
        let row =
            campaign_steps::insert(conn, project_id, campaign_id, step.step_order, &new).await?;
        added.push(StepRecord::from(row));
    }
    added.sort_by_key(|s| s.step_order);
    Ok(added)
}

/// A campaign's steps in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignSteps {
    pub campaign_id: Uuid,
    /// At most 50, in `step_order`.
    pub steps: Vec<StepRecord>,
}

/// The steps of the project's campaign `id` (`GET /campaigns/{id}/steps`,
/// `list_campaign_steps`).
pub async fn list_campaign_steps(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<CampaignSteps, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_campaign(&mut conn, project_id, id).await?;
    let steps = campaign_steps::list(&mut conn, project_id, id).await?;
    Ok(CampaignSteps {
        campaign_id: id,
        steps: steps.into_iter().map(StepRecord::from).collect(),
    })
}

/// Adds a step to the project's campaign `id`, once per idempotency key
/// (`POST /campaigns/{id}/steps`, `add_campaign_step`).
pub async fn add_step(
    state: &AppState,
    project_id: Uuid,
    campaign_id: Uuid,
    key: &IdempotencyKey,
    step: &StepInput,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, ROUTE, key, &(campaign_id, step))?
        .create(&state.pool, async |conn| {
            let campaign = campaigns::lock(conn, project_id, campaign_id)
                .await?
                .ok_or_else(|| flows::campaign_not_found(campaign_id))?;
            let mut added =
                insert_steps(conn, project_id, campaign_id, std::slice::from_ref(step)).await?;
            check_sendable(conn, project_id, &campaign).await?;
            added
                .pop()
                .ok_or_else(|| ApiError::internal("a step was added but not returned"))
        })
        .await
}

/// The project's step `id` (`GET /campaign-steps/{id}`).
pub async fn get_step(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<StepRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    campaign_steps::get(&mut conn, project_id, id)
        .await?
        .map(StepRecord::from)
        .ok_or_else(|| step_not_found(id))
}

/// What to change of a step; an absent (or null) field is unchanged. At most one of `html`
/// and `template_id` (either replaces the other). Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StepUpdateFields {
    /// Moves the step there (1 = first; past the end: last), the others closing up.
    #[schema(minimum = 1, maximum = 50)]
    pub step_order: Option<i32>,
    /// 1..=998 characters on one line, not blank.
    #[schema(
        min_length = 1,
        max_length = 998,
        pattern = r"^[^\r\n]*[^\s\x85\uFEFF][^\r\n]*$"
    )]
    pub subject: Option<String>,
    /// New HTML (not blank, at most 524,288 characters): the step no longer sends a template.
    #[schema(min_length = 1, max_length = 524288, pattern = r"[^\s\x85\uFEFF]")]
    pub html: Option<String>,
    #[schema(schema_with = template_schema)]
    pub template_id: Option<Uuid>,
    /// The plain-text part (at most 524,288 characters); empty clears it.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
    /// 0..=525,600 minutes, fractions allowed.
    #[schema(minimum = 0, maximum = 525600)]
    pub delay_minutes: Option<f64>,
}

/// [`StepUpdateFields`] with the rule that `html` and `template_id` do not come together.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct UpdateStep(pub StepUpdateFields);

impl utoipa::PartialSchema for UpdateStep {
    fn schema() -> RefOr<Schema> {
        AllOfBuilder::new()
            .item(StepUpdateFields::schema())
            .item(content_rules(false))
            .into()
    }
}

impl ToSchema for UpdateStep {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <StepUpdateFields as ToSchema>::schemas(schemas);
    }
}

impl Validate for UpdateStep {
    fn validate(&mut self) -> Result<(), ApiError> {
        check_template_syntax(&[
            ("subject", self.0.subject.as_deref()),
            ("html", self.0.html.as_deref()),
            ("text", self.0.text.as_deref()),
        ])
    }
}

/// Updates the project's step `id` (`PATCH /campaign-steps/{id}`, `update_campaign_step`).
pub async fn update_step(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &StepUpdateFields,
) -> Result<StepRecord, ApiError> {
    let content = match (&req.html, req.template_id) {
        (Some(html), _) => Some(Content::Html(html)),
        (None, Some(template)) => Some(Content::Template(template)),
        (None, None) => None,
    };
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let (step, campaign) = lock_step(conn, project_id, id).await?;
        check_template(conn, project_id, content).await?;
        let changes = StepChanges {
            subject: req.subject.as_deref(),
            content,
            text: req
                .text
                .as_deref()
                .map(|t| Some(t).filter(|t| !t.is_empty())),
            delay_minutes: req.delay_minutes,
            position: req.step_order,
        };
        let row = campaign_steps::update(conn, project_id, &step, &changes)
            .await?
            .ok_or_else(|| step_not_found(id))?;
        check_sendable(conn, project_id, &campaign).await?;
        Ok(StepRecord::from(row))
    })
    .await
}

/// The step and its campaign, the campaign's row locked (edits of one campaign's steps happen
/// one after the other).
async fn lock_step(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> Result<(Step, campaigns::Campaign), ApiError> {
    let step = campaign_steps::get(conn, project_id, id)
        .await?
        .ok_or_else(|| step_not_found(id))?;
    let campaign = campaigns::lock(conn, project_id, step.campaign_id)
        .await?
        .ok_or_else(|| step_not_found(id))?;
    // Read again under the lock: another edit may have moved it.
    let step = campaign_steps::get(conn, project_id, id)
        .await?
        .ok_or_else(|| step_not_found(id))?;
    Ok((step, campaign))
}

/// Deletes the project's step `id`, the later steps moving up (`DELETE /campaign-steps/{id}`,
/// `delete_campaign_step`); returns the step as it was.
pub async fn delete_step(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<StepRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let (step, campaign) = lock_step(conn, project_id, id).await?;
        campaign_steps::delete(conn, project_id, &step).await?;
        check_sendable(conn, project_id, &campaign).await?;
        Ok(StepRecord::from(step))
    })
    .await
}
