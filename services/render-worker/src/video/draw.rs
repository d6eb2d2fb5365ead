//! Drawing primitives of the video's pictures: colours, filled (rounded) rectangles,
//! pictures with transparency, and text wrapped and shrunk until it fits a box.

use ab_glyph::{Font, FontArc, PxScale, ScaleFont, point};
use tiny_skia::{Color, FillRule, Paint, PathBuilder, Pixmap, Rect, Transform};

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

    pub fn color(self) -> Color {
        Color::from_rgba8(self.0, self.1, self.2, 255)
    }
}

/// The colours of a scene.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub background: Rgb,
    pub primary: Rgb,
    pub text: Rgb,
}

/// A rectangle of the frame, in pixels.
#[derive(Debug, Clone, Copy)]
pub struct Area {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Area {
    /// The area shrunk by `pad` on every side.
    pub fn inset(self, pad: f32) -> Self {
        Self {
            x: self.x + pad,
            y: self.y + pad,
            w: self.w - 2.0 * pad,
            h: self.h - 2.0 * pad,
        }
    }

    /// The top `h` of the area, and what is left under it.
    pub fn split_top(self, h: f32) -> (Self, Self) {
        let h = h.clamp(0.0, self.h);
        (
            Self { h, ..self },
            Self {
                y: self.y + h,
                h: self.h - h,
                ..self
            },
        )
    }
}

/// How a block of text sits in its area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Centre,
    Left,
}

pub fn fill(pixmap: &mut Pixmap, rect: impl Into<Option<Rect>>, colour: Rgb) {
    let Some(rect) = rect.into() else { return };
    let mut paint = Paint::default();
    paint.set_color(colour.color());
    pixmap.fill_rect(rect, &paint, Transform::identity(), None);
}

/// A rectangle with corners rounded by `radius`, in `colour` at `alpha` (0..=1).
pub fn fill_rounded(pixmap: &mut Pixmap, area: Area, radius: f32, colour: Rgb, alpha: f32) {
    let r = radius.min(area.w / 2.0).min(area.h / 2.0).max(0.0);
    let (x0, y0, x1, y1) = (area.x, area.y, area.x + area.w, area.y + area.h);
    let mut pb = PathBuilder::new();
    pb.move_to(x0 + r, y0);
    pb.line_to(x1 - r, y0);
    pb.quad_to(x1, y0, x1, y0 + r);
    pb.line_to(x1, y1 - r);
    pb.quad_to(x1, y1, x1 - r, y1);
    pb.line_to(x0 + r, y1);
    pb.quad_to(x0, y1, x0, y1 - r);
    pb.line_to(x0, y0 + r);
    pb.quad_to(x0, y0, x0 + r, y0);
    pb.close();
    let Some(path) = pb.finish() else { return };
    let mut paint = Paint::default();
    paint.set_color(Color::from_rgba8(
        colour.0,
        colour.1,
        colour.2,
        (alpha.clamp(0.0, 1.0) * 255.0).round() as u8,
    ));
    paint.anti_alias = true;
    pixmap.fill_path(
        &path,
        &paint,
        FillRule::Winding,
        Transform::identity(),
        None,
    );
}

/// A decoded picture: straight (not premultiplied) RGBA.
#[derive(Debug, Clone)]
pub struct Picture {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// Draws `picture` with its top-left corner at (`x`, `y`), blending its transparency over the
/// opaque frame.
pub fn blit(pixmap: &mut Pixmap, picture: &Picture, x: i32, y: i32) {
    let (pw, ph) = (pixmap.width() as i32, pixmap.height() as i32);
    let data = pixmap.data_mut();
    for row in 0..picture.height as i32 {
        let py = y + row;
        if py < 0 || py >= ph {
            continue;
        }
        for col in 0..picture.width as i32 {
            let px = x + col;
            if px < 0 || px >= pw {
                continue;
            }
            let src = ((row * picture.width as i32 + col) * 4) as usize;
            let a = u32::from(picture.rgba[src + 3]);
            if a == 0 {
                continue;
            }
            let dst = ((py * pw + px) * 4) as usize;
            for c in 0..3 {
                let s = u32::from(picture.rgba[src + c]);
                let d = u32::from(data[dst + c]);
                data[dst + c] = ((s * a + d * (255 - a) + 127) / 255) as u8;
            }
        }
    }
}

/// Paragraphs laid out to fit a box: the size chosen and each paragraph's lines.
pub struct Fitted {
    pub scale: PxScale,
    pub paragraphs: Vec<Vec<String>>,
    pub line_h: f32,
    /// Extra space between paragraphs.
    pub gap: f32,
}

impl Fitted {
    pub fn height(&self) -> f32 {
        let lines: usize = self.paragraphs.iter().map(Vec::len).sum();
        lines as f32 * self.line_h + self.paragraphs.len().saturating_sub(1) as f32 * self.gap
    }
}

/// The largest size from `max_size` down (by tenths) at which `paragraphs`, wrapped to `w`,
/// fit `h`; at `min_size`, what does not fit is cut with an ellipsis.
pub fn fit(
    font: &FontArc,
    paragraphs: &[String],
    w: f32,
    h: f32,
    max_size: f32,
    min_size: f32,
) -> Fitted {
    let mut size = max_size.max(min_size);
    loop {
        let scale = PxScale::from(size);
        let line_h = font.as_scaled(scale).height() * 1.2;
        let gap = line_h * 0.45;
        let wrapped: Vec<Vec<String>> =
            paragraphs.iter().map(|p| wrap(font, scale, p, w)).collect();
        let mut fitted = Fitted {
            scale,
            paragraphs: wrapped,
            line_h,
            gap,
        };
        if fitted.height() <= h {
            return fitted;
        }
        if size <= min_size {
            let fit = ((h / line_h).floor() as usize).max(1);
            let mut left = fit;
            for lines in &mut fitted.paragraphs {
                let keep = lines.len().min(left);
                *lines = ellipsize(std::mem::take(lines), keep.max(1));
                left = left.saturating_sub(keep);
            }
            fitted.paragraphs.retain(|p| !p.is_empty());
            return fitted;
        }
        size = (size * 0.9).max(min_size);
    }
}

/// Draws `fitted` in `area`, centred vertically; each paragraph's first line starts at the
/// returned y positions (for bullets).
pub fn draw_fitted(
    pixmap: &mut Pixmap,
    font: &FontArc,
    fitted: &Fitted,
    area: Area,
    align: Align,
    colour: Rgb,
) -> Vec<f32> {
    let scaled = font.as_scaled(fitted.scale);
    let mut top = area.y + (area.h - fitted.height()).max(0.0) / 2.0;
    let mut starts = Vec::with_capacity(fitted.paragraphs.len());
    for lines in &fitted.paragraphs {
        starts.push(top);
        for line in lines {
            let x = match align {
                Align::Centre => area.x + (area.w - width(font, fitted.scale, line)) / 2.0,
                Align::Left => area.x,
            };
            draw_line(
                pixmap,
                font,
                fitted.scale,
                line,
                x,
                top + scaled.ascent(),
                colour,
            );
            top += fitted.line_h;
        }
        top += fitted.gap;
    }
    starts
}

pub fn width(font: &FontArc, scale: PxScale, text: &str) -> f32 {
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
