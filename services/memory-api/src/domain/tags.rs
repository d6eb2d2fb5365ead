//! Tags of a decision, derived by the service: its hashtags, the products it names, and up to
//! five salient keywords. Lowercase, without duplicates, in that order.

use std::collections::HashMap;

const MAX_KEYWORDS: usize = 5;

/// Words too common to say what a decision is about.
const STOPWORDS: &[&str] = &[
    "about", "above", "after", "again", "against", "also", "because", "been", "before", "being",
    "below", "between", "both", "could", "decided", "decision", "does", "doing", "down", "during",
    "each", "from", "further", "have", "having", "here", "instead", "into", "itself", "just",
    "more", "most", "must", "only", "other", "over", "same", "should", "some", "such", "than",
    "that", "their", "them", "then", "there", "these", "they", "this", "those", "through", "under",
    "until", "very", "want", "were", "what", "when", "where", "which", "while", "will", "with",
    "would", "your",
];

pub fn derive(decision: &str, reasoning: Option<&str>, products: &[&str]) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    let mut push = |tag: String| {
        if !tag.is_empty() && !tags.contains(&tag) {
            tags.push(tag);
        }
    };
    let text = format!("{decision}\n{}", reasoning.unwrap_or_default());
    for word in text.split_whitespace() {
        if let Some(tag) = word.strip_prefix('#') {
            push(clean(tag));
        }
    }
    for product in products {
        push(product.trim().to_lowercase());
    }
    for keyword in keywords(&text) {
        push(keyword);
    }
    tags
}

fn clean(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// The most frequent words of four letters or more that are not stopwords; ties go to the
/// word seen first.
fn keywords(text: &str) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    for (position, word) in text.split_whitespace().enumerate() {
        if word.starts_with('#') {
            continue;
        }
        let word = clean(word);
        if word.chars().count() < 4
            || STOPWORDS.contains(&word.as_str())
            || word.chars().all(|c| c.is_ascii_digit())
        {
            continue;
        }
        counts.entry(word).or_insert((0, position)).0 += 1;
    }
    let mut ranked: Vec<(String, (usize, usize))> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    ranked
        .into_iter()
        .take(MAX_KEYWORDS)
        .map(|(w, _)| w)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashtags_products_then_keywords() {
        let tags = derive(
            "We chose PostgreSQL over MongoDB for the billing ledger #infra #Database",
            Some("PostgreSQL has transactions; the ledger needs them."),
            &["billing", "ledger-api"],
        );
        assert_eq!(
            tags,
            [
                "infra",
                "database",
                "billing",
                "ledger-api",
                "postgresql",
                "ledger",
                "chose",
                "mongodb"
            ]
        );
    }

    #[test]
    fn at_most_five_keywords_and_no_duplicates() {
        let tags = derive(
            "alpha beta gamma delta epsilon zeta theta alpha",
            None,
            &["alpha"],
        );
        assert_eq!(tags, ["alpha", "beta", "gamma", "delta", "epsilon"]);
    }
}
