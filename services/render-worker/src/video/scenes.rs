//! Splitting a brief into scenes: paragraphs, then sentences grouped up to a comfortable
//! reading length, merged when the video is too short for them all, and given whole seconds
//! in proportion to their length. Deterministic: the same brief and duration always give the
//! same scenes, which is what lets a later render of the same run reuse them.

/// The shortest a scene is shown, in seconds.
pub const MIN_SCENE_SECS: u32 = 2;
/// Sentences are grouped into one scene up to about this many characters.
const TARGET_CHARS: usize = 160;

/// One scene: its text and how long it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scene {
    pub text: String,
    pub seconds: u32,
}

/// The scenes of `brief` for a video of `duration` seconds (`duration >= MIN_SCENE_SECS`):
/// their seconds add up to `duration`.
pub fn split(brief: &str, duration: u32) -> Vec<Scene> {
    let mut chunks = chunks(brief);
    if chunks.is_empty() {
        chunks.push(brief.trim().to_owned());
    }
    let max_scenes = (duration / MIN_SCENE_SECS).max(1) as usize;
    while chunks.len() > max_scenes {
        merge_shortest_pair(&mut chunks);
    }
    let seconds = share(&chunks, duration);
    chunks
        .into_iter()
        .zip(seconds)
        .map(|(text, seconds)| Scene { text, seconds })
        .collect()
}

/// Paragraphs (split at blank lines), each cut into sentences grouped up to
/// [`TARGET_CHARS`]; whitespace collapsed.
fn chunks(brief: &str) -> Vec<String> {
    let mut out = Vec::new();
    for paragraph in paragraphs(brief) {
        let mut current = String::new();
        for sentence in sentences(&paragraph) {
            if !current.is_empty()
                && current.chars().count() + 1 + sentence.chars().count() > TARGET_CHARS
            {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&sentence);
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

fn paragraphs(brief: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in brief.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(collapse(&current.join(" ")));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        out.push(collapse(&current.join(" ")));
    }
    out.retain(|p| !p.is_empty());
    out
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Sentences end at `.`, `!`, `?` or `…` (with any closing quotes or brackets) followed by a
/// space.
fn sentences(paragraph: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut ended = false;
    for c in paragraph.chars() {
        if ended && c == ' ' {
            out.push(std::mem::take(&mut current));
            ended = false;
            continue;
        }
        current.push(c);
        if matches!(c, '.' | '!' | '?' | '…') {
            ended = true;
        } else if !matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»') {
            ended = false;
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// Merges the adjacent pair with the fewest characters together (the first such pair).
fn merge_shortest_pair(chunks: &mut Vec<String>) {
    let Some(at) = (0..chunks.len() - 1)
        .min_by_key(|&i| chunks[i].chars().count() + chunks[i + 1].chars().count())
    else {
        return;
    };
    let next = chunks.remove(at + 1);
    chunks[at].push(' ');
    chunks[at].push_str(&next);
}

/// Whole seconds per chunk: [`MIN_SCENE_SECS`] each (fewer when the video is shorter), the
/// rest in proportion to length, by largest remainder (ties to the earlier chunk).
fn share(chunks: &[String], duration: u32) -> Vec<u32> {
    let n = chunks.len() as u32;
    let base = MIN_SCENE_SECS.min(duration / n);
    let rest = u64::from(duration - base * n);
    let weights: Vec<u64> = chunks
        .iter()
        .map(|c| c.chars().count().max(1) as u64)
        .collect();
    let total: u64 = weights.iter().sum();
    let mut seconds: Vec<u32> = weights
        .iter()
        .map(|w| base + (rest * w / total) as u32)
        .collect();
    let mut left = duration - seconds.iter().sum::<u32>();
    let mut order: Vec<usize> = (0..chunks.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((rest * weights[i]) % total));
    for i in order {
        if left == 0 {
            break;
        }
        seconds[i] += 1;
        left -= 1;
    }
    seconds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_add_up_and_scenes_follow_sentences_and_paragraphs() {
        let brief = "Meet Acme. It ships fast!\n\nPlans start at $5. Try it today?";
        let scenes = split(brief, 12);
        let texts: Vec<&str> = scenes.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Meet Acme. It ships fast!",
                "Plans start at $5. Try it today?"
            ]
        );
        assert_eq!(scenes.iter().map(|s| s.seconds).sum::<u32>(), 12);
        assert!(scenes.iter().all(|s| s.seconds >= MIN_SCENE_SECS));
    }

    #[test]
    fn a_short_video_merges_scenes_and_a_long_brief_groups_sentences() {
        let brief = (1..=40)
            .map(|i| format!("Sentence number {i} is here."))
            .collect::<Vec<_>>()
            .join(" ");
        let scenes = split(&brief, 5);
        assert_eq!(scenes.len(), 2);
        assert_eq!(scenes.iter().map(|s| s.seconds).sum::<u32>(), 5);
        let long = split(&brief, 180);
        assert!(long.len() > 2 && long.iter().all(|s| s.text.chars().count() <= 160));
        assert_eq!(long.iter().map(|s| s.seconds).sum::<u32>(), 180);
        assert_eq!(split(&brief, 180), long, "deterministic");
    }

    #[test]
    fn a_brief_without_sentence_ends_is_one_scene() {
        assert_eq!(
            split("  just   words  ", 7),
            [Scene {
                text: "just words".into(),
                seconds: 7
            }]
        );
    }
}
