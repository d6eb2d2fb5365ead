//! pdf through `printpdf`: A4 pages, text in embedded TrueType fonts (by default DejaVu: Latin,
//! Greek, Cyrillic; and Droid Sans Fallback: Chinese, Japanese, Korean), wrapped to the page
//! width by the fonts' own advances, a new page when one is full or the tree says so, tables in
//! columns, pictures scaled to the text width.
//!
//! Each character is printed in the first font of its role's chain that has a glyph for it
//! ([`Fonts::pick`]); memory-api has already refused a tree with a character no font has.

use printpdf::{
    ColorBits, ColorSpace, Image, ImageTransform, ImageXObject, IndirectFontRef, Mm, PdfDocument,
    PdfDocumentReference, PdfLayerReference, Px,
};
use producible::Document;
use producible::fonts::{Fonts, Role};
use producible::images::{Picture, read_picture};

use super::layout::{self, Line};

const PAGE_W: f32 = 210.0;
const PAGE_H: f32 = 297.0;
const MARGIN: f32 = 20.0;
const BODY_PT: f32 = 11.0;
const PT_MM: f32 = 0.3528;
/// The tallest a picture is printed, so that its caption fits on its page.
const MAX_PICTURE_H: f32 = 150.0;

struct Pages<'f> {
    doc: PdfDocumentReference,
    layer: PdfLayerReference,
    y: f32,
    fonts: &'f Fonts,
    /// The document's reference of each font of `fonts`, added when first used.
    refs: Vec<Option<IndirectFontRef>>,
}

impl Pages<'_> {
    fn new_page(&mut self) {
        let (page, layer) = self.doc.add_page(Mm(PAGE_W), Mm(PAGE_H), "text");
        self.layer = self.doc.get_page(page).get_layer(layer);
        self.y = PAGE_H - MARGIN;
    }

    /// Room for something `height` mm high, on this page or a new one.
    fn room_mm(&mut self, height: f32) {
        if self.y - height < MARGIN {
            self.new_page();
        }
        self.y -= height;
    }

    /// Room for a line `size` points high.
    fn room(&mut self, size: f32) {
        self.room_mm(size * PT_MM * 1.4);
    }

    fn font(&mut self, index: usize) -> Result<IndirectFontRef, String> {
        if let Some(font) = &self.refs[index] {
            return Ok(font.clone());
        }
        let font = &self.fonts.all()[index];
        let reference = self
            .doc
            .add_external_font(&font.bytes[..])
            .map_err(|e| format!("embedding {}: {e}", font.path))?;
        self.refs[index] = Some(reference.clone());
        Ok(reference)
    }

    /// Prints `text` at `x` on the current line, each run of characters in its font.
    fn text(&mut self, text: &str, size: f32, x: f32, role: Role) -> Result<(), String> {
        let mut segments: Vec<(usize, String)> = Vec::new();
        for c in text.chars().filter(|c| !c.is_control()) {
            let font = self.fonts.pick(role, c);
            match segments.last_mut() {
                Some((f, s)) if *f == font => s.push(c),
                _ => segments.push((font, c.to_string())),
            }
        }
        if segments.is_empty() {
            return Ok(());
        }
        self.layer.begin_text_section();
        self.layer.set_text_cursor(Mm(x), Mm(self.y));
        for (font, segment) in segments {
            let font = self.font(font)?;
            self.layer.set_font(&font, size);
            self.layer.write_text(segment, &font);
        }
        self.layer.end_text_section();
        Ok(())
    }

    /// Prints `picture` as wide as the text (never wider than at 150 dpi), centred.
    fn picture(&mut self, picture: &Picture, width: f32) {
        const DPI: f32 = 150.0;
        let natural_w = picture.width as f32 * 25.4 / DPI;
        let natural_h = picture.height as f32 * 25.4 / DPI;
        let scale = (width / natural_w).min(MAX_PICTURE_H / natural_h).min(1.0);
        let (w, h) = (natural_w * scale, natural_h * scale);
        self.room_mm(h);
        let image = Image::from(ImageXObject {
            width: Px(picture.width as usize),
            height: Px(picture.height as usize),
            color_space: ColorSpace::Rgb,
            bits_per_component: ColorBits::Bit8,
            interpolate: true,
            image_data: picture.rgb.clone(),
            image_filter: None,
            smask: None,
            clipping_bbox: None,
        });
        image.add_to_layer(
            self.layer.clone(),
            ImageTransform {
                translate_x: Some(Mm(MARGIN + (width - w) / 2.0)),
                translate_y: Some(Mm(self.y)),
                scale_x: Some(scale),
                scale_y: Some(scale),
                dpi: Some(DPI),
                ..ImageTransform::default()
            },
        );
    }
}

