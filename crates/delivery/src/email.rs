//! One outgoing email, checked before anything is built from it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The longest custom header value, in characters (the transports fold long lines).
pub const HEADER_VALUE_MAX_CHARS: usize = 2000;

/// Headers the message itself is built from (the service writes them); never taken from a
/// caller, whatever else is.
const RESERVED_HEADERS: [&str; 12] = [
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "reply-to",
    "message-id",
    "date",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "sender",
];

/// The standard headers a sender may set (RFC 5322 threading and informational fields, and
/// the common priority hints): none changes who gets the message, how it is routed or
/// authenticated, or what the service adds.
const SETTABLE_HEADERS: [&str; 9] = [
    "references",
    "in-reply-to",
    "keywords",
    "comments",
    "importance",
    "priority",
    "sensitivity",
    "organization",
    "x-priority",
];

/// `X-` headers that are not the sender's to set although they have the prefix: what the
/// service, providers or receivers read as the sender's authentication, list, spam or
/// routing state.
const RESERVED_X_PREFIXES: [&str; 9] = [
    "x-mail-",
    "x-original-",
    "x-forwarded-",
    "x-spam",
    "x-ms-exchange-",
    "x-google-",
    "x-report-abuse",
    "x-complaints-to",
    "x-mailgun-",
];

/// Whether a sender may set the header `name` on a message: an allow-list, not a deny-list,
/// so that a header that changes delivery (`Resent-*`, `Return-Path`, `DKIM-Signature`,
/// `List-Unsubscribe*`, `Disposition-Notification-To`, `Received`, ...) is refused without
/// being named here. Allowed: the names in [`SETTABLE_HEADERS`] and `X-` headers other than
/// those in [`RESERVED_X_PREFIXES`].
pub fn is_settable_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if SETTABLE_HEADERS.contains(&name.as_str()) {
        return true;
    }
    name.len() > 2
        && name.starts_with("x-")
        && !RESERVED_X_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A regular expression (ECMA-262 and Rust's alike) of exactly the header names
/// [`is_settable_header`] allows, for the API document to state the rule it enforces.
pub fn settable_header_pattern() -> String {
    let exact: Vec<String> = SETTABLE_HEADERS.iter().map(|h| any_case(h)).collect();
    let reserved: Vec<&str> = RESERVED_X_PREFIXES.iter().map(|p| &p[2..]).collect();
    format!(
        "^(?:{}|[Xx]-{})$",
        exact.join("|"),
        not_starting_with(&reserved, true)
    )
}

/// The characters of a header name: visible ASCII but `:`.
fn name_chars() -> impl Iterator<Item = char> {
    ('!'..='~').filter(|c| *c != ':')
}

fn hex(c: char) -> String {
    format!("\\x{:02x}", u32::from(c))
}

fn any_case(word: &str) -> String {
    word.chars()
        .map(|c| match c.is_ascii_alphabetic() {
            true => format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()),
            false => hex(c),
        })
        .collect()
}

/// A character class of `chars` (in order), as ranges of hex escapes.
fn class(chars: impl Iterator<Item = char>) -> String {
    let mut ranges: Vec<(char, char)> = Vec::new();
    for c in chars {
        match ranges.last_mut() {
            Some((_, last)) if u32::from(*last) + 1 == u32::from(c) => *last = c,
            _ => ranges.push((c, c)),
        }
    }
    let body: String = ranges
        .iter()
        .map(|(a, b)| match a == b {
            true => hex(*a),
            false => format!("{}-{}", hex(*a), hex(*b)),
        })
        .collect();
    format!("[{body}]")
}

/// Header-name text that starts with none of `words` (lowercase), in any case; never empty
/// when `nonempty`.
fn not_starting_with(words: &[&str], nonempty: bool) -> String {
    let firsts: std::collections::BTreeSet<char> =
        words.iter().filter_map(|w| w.chars().next()).collect();
    let mut alternatives = Vec::new();
    if !nonempty {
        alternatives.push(String::new());
    }
    let others = name_chars().filter(|c| !firsts.contains(&c.to_ascii_lowercase()));
    alternatives.push(format!("{}{}*", class(others), class(name_chars())));
    for first in firsts {
        let tails: Vec<&str> = words.iter().filter_map(|w| w.strip_prefix(first)).collect();
        // A whole reserved word: nothing that starts with it is allowed.
        if !tails.iter().any(|t| t.is_empty()) {
            alternatives.push(format!(
                "{}{}",
                any_case(&first.to_string()),
                not_starting_with(&tails, false)
            ));
        }
    }
    format!("(?:{})", alternatives.join("|"))
}

