//! What a message that reached the bounce domain reports, read with `mail-parser`:
//!
//! - a delivery status notification (RFC 3464: `multipart/report;
//!   report-type=delivery-status` with a `message/delivery-status` part): a recipient whose
//!   `Action` is `failed` with a `5.x.x` `Status` is a hard bounce; `failed` with `4.x.x`, or
//!   `delayed`, a soft bounce (the document's table applies the same effects to both);
//!   `delivered`, `relayed` and `expanded` report nothing to act on;
//! - a feedback report (RFC 5965 ARF: `report-type=feedback-report` with a
//!   `message/feedback-report` part): a complaint, whatever its `Feedback-Type` but `not-spam`;
//! - anything else (an auto-reply, a human's answer): nothing.

use mail_parser::{MessageParser, MimeHeaders as _};
use serde_json::{Value, json};

use super::clip;

/// What a report says about the email it came back for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Bounce {
        /// A permanent failure (`5.x.x`); otherwise a soft bounce.
        hard: bool,
        action: String,
        status: String,
        diagnostic: Option<String>,
    },
    Complaint {
        feedback_type: String,
        user_agent: Option<String>,
    },
}

impl Report {
    /// The provider event it stands for (`email.bounced` or `email.complained`) and the
    /// event's `data` besides the email: `bounce` `{type: hard|soft, status, action,
    /// diagnostic}` (as the project's outbound `email.bounced` carries it) or `complaint`.
    pub fn event(&self) -> (&'static str, Value) {
        match self {
            Report::Bounce {
                hard,
                action,
                status,
                diagnostic,
            } => {
                let mut bounce = json!({
                    "type": if *hard { "hard" } else { "soft" },
                    "source": "dsn",
                    "action": action,
                    "status": status,
                });
                if let Some(text) = diagnostic {
                    bounce["diagnostic"] = clip(text, 500);
                }
                ("email.bounced", json!({"bounce": bounce}))
            }
            Report::Complaint {
                feedback_type,
                user_agent,
            } => {
                let mut complaint = json!({"source": "arf", "feedback_type": feedback_type});
                if let Some(agent) = user_agent {
                    complaint["user_agent"] = clip(agent, 200);
                }
                ("email.complained", json!({"complaint": complaint}))
            }
        }
    }

    /// A refusal in our own SMTP conversation (a 5xx reply): a hard bounce.
    pub fn refused(reason: &str) -> Self {
        Report::Bounce {
            hard: true,
            action: "failed".to_owned(),
            status: "5.0.0".to_owned(),
            diagnostic: Some(reason.to_owned()),
        }
    }
}

/// A parsed message: the report in it, and its text where a return path may be found (the
/// returned message's headers).
#[derive(Debug, Default)]
pub struct Parsed {
    pub report: Option<Report>,
    /// The returned message or its headers (`message/rfc822`, `text/rfc822-headers`).
    pub original: String,
}

/// Reads `raw` (a whole message as received).
pub fn parse(raw: &[u8]) -> Parsed {
    let Some(message) = MessageParser::default().parse(raw) else {
        return Parsed::default();
    };
    let mut parsed = Parsed::default();
    for part in &message.parts {
        let Some(content_type) = part.content_type() else {
            continue;
        };
        let ctype = content_type.ctype().to_ascii_lowercase();
        let subtype = content_type
            .subtype()
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        let contents = || String::from_utf8_lossy(part.contents()).into_owned();
        match (ctype.as_str(), subtype.as_str()) {
            ("message", "delivery-status" | "global-delivery-status")
                if parsed.report.is_none() =>
            {
                parsed.report = delivery_status(&contents());
            }
            ("message", "feedback-report") if parsed.report.is_none() => {
                parsed.report = feedback(&contents());
            }
            ("message", "rfc822" | "global") | ("text", "rfc822-headers") => {
                let start = part.offset_header as usize;
                let end = (part.offset_end as usize).min(raw.len());
                if start < end {
                    parsed
                        .original
                        .push_str(&String::from_utf8_lossy(&raw[start..end]));
                }
            }
            _ => {}
        }
    }
    parsed
}

