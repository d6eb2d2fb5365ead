//! The string formats the documents name (`email`, `uuid`, `date-time`, `date`, `uri`), checked the
//! way the services read them.

const EMAIL_MAX: usize = 254;
const LOCAL_MAX: usize = 64;
const LABEL_MAX: usize = 63;

/// Whether `format` is one this module checks, and `value` has it. Formats it does not know
/// are documentation only.
pub fn conforms(format: &str, value: &str) -> bool {
    match format {
        "email" => is_email(value),
        // The hyphenated form only: the one the documents' `uuid` format means.
        "uuid" => value.len() == 36 && uuid::Uuid::try_parse(value).is_ok(),
        "date-time" => chrono::DateTime::parse_from_rfc3339(value).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d").is_ok() && value.len() == 10,
        "uri" => is_absolute_uri(value),
        _ => true,
    }
}

/// What a failed format check says.
pub fn problem(format: &str) -> String {
    match format {
        "email" => "is not a valid email address".to_owned(),
        "uuid" => "must be a UUID".to_owned(),
        "date-time" => "must be an RFC 3339 date-time".to_owned(),
        "date" => "must be a date, YYYY-MM-DD".to_owned(),
        "uri" => "must be an absolute URI".to_owned(),
        other => format!("must be a {other}"),
    }
}

/// A deliverable address: a local part and a dotted domain, no display name, no quoting;
/// surrounding whitespace is tolerated (it is trimmed before storing).
pub fn is_email(raw: &str) -> bool {
    let email = raw.trim();
    if email.is_empty() || email.len() > EMAIL_MAX {
        return false;
    }
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    local_ok(local) && domain_ok(domain)
}

fn local_ok(local: &str) -> bool {
    !local.is_empty()
        && local.len() <= LOCAL_MAX
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c))
}

fn domain_ok(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= LABEL_MAX
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
        && labels
            .last()
            .is_some_and(|tld| !tld.chars().all(|c| c.is_ascii_digit()))
}

/// RFC 3986's `scheme ":" …` with nothing blank or control in it.
fn is_absolute_uri(value: &str) -> bool {
    let Some((scheme, _)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        for ok in [
            "x@b.co",
            " Ada+news@Example.COM ",
            "jörg@bücher.de",
            "a!#$%&'*+/=?^_`{|}~-@x.io",
        ] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in [
            "",
            "x",
            "x@b",
            "@b.co",
            "x@b.123",
            ".x@b.co",
            "x..y@b.co",
            "x@-b.co",
            "a b@c.de",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }

    #[test]
    fn other_formats() {
        assert!(conforms("uuid", "0190a7c4-0000-7000-8000-000000000000"));
        assert!(!conforms("uuid", "nope"));
        assert!(!conforms("uuid", "0190a7c4000070008000000000000000"));
        assert!(!conforms("uuid", " 0190a7c4-0000-7000-8000-000000000000"));
        assert!(conforms("date-time", "2026-01-02T03:04:05Z"));
        assert!(!conforms("date-time", "2026-01-02"));
        assert!(conforms("uri", "https://example.com/a?b=c"));
        assert!(conforms("uri", "mailto:x@y.z"));
        assert!(!conforms("uri", "/relative"));
        assert!(!conforms("uri", "https://a b"));
        assert!(conforms("hostname", "anything"));
    }
}
