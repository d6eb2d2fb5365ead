//! Workspace drift: what a workspace's copy of a synced file added, kept as memory when the
//! drift is accepted.

use std::collections::HashMap;

/// The SHA-256 (hex) of a file's content.
pub fn sha256(content: &str) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, content.as_bytes()).as_ref())
}

/// The acknowledged "hash" of a file a snapshot no longer holds (no content hashes to it).
pub const MISSING: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The lines of `actual` that `expected` does not hold (each line of `expected` answers one
/// equal line of `actual`), in their order, blank lines left out.
pub fn added_lines(expected: &str, actual: &str) -> Vec<String> {
    let mut available: HashMap<&str, usize> = HashMap::new();
    for line in expected.lines() {
        *available.entry(line.trim_end()).or_default() += 1;
    }
    actual
        .lines()
        .map(str::trim_end)
        .filter(|line| {
            if line.trim().is_empty() {
                return false;
            }
            match available.get_mut(line) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            }
        })
        .map(str::to_owned)
        .collect()
}

/// `lines` joined by new lines into texts of at most `max` characters each (a longer line is
/// split).
pub fn chunks(lines: &[String], max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    for line in lines {
        let chars: Vec<char> = line.chars().collect();
        for piece in chars.chunks(max) {
            let needed = piece.len() + usize::from(current_len > 0);
            if current_len + needed > max {
                out.push(std::mem::take(&mut current));
                current_len = 0;
            }
            if current_len > 0 {
                current.push('\n');
                current_len += 1;
            }
            current.extend(piece);
            current_len += piece.len();
        }
    }
    if current_len > 0 {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_are_those_the_synced_copy_lacks() {
        let expected = "# Title\n\n- a\n- b\n- a\n";
        let actual = "# Title\n- a\n- my note\n- a\n- a\n\n- b  \nlast";
        assert_eq!(added_lines(expected, actual), ["- my note", "- a", "last"]);
        assert!(added_lines(expected, expected).is_empty());
        assert!(added_lines(expected, "").is_empty());
    }

    #[test]
    fn chunks_hold_at_most_max_characters() {
        let lines = vec!["ab".to_owned(), "cd".to_owned(), "é".repeat(7)];
        assert_eq!(chunks(&lines, 5), ["ab\ncd", "ééééé", "éé"]);
        assert!(chunks(&[], 5).is_empty());
        assert_eq!(sha256("").len(), 64);
        assert_ne!(sha256(""), MISSING);
    }
}
