//! The compound tools that write from a brief with the language model:
//! `create_template_from_brief` (`POST /briefs/template`: the email written in the site's
//! voice, stored as a template) and `setup_campaign_from_brief` (`POST /briefs/campaign`:
//! the email stored as the first step of a new draft campaign). A draft sends nothing:
//! activating it is `update_campaign_status`, under the project's approval policy. Without a
//! model, 422 `LLM_NOT_CONFIGURED` and nothing is stored.

use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::llm;
use crate::ops::campaigns::steps::{StepFields, StepInput};
use crate::ops::campaigns::{CampaignDetail, CampaignFields, CampaignType, insert_campaign};
use crate::ops::generate::{GenerateEmail, GeneratedEmail, generate_email};
use crate::ops::templates::{CreateTemplate, Template, insert_template};

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TemplateFromBrief {
    /// The site whose name and brand voice the email is written in (404 `SITE_NOT_FOUND`
    /// otherwise).
    pub site_id: Uuid,
    /// The template's name, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// What the email is for, 1..=10,000 characters, not blank; stored as the template's brief.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub brief: String,
}

impl Validate for TemplateFromBrief {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        http_kit::request::trim(&mut self.brief);
        Ok(())
    }
}

/// `create_template_from_brief`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateWritten {
    /// The stored template: its HTML the model's, its subject hint the model's subject.
    pub template: Template,
    /// The model that wrote it.
    pub model: String,
}

/// The model's email as checked template fields, or 422 `LLM_INVALID_OUTPUT` (a template tag
/// that does not parse, say).
fn template_fields(
    name: &str,
    brief: &str,
    email: &GeneratedEmail,
) -> Result<CreateTemplate, ApiError> {
    let mut fields = CreateTemplate {
        name: name.to_owned(),
        brief: brief.to_owned(),
        subject_hint: Some(email.subject.clone()),
        category: String::new(),
        tags: Vec::new(),
        html: Some(email.html.clone()),
    };
    fields
        .validate()
        .map_err(|_| llm::invalid_output("the model's email is not a valid template"))?;
    Ok(fields)
}

/// Writes the email and stores it as a template (`POST /briefs/template`,
/// `create_template_from_brief`).
pub async fn create_template_from_brief(
    state: &AppState,
    project_id: Uuid,
    req: &TemplateFromBrief,
) -> Result<TemplateWritten, ApiError> {
    let email = generate_email(
        state,
        project_id,
        &GenerateEmail {
            site_id: req.site_id,
            brief: req.brief.clone(),
        },
    )
    .await?;
    let fields = template_fields(&req.name, &req.brief, &email)?;
    let mut conn = store::conn(&state.pool).await?;
    let template = insert_template(&mut conn, project_id, &fields).await?;
    Ok(TemplateWritten {
        template,
        model: email.model,
    })
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CampaignFromBrief {
    /// The site the campaign sends from, in whose voice the email is written (404
    /// `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// The campaign's name, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub campaign_name: String,
    /// What the campaign's email is for, 1..=10,000 characters, not blank.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub brief: String,
}

impl Validate for CampaignFromBrief {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.campaign_name);
        http_kit::request::trim(&mut self.brief);
        Ok(())
    }
}

/// `setup_campaign_from_brief`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignSetUp {
    /// The new campaign, a `draft` with the written email as its first step.
    pub campaign: CampaignDetail,
    /// What launching it takes.
    pub next_step: String,
    /// The model that wrote the email.
    pub model: String,
}

/// Writes the email and stores it as the first step of a new draft campaign (`POST
/// /briefs/campaign`, `setup_campaign_from_brief`).
pub async fn setup_campaign_from_brief(
    state: &AppState,
    project_id: Uuid,
    req: &CampaignFromBrief,
) -> Result<CampaignSetUp, ApiError> {
    let email = generate_email(
        state,
        project_id,
        &GenerateEmail {
            site_id: req.site_id,
            brief: req.brief.clone(),
        },
    )
    .await?;
    let mut step = StepInput(StepFields {
        step_order: None,
        subject: email.subject.clone(),
        html: Some(email.html.clone()),
        template_id: None,
        text: email.text.clone(),
        delay_minutes: None,
    });
    step.validate()
        .map_err(|_| llm::invalid_output("the model's email is not a valid campaign step"))?;
    let fields = CampaignFields {
        name: req.campaign_name.clone(),
        site_id: req.site_id,
        kind: CampaignType::default(),
        trigger_event_name: None,
        accepts_new_contacts: true,
        steps: vec![step],
    };
    let mut conn = store::conn(&state.pool).await?;
    let campaign = conn
        .transaction::<_, ApiError, _>(async |conn| {
            insert_campaign(conn, project_id, &fields).await
        })
        .await?;
    Ok(CampaignSetUp {
        next_step: format!(
            "The campaign is a draft and sends nothing: review it, then set its status to \
             active (update_campaign_status, POST /api/v1/campaigns/{}/status); the \
             project's approval policy applies to that activation.",
            campaign.campaign.id
        ),
        campaign,
        model: email.model,
    })
}
