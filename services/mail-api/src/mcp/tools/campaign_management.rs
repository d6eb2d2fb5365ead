//! The campaigns group's management tools: campaigns, their steps, enrollments, calendar,
//! schedule and audience, and writing an email with the model. Each calls the function its
//! REST route calls.

use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Params, Tool, declare};
use crate::ops::approvals::gate::{
    Gated, change_campaign_status_gated, delete_campaign_gated, enroll_segment_gated,
    launch_campaign_gated,
};
use crate::ops::campaigns::enrollments::{
    EnrollSegment, enroll_contact, enrollment_status, unenroll_contact,
};
use crate::ops::campaigns::schedule::{
    CalendarParams, campaign_audience, campaign_calendar, site_schedule,
};
use crate::ops::campaigns::steps::{
    StepInput, StepUpdateFields, UpdateStep, add_step, delete_step, get_step, list_campaign_steps,
    update_step,
};
use crate::ops::campaigns::{
    CampaignFilter, CampaignStatus, CloneCampaign, CreateCampaign, LaunchCampaign, UpdateCampaign,
    clone_campaign, create_campaign, get_campaign, list_campaigns, update_campaign,
};
use crate::ops::generate::{GenerateEmail, generate_email};
use crate::ops::idempotency::{Answer, IdempotencyKey};

/// One campaign of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CampaignArgument {
    pub campaign_id: Uuid,
}

impl Validate for CampaignArgument {}

/// One step of one of the project's campaigns.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StepArgument {
    pub step_id: Uuid,
}

impl Validate for StepArgument {}

/// One site of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SiteArgument {
    pub site_id: Uuid,
}

impl Validate for SiteArgument {}

/// A campaign and one of the project's contacts.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EnrollmentArguments {
    pub campaign_id: Uuid,
    pub contact_id: Uuid,
}

impl Validate for EnrollmentArguments {}

/// A campaign, its site and the segment to enroll in it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EnrollSegmentArguments {
    pub campaign_id: Uuid,
    #[serde(flatten)]
    pub audience: EnrollSegment,
}

impl Validate for EnrollSegmentArguments {}

/// A campaign and what to change of it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateCampaignArguments {
    pub campaign_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateCampaign,
}

impl Validate for UpdateCampaignArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

/// A campaign and the status to move it to.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StatusArguments {
    pub campaign_id: Uuid,
    /// `draft` → `active` | `archived`; `active` → `paused` | `completed` | `archived`;
    /// `paused` → `active` | `completed` | `archived`; `completed` → `archived`.
    #[schema(inline)]
    pub status: CampaignStatus,
}

impl Validate for StatusArguments {}

/// A campaign to copy and the copy's name.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CloneArguments {
    pub campaign_id: Uuid,
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub new_name: String,
}

impl Validate for CloneArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.new_name);
        Ok(())
    }
}

/// A campaign and the step to add to it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddStepArguments {
    pub campaign_id: Uuid,
    #[serde(flatten)]
    pub step: StepInput,
}

impl Validate for AddStepArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.step.validate()
    }
}

/// A step and what to change of it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateStepArguments {
    pub step_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateStep,
}

impl Validate for UpdateStepArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

/// A tool's create: no idempotency key, the created resource answered.
fn created(answer: Result<Answer, ApiError>) -> Result<serde_json::Value, ApiError> {
    answer.map(Answer::into_body)
}

pub fn tools() -> Vec<Tool> {
    let mut tools = campaign_tools();
    tools.extend(step_tools());
    tools.extend(enrollment_tools());
    tools.extend(planning_tools());
    tools
}

