//! Cutting a scene's narration into caption chunks: its sentences, a long sentence cut at its
//! commas, and a clause still too long cut into even groups of at most [`MAX_WORDS`] words.
//! Each chunk is spoken on its own, so that its caption starts when its speech starts.

/// The most words a caption shows at once.
pub const MAX_WORDS: usize = 8;

/// The caption chunks of `text`, in order; together they hold every word of it.
pub fn chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for sentence in split_after(text, &['.', '!', '?', '…', ';']) {
        let words = sentence.split_whitespace().count();
        if words <= MAX_WORDS {
            out.push(sentence);
            continue;
        }
        let mut current: Vec<String> = Vec::new();
        for clause in split_after(&sentence, &[',', ':']) {
            let clause_words = clause.split_whitespace().count();
            let current_words: usize = current.iter().map(|c| c.split_whitespace().count()).sum();
            if !current.is_empty() && current_words + clause_words > MAX_WORDS {
                out.push(current.join(" "));
                current.clear();
            }
            if clause_words > MAX_WORDS {
                out.extend(even_groups(&clause));
            } else {
                current.push(clause);
            }
        }
        if !current.is_empty() {
            out.push(current.join(" "));
        }
    }
    out
}

/// `text` cut after each of `ends` that is followed by whitespace (closing quotes and
/// brackets stay with their sentence); pieces trimmed, empty ones dropped.
fn split_after(text: &str, ends: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut ended = false;
    for c in text.chars() {
        if ended && c.is_whitespace() {
            push_trimmed(&mut out, &mut current);
            ended = false;
            continue;
        }
        current.push(c);
        if ends.contains(&c) {
            ended = true;
        } else if !matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»') {
            ended = false;
        }
    }
    push_trimmed(&mut out, &mut current);
    out
}

fn push_trimmed(out: &mut Vec<String>, current: &mut String) {
    let piece = current.split_whitespace().collect::<Vec<_>>().join(" ");
    if !piece.is_empty() {
        out.push(piece);
    }
    current.clear();
}

/// The words of `clause` in the fewest groups of at most [`MAX_WORDS`], as even as can be.
fn even_groups(clause: &str) -> Vec<String> {
    let words: Vec<&str> = clause.split_whitespace().collect();
    let groups = words.len().div_ceil(MAX_WORDS);
    let (size, extra) = (words.len() / groups, words.len() % groups);
    let mut out = Vec::with_capacity(groups);
    let mut at = 0;
    for g in 0..groups {
        let len = size + usize::from(g < extra);
        out.push(words[at..at + len].join(" "));
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_are_chunks_and_long_ones_are_cut_at_commas_then_evenly() {
        assert_eq!(
            chunks("Meet Acme. It ships fast!"),
            ["Meet Acme.", "It ships fast!"]
        );
        assert_eq!(
            chunks(
                "Decisions, drafts and briefs live in one place, searchable by meaning for the whole team."
            ),
            [
                "Decisions, drafts and briefs live in one place,",
                "searchable by meaning for the whole team."
            ]
        );
        let long = "one two three four five six seven eight nine ten eleven twelve thirteen";
        let cut = chunks(long);
        assert_eq!(cut.len(), 2);
        assert_eq!(cut.join(" "), long);
        assert!(
            cut.iter()
                .all(|c| c.split_whitespace().count() <= MAX_WORDS)
        );
    }
}
