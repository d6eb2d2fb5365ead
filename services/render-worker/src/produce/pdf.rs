//! pdf through `printpdf`: A4 pages, text wrapped to the page width, a new page when one is
//! full or the tree says so, tables in columns.

use printpdf::{
    BuiltinFont, IndirectFontRef, Mm, PdfDocument, PdfDocumentReference, PdfLayerReference,
};
use producible::Document;

use super::layout::{self, Line};

const PAGE_W: f32 = 210.0;
const PAGE_H: f32 = 297.0;
const MARGIN: f32 = 20.0;
const BODY_PT: f32 = 11.0;
const PT_MM: f32 = 0.3528;
/// Average advance of Helvetica (em), and Courier's exact one.
const SANS_EM: f32 = 0.5;
const MONO_EM: f32 = 0.6;

fn chars_per(width_mm: f32, size_pt: f32, em: f32) -> usize {
    (width_mm / (size_pt * PT_MM * em)).floor().max(1.0) as usize
}

/// The built-in fonts encode Latin-1 only: other characters print as `?`.
fn latin1(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (c as u32) < 256 && !c.is_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

struct Pages {
    doc: PdfDocumentReference,
    layer: PdfLayerReference,
    y: f32,
    sans: IndirectFontRef,
    bold: IndirectFontRef,
    mono: IndirectFontRef,
}

impl Pages {
    fn new_page(&mut self) {
        let (page, layer) = self.doc.add_page(Mm(PAGE_W), Mm(PAGE_H), "text");
        self.layer = self.doc.get_page(page).get_layer(layer);
        self.y = PAGE_H - MARGIN;
    }

    /// Room for a line `size` points high, on this page or a new one.
    fn room(&mut self, size: f32) {
        if self.y - size * PT_MM * 1.4 < MARGIN {
            self.new_page();
        }
        self.y -= size * PT_MM * 1.4;
    }

    fn text(&self, text: &str, size: f32, x: f32, font: &IndirectFontRef) {
        self.layer
            .use_text(latin1(text), size, Mm(x), Mm(self.y), font);
    }
}

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    let (doc, page, layer) =
        PdfDocument::new(latin1(&document.title), Mm(PAGE_W), Mm(PAGE_H), "text");
    let font = |f| doc.add_builtin_font(f).map_err(|e| e.to_string());
    let (sans, bold, mono) = (
        font(BuiltinFont::Helvetica)?,
        font(BuiltinFont::HelveticaBold)?,
        font(BuiltinFont::Courier)?,
    );
    let layer = doc.get_page(page).get_layer(layer);
    let mut pages = Pages {
        doc,
        layer,
        y: PAGE_H - MARGIN,
        sans,
        bold,
        mono,
    };
    let width = PAGE_W - 2.0 * MARGIN;
    let title_pt = 22.0;
    for line in layout::wrap(&document.title, chars_per(width, title_pt, SANS_EM)) {
        pages.room(title_pt);
        pages.text(&line, title_pt, MARGIN, &pages.bold.clone());
    }
    pages.room(BODY_PT);
    // Lines are wrapped for body text; headings and code are wrapped again to their size.
    for line in layout::lines(document, chars_per(width, BODY_PT, SANS_EM)) {
        match line {
            Line::Heading(level, text) => {
                let size = 20.0 - 2.0 * f32::from(level);
                for l in layout::wrap(&text, chars_per(width, size, SANS_EM)) {
                    pages.room(size);
                    pages.text(&l, size, MARGIN, &pages.bold.clone());
                }
            }
            Line::Text(text) => {
                pages.room(BODY_PT);
                pages.text(&text, BODY_PT, MARGIN, &pages.sans.clone());
            }
            Line::Code(text) => {
                let size = 9.5;
                for l in layout::wrap(&text, chars_per(width, size, MONO_EM)) {
                    pages.room(size);
                    pages.text(&l, size, MARGIN, &pages.mono.clone());
                }
            }
            Line::Row { cells, header } => {
                let columns = cells.len().max(1);
                let col_w = width / columns as f32;
                let size = if columns > 6 { 8.0 } else { 10.0 };
                let wrapped: Vec<Vec<String>> = cells
                    .iter()
                    .map(|c| layout::wrap(c, chars_per(col_w - 2.0, size, SANS_EM)))
                    .collect();
                let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
                let font = if header {
                    pages.bold.clone()
                } else {
                    pages.sans.clone()
                };
                for i in 0..height {
                    pages.room(size);
                    for (c, lines) in wrapped.iter().enumerate() {
                        if let Some(l) = lines.get(i) {
                            pages.text(l, size, MARGIN + c as f32 * col_w, &font);
                        }
                    }
                }
            }
            Line::Blank => pages.y -= BODY_PT * PT_MM * 0.6,
            Line::PageBreak => pages.new_page(),
        }
    }
    pages.doc.save_to_bytes().map_err(|e| e.to_string())
}