/// The fields of a header-like block (`Name: value`, folded lines unfolded), names lowercase.
fn fields(block: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = out.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            out.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    out
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The first recipient block (after the per-message block) that failed or was delayed.
fn delivery_status(body: &str) -> Option<Report> {
    let normalized = body.replace("\r\n", "\n");
    let mut blocks = normalized
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(fields);
    blocks.next()?;
    let mut soft = None;
    for block in blocks {
        let action = field(&block, "action")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let status = field(&block, "status")
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or_default()
            .to_owned();
        let diagnostic = field(&block, "diagnostic-code").map(str::to_owned);
        let hard = action == "failed" && status.starts_with('5');
        let report = Report::Bounce {
            hard,
            action: action.clone(),
            status: status.clone(),
            diagnostic,
        };
        if hard {
            return Some(report);
        }
        let is_soft = action == "delayed" || (action == "failed" && !status.starts_with('2'));
        if is_soft && soft.is_none() {
            soft = Some(report);
        }
    }
    soft
}

fn feedback(body: &str) -> Option<Report> {
    let normalized = body.replace("\r\n", "\n");
    let fields = fields(&normalized);
    let feedback_type = field(&fields, "feedback-type")?.to_ascii_lowercase();
    if feedback_type == "not-spam" {
        return None;
    }
    Some(Report::Complaint {
        feedback_type,
        user_agent: field(&fields, "user-agent").map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DSN: &str = "From: Mail Delivery System <MAILER-DAEMON@mx.example.org>\r\n\
To: bounce+abc@bounces.test\r\n\
Subject: Undelivered Mail Returned to Sender\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=delivery-status; boundary=\"b1\"\r\n\
\r\n\
--b1\r\n\
Content-Type: text/plain\r\n\
\r\n\
Your message could not be delivered.\r\n\
--b1\r\n\
Content-Type: message/delivery-status\r\n\
\r\n\
Reporting-MTA: dns; mx.example.org\r\n\
Arrival-Date: Wed, 2 Dec 2026 10:00:00 +0000\r\n\
\r\n\
Final-Recipient: rfc822; gone@example.org\r\n\
Action: failed\r\n\
Status: 5.1.1\r\n\
Diagnostic-Code: smtp; 550 5.1.1 <gone@example.org>:\r\n\
\x20Recipient address rejected: User unknown\r\n\
\r\n\
--b1\r\n\
Content-Type: text/rfc822-headers\r\n\
\r\n\
Return-Path: <bounce+abc@bounces.test>\r\n\
Subject: Welcome\r\n\
\r\n\
--b1--\r\n";

    #[test]
    fn a_failed_5xx_recipient_is_a_hard_bounce() {
        let parsed = parse(DSN.as_bytes());
        assert_eq!(
            parsed.report,
            Some(Report::Bounce {
                hard: true,
                action: "failed".into(),
                status: "5.1.1".into(),
                diagnostic: Some(
                    "smtp; 550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown"
                        .into()
                ),
            })
        );
        assert!(parsed.original.contains("bounce+abc@bounces.test"));
    }

    #[test]
    fn delayed_is_soft_and_delivered_is_nothing() {
        let delayed = DSN
            .replace("Action: failed", "Action: delayed")
            .replace("Status: 5.1.1", "Status: 4.4.1");
        let parsed = parse(delayed.as_bytes());
        assert!(
            matches!(&parsed.report, Some(Report::Bounce { hard: false, status, .. }) if status == "4.4.1"),
            "{parsed:?}"
        );
        let delivered = DSN
            .replace("Action: failed", "Action: delivered")
            .replace("Status: 5.1.1", "Status: 2.0.0");
        assert_eq!(parse(delivered.as_bytes()).report, None);
        assert_eq!(
            parse(b"Subject: out of office\r\n\r\nBack Monday.\r\n").report,
            None
        );
        assert_eq!(parse(b"").report, None);
    }

    #[test]
    fn a_feedback_report_is_a_complaint() {
        let arf = "From: fbl@isp.example\r\n\
Content-Type: multipart/report; report-type=feedback-report; boundary=\"f\"\r\n\
\r\n\
--f\r\n\
Content-Type: text/plain\r\n\
\r\n\
This is an email abuse report.\r\n\
--f\r\n\
Content-Type: message/feedback-report\r\n\
\r\n\
Feedback-Type: abuse\r\n\
User-Agent: SomeGenerator/1.0\r\n\
Version: 1\r\n\
\r\n\
--f\r\n\
Content-Type: message/rfc822\r\n\
\r\n\
Return-Path: <bounce+xyz@bounces.test>\r\n\
From: news@shared.test\r\n\
Subject: Hi\r\n\
\r\n\
Body\r\n\
--f--\r\n";
        let parsed = parse(arf.as_bytes());
        assert_eq!(
            parsed.report,
            Some(Report::Complaint {
                feedback_type: "abuse".into(),
                user_agent: Some("SomeGenerator/1.0".into()),
            })
        );
        assert!(parsed.original.contains("bounce+xyz@bounces.test"));
        let not_spam = arf.replace("Feedback-Type: abuse", "Feedback-Type: not-spam");
        assert_eq!(parse(not_spam.as_bytes()).report, None);
    }
}
