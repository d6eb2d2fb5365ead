//! The advisor: `GET /api/v1/sites/{id}/send-time`, `GET /api/v1/advisor/campaigns`,
//! `GET /api/v1/advisor/portfolio`, `GET /api/v1/sites/{id}/recovery-plan` and
//! `GET /api/v1/advisor/diagnosis`, and the model-backed `POST /api/v1/advisor/subject-lines`
//! and `POST /api/v1/advisor/content-topics`; the compound `POST /api/v1/onboarding`,
//! `POST /api/v1/briefs/template` and `POST /api/v1/briefs/campaign`; over
//! [`crate::ops::advisor`].

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Query, Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::advisor::briefs::{
    CampaignFromBrief, CampaignSetUp, TemplateFromBrief, TemplateWritten,
    create_template_from_brief, setup_campaign_from_brief,
};
use crate::ops::advisor::diagnosis::{DeliveryDiagnosis, DiagnosisParams, diagnose_delivery_issue};
use crate::ops::advisor::findings::{
    CampaignAdvice, CampaignAdvisorParams, PortfolioAnalysis, PortfolioParams, campaign_advisor,
    run_portfolio_analysis,
};
use crate::ops::advisor::model_advice::{
    ContentTopics, OptimizeSubjectLines, SubjectLineAdvice, SuggestContentTopics,
    optimize_subject_lines, suggest_content_topics,
};
use crate::ops::advisor::onboarding::{OnboardSite, Onboarding, onboard_new_site};
use crate::ops::advisor::recovery::{RecoveryPlan, recovery_plan};
use crate::ops::advisor::send_time::{SendTimeParams, SendTimeSuggestion, suggest_send_time};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(send_time),
    route!(campaigns),
    route!(portfolio),
    route!(recovery),
    route!(diagnosis),
    route!(subject_lines),
    route!(content_topics),
    route!(onboard),
    route!(template_from_brief),
    route!(campaign_from_brief),
];

/// The hour of the week to send at, from the site's own recorded opens and clicks (in its
/// send policy's time zone): the contact's own when it has at least 5, else the site's when it
/// has at least 20, else a stated default; with the sample size and histograms behind it.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/send-time",
    operation_id = "suggestSendTime",
    tag = "advisor",
    params(("id" = Uuid, Path, description = "The site"), SendTimeParams),
    responses(
        (status = 200, description = "The suggested hour and the data behind it", body = SendTimeSuggestion),
        (status = 400, description = "The id is not a UUID, or a parameter is invalid (named in `details.field`)", body = MailError),
        (status = 404, description = "No such site (`SITE_NOT_FOUND`) or contact (`CONTACT_NOT_FOUND`) in the project", body = MailError),
    )
)]
pub async fn send_time(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    params: Query<SendTimeParams>,
) -> Result<web::Json<SendTimeSuggestion>, ApiError> {
    let site = site_id(&path)?;
    suggest_send_time(&state, caller.owner_id, site, &params)
        .await
        .map(web::Json)
}