fn campaign_tools() -> Vec<Tool> {
    vec![
        declare(
            "create_campaign",
            Group::Campaigns,
            "Create a campaign as a draft: site_id, name, type (drip, entered on signup to the \
             site or by enrollment; or triggered, entered when /events records its \
             trigger_event_name). Steps can come with it or later.",
        )
        .writes(|ctx, Body(req): Body<CreateCampaign>| async move {
            let key = IdempotencyKey::default();
            created(create_campaign(&ctx.state, ctx.project_id(), &key, &req.0).await)
        }),
        declare(
            "create_campaign_with_content",
            Group::Campaigns,
            "Create a draft campaign with its steps in one call: each step a subject and html \
             (or a template_id), optional text and delay_minutes after the previous step.",
        )
        .writes(|ctx, Body(req): Body<CreateCampaign>| async move {
            let key = IdempotencyKey::default();
            created(create_campaign(&ctx.state, ctx.project_id(), &key, &req.0).await)
        }),
        declare(
            "launch_campaign",
            Group::Campaigns,
            "Create a drip campaign from a list of emails (its steps), activate it and enroll \
             the site's subscribers (audience: subscribers, the default) or nobody yet \
             (audience: none). Sending follows the site's delivery policy.",
        )
        .writes(|ctx, Body(req): Body<LaunchCampaign>| async move {
            let key = IdempotencyKey::default();
            let view = ctx.state.gates.view(None);
            created(launch_campaign_gated(&ctx.state, view, &ctx.caller, &key, &req).await)
        }),
        declare(
            "get_campaign",
            Group::Campaigns,
            "One campaign: its status, type, trigger, steps in order and enrollment counts.",
        )
        .reads(|ctx, Body(args): Body<CampaignArgument>| async move {
            get_campaign(&ctx.state, ctx.project_id(), args.campaign_id).await
        }),
        declare(
            "list_campaigns",
            Group::Campaigns,
            "List the project's campaigns (filter by site or status), a page at a time.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<CampaignFilter>| async move {
                let page: PageParams = page;
                list_campaigns(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
        declare(
            "update_campaign",
            Group::Campaigns,
            "Change a campaign's name, trigger event (triggered campaigns) or whether it accepts \
             new contacts (false: it completes once its last enrollment ends).",
        )
        .writes(
            |ctx, Body(args): Body<UpdateCampaignArguments>| async move {
                update_campaign(
                    &ctx.state,
                    ctx.project_id(),
                    args.campaign_id,
                    &args.changes,
                )
                .await
            },
        ),
        declare(
            "update_campaign_status",
            Group::Campaigns,
            "Move a campaign to another status: draft → active (needs steps) | archived; active \
             → paused | completed | archived; paused → active | completed | archived; completed \
             → archived. Other moves answer 409 INVALID_TRANSITION.",
        )
        .writes(|ctx, Body(args): Body<StatusArguments>| async move {
            let view = ctx.state.gates.view(None);
            change_campaign_status_gated(
                &ctx.state,
                view,
                &ctx.caller,
                args.campaign_id,
                args.status,
            )
            .await
            .map(Answer::into_body)
        }),
        declare(
            "clone_campaign",
            Group::Campaigns,
            "Copy a campaign and its steps into a new draft named new_name.",
        )
        .writes(|ctx, Body(args): Body<CloneArguments>| async move {
            let key = IdempotencyKey::default();
            let copy = CloneCampaign {
                new_name: args.new_name,
            };
            created(
                clone_campaign(&ctx.state, ctx.project_id(), args.campaign_id, &key, &copy).await,
            )
        }),
        declare(
            "delete_campaign",
            Group::Campaigns,
            "Delete a campaign with its steps and enrollments; its mail still held is \
             cancelled, emails already sent stay in the log. Destructive; under the approval \
             policy it may answer approval_required and wait for a person.",
        )
        .destroys(
            |ctx, Body(args): Body<CampaignArgument>| async move {
                let campaign = get_campaign(&ctx.state, ctx.project_id(), args.campaign_id).await?;
                Ok(json!({
                    "action": "delete this campaign, its steps and its enrollments",
                    "campaign": campaign,
                }))
            },
            |ctx, Body(args): Body<CampaignArgument>| async move {
                let view = ctx.state.gates.view(None);
                match delete_campaign_gated(&ctx.state, view, &ctx.caller, args.campaign_id).await?
                {
                    Gated::Done(campaign) => Ok(json!({ "deleted": true, "campaign": campaign })),
                    Gated::Pending(pending) => Ok(serde_json::to_value(pending)?),
                }
            },
        ),
    ]
}

fn step_tools() -> Vec<Tool> {
    vec![
        declare(
            "add_campaign_step",
            Group::Campaigns,
            "Add a step to a campaign at step_order (default last; the others move down): a \
             subject, html or a template_id, optional text and delay_minutes after the previous \
             step (fractions allowed).",
        )
        .writes(|ctx, Body(args): Body<AddStepArguments>| async move {
            let key = IdempotencyKey::default();
            created(
                add_step(
                    &ctx.state,
                    ctx.project_id(),
                    args.campaign_id,
                    &key,
                    &args.step,
                )
                .await,
            )
        }),
        declare(
            "update_campaign_step",
            Group::Campaigns,
            "Change a step's subject, html or template, text, delay or place (step_order: the \
             others close up); absent fields are unchanged.",
        )
        .writes(|ctx, Body(args): Body<UpdateStepArguments>| async move {
            let changes: &StepUpdateFields = &args.changes.0;
            update_step(&ctx.state, ctx.project_id(), args.step_id, changes).await
        }),
        declare(
            "delete_campaign_step",
            Group::Campaigns,
            "Delete a step; the later steps move up. Emails it already sent stay in the log. \
             Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<StepArgument>| async move {
                let step = get_step(&ctx.state, ctx.project_id(), args.step_id).await?;
                Ok(json!({ "action": "delete this campaign step", "step": step }))
            },
            |ctx, Body(args): Body<StepArgument>| async move {
                let step = delete_step(&ctx.state, ctx.project_id(), args.step_id).await?;
                Ok(json!({ "deleted": true, "step": step }))
            },
        ),
        declare(
            "list_campaign_steps",
            Group::Campaigns,
            "A campaign's steps in order: subject, content, delay.",
        )
        .reads(|ctx, Body(args): Body<CampaignArgument>| async move {
            list_campaign_steps(&ctx.state, ctx.project_id(), args.campaign_id).await
        }),
    ]
}

fn enrollment_tools() -> Vec<Tool> {
    vec![
        declare(
            "enroll_contact",
            Group::Campaigns,
            "Enroll one of the project's contacts in an active campaign (enrolled already: \
             nothing changes). Its first step is due after the step's delay.",
        )
        .writes(|ctx, Body(args): Body<EnrollmentArguments>| async move {
            enroll_contact(
                &ctx.state,
                ctx.project_id(),
                args.campaign_id,
                args.contact_id,
            )
            .await
        }),
        declare(
            "enroll_segment",
            Group::Campaigns,
            "Enroll a saved segment's contacts (segment_id), or every subscriber of the site \
             when no segment is given, in an active campaign: only contacts subscribed to the \
             campaign's site (site_id) and not suppressed; those enrolled already are passed \
             over. Answers how many this call enrolled; larger than the approval policy \
             allows, approval_required with an approval_id, and nothing is enrolled until a \
             person approves.",
        )
        .writes(|ctx, Body(args): Body<EnrollSegmentArguments>| async move {
            let view = ctx.state.gates.view(None);
            let gated = enroll_segment_gated(
                &ctx.state,
                view,
                &ctx.caller,
                args.campaign_id,
                &args.audience,
            );
            Ok(match gated.await? {
                Gated::Done(enrolled) => serde_json::to_value(enrolled)?,
                Gated::Pending(pending) => serde_json::to_value(pending)?,
            })
        }),
        declare(
            "unenroll_contact",
            Group::Campaigns,
            "Take a contact out of a campaign: its enrollment ends (unenrolled) and its mail \
             still held is cancelled.",
        )
        .writes(|ctx, Body(args): Body<EnrollmentArguments>| async move {
            unenroll_contact(
                &ctx.state,
                ctx.project_id(),
                args.campaign_id,
                args.contact_id,
            )
            .await
        }),
        declare(
            "get_enrollment_status",
            Group::Campaigns,
            "A contact's enrollment in a campaign: status, the step reached, when the next is \
             due, and its latest email (with why the delivery policy holds it, if it does).",
        )
        .reads(|ctx, Body(args): Body<EnrollmentArguments>| async move {
            enrollment_status(
                &ctx.state,
                ctx.project_id(),
                args.campaign_id,
                args.contact_id,
            )
            .await
        }),
    ]
}

fn planning_tools() -> Vec<Tool> {
    vec![
        declare(
            "get_campaign_calendar",
            Group::Campaigns,
            "A month of campaign sends per UTC day (year, month): the remaining steps of the \
             enrollments in progress and the mail the delivery policy holds.",
        )
        .reads(|ctx, Params(params): Params<CalendarParams>| async move {
            campaign_calendar(&ctx.state, ctx.project_id(), &params).await
        }),
        declare(
            "get_schedule",
            Group::Campaigns,
            "What a site will send and when: its send window and blackout dates, warmup cap \
             left today, mail held by reason, and the next sends per hour.",
        )
        .reads(|ctx, Body(args): Body<SiteArgument>| async move {
            site_schedule(&ctx.state, ctx.project_id(), args.site_id).await
        }),
        declare(
            "preview_campaign_audience",
            Group::Campaigns,
            "Who a campaign reaches: its enrollments, the site's subscribed contacts it could \
             still take (count and a sample), and who fired a triggered campaign's event.",
        )
        .reads(|ctx, Body(args): Body<CampaignArgument>| async move {
            campaign_audience(&ctx.state, ctx.project_id(), args.campaign_id).await
        }),
        declare(
            "generate_email",
            Group::Campaigns,
            "Write an email (subject, html, text) from a brief with the deployment's language \
             model, in the site's brand voice. Nothing is stored or sent; without a model \
             configured: 422 LLM_NOT_CONFIGURED.",
        )
        .writes(|ctx, Body(req): Body<GenerateEmail>| async move {
            generate_email(&ctx.state, ctx.project_id(), &req).await
        }),
    ]
}
