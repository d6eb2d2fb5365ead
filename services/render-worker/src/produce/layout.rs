//! Plain-text lines of a document, for the formats that lay text out themselves (pdf, svg,
//! pptx): word wrapping to a width in characters.

use producible::{Block, Document, plain};

/// One laid-out line and what it is part of.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Heading(u8, String),
    Text(String),
    Code(String),
    /// Cells of a table row (header rows are bold).
    Row {
        cells: Vec<String>,
        header: bool,
    },
    /// An `image` block: its picture (see [`producible::images`]) and its caption.
    Image {
        src: String,
        alt: String,
    },
    Blank,
    PageBreak,
}

/// Breaks `text` into lines of at most `width` characters, at spaces where possible.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    wrap_measured(text, width.max(1) as f32, &|_| 1.0)
}

/// Breaks `text` into lines no wider than `max`, each character as wide as `measure` says
/// (widths add up: no kerning), at spaces where possible; a word wider than a line is cut.
pub fn wrap_measured(text: &str, max: f32, measure: &dyn Fn(char) -> f32) -> Vec<String> {
    let space = measure(' ');
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let (mut line, mut line_w) = (String::new(), 0.0);
        for word in paragraph.split(' ') {
            let mut word = word;
            let mut word_w: f32 = word.chars().map(measure).sum();
            while word_w > max {
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                    line_w = 0.0;
                }
                let (mut cut, mut cut_w) = (0, 0.0);
                for (i, c) in word.char_indices() {
                    let w = measure(c);
                    if cut > 0 && cut_w + w > max {
                        break;
                    }
                    cut = i + c.len_utf8();
                    cut_w += w;
                }
                lines.push(word[..cut].to_owned());
                word = &word[cut..];
                word_w -= cut_w;
            }
            if !line.is_empty() && line_w + space + word_w > max {
                lines.push(std::mem::take(&mut line));
                line_w = 0.0;
            }
            if !line.is_empty() {
                line.push(' ');
                line_w += space;
            }
            line.push_str(word);
            line_w += word_w;
        }
        lines.push(line);
    }
    lines
}

/// The document as lines of at most `width` characters (table cells are not wrapped here).
pub fn lines(document: &Document, width: usize) -> Vec<Line> {
    lines_measured(document, width.max(1) as f32, &|_| 1.0)
}

/// The document as lines no wider than `max` by `measure` (see [`wrap_measured`]).
pub fn lines_measured(document: &Document, max: f32, measure: &dyn Fn(char) -> f32) -> Vec<Line> {
    let wrap = |text: &str, max: f32| wrap_measured(text, max, measure);
    let width = max;
    let mut out = Vec::new();
    for block in &document.blocks {
        match block {
            Block::Heading { level, runs } => {
                out.extend(
                    wrap(&plain(runs), width)
                        .into_iter()
                        .map(|l| Line::Heading(*level, l)),
                );
            }
            Block::Paragraph { runs } => {
                out.extend(wrap(&plain(runs), width).into_iter().map(Line::Text));
                out.push(Line::Blank);
            }
            Block::List { ordered, items } => {
                for (i, item) in items.iter().enumerate() {
                    let marker = if *ordered {
                        format!("{}. ", i + 1)
                    } else {
                        "- ".to_owned()
                    };
                    let indent = " ".repeat(marker.len());
                    for (j, l) in wrap(
                        &plain(item),
                        width - marker.chars().map(measure).sum::<f32>(),
                    )
                    .into_iter()
                    .enumerate()
                    {
                        let lead = if j == 0 { &marker } else { &indent };
                        out.push(Line::Text(format!("{lead}{l}")));
                    }
                }
                out.push(Line::Blank);
            }
            Block::Table { header, rows } => {
                out.push(Line::Row {
                    cells: header.iter().map(|c| plain(c)).collect(),
                    header: true,
                });
                for row in rows {
                    out.push(Line::Row {
                        cells: row.iter().map(|c| plain(c)).collect(),
                        header: false,
                    });
                }
                out.push(Line::Blank);
            }
            Block::Code { text, .. } => {
                out.extend(wrap(text, width).into_iter().map(Line::Code));
                out.push(Line::Blank);
            }
            Block::Image { src, alt } => {
                out.push(Line::Image {
                    src: src.clone(),
                    alt: alt.clone(),
                });
                out.push(Line::Blank);
            }
            Block::PageBreak => out.push(Line::PageBreak),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_wrap_at_the_width() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh", 3), vec!["abc", "def", "gh"]);
        assert_eq!(wrap("a\nb", 10), vec!["a", "b"]);
        assert_eq!(wrap("", 10), vec![""]);
        let wide = |c: char| if c == 'W' { 2.0 } else { 1.0 };
        assert_eq!(wrap_measured("WW aa", 4.0, &wide), vec!["WW", "aa"]);
        assert_eq!(wrap_measured("WWWa", 3.0, &wide), vec!["W", "W", "Wa"]);
    }
}
