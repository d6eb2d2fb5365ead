//! Token counts of text meant for a model's prompt, with the o200k_base BPE.

/// The number of o200k_base tokens of `text`.
pub fn count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert_eq!(count("Hello, world!"), 4);
    }
}