pub fn produce(document: &Document, fonts: &Fonts) -> Result<Vec<u8>, String> {
    let (doc, page, layer) = PdfDocument::new(&document.title, Mm(PAGE_W), Mm(PAGE_H), "text");
    let layer = doc.get_page(page).get_layer(layer);
    let mut pages = Pages {
        doc,
        layer,
        y: PAGE_H - MARGIN,
        fonts,
        refs: vec![None; fonts.all().len()],
    };
    let width = PAGE_W - 2.0 * MARGIN;
    // Widths in mm of a character printed as `role` at `size` points.
    let mm = |role: Role, size: f32| move |c: char| fonts.advance(role, c) * size * PT_MM;
    let title_pt = 22.0;
    for line in layout::wrap_measured(&document.title, width, &mm(Role::Bold, title_pt)) {
        pages.room(title_pt);
        pages.text(&line, title_pt, MARGIN, Role::Bold)?;
    }
    pages.room(BODY_PT);
    // Lines are wrapped for body text; headings and code are wrapped again to their size.
    for line in layout::lines_measured(document, width, &mm(Role::Regular, BODY_PT)) {
        match line {
            Line::Heading(level, text) => {
                let size = 20.0 - 2.0 * f32::from(level);
                for l in layout::wrap_measured(&text, width, &mm(Role::Bold, size)) {
                    pages.room(size);
                    pages.text(&l, size, MARGIN, Role::Bold)?;
                }
            }
            Line::Text(text) => {
                pages.room(BODY_PT);
                pages.text(&text, BODY_PT, MARGIN, Role::Regular)?;
            }
            Line::Code(text) => {
                let size = 9.5;
                for l in layout::wrap_measured(&text, width, &mm(Role::Mono, size)) {
                    pages.room(size);
                    pages.text(&l, size, MARGIN, Role::Mono)?;
                }
            }
            Line::Row { cells, header } => {
                let columns = cells.len().max(1);
                let col_w = width / columns as f32;
                let size = if columns > 6 { 8.0 } else { 10.0 };
                let role = if header { Role::Bold } else { Role::Regular };
                let wrapped: Vec<Vec<String>> = cells
                    .iter()
                    .map(|c| layout::wrap_measured(c, col_w - 2.0, &mm(role, size)))
                    .collect();
                let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
                for i in 0..height {
                    pages.room(size);
                    for (c, lines) in wrapped.iter().enumerate() {
                        if let Some(l) = lines.get(i) {
                            pages.text(l, size, MARGIN + c as f32 * col_w, role)?;
                        }
                    }
                }
            }
            Line::Image { src, alt } => {
                let caption = match read_picture(&src) {
                    Ok(Some(picture)) => {
                        pages.picture(&picture, width);
                        alt
                    }
                    _ => format!("[image: {alt}]"),
                };
                for l in layout::wrap_measured(&caption, width, &mm(Role::Regular, BODY_PT)) {
                    pages.room(BODY_PT);
                    pages.text(&l, BODY_PT, MARGIN, Role::Regular)?;
                }
            }
            Line::Blank => pages.y -= BODY_PT * PT_MM * 0.6,
            Line::PageBreak => pages.new_page(),
        }
    }
    pages.doc.save_to_bytes().map_err(|e| e.to_string())
}
