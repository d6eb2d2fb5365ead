//! One transactional email, sent now: the request as `POST /api/v1/send` and the tools read
//! it, checked for what the providers will check, then handed to [`sending::accept`] (replay,
//! checks, quota, write, hand-over to the worker).

use auth::Caller;
use http_kit::request::{trim, trim_and_dedupe};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::insights;
use crate::domain::error_code::MailErrorCode;
use crate::domain::personalize;
use crate::ops::input::{
    check_template_syntax, normalize_email, reply_to_schema, tags_schema, template_data_schema,
};
use crate::sending::{self, Accepted, Sender, Submission};
use crate::{AppState, flows};

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SendRequest {
    /// Recipient; stored trimmed and lowercased.
    #[schema(format = Email)]
    pub to: String,
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): the sender is
    /// `<slug>@<shared sending domain>` (or `<slug>@<own domain>` while the site's own domain
    /// is verified, DKIM-signed) with the site's `from_name`.
    pub site_id: Uuid,
    /// 1..=998 characters, not blank, one line. Required unless `template_id` names a template
    /// with a subject hint (then it replaces the hint). May hold template syntax (see
    /// Personalization).
    #[schema(min_length = 1, max_length = 998, pattern = r"[^\s\x85\uFEFF]")]
    pub subject: Option<String>,
    /// Not blank, at most 524,288 characters. Exactly one of `html` and `template_id`. May hold
    /// template syntax (`{{ first_name | default("there") }}`, see Personalization), rendered
    /// for the recipient when sent; a syntax error is 400 `TEMPLATE_SYNTAX` naming the line and
    /// column.
    #[schema(min_length = 1, max_length = 524288, pattern = r"[^\s\x85\uFEFF]")]
    pub html: Option<String>,
    /// At most 524,288 characters; empty is absent. May hold template syntax.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
    /// An extension of the document's route: a template of the project (404
    /// `TEMPLATE_NOT_FOUND` otherwise, another project's included) whose HTML is sent, and
    /// whose subject hint stands in for an absent `subject`. Exactly one of `html` and
    /// `template_id`; the template must have HTML (422 `UNPROCESSABLE` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable)]
    pub template_id: Option<Uuid>,
    /// An extension of the document's route: values the subject, HTML and text read as
    /// `data.*` (`{{ data.order_id }}`), at most 50 members (any JSON values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = template_data_schema)]
    pub data: Option<Map<String, Value>>,
    #[schema(schema_with = reply_to_schema)]
    pub reply_to: Option<String>,
    /// Custom headers: an allow-list, stated in [`HEADERS_RULE`].
    #[schema(schema_with = headers_schema)]
    pub headers: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// The same key with the same request answers the first result again
    /// (`Idempotent-Replayed: true`) and sends nothing; with another request, 409
    /// `IDEMPOTENCY_KEY_REUSED`. 1..=255 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 255, pattern = r"[^\s\x85\uFEFF]")]
    pub idempotency_key: Option<String>,
    /// Default true (also when null): open pixel and click-tracking links.
    #[serde(default = "tracking_default")]
    #[schema(required = false, default = true, nullable)]
    pub tracking: bool,
}

/// Which custom headers a sender may set (what [`delivery::check_custom_headers`] enforces).
const HEADERS_RULE: &str = "Custom headers, name to value (at most 50, each value one line of \
at most 2,000 characters). Only these may be set: `X-` headers (except `X-Mail-*`, \
`X-Original-*`, `X-Forwarded-*`, `X-Spam*`, `X-Google-*`, `X-MS-Exchange-*`, `X-Mailgun-*`, \
`X-Report-Abuse*` and `X-Complaints-To`), `References`, `In-Reply-To`, `Keywords`, \
`Comments`, `Importance`, `Priority`, `Sensitivity` and `Organization`. Any other header \
answers 400 naming it: the service's own (From, To, Cc, Bcc, Subject, Date, Message-ID, \
MIME and Content headers, Reply-To: use `reply_to`) and whatever changes delivery \
(`Resent-*`, `Return-Path`, `DKIM-Signature`, `List-Unsubscribe*`, \
`Disposition-Notification-To`, `Received`, …).";

/// An object of at most 50 string members, each named by a header a sender may set (the
/// allow-list as a pattern), each value one line of at most 2,000 characters.
fn headers_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(HEADERS_RULE))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(delivery::settable_header_pattern())),
        ))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(delivery::HEADER_VALUE_MAX_CHARS))
                .pattern(Some(r"^[^\r\n]*$")),
        ))
        .max_properties(Some(50))
        .build()
}

fn tracking_default() -> bool {
    true
}

impl Validate for SendRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("to", &mut self.to)?;
        if let Some(reply_to) = &mut self.reply_to {
            normalize_email("reply_to", reply_to)?;
        }
        if self.text.as_deref().is_some_and(str::is_empty) {
            self.text = None;
        }
        if let Some(key) = &mut self.idempotency_key {
            trim(key);
        }
        trim_and_dedupe(&mut self.tags);
        match (&self.html, self.template_id) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_field(
                    "template_id",
                    "give either html or template_id, not both",
                ));
            }
            (None, None) => {
                return Err(ApiError::invalid_field(
                    "html",
                    "is required (or template_id)",
                ));
            }
            (Some(_), None) if self.subject.is_none() => {
                return Err(ApiError::invalid_field(
                    "subject",
                    "is required (unless template_id names a template with a subject hint)",
                ));
            }
            _ => {}
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

