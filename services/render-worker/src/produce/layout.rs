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
    Blank,
    PageBreak,
}

/// Breaks `text` into lines of at most `width` characters, at spaces where possible.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for word in paragraph.split(' ') {
            let mut word: Vec<char> = word.chars().collect();
            // A word longer than a line is cut.
            while word.len() > width {
                if len > 0 {
                    lines.push(std::mem::take(&mut line));
                    len = 0;
                }
                lines.push(word.drain(..width).collect());
            }
            let wlen = word.len();
            if len > 0 && len + 1 + wlen > width {
                lines.push(std::mem::take(&mut line));
                len = 0;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            line.extend(word);
            len += wlen;
        }
        lines.push(line);
    }
    lines
}

/// The document as lines of at most `width` characters (table cells are not wrapped here).
pub fn lines(document: &Document, width: usize) -> Vec<Line> {
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
                    for (j, l) in wrap(&plain(item), width.saturating_sub(marker.len()))
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
            Block::Image { alt, .. } => {
                out.push(Line::Text(format!("[image: {alt}]")));
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
    }
}
