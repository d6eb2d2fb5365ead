//! Splitting a brief into scenes: paragraphs (a bullet list or a quote is one scene), then
//! sentences grouped up to a comfortable reading length, merged when the video is too short for them all, and given whole seconds
//! in proportion to their length. Deterministic: the same brief and duration always give the
//! same scenes, which is what lets a later render of the same run reuse them.

/// The shortest a scene is shown, in seconds.
pub const MIN_SCENE_SECS: u32 = 2;
/// Sentences are grouped into one scene up to about this many characters.
const TARGET_CHARS: usize = 160;

/// What a scene's text is shaped like in the brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// Sentences.
    Text,
    /// A paragraph of lines starting with `-`, `*`, `•` or a number: its items.
    Bullets(Vec<String>),
    /// A paragraph in quotes: the quotation and who said it (after a dash).
    Quote { text: String, by: Option<String> },
}

/// One scene: what is said (and captioned), its shape, and how long it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scene {
    pub text: String,
    pub shape: Shape,
    pub seconds: u32,
}

/// A piece of the brief before it is given seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    text: String,
    shape: Shape,
}

/// The scenes of `brief` for a video of `duration` seconds (`duration >= MIN_SCENE_SECS`):
/// their seconds add up to `duration`.
pub fn split(brief: &str, duration: u32) -> Vec<Scene> {
    let mut chunks = chunks(brief);
    if chunks.is_empty() {
        chunks.push(Chunk {
            text: collapse(brief),
            shape: Shape::Text,
        });
    }
    let max_scenes = (duration / MIN_SCENE_SECS).max(1) as usize;
    while chunks.len() > max_scenes {
        merge_shortest_pair(&mut chunks);
    }
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let seconds = share(&texts, duration);
    chunks
        .into_iter()
        .zip(seconds)
        .map(|(c, seconds)| Scene {
            text: c.text,
            shape: c.shape,
            seconds,
        })
        .collect()
}

/// Paragraphs (split at blank lines): a bullet list or a quote is one chunk, other
/// paragraphs are cut into sentences grouped up to [`TARGET_CHARS`]; whitespace collapsed.
fn chunks(brief: &str) -> Vec<Chunk> {
    let mut out = Vec::new();
    for lines in paragraphs(brief) {
        if let Some(items) = bullets(&lines) {
            let text = items
                .iter()
                .map(|i| spoken_item(i))
                .collect::<Vec<_>>()
                .join(" ");
            out.push(Chunk {
                text,
                shape: Shape::Bullets(items),
            });
            continue;
        }
        let paragraph = collapse(&lines.join(" "));
        if let Some((text, by)) = quote(&paragraph) {
            out.push(Chunk {
                text: text.clone(),
                shape: Shape::Quote { text, by },
            });
            continue;
        }
        let mut current = String::new();
        for sentence in sentences(&paragraph) {
            if !current.is_empty()
                && current.chars().count() + 1 + sentence.chars().count() > TARGET_CHARS
            {
                out.push(text_chunk(std::mem::take(&mut current)));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&sentence);
        }
        if !current.is_empty() {
            out.push(text_chunk(current));
        }
    }
    out
}

fn text_chunk(text: String) -> Chunk {
    Chunk {
        text,
        shape: Shape::Text,
    }
}

/// The paragraphs' lines, trimmed.
fn paragraphs(brief: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current: Vec<String> = Vec::new();
    for line in brief.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(collapse(line));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The items of a paragraph whose lines (two or more) all start with a bullet or a number.
fn bullets(lines: &[String]) -> Option<Vec<String>> {
    if lines.len() < 2 {
        return None;
    }
    lines
        .iter()
        .map(|line| {
            let rest = if let Some(rest) = line.strip_prefix(['-', '*', '•']) {
                rest
            } else {
                let digits = line.chars().take_while(char::is_ascii_digit).count();
                let rest = line[digits..].strip_prefix(['.', ')']);
                if digits == 0 { None } else { rest }?
            };
            let item = rest.trim();
            (!item.is_empty() && rest.starts_with(' ')).then(|| item.to_owned())
        })
        .collect()
}

/// An item as spoken: a sentence of its own.
fn spoken_item(item: &str) -> String {
    if item.ends_with(['.', '!', '?', '…']) {
        item.to_owned()
    } else {
        format!("{item}.")
    }
}

/// A paragraph that opens with a quotation mark and closes it, maybe followed by a dash and
/// who said it.
fn quote(paragraph: &str) -> Option<(String, Option<String>)> {
    let rest = paragraph.strip_prefix(['"', '“', '«'])?;
    let close = rest.rfind(['"', '”', '»'])?;
    let text = rest[..close].trim().to_owned();
    let tail = rest[close..].chars().skip(1).collect::<String>();
    let tail = tail.trim();
    let by = if tail.is_empty() {
        None
    } else {
        Some(tail.strip_prefix(['—', '–', '-'])?.trim().to_owned())
    };
    (!text.is_empty()).then_some((text, by.filter(|b| !b.is_empty())))
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

/// Merges the adjacent pair with the fewest characters together (the first such pair) into
/// sentences.
fn merge_shortest_pair(chunks: &mut Vec<Chunk>) {
    let Some(at) = (0..chunks.len() - 1)
        .min_by_key(|&i| chunks[i].text.chars().count() + chunks[i + 1].text.chars().count())
    else {
        return;
    };
    let next = chunks.remove(at + 1);
    let merged = &mut chunks[at];
    merged.text.push(' ');
    merged.text.push_str(&next.text);
    merged.shape = Shape::Text;
}

/// Whole seconds per chunk: [`MIN_SCENE_SECS`] each (fewer when the video is shorter), the
/// rest in proportion to length, by largest remainder (ties to the earlier chunk).
fn share(chunks: &[&str], duration: u32) -> Vec<u32> {
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
                shape: Shape::Text,
                seconds: 7
            }]
        );
    }

    #[test]
    fn bullet_lists_and_quotes_are_scenes_of_their_own() {
        let brief = "Why Acme:\n\n- Fast search\n* One place\n2. Free to start!\n\n\
            \u{201c}It changed how we work.\u{201d} \u{2014} Ada, CTO";
        let scenes = split(brief, 12);
        assert_eq!(scenes.len(), 3, "{scenes:?}");
        assert_eq!(
            scenes[1].shape,
            Shape::Bullets(vec![
                "Fast search".into(),
                "One place".into(),
                "Free to start!".into()
            ])
        );
        assert_eq!(scenes[1].text, "Fast search. One place. Free to start!");
        assert_eq!(
            scenes[2].shape,
            Shape::Quote {
                text: "It changed how we work.".into(),
                by: Some("Ada, CTO".into())
            }
        );
    }
}
