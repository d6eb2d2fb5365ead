//! What a translation of a template must keep: its template tags (`{{ … }}`, `{% … %}`,
//! `{# … #}`) and its links (`href` and `src`), the same ones as many times, whatever the
//! model did to the words around them. A model's translation is checked, never trusted.

use std::sync::LazyLock;

use regex::Regex;

static TAGS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}").expect("a valid pattern"));

static LINKS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')"#).expect("a valid pattern")
});

/// The template tags of `text`, whitespace inside each normalized, sorted.
pub fn tags(text: &str) -> Vec<String> {
    let mut found: Vec<String> = TAGS
        .find_iter(text)
        .map(|m| normalized(m.as_str()))
        .collect();
    found.sort();
    found
}

/// A tag with the whitespace inside its delimiters collapsed: `{{x}}` and `{{  x }}` are one.
fn normalized(tag: &str) -> String {
    let (open, inner, close) = (&tag[..2], &tag[2..tag.len() - 2], &tag[tag.len() - 2..]);
    let words = inner.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{open} {words} {close}")
}

/// The `href` and `src` values of `html`, trimmed, sorted.
pub fn links(html: &str) -> Vec<String> {
    let mut found: Vec<String> = LINKS
        .captures_iter(html)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str().trim().to_owned())
        .collect();
    found.sort();
    found
}

/// Why `translated` is not a faithful translation of `original` (field `field`): a tag or a
/// link lost, added or changed. `None` when it keeps them all.
pub fn unfaithful(field: &str, original: &str, translated: &str) -> Option<String> {
    if tags(original) != tags(translated) {
        return Some(format!(
            "the translated {field} does not keep the template tags: {:?} became {:?}",
            tags(original),
            tags(translated)
        ));
    }
    if links(original) != links(translated) {
        return Some(format!(
            "the translated {field} does not keep the links: {:?} became {:?}",
            links(original),
            links(translated)
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTML: &str = r#"<p>Hi {{ first_name | default("there") }},</p>
<p>{% if properties.plan %}Your plan: {{properties.plan}}{% endif %}</p>
<a href="https://example.com/start?x=1">Start</a> <img src='https://example.com/logo.png'>
<a href="{{ unsubscribe_url }}">Unsubscribe</a>"#;

    #[test]
    fn a_translation_keeping_tags_and_links_is_faithful() {
        let german = r#"<p>Hallo {{ first_name | default("there") }},</p>
<p>{% if properties.plan %}Ihr Tarif: {{ properties.plan }}{% endif %}</p>
<a href="https://example.com/start?x=1">Los</a> <img src="https://example.com/logo.png">
<a href="{{ unsubscribe_url }}">Abmelden</a>"#;
        assert_eq!(unfaithful("html", HTML, german), None);
    }

    #[test]
    fn a_lost_changed_or_added_tag_is_found() {
        let lost = HTML.replace(r#"{{ first_name | default("there") }}"#, "Ada");
        assert!(
            unfaithful("html", HTML, &lost)
                .unwrap()
                .contains("template tags")
        );
        let translated_inside = HTML.replace("first_name", "vorname");
        assert!(unfaithful("html", HTML, &translated_inside).is_some());
        let added = format!("{HTML} {{{{ data.extra }}}}");
        assert!(unfaithful("html", HTML, &added).is_some());
    }

    #[test]
    fn a_changed_or_lost_link_is_found() {
        let changed = HTML.replace("https://example.com/start?x=1", "https://example.de/start");
        assert!(
            unfaithful("html", HTML, &changed)
                .unwrap()
                .contains("links")
        );
        let lost = HTML.replace(r#"<img src='https://example.com/logo.png'>"#, "");
        assert!(unfaithful("html", HTML, &lost).is_some());
    }

    #[test]
    fn tags_and_links_are_read_as_written() {
        assert_eq!(
            tags("{{a}} x {%  if b %} y {# note #}"),
            ["{# note #}", "{% if b %}", "{{ a }}"]
        );
        assert_eq!(
            links(r#"<a HREF = "https://a.example/"><img src='/b.png'>"#),
            ["/b.png", "https://a.example/"]
        );
    }
}