/// The subject and HTML an email sends: the request's, or its template's.
struct Content {
    subject: String,
    html: String,
}

impl SendRequest {
    /// What the providers will check, checked now (header names and values, one-line
    /// subject, addresses), so that a bad request is a 400 and not a failed send.
    fn check_deliverable(&self, shared_domain: &str, subject: &str) -> Result<(), ApiError> {
        let probe = delivery::OutgoingEmail {
            id: Uuid::nil(),
            from_name: String::new(),
            from_address: format!("probe@{shared_domain}"),
            to: self.to.clone(),
            reply_to: self.reply_to.clone(),
            subject: subject.to_owned(),
            html: String::new(),
            text: None,
            headers: self.header_pairs(),
            tags: Vec::new(),
            dkim: None,
            return_path: None,
        };
        probe
            .validate()
            .and_then(|()| delivery::check_custom_headers(&probe.headers))
            .map_err(|err| match err {
                delivery::EmailError::Invalid { field, message } => {
                    ApiError::invalid_field(field, &message)
                }
            })
    }

    fn header_pairs(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect()
    }
}

/// Accepts one transactional email (`POST /send`, `send_transactional`, `send_test_email`).
pub async fn send_email(
    state: &AppState,
    caller: &Caller,
    req: &SendRequest,
) -> Result<Accepted, ApiError> {
    let content = req.content(state, caller.owner_id).await?;
    req.check_deliverable(&state.shared_domain, &content.subject)?;
    crate::ops::abuse_monitor::check_transactional(state, caller.owner_id, req.site_id).await?;
    let sender = Sender {
        project_id: caller.owner_id,
        plan: flows::plan_of(caller),
    };
    sending::accept(&state.pool, &state.send, sender, &req.submission(&content)?).await
}

/// Writes the approved transactional email `req` in the approval's transaction (`conn`),
/// with the same checks as [`send_email`]; the outbox relay hands it to the worker. Answers
/// it `queued`.
pub async fn write_approved(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    sender: Sender,
    req: &SendRequest,
) -> Result<crate::sending::SendResponse, ApiError> {
    let content = req.content(state, sender.project_id).await?;
    req.check_deliverable(&state.shared_domain, &content.subject)?;
    let id = sending::write_in(conn, &state.send, sender, &req.submission(&content)?).await?;
    Ok(crate::sending::SendResponse::queued(id, &req.to))
}

impl SendRequest {
    /// The request's subject and HTML, or its template's (404 when the project has no such
    /// template).
    async fn content(&self, state: &AppState, project_id: Uuid) -> Result<Content, ApiError> {
        let Some(id) = self.template_id else {
            return Ok(Content {
                subject: self.subject.clone().unwrap_or_default(),
                html: self.html.clone().unwrap_or_default(),
            });
        };
        let mut conn = store::conn(&state.pool).await?;
        let template = insights::template_content(&mut conn, project_id, id)
            .await?
            .ok_or_else(|| {
                ApiError::not_found(format!("template {id} not found"))
                    .with_code(MailErrorCode::TemplateNotFound)
            })?;
        drop(conn);
        let html = template
            .html
            .filter(|h| !h.trim().is_empty())
            .ok_or_else(|| ApiError::unprocessable(format!("template {id} has no HTML")))?;
        let subject = self
            .subject
            .clone()
            .or(template.subject_hint)
            .ok_or_else(|| {
                ApiError::invalid_field("subject", "is required (the template has no subject hint)")
            })?;
        check_template_syntax(&[("subject", Some(&subject)), ("html", Some(&html))])?;
        Ok(Content { subject, html })
    }
}

impl SendRequest {
    /// The request as [`sending::accept`] takes it.
    fn submission<'a>(&'a self, content: &'a Content) -> Result<Submission<'a>, ApiError> {
        let personalized = personalize::has_tags(&content.subject)
            || personalize::has_tags(&content.html)
            || self.text.as_deref().is_some_and(personalize::has_tags);
        Ok(Submission {
            site_id: self.site_id,
            to: &self.to,
            subject: &content.subject,
            html: &content.html,
            text: self.text.as_deref(),
            reply_to: self.reply_to.as_deref(),
            headers: self.header_pairs(),
            tags: &self.tags,
            tracking: self.tracking,
            idempotency_key: self.idempotency_key.as_deref(),
            request_hash: self.request_hash()?,
            template_data: personalized
                .then(|| Value::Object(self.data.clone().unwrap_or_default())),
        })
    }
}

impl SendRequest {
    /// What a replay must repeat: the request without its idempotency key.
    fn request_hash(&self) -> Result<[u8; 32], ApiError> {
        let mut value = serde_json::to_value(self)?;
        if let Value::Object(members) = &mut value {
            members.shift_remove("idempotency_key");
        }
        Ok(store::sha256(&serde_json::to_vec(&value)?))
    }
}
