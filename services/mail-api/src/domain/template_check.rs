//! Checks of an email's HTML before it is sent: what the send path would do with it and what
//! mail clients and recipients will make of it. Deterministic; nothing is sent or stored.
//!
//! The send worker renders the subject, HTML and text for each recipient in the one template
//! language ([`crate::domain::personalize`]) and sends them with the open pixel and click
//! links injected. A template syntax error, a variable no recipient has, and a merge tag of
//! another language (`*|MERGE|*`, which would reach the recipient as typed) are errors.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;

use lol_html::{RewriteStrSettings, element, rewrite_str, text};

use crate::domain::personalize;
use regex::Regex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The longest HTML body the send routes take, in characters.
pub const HTML_MAX_CHARS: usize = 524_288;
/// Gmail shows "[Message clipped]" past this many bytes of HTML.
pub const CLIPPING_BYTES: usize = 102 * 1024;
/// Examples kept per issue.
const EXAMPLES: usize = 5;
/// Characters kept of an example.
const EXAMPLE_CHARS: usize = 120;

/// What kind of mail the HTML is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MailKind {
    /// Campaign and newsletter mail: needs an unsubscribe link in the body, and carries the
    /// one-click unsubscribe headers when sent.
    #[default]
    Marketing,
    /// One-to-one mail (`POST /send`): receipts, password resets.
    Transactional,
}

/// One kind of problem, with where it was found.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Issue {
    /// A stable machine-readable code (`VARIABLE_NOT_SUBSTITUTED`, `IMAGE_WITHOUT_ALT`, …).
    pub code: &'static str,
    /// `html`, `subject` or `text`.
    pub field: &'static str,
    pub message: String,
    /// How many times it occurs.
    pub count: usize,
    /// Up to 5 occurrences, each at most 120 characters.
    pub examples: Vec<String>,
}

/// Counts of what the HTML holds.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Stats {
    /// UTF-8 bytes of the HTML.
    pub size_bytes: usize,
    pub characters: usize,
    /// `<a href>` elements.
    pub links: usize,
    /// `<img>` elements.
    pub images: usize,
    /// Whether a link to unsubscribe (or to manage preferences) was found.
    pub has_unsubscribe_link: bool,
}

/// The result of a check.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Report {
    /// No errors (warnings allowed).
    pub valid: bool,
    /// What would break the email: it would be refused, or reach the recipient wrong.
    pub errors: Vec<Issue>,
    /// What mail clients or recipients may handle badly.
    pub warnings: Vec<Issue>,
    pub stats: Stats,
}

#[derive(Default)]
struct Found {
    errors: BTreeMap<(&'static str, &'static str), Issue>,
    warnings: BTreeMap<(&'static str, &'static str), Issue>,
}

impl Found {
    fn note(
        &mut self,
        error: bool,
        code: &'static str,
        field: &'static str,
        message: &str,
        example: Option<&str>,
    ) {
        let map = if error {
            &mut self.errors
        } else {
            &mut self.warnings
        };
        let issue = map.entry((code, field)).or_insert_with(|| Issue {
            code,
            field,
            message: message.to_owned(),
            count: 0,
            examples: Vec::new(),
        });
        issue.count += 1;
        if let Some(example) = example
            && issue.examples.len() < EXAMPLES
        {
            let example: String = example.chars().take(EXAMPLE_CHARS).collect();
            if !issue.examples.contains(&example) {
                issue.examples.push(example);
            }
        }
    }
}

/// Merge tags of other template languages (Mailchimp's `*|FNAME|*`): this service's language
/// is Jinja-style (see [`crate::domain::personalize`]).
fn foreign_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"\*\|[A-Za-z0-9_:\-]{1,100}\|\*").expect("a valid pattern"))
}

fn end_tag_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"</([A-Za-z][A-Za-z0-9-]*)\s*>").expect("a valid pattern"))
}

fn comment_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"(?s)<!--.*?-->").expect("a valid pattern"))
}

/// Elements whose end tag HTML lets an author leave out.
const OPTIONAL_END: &[&str] = &[
    "html", "head", "body", "p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot",
    "option", "optgroup", "colgroup", "caption", "rt", "rp",
];

