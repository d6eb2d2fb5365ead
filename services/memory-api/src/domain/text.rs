//! Normalized text: what "the same text" means for MIF merge clashes and consolidation's
//! duplicate rule.

/// Lowercase; every run of characters that are not letters or digits becomes one space;
/// trimmed. "We chose  Postgres!" and "we chose postgres" normalize alike.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_punctuation_and_spacing_do_not_count() {
        assert_eq!(normalize("  We chose  Postgres!\n"), "we chose postgres");
        assert_eq!(normalize("we-chose postgres"), "we chose postgres");
        assert_ne!(normalize("we chose mysql"), normalize("we chose postgres"));
        assert_eq!(normalize("Ünïcode ÀB"), "ünïcode àb");
        assert_eq!(normalize("!!"), "");
    }
}
