//! A post's text made to fit a platform: its [`TextRules`] (the longest text, what a link
//! counts for), the length counted under them, and the text cut at a word boundary so that a
//! trailing link always survives.

/// `text` cut to at most `max` characters at a word boundary (an ellipsis ending a cut one).
pub fn clip(text: &str, max: usize) -> String {
    adapt(
        text,
        None,
        TextRules {
            max_chars: max,
            link_chars: None,
            links_inline: true,
        },
    )
}

/// A platform's text rules: what [`adapt`] keeps a text within.
#[derive(Debug, Clone, Copy)]
pub struct TextRules {
    /// The longest text, in the platform's unit (characters; Bluesky counts graphemes, here
    /// characters, which is never more).
    pub max_chars: usize,
    /// What a link counts for, whatever its length (`None`: its own length).
    pub link_chars: Option<usize>,
    /// Whether a link in the text is shown as a link (else it goes at the end on its own).
    pub links_inline: bool,
}

/// The length of `text` under `rules`.
pub fn counted_length(text: &str, rules: TextRules) -> usize {
    text.split_inclusive(char::is_whitespace)
        .map(|piece| {
            let word = piece.trim_end_matches(char::is_whitespace);
            let space = piece[word.len()..].chars().count();
            let is_link = word.starts_with("http://") || word.starts_with("https://");
            let chars = match (is_link, rules.link_chars) {
                (true, Some(n)) => n,
                _ => word.chars().count(),
            };
            chars + space
        })
        .sum()
}

/// `text` made to fit `rules`, with `link` (if any) at its end: the text is cut at a word
/// boundary with an ellipsis so that the link always survives.
pub fn adapt(text: &str, link: Option<&str>, rules: TextRules) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let suffix = link.map(|l| format!(" {l}")).unwrap_or_default();
    let suffix_len = if suffix.is_empty() {
        0
    } else {
        counted_length(&suffix, rules)
    };
    if counted_length(&text, rules) + suffix_len <= rules.max_chars {
        return format!("{text}{suffix}");
    }
    let budget = rules.max_chars.saturating_sub(suffix_len + 1);
    let mut out = String::new();
    for word in text.split(' ') {
        let candidate = if out.is_empty() {
            word.to_owned()
        } else {
            format!("{out} {word}")
        };
        if counted_length(&candidate, rules) > budget {
            break;
        }
        out = candidate;
    }
    if out.is_empty() {
        out = text.chars().take(budget).collect();
    }
    format!("{out}…{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::social::x;

    #[test]
    fn links_count_as_the_platform_says_and_survive_adapting() {
        let rules = x::RULES;
        assert_eq!(
            counted_length("see https://example.com/a/very/long/path", rules),
            27
        );
        let long = "word ".repeat(100);
        let out = adapt(&long, Some("https://example.com/x"), rules);
        assert!(counted_length(&out, rules) <= rules.max_chars, "{out}");
        assert!(out.ends_with(" https://example.com/x"));
        assert_eq!(adapt("short", None, rules), "short");
    }
}
