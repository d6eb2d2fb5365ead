//! Email addresses as the service stores them: trimmed and lowercased, checked for a shape
//! that can be delivered to (a local part and a dotted domain; no display names, no quoting).

/// The stored form of `raw`, or `None` when it is not a deliverable address (the documents'
/// `format: email`).
pub fn normalize(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    http_kit::request::formats::is_email(&email).then_some(email)
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn addresses_are_trimmed_and_lowercased() {
        assert_eq!(
            normalize("  Ada.Lovelace+news@Example.COM ").as_deref(),
            Some("ada.lovelace+news@example.com")
        );
        assert_eq!(normalize("x@b.co").as_deref(), Some("x@b.co"));
        assert_eq!(
            normalize("jörg@bücher.de").as_deref(),
            Some("jörg@bücher.de")
        );
    }

    #[test]
    fn undeliverable_shapes_are_refused() {
        let long_local = format!("{}@a.io", "a".repeat(65));
        let long_label = format!("a@{}.io", "b".repeat(64));
        let long_total = format!("a@{}.io", vec!["c".repeat(60); 5].join("."));
        for bad in [
            "",
            "   ",
            "plain",
            "@example.com",
            "a@",
            "a@localhost",
            "a@@b.com",
            "a@b@c.com",
            "a b@c.com",
            "a@b c.com",
            ".a@b.com",
            "a.@b.com",
            "a..b@c.com",
            "a@-b.com",
            "a@b-.com",
            "a@b..com",
            "a@.b.com",
            "a@b.com.",
            "a@1.2.3.4",
            "\"quoted\"@b.com",
            "Name <a@b.com>",
            "a\n@b.com",
            long_local.as_str(),
            long_label.as_str(),
            long_total.as_str(),
        ] {
            assert_eq!(normalize(bad), None, "{bad:?}");
        }
    }
}