/// Checks a sender's custom headers: each one [`is_settable_header`] (the message's own
/// checks in [`OutgoingEmail::validate`] apply as well).
pub fn check_custom_headers(headers: &[(String, String)]) -> Result<(), EmailError> {
    match headers.iter().find(|(name, _)| !is_settable_header(name)) {
        Some((name, _)) => Err(invalid(
            "headers",
            format!(
                "{name} cannot be set: only X- headers (except X-Mail-*, X-Original-*, \
                 X-Forwarded-*, X-Spam* and other routing or reputation ones), References, \
                 In-Reply-To, Keywords, Comments, Importance, Priority, Sensitivity and \
                 Organization may be"
            ),
        )),
        None => Ok(()),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

fn invalid(field: &'static str, message: impl Into<String>) -> EmailError {
    EmailError::Invalid {
        field,
        message: message.into(),
    }
}

/// What one send is made of, after tracking has been injected into `html`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OutgoingEmail {
    /// The email log id: the provider's idempotency key, and the Message-ID's local part.
    pub id: Uuid,
    pub from_name: String,
    pub from_address: String,
    pub to: String,
    pub reply_to: Option<String>,
    pub subject: String,
    pub html: String,
    pub text: Option<String>,
    /// Custom headers, in order.
    pub headers: Vec<(String, String)>,
    pub tags: Vec<String>,
    /// The own domain's key when the message is to be DKIM-signed (never serialized).
    #[serde(skip)]
    pub dkim: Option<crate::dkim::DkimKey>,
    /// The per-email bounce address (VERP): the SMTP envelope's `MAIL FROM` and the
    /// `Return-Path`, where delivery status notifications come back. `None`: the From address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_path: Option<String>,
}

impl OutgoingEmail {
    /// `<id@domain of the from address>`.
    pub fn message_id(&self) -> String {
        let domain = self
            .from_address
            .rsplit_once('@')
            .map_or("localhost", |(_, d)| d);
        format!("<{}@{domain}>", self.id)
    }

    /// Checks what the providers rely on: addresses that parse, a subject of at most 998
    /// characters on one line, header names of visible ASCII that the service does not own,
    /// and no line breaks in header values (no header injection).
    pub fn validate(&self) -> Result<(), EmailError> {
        check_address("to", &self.to)?;
        check_address("from", &self.from_address)?;
        if let Some(return_path) = &self.return_path {
            check_address("return_path", return_path)?;
        }
        if let Some(reply_to) = &self.reply_to {
            check_address("reply_to", reply_to)?;
        }
        if self.subject.trim().is_empty() {
            return Err(invalid("subject", "is required"));
        }
        if self.subject.chars().count() > 998 {
            return Err(invalid("subject", "must be at most 998 characters"));
        }
        if has_line_break(&self.subject) {
            return Err(invalid("subject", "must be one line"));
        }
        if self.from_name.chars().any(char::is_control) {
            return Err(invalid(
                "from_name",
                "must be one line without control characters",
            ));
        }
        for (name, value) in &self.headers {
            check_header(name, value)?;
        }
        Ok(())
    }
}

fn has_line_break(s: &str) -> bool {
    s.contains(['\r', '\n'])
}

/// A pragmatic address check: `local@domain`, one `@`, no spaces or control characters, a
/// dotted domain of letters, digits and hyphens, and RFC 5321's length limits.
pub fn is_valid_address(address: &str) -> bool {
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    if local.is_empty() || local.len() > 64 || domain.len() > 253 || address.len() > 254 {
        return false;
    }
    if local
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || "<>()[],;:\\\"@".contains(c))
        || local.starts_with('.')
        || local.ends_with('.')
        || local.contains("..")
    {
        return false;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || !c.is_ascii())
        })
}

fn check_address(field: &'static str, address: &str) -> Result<(), EmailError> {
    if is_valid_address(address) {
        Ok(())
    } else {
        Err(invalid(field, "is not a valid email address"))
    }
}

