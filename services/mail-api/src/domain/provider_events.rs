//! Each provider's event, read as the one event the document's state machine knows
//! (`email.delivered`, `email.opened`, `email.clicked`, `email.bounced`, `email.complained`)
//! with the provider's message id, the clicked link and the bounce's kind.
//!
//! Bounces carry `{"type": "Permanent" | "Transient", "subtype": <the provider's word>}`
//! (hard and soft bounces both end the email bounced and the address suppressed).

use serde_json::{Value, json};

/// One provider event, normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderEvent {
    /// `email.delivered`, `email.opened`, `email.clicked`, `email.bounced`, `email.complained`.
    pub kind: &'static str,
    /// The provider's id of the message, as the send stored it.
    pub message_id: String,
    pub link: Option<String>,
    pub bounce: Option<Value>,
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn bounce(hard: bool, subtype: &str) -> Option<Value> {
    Some(json!({
        "type": if hard { "Permanent" } else { "Transient" },
        "subtype": subtype,
    }))
}

/// The event's state effect, or why it is ignored.
pub fn normalize(provider: &str, payload: &Value) -> Result<ProviderEvent, String> {
    match provider {
        "resend" => resend(payload),
        "postmark" => postmark(payload),
        "mailgun" => mailgun(payload),
        "sendgrid" => sendgrid(payload),
        "ses" => ses(payload),
        "smtp" => smtp(payload),
        other => Err(format!("provider {other}")),
    }
}

/// The event type a receipt records (before it is applied).
pub fn event_type(provider: &str, payload: &Value) -> Option<String> {
    match provider {
        "postmark" => text(payload, "/RecordType"),
        "mailgun" => text(payload, "/event-data/event"),
        "sendgrid" => text(payload, "/event"),
        "ses" => text(payload, "/eventType").or_else(|| text(payload, "/notificationType")),
        "resend" | "smtp" => text(payload, "/type"),
        _ => None,
    }
    .map(|t| t.chars().take(100).collect())
}

/// A report learnt over SMTP (a DSN, a feedback report, a refusal during the send worker's
/// own conversation), written as Resend's shape with the email log id as `data.email_log_id`.
fn smtp(payload: &Value) -> Result<ProviderEvent, String> {
    let kind = match text(payload, "/type").ok_or("no event type")? {
        "email.bounced" => "email.bounced",
        "email.complained" => "email.complained",
        other => return Err(format!("event type {other}")),
    };
    let id = text(payload, "/data/email_log_id").ok_or("no data.email_log_id")?;
    Ok(ProviderEvent {
        kind,
        message_id: id.to_owned(),
        link: None,
        bounce: payload.pointer("/data/bounce").cloned(),
    })
}

fn resend(payload: &Value) -> Result<ProviderEvent, String> {
    let kind = text(payload, "/type").ok_or("no event type")?;
    let kind = match kind {
        "email.delivered" => "email.delivered",
        "email.opened" => "email.opened",
        "email.clicked" => "email.clicked",
        "email.bounced" => "email.bounced",
        "email.complained" => "email.complained",
        other => return Err(format!("event type {other}")),
    };
    let message_id = text(payload, "/data/email_id").ok_or("no data.email_id")?;
    Ok(ProviderEvent {
        kind,
        message_id: message_id.to_owned(),
        link: text(payload, "/data/click/link").map(str::to_owned),
        bounce: payload.pointer("/data/bounce").cloned(),
    })
}

/// Postmark: `RecordType` Delivery, Bounce (`Type` HardBounce, or SoftBounce / Transient),
/// SpamComplaint, Open, Click; `MessageID`.
fn postmark(payload: &Value) -> Result<ProviderEvent, String> {
    let record = text(payload, "/RecordType").ok_or("no RecordType")?;
    let (kind, bounce) = match record {
        "Delivery" => ("email.delivered", None),
        "Open" => ("email.opened", None),
        "Click" => ("email.clicked", None),
        "SpamComplaint" => ("email.complained", None),
        "Bounce" => match text(payload, "/Type").unwrap_or_default() {
            "HardBounce" => ("email.bounced", bounce(true, "HardBounce")),
            t @ ("SoftBounce" | "Transient") => ("email.bounced", bounce(false, t)),
            // Auto-responders, challenge mails, DNS hiccups: not a bounce of the address.
            other => return Err(format!("Postmark bounce type {other}")),
        },
        other => return Err(format!("Postmark record type {other}")),
    };
    let message_id = text(payload, "/MessageID").ok_or("no MessageID")?;
    Ok(ProviderEvent {
        kind,
        message_id: message_id.to_owned(),
        link: text(payload, "/OriginalLink").map(str::to_owned),
        bounce,
    })
}

/// Mailgun: `event-data.event` delivered, failed (`severity` permanent | temporary),
/// complained, opened, clicked; `event-data.message.headers.message-id`.
fn mailgun(payload: &Value) -> Result<ProviderEvent, String> {
    let data = payload.get("event-data").ok_or("no event-data")?;
    let event = text(data, "/event").ok_or("no event-data.event")?;
    let (kind, bounce) = match event {
        "delivered" => ("email.delivered", None),
        "opened" => ("email.opened", None),
        "clicked" => ("email.clicked", None),
        "complained" => ("email.complained", None),
        "failed" => match text(data, "/severity").unwrap_or_default() {
            "permanent" => ("email.bounced", bounce(true, "permanent")),
            "temporary" => ("email.bounced", bounce(false, "temporary")),
            other => return Err(format!("Mailgun failure severity {other}")),
        },
        other => return Err(format!("Mailgun event {other}")),
    };
    let message_id = text(data, "/message/headers/message-id")
        .ok_or("no event-data.message.headers.message-id")?;
    Ok(ProviderEvent {
        kind,
        message_id: message_id
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_owned(),
        link: text(data, "/url").map(str::to_owned),
        bounce,
    })
}

