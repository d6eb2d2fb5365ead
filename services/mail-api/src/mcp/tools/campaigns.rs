//! The transactional part of the campaigns group.

use http_kit::{ApiError, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use rate_limit::policy::RouteClass;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Tool, declare};
use crate::ops::approvals::gate::{Gated, send_email_gated};
use crate::ops::input::normalize_email;
use crate::ops::preview::{PreviewRequest, ValidateTemplate, preview_email, validate_template};
use crate::ops::send::{SendRequest, send_email};

/// A test send of a draft to one address.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TestEmail {
    /// Where the test goes.
    #[schema(format = Email)]
    pub to_email: String,
    /// The site it is sent from.
    pub site_id: Uuid,
    /// Subject (sent with `[Test] ` in front), 1..=990 characters, not blank, one line.
    #[schema(min_length = 1, max_length = 990, pattern = r"[^\s\x85\uFEFF]")]
    pub subject: String,
    /// The HTML body, not blank, at most 524,288 characters.
    #[schema(min_length = 1, max_length = 524288, pattern = r"[^\s\x85\uFEFF]")]
    pub html: String,
    /// At most 524,288 characters.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
}

impl Validate for TestEmail {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("to_email", &mut self.to_email)
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "send_transactional",
            Group::Campaigns,
            "Send one transactional email now from a site (to, site_id, subject, and html or a \
             template_id; text, data, reply_to, headers, tags, tracking and an idempotency_key \
             optional). Subject, html and text may use {{ first_name | default(\"there\") }} \
             and {{ data.x }}, rendered for the recipient. Suppressed recipients and plan \
             quotas are refused. Past the project's daily allowance under its approval \
             policy, answers approval_required with an approval_id and sends nothing until a \
             person approves.",
        )
        .sends(|ctx, Body(email): Body<SendRequest>| async move {
            let view = ctx.state.gates.view(None);
            Ok(
                match send_email_gated(&ctx.state, view, &ctx.caller, &email).await? {
                    Gated::Done(accepted) => serde_json::to_value(accepted.answer)?,
                    Gated::Pending(pending) => serde_json::to_value(pending)?,
                },
            )
        }),
        declare(
            "send_test_email",
            Group::Campaigns,
            "Send a test of an email to one address, subject marked [Test], without tracking.",
        )
        .sends(|ctx, Body(test): Body<TestEmail>| async move {
            let mut email = SendRequest {
                to: test.to_email,
                site_id: test.site_id,
                subject: Some(format!("[Test] {}", test.subject)),
                html: Some(test.html),
                text: test.text,
                template_id: None,
                data: None,
                reply_to: None,
                headers: None,
                tags: vec!["test".to_owned()],
                idempotency_key: None,
                tracking: false,
            };
            email.validate()?;
            Ok(send_email(&ctx.state, &ctx.caller, &email).await?.answer)
        }),
        // Read scope; counted as the POST routes they mirror are (write class).
        in_class(
            declare(
                "validate_template",
                Group::Campaigns,
                "Check an email's HTML with an HTML parser: template syntax errors, variables \
                 no recipient has (known: email, first_name, last_name, tags, properties.*, \
                 site.*, campaign.*, step.*, event.*, unsubscribe_url, data.*), a missing \
                 unsubscribe link in marketing mail, images without alt text, relative or \
                 unsafe links, unclosed elements, size. Errors and warnings, nothing stored.",
            )
            .reads(|_ctx, Body(template): Body<ValidateTemplate>| async move {
                Ok(validate_template(&template))
            }),
            RouteClass::Write,
        ),
        in_class(
            declare(
                "preview_email",
                Group::Campaigns,
                "Render an email (subject and html, or a template) for a contact or a sample \
                 recipient exactly as the send worker would (sender, tracking, unsubscribe \
                 headers), with its check report. Nothing is sent or stored.",
            )
            .reads(|ctx, Body(request): Body<PreviewRequest>| async move {
                preview_email(&ctx.state, ctx.project_id(), &request).await
            }),
            RouteClass::Write,
        ),
    ]
}

fn in_class(mut tool: Tool, class: RouteClass) -> Tool {
    tool.class = class;
    tool
}
