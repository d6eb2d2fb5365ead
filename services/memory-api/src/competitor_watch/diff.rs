//! What changed between two reads of a page: a line diff (longest common subsequence).

/// The lines only the old text has, and the lines only the new one has, each in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub removed: Vec<String>,
    pub added: Vec<String>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty()
    }
}

/// Lines compared at most (a page's text is cut there: the table is lines², in u16s).
pub const MAX_LINES: usize = 2_000;

/// The lines removed and added from `before` to `after`.
pub fn line_diff(before: &str, after: &str) -> Change {
    let old: Vec<&str> = before.lines().take(MAX_LINES).collect();
    let new: Vec<&str> = after.lines().take(MAX_LINES).collect();
    // The common prefix and suffix are most of a page: only the middle needs the table.
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old = &old[prefix..old.len() - suffix];
    let new = &new[prefix..new.len() - suffix];
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let width = new.len() + 1;
    let mut lcs = vec![0u16; (old.len() + 1) * width];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            lcs[i * width + j] = if old[i] == new[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut change = Change::default();
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if old[i] == new[j] {
            i += 1;
            j += 1;
        } else if lcs[(i + 1) * width + j] >= lcs[i * width + j + 1] {
            change.removed.push(old[i].to_owned());
            i += 1;
        } else {
            change.added.push(new[j].to_owned());
            j += 1;
        }
    }
    change
        .removed
        .extend(old[i..].iter().map(|l| (*l).to_owned()));
    change
        .added
        .extend(new[j..].iter().map(|l| (*l).to_owned()));
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_changed_lines_are_reported() {
        let change = line_diff(
            "Pricing\nPro: $29/month\nContact",
            "Pricing\nPro: $39/month\nContact",
        );
        assert_eq!(change.removed, ["Pro: $29/month"]);
        assert_eq!(change.added, ["Pro: $39/month"]);
        assert!(line_diff("a\nb", "a\nb").is_empty());
        let change = line_diff("a\nb\nc", "a\nx\nc\nd");
        assert_eq!(
            (change.removed, change.added),
            (vec!["b".to_owned()], vec!["x".to_owned(), "d".to_owned()])
        );
    }
}