/// SendGrid (one event of the batch): delivered, bounce (`type` bounce | blocked), dropped,
/// spamreport, open, click; `sg_message_id` is the send's `X-Message-Id` and a suffix.
fn sendgrid(payload: &Value) -> Result<ProviderEvent, String> {
    let event = text(payload, "/event").ok_or("no event")?;
    let (kind, bounce) = match event {
        "delivered" => ("email.delivered", None),
        "open" => ("email.opened", None),
        "click" => ("email.clicked", None),
        "spamreport" => ("email.complained", None),
        "bounce" => match text(payload, "/type").unwrap_or("bounce") {
            "blocked" => ("email.bounced", bounce(false, "blocked")),
            _ => ("email.bounced", bounce(true, "bounce")),
        },
        "dropped" => ("email.bounced", bounce(true, "dropped")),
        other => return Err(format!("SendGrid event {other}")),
    };
    let message_id = text(payload, "/sg_message_id").ok_or("no sg_message_id")?;
    let message_id = message_id.split('.').next().unwrap_or(message_id);
    Ok(ProviderEvent {
        kind,
        message_id: message_id.to_owned(),
        link: text(payload, "/url").map(str::to_owned),
        bounce,
    })
}

/// Amazon SES (the `Message` of an SNS notification): `eventType` (an event destination) or
/// `notificationType` (identity notifications) Delivery, Open, Click, Bounce (`bounceType`
/// Permanent, Transient or Undetermined), Complaint; `mail.messageId` is `SendEmail`'s id.
fn ses(payload: &Value) -> Result<ProviderEvent, String> {
    let kind = text(payload, "/eventType")
        .or_else(|| text(payload, "/notificationType"))
        .ok_or("no eventType")?;
    let (kind, bounce) = match kind {
        "Delivery" => ("email.delivered", None),
        "Open" => ("email.opened", None),
        "Click" => ("email.clicked", None),
        "Complaint" => ("email.complained", None),
        "Bounce" => {
            let subtype = text(payload, "/bounce/bounceSubType").unwrap_or("General");
            match text(payload, "/bounce/bounceType").unwrap_or_default() {
                "Permanent" => ("email.bounced", bounce(true, subtype)),
                "Transient" => ("email.bounced", bounce(false, subtype)),
                // SES could not tell: not a verdict on the address.
                other => return Err(format!("SES bounce type {other}")),
            }
        }
        other => return Err(format!("SES event {other}")),
    };
    let message_id = text(payload, "/mail/messageId").ok_or("no mail.messageId")?;
    Ok(ProviderEvent {
        kind,
        message_id: message_id.to_owned(),
        link: text(payload, "/click/link").map(str::to_owned),
        bounce,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ses_events_read_as_the_state_machines() {
        let bounce = json!({"eventType": "Bounce", "bounce": {"bounceType": "Permanent",
            "bounceSubType": "NoEmail"}, "mail": {"messageId": "0102-abc"}});
        let e = normalize("ses", &bounce).unwrap();
        assert_eq!(
            (e.kind, e.message_id.as_str()),
            ("email.bounced", "0102-abc")
        );
        assert_eq!(e.bounce.unwrap()["type"], "Permanent");
        let click = json!({"eventType": "Click", "click": {"link": "https://acme.test/"},
            "mail": {"messageId": "0102-abc"}});
        assert_eq!(
            normalize("ses", &click).unwrap().link.as_deref(),
            Some("https://acme.test/")
        );
        let unsure = json!({"notificationType": "Bounce", "bounce": {"bounceType": "Undetermined"},
            "mail": {"messageId": "m"}});
        assert!(normalize("ses", &unsure).is_err());
        assert_eq!(event_type("ses", &unsure).as_deref(), Some("Bounce"));
    }

    #[test]
    fn each_providers_bounce_reads_as_one() {
        let postmark = json!({"RecordType": "Bounce", "Type": "HardBounce", "MessageID": "m1"});
        let e = normalize("postmark", &postmark).unwrap();
        assert_eq!((e.kind, e.message_id.as_str()), ("email.bounced", "m1"));
        assert_eq!(e.bounce.unwrap()["type"], "Permanent");
        let auto = json!({"RecordType": "Bounce", "Type": "AutoResponder", "MessageID": "m1"});
        assert!(normalize("postmark", &auto).is_err());

        let mailgun = json!({"event-data": {"event": "failed", "severity": "temporary",
            "message": {"headers": {"message-id": "<m2@mg.test>"}}}});
        let e = normalize("mailgun", &mailgun).unwrap();
        assert_eq!(e.message_id, "m2@mg.test");
        assert_eq!(e.bounce.unwrap()["type"], "Transient");

        let sendgrid = json!({"event": "spamreport", "sg_message_id": "abc.filter0001.1.0"});
        let e = normalize("sendgrid", &sendgrid).unwrap();
        assert_eq!((e.kind, e.message_id.as_str()), ("email.complained", "abc"));
        assert!(
            normalize(
                "sendgrid",
                &json!({"event": "processed", "sg_message_id": "a"})
            )
            .is_err()
        );
    }
}
