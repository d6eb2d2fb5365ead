//! What a person sees before deciding an approval (the dashboard's approvals page): the first
//! email rendered for the sample contact, as the send worker would hand it over, and how many
//! contacts the action would reach if it ran now.

use http_kit::ApiError;
use serde_json::json;
use uuid::Uuid;

use super::{ApprovalAction, ApprovalRecord};
use crate::AppState;
use crate::db::enrollments;
use crate::ops::campaigns::enrollments::EnrollSegment;
use crate::ops::campaigns::{self, LaunchAudience, LaunchCampaign};
use crate::ops::preview::{self, EmailPreview, PreviewRequest};
use crate::ops::send::SendRequest;

/// The review of one approval; what cannot be worked out (a deleted site, say) is `None`.
pub struct Review {
    pub sample: Option<EmailPreview>,
    /// Contacts reached now; `None` when the action names none yet (a campaign open to
    /// future contacts).
    pub audience: Option<i64>,
}

/// The review of the project's approval `record`.
pub async fn review(
    state: &AppState,
    project_id: Uuid,
    record: &ApprovalRecord,
) -> Result<Review, ApiError> {
    match record.action {
        ApprovalAction::LaunchCampaign => {
            let launch: LaunchCampaign = serde_json::from_value(record.arguments.clone())?;
            let first = launch.emails.first().map(|step| &step.0);
            let sample = match first {
                Some(step) => {
                    let content = (&step.subject, &step.html, step.template_id);
                    render(state, project_id, launch.site_id, content).await
                }
                None => None,
            };
            let audience = match launch.audience {
                LaunchAudience::Subscribers => {
                    let mut conn = store::conn(&state.pool).await?;
                    Some(
                        enrollments::count_site_subscribers(&mut conn, project_id, launch.site_id)
                            .await?,
                    )
                }
                LaunchAudience::None => None,
            };
            Ok(Review { sample, audience })
        }
        ApprovalAction::SendEmail => {
            let send: SendRequest = serde_json::from_value(record.arguments.clone())?;
            let subject = send.subject.clone().unwrap_or_default();
            let content = (&subject, &send.html, send.template_id);
            Ok(Review {
                sample: render(state, project_id, send.site_id, content).await,
                audience: Some(1),
            })
        }
        ApprovalAction::EnrollSegment | ApprovalAction::DeleteCampaign => {
            let Some(id) = campaign_of(record) else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let Ok(detail) = campaigns::get_campaign(state, project_id, id).await else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let audience = if record.action == ApprovalAction::EnrollSegment {
                let req: EnrollSegment = serde_json::from_value(record.arguments.clone())?;
                let mut conn = store::conn(&state.pool).await?;
                Some(super::gate::enrollment_audience(&mut conn, project_id, &req).await?)
            } else {
                Some(detail.enrollments.active)
            };
            let site = detail.campaign.site_id;
            let sample = match detail.steps.first() {
                Some(step) => {
                    let content = (&step.subject, &step.html, step.template_id);
                    render(state, project_id, site, content).await
                }
                None => None,
            };
            Ok(Review { sample, audience })
        }
        // The post's text is in the arguments the person reads.
        ApprovalAction::PublishSocialPost => Ok(Review {
            sample: None,
            audience: None,
        }),
        ApprovalAction::PromoteAbWinner => {
            let Some(id) = record.arguments["test_id"]
                .as_str()
                .and_then(|id| Uuid::parse_str(id).ok())
            else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let mut conn = store::conn(&state.pool).await?;
            let held = crate::db::ab_tests::held_back(&mut conn, project_id, id).await?;
            Ok(Review {
                sample: None,
                audience: Some(held),
            })
        }
        ApprovalAction::SendSmsCampaign => {
            let req: crate::ops::sms::SendSmsCampaign =
                serde_json::from_value(record.arguments.clone())?;
            let mut conn = store::conn(&state.pool).await?;
            let recipients =
                crate::db::sms::site_recipients(&mut conn, project_id, req.site_id).await?;
            let consented = recipients
                .iter()
                .filter(|r| r.consent.as_deref() == Some("granted"))
                .count();
            Ok(Review {
                sample: None,
                audience: Some(i64::try_from(consented).unwrap_or(i64::MAX)),
            })
        }
        ApprovalAction::ActivateAutomation | ApprovalAction::TriggerAutomation => {
            let Some(id) = record.arguments["automation_id"]
                .as_str()
                .and_then(|id| Uuid::parse_str(id).ok())
            else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let Ok(automation) =
                crate::ops::automations::get_automation(state, project_id, id).await
            else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let first = automation.steps.iter().find_map(|step| match step {
                crate::domain::automation::AutomationStep::SendEmail {
                    subject,
                    html,
                    template_id,
                    ..
                } => Some((subject, html, *template_id)),
                _ => None,
            });
            let sample = match first {
                Some(content) => render(state, project_id, automation.site_id, content).await,
                None => None,
            };
            let audience = crate::ops::automations::preview_automation(state, project_id, id)
                .await
                .ok()
                .map(|p| i64::try_from(p.would_enter).unwrap_or(i64::MAX));
            Ok(Review { sample, audience })
        }
        ApprovalAction::ActivateCampaign => {
            let Some(id) = campaign_of(record) else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let Ok(detail) = campaigns::get_campaign(state, project_id, id).await else {
                return Ok(Review {
                    sample: None,
                    audience: None,
                });
            };
            let site = detail.campaign.site_id;
            let sample = match detail.steps.first() {
                Some(step) => {
                    let content = (&step.subject, &step.html, step.template_id);
                    render(state, project_id, site, content).await
                }
                None => None,
            };
            let counts = &detail.enrollments;
            Ok(Review {
                sample,
                audience: Some(counts.active),
            })
        }
    }
}

/// The campaign an approval's arguments name.
fn campaign_of(record: &ApprovalRecord) -> Option<Uuid> {
    record.arguments["campaign_id"]
        .as_str()
        .and_then(|id| Uuid::parse_str(id).ok())
}

/// The email of `content` (subject, HTML, template) rendered for the sample contact; `None`
/// when it cannot be (its site or template is gone).
async fn render(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    (subject, html, template_id): (&String, &Option<String>, Option<Uuid>),
) -> Option<EmailPreview> {
    let req: PreviewRequest = serde_json::from_value(json!({
        "site_id": site_id,
        "subject": subject,
        "html": html,
        "template_id": template_id,
        "kind": "marketing",
    }))
    .ok()?;
    preview::preview_email(state, project_id, &req).await.ok()
}