fn placeholders(found: &mut Found, field: &'static str, value: &str) {
    if let Err(err) = personalize::check(field, value) {
        found.note(
            true,
            "TEMPLATE_SYNTAX",
            field,
            "a template syntax error: the send routes refuse it (400 TEMPLATE_SYNTAX)",
            Some(&format!(
                "line {}, column {}: {}",
                err.line, err.column, err.message
            )),
        );
    }
    for name in personalize::unknown_variables(value) {
        found.note(
            true,
            "UNKNOWN_VARIABLE",
            field,
            "a variable no recipient has (known: email, first_name, last_name, tags, \
             properties.*, site.*, campaign.*, step.*, event.*, unsubscribe_url, data.*): it \
             would render empty",
            Some(&name),
        );
    }
    for m in foreign_pattern().find_iter(value) {
        found.note(
            true,
            "VARIABLE_NOT_SUBSTITUTED",
            field,
            "a merge tag of another template language: it would reach the recipient as typed; \
             write it as {{ name }}",
            Some(m.as_str()),
        );
    }
}

fn is_absolute(url: &str) -> bool {
    let Some(colon) = url.find(':') else {
        return false;
    };
    let scheme = &url[..colon];
    !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn mentions_unsubscribe(value: &str) -> bool {
    let lower = value.to_lowercase();
    [
        "unsubscribe",
        "unsub",
        "opt-out",
        "opt out",
        "optout",
        "preferences",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Checks an email's HTML (and its subject and text, when given) as `kind` of mail.
pub fn check(html: &str, subject: Option<&str>, text_body: Option<&str>, kind: MailKind) -> Report {
    let mut found = Found::default();
    let characters = html.chars().count();
    let mut stats = Stats {
        size_bytes: html.len(),
        characters,
        ..Stats::default()
    };
    if html.trim().is_empty() {
        found.note(
            true,
            "EMPTY_HTML",
            "html",
            "the HTML is blank: the send routes refuse it",
            None,
        );
    }
    if characters > HTML_MAX_CHARS {
        found.note(
            true,
            "TOO_LARGE",
            "html",
            "over 524,288 characters: the send routes refuse it",
            None,
        );
    } else if html.len() > CLIPPING_BYTES {
        found.note(
            false,
            "GMAIL_CLIPPING",
            "html",
            "over 102 KB: Gmail clips the message (and its open pixel) behind a link",
            None,
        );
    }
    placeholders(&mut found, "html", html);
    if let Some(subject) = subject {
        placeholders(&mut found, "subject", subject);
    }
    if let Some(text_body) = text_body {
        placeholders(&mut found, "text", text_body);
    }

    let found = Rc::new(RefCell::new(found));
    let links = Rc::new(RefCell::new(0usize));
    let images = Rc::new(RefCell::new(0usize));
    let unsubscribe = Rc::new(RefCell::new(false));
    // Start tags of elements that take an end tag, by tag name.
    let elements: Rc<RefCell<BTreeMap<String, usize>>> = Rc::default();
    let parsed = {
        let (f1, f2, f3) = (Rc::clone(&found), Rc::clone(&found), Rc::clone(&found));
        let (links, images) = (Rc::clone(&links), Rc::clone(&images));
        let (u1, u2) = (Rc::clone(&unsubscribe), Rc::clone(&unsubscribe));
        let elements = Rc::clone(&elements);
        rewrite_str(
            html,
            RewriteStrSettings {
                element_content_handlers: vec![
                    element!("*", move |el| {
                        // Elements that take an end tag (not void, not `<x/>` in SVG).
                        if !el.is_self_closing() && el.end_tag_handlers().is_some() {
                            *elements
                                .borrow_mut()
                                .entry(el.tag_name().to_ascii_lowercase())
                                .or_default() += 1;
                        }
                        Ok(())
                    }),
                    element!("a[href]", move |el| {
                        *links.borrow_mut() += 1;
                        let href = el.get_attribute("href").unwrap_or_default();
                        let href = href.trim();
                        let mut found = f1.borrow_mut();
                        if mentions_unsubscribe(href) {
                            *u1.borrow_mut() = true;
                        }
                        let lower = href.to_ascii_lowercase();
                        if lower.starts_with("javascript:") || lower.starts_with("data:") {
                            found.note(
                                true,
                                "UNSAFE_LINK",
                                "html",
                                "a javascript: or data: link: mail clients block it",
                                Some(href),
                            );
                        } else if href.is_empty() || href.starts_with('#') {
                        } else if !is_absolute(href) {
                            found.note(
                                false,
                                "RELATIVE_LINK",
                                "html",
                                "a relative link: an email has no base address, so it leads \
                                 nowhere; use an absolute https:// URL",
                                Some(href),
                            );
                        } else if lower.starts_with("http://") {
                            found.note(
                                false,
                                "INSECURE_LINK",
                                "html",
                                "an http:// link: prefer https://",
                                Some(href),
                            );
                        }
                        Ok(())
                    }),
                    text!("a", move |chunk| {
                        if mentions_unsubscribe(chunk.as_str()) {
                            *u2.borrow_mut() = true;
                        }
                        Ok(())
                    }),
                    element!("img", move |el| {
                        *images.borrow_mut() += 1;
                        let src = el.get_attribute("src").unwrap_or_default();
                        let mut found = f2.borrow_mut();
                        if !el.has_attribute("alt") {
                            found.note(
                                false,
                                "IMAGE_WITHOUT_ALT",
                                "html",
                                "an image without alt text: shown as nothing when images are \
                                 blocked, and unreadable to screen readers",
                                Some(&src),
                            );
                        }
                        let src = src.trim();
                        if !src.is_empty() && !is_absolute(src) {
                            found.note(
                                false,
                                "RELATIVE_IMAGE",
                                "html",
                                "an image with a relative source: it cannot load in an \
                                 email; use an absolute https:// URL",
                                Some(src),
                            );
                        }
                        Ok(())
                    }),
                    element!("script", move |_el| {
                        f3.borrow_mut().note(
                            false,
                            "SCRIPT",
                            "html",
                            "a script: mail clients remove scripts (and some flag the mail)",
                            None,
                        );
                        Ok(())
                    }),
                ],
                ..RewriteStrSettings::new()
            },
        )
    };
    let mut found = Rc::try_unwrap(found)
        .map(RefCell::into_inner)
        .unwrap_or_else(|rc| std::mem::take(&mut rc.borrow_mut()));
    stats.links = *links.borrow();
    stats.images = *images.borrow();
    stats.has_unsubscribe_link = *unsubscribe.borrow();
    match parsed {
        Err(err) => found.note(
            true,
            "PARSE_FAILED",
            "html",
            "the HTML could not be parsed",
            Some(&err.to_string()),
        ),
        Ok(_) => {
            let opened = elements.borrow();
            let source = comment_pattern().replace_all(html, "");
            let mut closed: BTreeMap<String, usize> = BTreeMap::new();
            for cap in end_tag_pattern().captures_iter(&source) {
                *closed.entry(cap[1].to_ascii_lowercase()).or_default() += 1;
            }
            for (tag, &starts) in opened.iter() {
                let ends = closed.get(tag).copied().unwrap_or(0);
                if starts > ends && !OPTIONAL_END.contains(&tag.as_str()) {
                    for _ in ends..starts {
                        found.note(
                            false,
                            "UNCLOSED_ELEMENT",
                            "html",
                            "an element without its end tag: mail clients may lay out the \
                             rest of the email inside it",
                            Some(&format!("<{tag}>")),
                        );
                    }
                }
            }
            for (tag, &ends) in &closed {
                let starts = opened.get(tag).copied().unwrap_or(0);
                for _ in starts..ends {
                    found.note(
                        false,
                        "UNEXPECTED_END_TAG",
                        "html",
                        "an end tag without an open element to close",
                        Some(&format!("</{tag}>")),
                    );
                }
            }
        }
    }
    if kind == MailKind::Marketing && !stats.has_unsubscribe_link && !html.trim().is_empty() {
        found.note(
            false,
            "MISSING_UNSUBSCRIBE_LINK",
            "html",
            "marketing mail without an unsubscribe link in the body: the law (CAN-SPAM, GDPR) \
             and mailbox providers expect one; campaign mail also carries the one-click \
             List-Unsubscribe headers",
            None,
        );
    }
    let errors: Vec<Issue> = found.errors.into_values().collect();
    Report {
        valid: errors.is_empty(),
        errors,
        warnings: found.warnings.into_values().collect(),
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(issues: &[Issue]) -> Vec<&'static str> {
        issues.iter().map(|i| i.code).collect()
    }

    #[test]
    fn a_clean_transactional_email_passes() {
        let html = r#"<html><body><p>Hi <a href="https://example.com/a">there</a></p>
            <img src="https://example.com/i.png" alt="logo"></body></html>"#;
        let report = check(html, Some("Hello"), None, MailKind::Transactional);
        assert!(report.valid, "{report:?}");
        assert!(report.warnings.is_empty(), "{report:?}");
        assert_eq!(report.stats.links, 1);
        assert_eq!(report.stats.images, 1);
    }

    #[test]
    fn syntax_errors_unknown_variables_and_foreign_merge_tags_are_errors() {
        let report = check(
            "<p>Hi {{ first_name | default('there') }}, {{ frist_name }}</p>",
            Some("For *|FNAME|* {{ oops"),
            None,
            MailKind::Transactional,
        );
        assert!(!report.valid);
        assert_eq!(
            codes(&report.errors),
            [
                "TEMPLATE_SYNTAX",
                "UNKNOWN_VARIABLE",
                "VARIABLE_NOT_SUBSTITUTED"
            ]
        );
        let unknown = report
            .errors
            .iter()
            .find(|i| i.code == "UNKNOWN_VARIABLE")
            .unwrap();
        assert_eq!(
            (unknown.field, unknown.examples.as_slice()),
            ("html", &["frist_name".to_owned()][..])
        );
        let known = check(
            "<p>Hi {{ first_name }} {{ properties.plan }} <a href=\"{{ unsubscribe_url }}\">unsubscribe</a></p>",
            None,
            None,
            MailKind::Marketing,
        );
        assert!(known.valid, "{known:?}");
    }

    #[test]
    fn links_images_structure_and_unsubscribe_are_warned() {
        let html = r#"<div><a href="/rel">x</a><a href="http://example.com">y</a>
            <img src="a.png"><span>open</div></b>"#;
        let report = check(html, None, None, MailKind::Marketing);
        assert!(report.valid, "{report:?}");
        let warnings = codes(&report.warnings);
        for code in [
            "IMAGE_WITHOUT_ALT",
            "INSECURE_LINK",
            "MISSING_UNSUBSCRIBE_LINK",
            "RELATIVE_IMAGE",
            "RELATIVE_LINK",
            "UNCLOSED_ELEMENT",
            "UNEXPECTED_END_TAG",
        ] {
            assert!(warnings.contains(&code), "{code}: {report:#?}");
        }
        let unclosed = report
            .warnings
            .iter()
            .find(|i| i.code == "UNCLOSED_ELEMENT")
            .unwrap();
        assert_eq!(unclosed.examples, ["<span>"]);
        let with_link = check(
            r#"<p><a href="https://example.com/u">Unsubscribe</a></p>"#,
            None,
            None,
            MailKind::Marketing,
        );
        assert!(with_link.warnings.is_empty(), "{with_link:?}");
    }

    #[test]
    fn size_limits() {
        let big = format!("<p>{}</p>", "a".repeat(CLIPPING_BYTES));
        assert_eq!(
            codes(&check(&big, None, None, MailKind::Transactional).warnings),
            ["GMAIL_CLIPPING"]
        );
        let huge = "a".repeat(HTML_MAX_CHARS + 1);
        assert_eq!(
            codes(&check(&huge, None, None, MailKind::Transactional).errors),
            ["TOO_LARGE"]
        );
    }
}