/// The project's campaigns (or one, or a site's) judged on their figures in the window: low
/// open or click rate, bounces and complaints over the abuse monitor's warning thresholds, a
/// step whose unsubscribes are high; each finding with its figures, the thresholds stated.
#[utoipa::path(
    get,
    path = "/api/v1/advisor/campaigns",
    operation_id = "campaignAdvisor",
    tag = "advisor",
    params(CampaignAdvisorParams),
    responses(
        (status = 200, description = "Each campaign's figures and findings", body = CampaignAdvice),
        (status = 400, description = "A parameter is invalid (named in `details.field`)", body = MailError),
        (status = 404, description = "No such campaign (`CAMPAIGN_NOT_FOUND`) or site (`SITE_NOT_FOUND`) in the project", body = MailError),
    )
)]
pub async fn campaigns(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<CampaignAdvisorParams>,
) -> Result<web::Json<CampaignAdvice>, ApiError> {
    campaign_advisor(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

/// Every site, campaign and segment of the project judged against the same thresholds: the
/// findings, most severe first, with their figures.
#[utoipa::path(
    get,
    path = "/api/v1/advisor/portfolio",
    operation_id = "runPortfolioAnalysis",
    tag = "advisor",
    params(PortfolioParams),
    responses(
        (status = 200, description = "The sites' figures and every finding", body = PortfolioAnalysis),
        (status = 400, description = "A parameter is invalid (named in `details.field`)", body = MailError),
    )
)]
pub async fn portfolio(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<PortfolioParams>,
) -> Result<web::Json<PortfolioAnalysis>, ApiError> {
    run_portfolio_analysis(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

/// The ordered steps that bring the site's delivery back, from its bounce and complaint
/// rates, the DNS blocklists, its own domain and its warmup: each with its evidence and the
/// tool that takes it. Nothing is changed.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/recovery-plan",
    operation_id = "recoveryPlan",
    tag = "advisor",
    params(("id" = Uuid, Path, description = "The site")),
    responses(
        (status = 200, description = "The plan", body = RecoveryPlan),
        (status = 400, description = "The id is not a UUID", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn recovery(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<RecoveryPlan>, ApiError> {
    let site = site_id(&path)?;
    recovery_plan(&state, caller.owner_id, site)
        .await
        .map(web::Json)
}

/// Why a site's mail may not arrive: its own domain's DNS records, bounce and complaint rates,
/// DNS blocklists, warmup and abuse-monitor state and the providers' recent errors, with the
/// causes found and the evidence of each. Without `site_id`, the project's first 10 sites.
#[utoipa::path(
    get,
    path = "/api/v1/advisor/diagnosis",
    operation_id = "diagnoseDeliveryIssue",
    tag = "advisor",
    params(DiagnosisParams),
    responses(
        (status = 200, description = "The diagnosis of each site", body = DeliveryDiagnosis),
        (status = 400, description = "A parameter is invalid (named in `details.field`)", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn diagnosis(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<DiagnosisParams>,
) -> Result<web::Json<DeliveryDiagnosis>, ApiError> {
    diagnose_delivery_issue(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

/// Other subject lines for a campaign, written by the language model from its steps' subjects
/// and open rates, in the site's brand voice; each checked against the subject limit (one
/// line, at most `max_length` characters): those over it are dropped and counted. Nothing is
/// stored.
#[utoipa::path(
    post,
    path = "/api/v1/advisor/subject-lines",
    operation_id = "optimizeSubjectLines",
    tag = "advisor",
    request_body = OptimizeSubjectLines,
    responses(
        (status = 200, description = "The suggestions within the limit", body = SubjectLineAdvice),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "No such site (`SITE_NOT_FOUND`) in the project, or no such campaign of the site (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 422, description = "No language model is configured (`LLM_NOT_CONFIGURED`), the model endpoint failed (`LLM_FAILED`), or its answer held no suggestions (`LLM_INVALID_OUTPUT`); nothing is made up instead", body = MailError),
    )
)]
pub async fn subject_lines(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<OptimizeSubjectLines>,
) -> Result<web::Json<SubjectLineAdvice>, ApiError> {
    optimize_subject_lines(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Topics a site could write about next, suggested by the language model from its campaigns'
/// open and click rates, in its brand voice, each with a subject line checked against the
/// subject limit (topics over it are dropped and counted). Nothing is stored.
#[utoipa::path(
    post,
    path = "/api/v1/advisor/content-topics",
    operation_id = "suggestContentTopics",
    tag = "advisor",
    request_body = SuggestContentTopics,
    responses(
        (status = 200, description = "The topics", body = ContentTopics),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "No language model is configured (`LLM_NOT_CONFIGURED`), the model endpoint failed (`LLM_FAILED`), or its answer held no topics (`LLM_INVALID_OUTPUT`); nothing is made up instead", body = MailError),
    )
)]
pub async fn content_topics(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SuggestContentTopics>,
) -> Result<web::Json<ContentTopics>, ApiError> {
    suggest_content_topics(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// A new site, its own sending domain with the DNS records to publish, and the default
/// warmup schedule, in one call. Idempotent per domain: the same call again answers the site
/// already sending from the domain (200) and creates nothing.
#[utoipa::path(
    post,
    path = "/api/v1/onboarding",
    operation_id = "onboardNewSite",
    tag = "sites",
    request_body = OnboardSite,
    responses(
        (status = 201, description = "The site, its domain and its warmup, created now", body = Onboarding),
        (status = 200, description = "The site that already sends from the domain (nothing created)", body = Onboarding),
        (status = 400, description = "Missing or invalid field (named in `details.field`), or the shared sending domain", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "Another project verified the domain (`DOMAIN_TAKEN`)", body = MailError),
    )
)]
pub async fn onboard(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<OnboardSite>,
) -> Result<HttpResponse, ApiError> {
    let answer = onboard_new_site(&state, caller.owner_id, &body).await?;
    Ok(if answer.created {
        HttpResponse::Created().json(answer)
    } else {
        HttpResponse::Ok().json(answer)
    })
}

/// Write an email from a brief with the language model, in the site's brand voice, and store
/// it as a template (its subject as the subject hint).
#[utoipa::path(
    post,
    path = "/api/v1/briefs/template",
    operation_id = "createTemplateFromBrief",
    tag = "templates",
    request_body = TemplateFromBrief,
    responses(
        (status = 201, description = "The stored template", body = TemplateWritten),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "No language model is configured (`LLM_NOT_CONFIGURED`), the model endpoint failed (`LLM_FAILED`), or its answer was not a usable template (`LLM_INVALID_OUTPUT`); nothing is stored", body = MailError),
    )
)]
pub async fn template_from_brief(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<TemplateFromBrief>,
) -> Result<HttpResponse, ApiError> {
    let written = create_template_from_brief(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(written))
}

/// Write an email from a brief with the language model, in the site's brand voice, and store
/// it as the first step of a new draft campaign. A draft sends nothing: activating it is
/// `POST /api/v1/campaigns/{id}/status`, under the project's approval policy.
#[utoipa::path(
    post,
    path = "/api/v1/briefs/campaign",
    operation_id = "setupCampaignFromBrief",
    tag = "campaigns",
    request_body = CampaignFromBrief,
    responses(
        (status = 201, description = "The draft campaign", body = CampaignSetUp),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "No language model is configured (`LLM_NOT_CONFIGURED`), the model endpoint failed (`LLM_FAILED`), or its answer was not a usable email (`LLM_INVALID_OUTPUT`); nothing is stored", body = MailError),
    )
)]
pub async fn campaign_from_brief(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CampaignFromBrief>,
) -> Result<HttpResponse, ApiError> {
    let set_up = setup_campaign_from_brief(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(set_up))
}

fn site_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}
