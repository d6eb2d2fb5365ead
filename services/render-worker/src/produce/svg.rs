//! svg through the `svg` crate: the document drawn as text on one tall page (the crate
//! escapes the text).

use producible::Document;
use svg::node::element::{Rectangle, Text};

use super::layout::{self, Line};

const WIDTH: usize = 800;
const MARGIN: usize = 40;
const LINE: usize = 20;
/// Characters of body text on a line (≈ 7.5 px each at 14 px).
const CHARS: usize = 95;

fn text(content: &str, y: usize, x: usize, size: usize, weight: &str, family: &str) -> Text {
    Text::new(content)
        .set("x", x)
        .set("y", y)
        .set("font-size", size)
        .set("font-weight", weight)
        .set("font-family", family)
        .set("fill", "#111111")
}

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    let mut nodes = Vec::new();
    let mut y = MARGIN + 10;
    for l in layout::wrap(&document.title, 50) {
        nodes.push(text(&l, y, MARGIN, 28, "bold", "DejaVu Sans, sans-serif"));
        y += 36;
    }
    for line in layout::lines(document, CHARS) {
        match line {
            Line::Heading(level, l) => {
                y += 6;
                nodes.push(text(
                    &l,
                    y,
                    MARGIN,
                    26 - 2 * usize::from(level),
                    "bold",
                    "DejaVu Sans, sans-serif",
                ));
                y += LINE + 6;
            }
            Line::Text(l) => {
                nodes.push(text(&l, y, MARGIN, 14, "normal", "DejaVu Sans, sans-serif"));
                y += LINE;
            }
            Line::Image { alt, .. } => {
                nodes.push(text(
                    &format!("[image: {alt}]"),
                    y,
                    MARGIN,
                    14,
                    "normal",
                    "DejaVu Sans, sans-serif",
                ));
                y += LINE;
            }
            Line::Code(l) => {
                nodes.push(text(
                    &l,
                    y,
                    MARGIN,
                    13,
                    "normal",
                    "DejaVu Sans Mono, monospace",
                ));
                y += LINE;
            }
            Line::Row { cells, header } => {
                let col = (WIDTH - 2 * MARGIN) / cells.len().max(1);
                let chars = (col / 8).max(1);
                let weight = if header { "bold" } else { "normal" };
                for (c, cell) in cells.iter().enumerate() {
                    let shown: String = cell.chars().take(chars).collect();
                    nodes.push(text(
                        &shown,
                        y,
                        MARGIN + c * col,
                        13,
                        weight,
                        "DejaVu Sans, sans-serif",
                    ));
                }
                y += LINE;
            }
            Line::Blank => y += LINE / 2,
            Line::PageBreak => y += LINE,
        }
    }
    let height = y + MARGIN;
    let mut doc = svg::Document::new()
        .set("width", WIDTH)
        .set("height", height)
        .set("viewBox", (0, 0, WIDTH, height))
        .add(
            Rectangle::new()
                .set("width", "100%")
                .set("height", "100%")
                .set("fill", "#ffffff"),
        );
    doc = doc.add(svg::node::element::Title::new(document.title.as_str()));
    for node in nodes {
        doc = doc.add(node);
    }
    let mut out = Vec::new();
    svg::write(&mut out, &doc).map_err(|e| e.to_string())?;
    Ok(out)
}