fn check_header(name: &str, value: &str) -> Result<(), EmailError> {
    let visible = !name.is_empty() && name.bytes().all(|b| (33..=126).contains(&b) && b != b':');
    if !visible {
        return Err(invalid(
            "headers",
            format!("{name:?} is not a valid header name"),
        ));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(invalid("headers", format!("{name} is set by the service")));
    }
    if has_line_break(value) || value.chars().count() > HEADER_VALUE_MAX_CHARS {
        return Err(invalid(
            "headers",
            format!(
                "the value of {name} must be one line of at most {HEADER_VALUE_MAX_CHARS} characters"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) fn sample() -> OutgoingEmail {
    OutgoingEmail {
        id: Uuid::parse_str("0193a5f0-0000-7000-8000-000000000001").unwrap(),
        from_name: "Acme".into(),
        from_address: "news@mail.acme.test".into(),
        to: "ada@example.com".into(),
        reply_to: Some("help@acme.test".into()),
        subject: "Welcome, Ada".into(),
        html: "<p>Hello <a href=\"https://acme.test/start\">start</a></p>".into(),
        text: Some("Hello, start at https://acme.test/start".into()),
        headers: vec![("X-Campaign".into(), "welcome".into())],
        tags: vec!["welcome".into()],
        dkim: None,
        return_path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for ok in [
            "a@b.co",
            "first.last+tag@sub.example.com",
            "x@xn--bcher-kva.example",
        ] {
            assert!(is_valid_address(ok), "{ok}");
        }
        for bad in [
            "",
            "a",
            "a@",
            "@b.co",
            "a@b",
            "a b@c.co",
            "a@b..co",
            "a@-b.co",
            ".a@b.co",
            "a\r\n@b.co",
            "a@b.co\r\nBcc: x@y.z",
            "<a@b.co>",
        ] {
            assert!(!is_valid_address(bad), "{bad:?}");
        }
    }

    #[test]
    fn validation_names_the_field() {
        assert_eq!(sample().validate(), Ok(()));
        let mut e = sample();
        e.subject = "x".repeat(999);
        assert!(matches!(
            e.validate(),
            Err(EmailError::Invalid {
                field: "subject",
                ..
            })
        ));
        let mut e = sample();
        e.subject = "Hi\r\nBcc: victim@example.com".into();
        assert!(e.validate().is_err());
        let mut e = sample();
        e.headers = vec![("Bcc".into(), "x@y.zz".into())];
        assert!(matches!(
            e.validate(),
            Err(EmailError::Invalid {
                field: "headers",
                ..
            })
        ));
        let mut e = sample();
        e.headers = vec![("X-Ok".into(), "a\nb".into())];
        assert!(e.validate().is_err());
        let mut e = sample();
        e.headers = vec![("Bad Name".into(), "v".into())];
        assert!(e.validate().is_err());
        let mut e = sample();
        e.reply_to = Some("nope".into());
        assert!(matches!(
            e.validate(),
            Err(EmailError::Invalid {
                field: "reply_to",
                ..
            })
        ));
    }

    #[test]
    fn the_stated_pattern_allows_exactly_the_settable_headers() {
        let pattern = regex::Regex::new(&settable_header_pattern()).unwrap();
        for name in [
            "X-Campaign",
            "x-a",
            "X-Mailer",
            "X-Mail",
            "X-Spa",
            "X-Googl",
            "X-Original",
            "X-Mail-Id",
            "x-mail-",
            "X-Spam-Status",
            "X-SPAMMY",
            "X-MS-Exchange-Org",
            "X-Ms-x",
            "X-Google-Id",
            "X-Report-Abuse-To",
            "X-Complaints-To",
            "X-Mailgun-Tag",
            "X-Forwarded-For",
            "X-Original-To",
            "X-",
            "X",
            "References",
            "in-reply-to",
            "KEYWORDS",
            "Comments",
            "Importance",
            "Priority",
            "Sensitivity",
            "Organization",
            "X-Priority",
            "From",
            "Reply-To",
            "Return-Path",
            "DKIM-Signature",
            "Resent-To",
            "List-Unsubscribe",
            "Received",
            "Bcc",
            "Subject",
            "Content-Type",
            "MIME-Version",
            "Referencesx",
            "X-a:b",
            "X-Ä",
        ] {
            assert_eq!(
                pattern.is_match(name),
                is_settable_header(name) && !name.contains(':') && name.is_ascii(),
                "{name}"
            );
        }
    }

    #[test]
    fn only_allowed_headers_are_settable() {
        for ok in [
            "X-Campaign",
            "x-entity-ref",
            "References",
            "In-Reply-To",
            "Keywords",
            "X-Priority",
        ] {
            assert!(is_settable_header(ok), "{ok}");
        }
        for refused in [
            "Resent-To",
            "Resent-From",
            "Return-Path",
            "DKIM-Signature",
            "List-Unsubscribe",
            "List-Unsubscribe-Post",
            "Disposition-Notification-To",
            "Received",
            "From",
            "Bcc",
            "Content-Type",
            "MIME-Version",
            "X-",
            "X-Mail-Signature",
            "X-Original-To",
            "X-Forwarded-For",
            "X-Spam-Status",
        ] {
            assert!(!is_settable_header(refused), "{refused}");
        }
        assert!(check_custom_headers(&[("X-A".into(), "b".into())]).is_ok());
        assert!(matches!(
            check_custom_headers(&[("Return-Path".into(), "<a@b.co>".into())]),
            Err(EmailError::Invalid {
                field: "headers",
                ..
            })
        ));
    }

    #[test]
    fn message_id_uses_the_sending_domain() {
        assert_eq!(
            sample().message_id(),
            "<0193a5f0-0000-7000-8000-000000000001@mail.acme.test>"
        );
    }
}
