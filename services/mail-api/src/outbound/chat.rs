//! Chat alerts on bounces and complaints: every project with a Slack-compatible incoming
//! webhook (`PUT /chat-alerts`) gets at most one message per `chat_alert_spacing_secs`
//! (a minute by default) summing up the `email.bounced` and `email.complained` events since
//! the last one (and the `approval.requested` ones: actions waiting for a person), posted as `{"text": …}` through the same SSRF-safe client as the webhooks.
//! Safe with many replicas (`FOR UPDATE SKIP LOCKED`); a failed post is tried again, with the
//! same events, after the spacing.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use delivery::safe_http::SafeClient;
use diesel_async::AsyncConnection as _;
use secrets::Kek;
use serde_json::json;
use store::Pool;

use crate::db::chat_alerts::{self, Reported};

/// Events listed by name in one message (the rest are counted).
const LISTED: usize = 10;

pub struct ChatAlerter {
    pub pool: Pool,
    pub kek: Arc<Kek>,
    pub client: SafeClient,
    pub spacing_secs: i64,
}

impl ChatAlerter {
    pub fn spawn(self, period: Duration) {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period.max(Duration::from_millis(50)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(err) = self.pass().await {
                    tracing::warn!(error = %err, "chat alert pass failed");
                }
            }
        });
    }

    /// One pass: how many messages went out.
    pub async fn pass(&self) -> anyhow::Result<usize> {
        let mut conn = store::conn(&self.pool).await?;
        let sent = conn
            .transaction::<_, anyhow::Error, _>(async |conn| {
                let mut sent = 0;
                for due in chat_alerts::due(conn, self.spacing_secs, 50).await? {
                    let events =
                        chat_alerts::events_after(conn, due.project_id, due.after_event, 1000)
                            .await?;
                    let Some(last) = events.last().map(|e| e.id) else {
                        continue;
                    };
                    let url = self
                        .kek
                        .open_text(&due.url_sealed, &chat_alerts::seal_context(due.project_id))?;
                    let body = serde_json::to_vec(&json!({"text": text(&events)}))?;
                    let reported = match self.client.post(&url, &[], body).await {
                        Ok(answer) if (200..300).contains(&answer.status) => Some(last),
                        Ok(answer) => {
                            tracing::warn!(project = %due.project_id, status = answer.status, "chat alert refused");
                            None
                        }
                        Err(err) => {
                            tracing::warn!(project = %due.project_id, error = %err, "chat alert not sent");
                            None
                        }
                    };
                    sent += usize::from(reported.is_some());
                    chat_alerts::mark(conn, due.project_id, reported).await?;
                }
                Ok(sent)
            })
            .await?;
        Ok(sent)
    }
}

/// The message: counts, then the first addresses; then the actions waiting for approval.
pub fn text(events: &[Reported]) -> String {
    let (approvals, events): (Vec<&Reported>, Vec<&Reported>) =
        events.iter().partition(|e| e.kind == "approval.requested");
    let (warnings, events): (Vec<&Reported>, Vec<&Reported>) = events
        .into_iter()
        .partition(|e| e.kind == "bounce_rate.warning");
    let bounced = events.iter().filter(|e| e.kind == "email.bounced").count();
    let complained = events.len() - bounced;
    let mut out = format!(
        "Mail alert: {bounced} bounce{} and {complained} complaint{} since the last alert",
        if bounced == 1 { "" } else { "s" },
        if complained == 1 { "" } else { "s" },
    );
    for warning in &warnings {
        let field = |name: &str| warning.data.get(name).cloned().unwrap_or_default();
        let _ = write!(
            out,
            "\n⚠ sender reputation of site {}: {} (bounce rate {}, complaint rate {} of {} sends)",
            field("site_id").as_str().unwrap_or("?"),
            field("state").as_str().unwrap_or("warning"),
            field("bounce_rate"),
            field("complaint_rate"),
            field("sends"),
        );
    }
    if !approvals.is_empty() {
        let _ = write!(
            out,
            "\n{} action{} waiting for a person's approval",
            approvals.len(),
            if approvals.len() == 1 { "" } else { "s" }
        );
        for approval in approvals.iter().take(LISTED) {
            let what = approval
                .data
                .get("summary")
                .and_then(|v| v.as_str())
                .unwrap_or("?");
            let _ = write!(out, "\n• to approve: {what}");
        }
    }
    for event in events.iter().take(LISTED) {
        let what = if event.kind == "email.bounced" {
            "bounced"
        } else {
            "complained"
        };
        let to = event.data.get("to").and_then(|v| v.as_str()).unwrap_or("?");
        let _ = write!(out, "\n• {what}: {to}");
    }
    if events.len() > LISTED {
        let _ = write!(out, "\n… and {} more", events.len() - LISTED);
    }
    out
}
