//! Drawing a scene: the brand's background, a primary-colour band, the scene's text wrapped
//! and centred in the text colour (shrunk until it fits), and a progress bar along the bottom
//! that fills over the scene (the only pixels that change from frame to frame).

use ab_glyph::{Font, FontArc, PxScale, ScaleFont, point};
use tiny_skia::{Color, Paint, Pixmap, Rect, Transform};

/// An opaque colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn parse(hex: &str) -> Option<Self> {
        let digits = hex.strip_prefix('#')?;
        if digits.len() != 6 || !digits.is_ascii() {
            return None;
        }
        let byte = |i: usize| u8::from_str_radix(&digits[i..i + 2], 16).ok();
        Some(Self(byte(0)?, byte(2)?, byte(4)?))
    }

    fn color(self) -> Color {
        Color::from_rgba8(self.0, self.1, self.2, 255)
    }

    /// Halfway to `other`.
    fn mix(self, other: Self) -> Self {
        let m = |a: u8, b: u8| ((u16::from(a) + u16::from(b)) / 2) as u8;
        Self(m(self.0, other.0), m(self.1, other.1), m(self.2, other.2))
    }
}

/// The colours of a scene.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub background: Rgb,
    pub primary: Rgb,
    pub text: Rgb,
}

/// One scene's picture, redrawn only where the progress bar moves.
pub struct Frame {
    pixmap: Pixmap,
    palette: Palette,
    bar: Rect,
}

impl Frame {
    /// The scene's still picture with an empty progress bar.
    pub fn new(width: u32, height: u32, palette: Palette, font: &FontArc, text: &str) -> Self {
        let mut pixmap = Pixmap::new(width, height).expect("a video frame has a non-zero size");
        pixmap.fill(palette.background.color());
        let (w, h) = (width as f32, height as f32);
        let band = (h * 0.025).max(8.0);
        fill(
            &mut pixmap,
            Rect::from_xywh(0.0, 0.0, w, band),
            palette.primary,
        );
        let margin = w * 0.08;
        let bar = Rect::from_xywh(margin, h - band * 2.5, w - 2.0 * margin, band * 0.6)
            .expect("the bar fits the frame");
        draw_text(&mut pixmap, font, text, palette.text, margin, band * 2.0);
        let mut frame = Self {
            pixmap,
            palette,
            bar,
        };
        frame.progress(0.0);
        frame
    }

    /// Fills the progress bar to `done` (0..=1).
    pub fn progress(&mut self, done: f32) {
        let track = self.palette.background.mix(self.palette.text);
        fill(&mut self.pixmap, self.bar, track);
        let filled = self.bar.width() * done.clamp(0.0, 1.0);
        if let Some(rect) = Rect::from_xywh(self.bar.x(), self.bar.y(), filled, self.bar.height()) {
            fill(&mut self.pixmap, rect, self.palette.primary);
        }
    }

    /// The pixels as RGBA (opaque, so premultiplied is plain).
    pub fn rgba(&self) -> &[u8] {
        self.pixmap.data()
    }
}

fn fill(pixmap: &mut Pixmap, rect: impl Into<Option<Rect>>, colour: Rgb) {
    let Some(rect) = rect.into() else { return };
    let mut paint = Paint::default();
    paint.set_color(colour.color());
    pixmap.fill_rect(rect, &paint, Transform::identity(), None);
}

/// The largest font size from a twelfth of the width down whose wrapped lines fit the box
/// between the margins; at the smallest size, lines that do not fit are cut with an ellipsis.
fn draw_text(pixmap: &mut Pixmap, font: &FontArc, text: &str, colour: Rgb, margin: f32, top: f32) {
    let (w, h) = (pixmap.width() as f32, pixmap.height() as f32);
    let box_w = w - 2.0 * margin;
    let box_h = h - 2.0 * top - 2.0 * margin;
    let min_size = (w / 40.0).max(12.0);
    let mut size = w / 12.0;
    let (scale, lines) = loop {
        let scale = PxScale::from(size);
        let lines = wrap(font, scale, text, box_w);
        let line_h = font.as_scaled(scale).height() * 1.25;
        if lines.len() as f32 * line_h <= box_h || size <= min_size {
            let fit = ((box_h / line_h).floor() as usize).max(1);
            break (scale, ellipsize(lines, fit));
        }
        size *= 0.9;
    };
    let scaled = font.as_scaled(scale);
    let line_h = scaled.height() * 1.25;
    let block_h = lines.len() as f32 * line_h;
    let mut baseline = (h - block_h) / 2.0 + scaled.ascent();
    for line in &lines {
        let line_w = width(font, scale, line);
        let x = (w - line_w) / 2.0;
        draw_line(pixmap, font, scale, line, x, baseline, colour);
        baseline += line_h;
    }
}

fn width(font: &FontArc, scale: PxScale, text: &str) -> f32 {
    let scaled = font.as_scaled(scale);
    let mut last = None;
    let mut x = 0.0;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(prev) = last {
            x += scaled.kern(prev, id);
        }
        x += scaled.h_advance(id);
        last = Some(id);
    }
    x
}

/// Greedy word wrap; a word wider than the box is broken between characters.
fn wrap(font: &FontArc, scale: PxScale, text: &str, max_w: f32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let candidate = if current.is_empty() {
            word.to_owned()
        } else {
            format!("{current} {word}")
        };
        if width(font, scale, &candidate) <= max_w {
            current = candidate;
            continue;
        }
        if !current.is_empty() {
            lines.push(std::mem::take(&mut current));
        }
        for c in word.chars() {
            current.push(c);
            if width(font, scale, &current) > max_w && current.chars().count() > 1 {
                current.pop();
                lines.push(std::mem::take(&mut current));
                current.push(c);
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

fn ellipsize(mut lines: Vec<String>, fit: usize) -> Vec<String> {
    if lines.len() > fit {
        lines.truncate(fit);
        if let Some(last) = lines.last_mut() {
            last.pop();
            last.push('…');
        }
    }
    lines
}

fn draw_line(
    pixmap: &mut Pixmap,
    font: &FontArc,
    scale: PxScale,
    text: &str,
    x: f32,
    baseline: f32,
    colour: Rgb,
) {
    let scaled = font.as_scaled(scale);
    let (pw, ph) = (pixmap.width() as i32, pixmap.height() as i32);
    let data = pixmap.data_mut();
    let mut caret = x;
    let mut last = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(prev) = last {
            caret += scaled.kern(prev, id);
        }
        let glyph = id.with_scale_and_position(scale, point(caret, baseline));
        caret += scaled.h_advance(id);
        last = Some(id);
        let Some(outline) = font.outline_glyph(glyph) else {
            continue;
        };
        let bounds = outline.px_bounds();
        outline.draw(|gx, gy, coverage| {
            let px = bounds.min.x as i32 + gx as i32;
            let py = bounds.min.y as i32 + gy as i32;
            if px < 0 || py < 0 || px >= pw || py >= ph {
                return;
            }
            let at = ((py * pw + px) * 4) as usize;
            let a = coverage.clamp(0.0, 1.0);
            for (i, channel) in [colour.0, colour.1, colour.2].into_iter().enumerate() {
                let dst = f32::from(data[at + i]);
                data[at + i] = (f32::from(channel) * a + dst * (1.0 - a)).round() as u8;
            }
        });
    }
}
