//! What the services' HTTP test suites share: the operations of a committed OpenAPI document,
//! and the ids an answer names.

pub mod document;
pub mod ids;

/// The first 600 characters of `text`, for a failure message.
pub fn excerpt(text: &str) -> &str {
    match text.char_indices().nth(600) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `path` with `query` appended, `@` and spaces percent-encoded.
pub fn with_query(path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let pairs: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace('@', "%40").replace(' ', "%20")))
        .collect();
    format!("{path}?{}", pairs.join("&"))
}
