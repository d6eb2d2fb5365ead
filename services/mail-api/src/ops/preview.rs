//! The use cases of looking at an email before it is sent: the HTML check and the preview.
//!
//! Looking at an email before it is sent: `POST /api/v1/templates/validate` checks HTML (a
//! real HTML parser, no model), `POST /api/v1/emails/preview` renders an email exactly as the
//! send worker would (the same [`crate::worker::personalize`] and [`crate::worker::compose`],
//! for the contact or a sample one) and sends nothing.
//!
//! Registered before the `templates` and `emails` resources, so that `/templates/validate`
//! and `/emails/preview` are never taken for an id.

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::schema::KnownFormat;
use uuid::Uuid;

use crate::AppState;
use crate::db::{contacts, insights, sites};
use crate::domain::error_code::MailErrorCode;
use crate::domain::personalize;
use crate::domain::template_check::{self, MailKind, Report};
use crate::flows;
use crate::ops::input::{
    check_template_syntax, normalize_email, reply_to_schema, template_data_schema,
};
use crate::worker::{ComposeError, Draft, compose, personalize as personalize_email};

/// The recipient of a preview without `to` or `contact_id`.
pub const SAMPLE_RECIPIENT: &str = "recipient@example.com";

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ValidateTemplate {
    /// Required: the HTML to check, at most 1,048,576 characters (the send routes take at most
    /// 524,288: more is reported as `TOO_LARGE`).
    #[schema(max_length = 1048576)]
    pub html: String,
    /// A subject to check too, at most 998 characters.
    #[schema(max_length = 998)]
    pub subject: Option<String>,
    /// A text part to check too, at most 524,288 characters.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
    /// `marketing` (default, also when null: an unsubscribe link is expected) or
    /// `transactional`.
    #[schema(inline)]
    pub kind: Option<MailKind>,
}

impl Validate for ValidateTemplate {}

/// `POST /templates/validate`, `validate_template`.
pub fn validate_template(req: &ValidateTemplate) -> Report {
    template_check::check(
        &req.html,
        req.subject.as_deref(),
        req.text.as_deref(),
        req.kind.unwrap_or_default(),
    )
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PreviewRequest {
    /// Required: a site of the project (404 `SITE_NOT_FOUND` otherwise); the sender is
    /// `<slug>@<shared sending domain>` (or `<slug>@<own domain>` while the site's own domain
    /// is verified, DKIM-signed) with the site's `from_name`.
    pub site_id: Uuid,
    #[schema(schema_with = template_schema)]
    pub template_id: Option<Uuid>,
    /// 1..=998 characters, not blank, one line; required unless the template has a subject
    /// hint.
    #[schema(min_length = 1, max_length = 998, pattern = r"[^\s\x85\uFEFF]")]
    pub subject: Option<String>,
    /// Not blank, at most 524,288 characters; required unless the template has HTML.
    #[schema(min_length = 1, max_length = 524288, pattern = r"[^\s\x85\uFEFF]")]
    pub html: Option<String>,
    /// At most 524,288 characters; empty is absent.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
    #[schema(schema_with = contact_schema)]
    pub contact_id: Option<Uuid>,
    #[schema(schema_with = to_schema)]
    pub to: Option<String>,
    #[schema(schema_with = reply_to_schema)]
    pub reply_to: Option<String>,
    /// Default true (also when null): open pixel and click-tracking links, as sent.
    #[serde(default = "tracking_default")]
    #[schema(required = false, default = true, nullable)]
    pub tracking: bool,
    /// `marketing` (default, also when null: rendered as campaign mail, with the one-click
    /// unsubscribe headers) or `transactional` (as `POST /send`).
    #[schema(inline)]
    pub kind: Option<MailKind>,
    /// The `data.*` a template syntax reads (as `POST /send`'s `data`), at most 50 members.
    #[schema(schema_with = template_data_schema)]
    pub data: Option<serde_json::Map<String, serde_json::Value>>,
}

fn tracking_default() -> bool {
    true
}

fn template_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        KnownFormat::Uuid,
        "A template of the project (404 `TEMPLATE_NOT_FOUND` otherwise): its HTML and subject \
         hint stand in for absent `html` and `subject`.",
    )
}

fn contact_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        KnownFormat::Uuid,
        "The recipient: this contact of the project (404 `CONTACT_NOT_FOUND` otherwise).",
    )
}

fn to_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        KnownFormat::Email,
        "The recipient when no `contact_id` is given (ignored with one), trimmed and \
         lowercased; default `recipient@example.com`.",
    )
}

impl Validate for PreviewRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(to) = &mut self.to {
            normalize_email("to", to)?;
        }
        if let Some(reply_to) = &mut self.reply_to {
            normalize_email("reply_to", reply_to)?;
        }
        if self.text.as_deref().is_some_and(str::is_empty) {
            self.text = None;
        }
        if self
            .data
            .as_ref()
            .is_some_and(|d| d.len() > crate::ops::input::DATA_MAX_MEMBERS)
        {
            return Err(ApiError::invalid_field("data", "has more than 50 members"));
        }
        check_template_syntax(&[
            ("subject", self.subject.as_deref()),
            ("html", self.html.as_deref()),
            ("text", self.text.as_deref()),
        ])
    }
}

/// A header of the rendered message.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewHeader {
    pub name: String,
    pub value: String,
}

