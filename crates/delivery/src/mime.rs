//! The RFC 5322 message of an [`OutgoingEmail`], built by lettre: `multipart/alternative` with
//! the text part first (when given) and the HTML part last, the caller's custom headers, and a
//! Message-ID of our own so that the provider's copy and our log agree.

use lettre::Message;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};

use crate::{EmailError, OutgoingEmail};

fn invalid(field: &'static str, err: impl std::fmt::Display) -> EmailError {
    EmailError::Invalid {
        field,
        message: err.to_string(),
    }
}

/// The lettre message (for SMTP), DKIM-signed when the email carries its domain's key;
/// [`OutgoingEmail::validate`] must have passed.
pub fn message(email: &OutgoingEmail) -> Result<Message, EmailError> {
    let from = Mailbox::new(
        Some(email.from_name.clone()).filter(|n| !n.is_empty()),
        email.from_address.parse().map_err(|e| invalid("from", e))?,
    );
    let to: Mailbox = email.to.parse().map_err(|e| invalid("to", e))?;
    let to_address = to.email.clone();
    let mut builder = Message::builder()
        .from(from)
        .to(to)
        .subject(email.subject.clone())
        .message_id(Some(email.message_id()));
    if let Some(reply_to) = &email.reply_to {
        builder = builder.reply_to(reply_to.parse().map_err(|e| invalid("reply_to", e))?);
    }
    for (name, value) in &email.headers {
        let name = HeaderName::new_from_ascii(name.clone()).map_err(|e| invalid("headers", e))?;
        builder = builder.raw_header(HeaderValue::new(name, value.clone()));
    }
    let html = SinglePart::html(email.html.clone());
    let body = match &email.text {
        Some(text) => MultiPart::alternative()
            .singlepart(SinglePart::plain(text.clone()))
            .singlepart(html),
        None => MultiPart::alternative().singlepart(html),
    };
    if let Some(return_path) = &email.return_path {
        let sender: lettre::Address = return_path.parse().map_err(|e| invalid("return_path", e))?;
        let envelope = lettre::address::Envelope::new(Some(sender), vec![to_address])
            .map_err(|e| invalid("to", e))?;
        builder = builder.envelope(envelope).raw_header(HeaderValue::new(
            HeaderName::new_from_ascii_str("Return-Path"),
            format!("<{return_path}>"),
        ));
    }
    let mut message = builder.multipart(body).map_err(|e| invalid("to", e))?;
    if let Some(key) = &email.dkim {
        key.sign(&mut message)?;
    }
    Ok(message)
}

/// The message as bytes (for `.eml` files).
pub fn render(email: &OutgoingEmail) -> Result<Vec<u8>, EmailError> {
    Ok(message(email)?.formatted())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::email::sample;

    #[test]
    fn both_parts_headers_and_message_id() {
        let raw = String::from_utf8(render(&sample()).unwrap()).unwrap();
        assert!(
            raw.contains("From: Acme <news@mail.acme.test>\r\n"),
            "{raw}"
        );
        assert!(raw.contains("To: ada@example.com\r\n"));
        assert!(raw.contains("Reply-To: help@acme.test\r\n"));
        assert!(raw.contains("Subject: Welcome, Ada\r\n"));
        assert!(
            raw.contains("Message-ID: <0193a5f0-0000-7000-8000-000000000001@mail.acme.test>\r\n")
        );
        assert!(raw.contains("X-Campaign: welcome\r\n"));
        assert!(raw.contains("Content-Type: multipart/alternative;"));
        let text_at = raw.find("Content-Type: text/plain").unwrap();
        let html_at = raw.find("Content-Type: text/html").unwrap();
        assert!(text_at < html_at, "the preferred (HTML) part comes last");
        assert!(raw.contains("Hello, start at https://acme.test/start"));
    }

    #[test]
    fn a_return_path_is_the_envelope_sender_and_the_header() {
        let mut email = sample();
        email.return_path = Some("bounce+abc@bounces.acme.test".into());
        let message = message(&email).unwrap();
        assert_eq!(
            message
                .envelope()
                .from()
                .map(ToString::to_string)
                .as_deref(),
            Some("bounce+abc@bounces.acme.test")
        );
        let raw = String::from_utf8(message.formatted()).unwrap();
        assert!(
            raw.contains("Return-Path: <bounce+abc@bounces.acme.test>\r\n"),
            "{raw}"
        );
        assert!(raw.contains("From: Acme <news@mail.acme.test>\r\n"));
    }

    #[test]
    fn without_text_only_the_html_part() {
        let mut email = sample();
        email.text = None;
        let raw = String::from_utf8(render(&email).unwrap()).unwrap();
        assert!(!raw.contains("text/plain"));
        assert!(raw.contains("text/html"));
    }
}