/// The email as the send worker would hand it to the provider.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailPreview {
    /// The id the tracking links name: a fresh one, which no email has (nothing is stored).
    /// The links are signed with a throwaway key: they show what is sent and never work.
    pub preview_id: Uuid,
    pub site_id: Uuid,
    pub template_id: Option<Uuid>,
    pub contact_id: Option<Uuid>,
    pub from_name: String,
    pub from_address: String,
    pub to: String,
    pub reply_to: Option<String>,
    pub subject: String,
    /// The HTML as sent: personalized for the contact (or the sample contact: Ada Lovelace),
    /// with the open pixel and click links when `tracking`.
    pub html: String,
    pub text: Option<String>,
    /// The custom headers (the one-click unsubscribe pair for `marketing`).
    pub headers: Vec<PreviewHeader>,
    pub tracking: bool,
    #[schema(inline)]
    pub kind: MailKind,
    /// UTF-8 bytes of the rendered HTML.
    pub size_bytes: usize,
    /// The `POST /templates/validate` report of the HTML, subject and text as written.
    pub check: Report,
}

/// `POST /emails/preview`, `preview_email`.
pub async fn preview_email(
    state: &AppState,
    project_id: Uuid,
    req: &PreviewRequest,
) -> Result<EmailPreview, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let site = sites::get(&mut conn, project_id, req.site_id)
        .await?
        .ok_or_else(|| flows::site_not_found(req.site_id))?;
    let domain =
        crate::db::domains::sending_domain_of(&mut conn, project_id, site.id, &state.shared_domain)
            .await?;
    let template = match req.template_id {
        Some(id) => Some(
            insights::template_content(&mut conn, project_id, id)
                .await?
                .ok_or_else(|| {
                    ApiError::not_found(format!("template {id} not found"))
                        .with_code(MailErrorCode::TemplateNotFound)
                })?,
        ),
        None => None,
    };
    let (to, mut variables) = match req.contact_id {
        Some(id) => {
            let contact = contacts::personal(&mut conn, project_id, id)
                .await?
                .ok_or_else(|| {
                    ApiError::not_found(format!("contact {id} not found"))
                        .with_code(MailErrorCode::ContactNotFound)
                })?;
            (contact.email, contact.variables)
        }
        None => {
            let to = req
                .to
                .clone()
                .unwrap_or_else(|| SAMPLE_RECIPIENT.to_owned());
            let mut sample = personalize::sample_contact();
            sample["email"] = to.clone().into();
            (to, sample)
        }
    };
    variables["site"] = serde_json::json!({
        "name": site.name, "slug": site.slug, "from_name": site.from_name,
    });
    variables["data"] = serde_json::Value::Object(req.data.clone().unwrap_or_default());
    let html = req
        .html
        .clone()
        .or_else(|| template.as_ref().and_then(|t| t.html.clone()))
        .filter(|h| !h.trim().is_empty())
        .ok_or_else(|| {
            ApiError::invalid_field("html", "is required (the template, if any, has no HTML)")
        })?;
    let subject = req
        .subject
        .clone()
        .or_else(|| template.as_ref().and_then(|t| t.subject_hint.clone()))
        .ok_or_else(|| {
            ApiError::invalid_field(
                "subject",
                "is required (the template, if any, has no subject hint)",
            )
        })?;
    if personalize::reads_blocks([
        subject.as_str(),
        html.as_str(),
        req.text.as_deref().unwrap_or(""),
    ]) {
        variables[personalize::BLOCKS] =
            crate::ops::content::blocks_variable(&mut conn, project_id).await?;
    }
    drop(conn);
    let kind = req.kind.unwrap_or_default();
    let check = template_check::check(&html, Some(&subject), req.text.as_deref(), kind);
    let preview_id = Uuid::now_v7();
    // Links of the real shape that never verify: a preview must not hand out working
    // redirects through the tracking domain without an email being sent.
    let tracker = state.tracker.inert();
    check_template_syntax(&[("subject", Some(&subject)), ("html", Some(&html))])?;
    let personal = personalize_email(
        &personalize::Renderer::default(),
        &tracker,
        preview_id,
        variables,
        &subject,
        &html,
        req.text.as_deref(),
    )
    .map_err(|err| ApiError::invalid_field(&err.field, &err.message))?;
    let draft = Draft {
        id: preview_id,
        to: &to,
        reply_to: req.reply_to.as_deref(),
        subject: &personal.subject,
        html: &personal.html,
        text: personal.text.as_deref(),
        headers: Vec::new(),
        tags: &[],
        tracking: req.tracking,
        campaign: kind == MailKind::Marketing,
    };
    let email =
        compose(&tracker, &domain, &site.slug, &site.from_name, &draft).map_err(
            |err| match err {
                ComposeError::Invalid(delivery::EmailError::Invalid { field, message }) => {
                    ApiError::invalid_field(field, &message)
                }
                ComposeError::Tracking(err) => ApiError::invalid_field("html", &err.to_string()),
            },
        )?;
    Ok(EmailPreview {
        preview_id,
        site_id: req.site_id,
        template_id: req.template_id,
        contact_id: req.contact_id,
        from_name: email.from_name,
        from_address: email.from_address,
        to: email.to,
        reply_to: email.reply_to,
        subject: email.subject,
        size_bytes: email.html.len(),
        html: email.html,
        text: email.text,
        headers: email
            .headers
            .into_iter()
            .map(|(name, value)| PreviewHeader { name, value })
            .collect(),
        tracking: req.tracking,
        kind,
        check,
    })
}
