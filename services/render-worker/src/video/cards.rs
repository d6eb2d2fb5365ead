//! A scene's still picture by its card: the brand's background with a primary-colour band,
//! and the card's content above the caption zone (the lower fifth, kept free when the video
//! is narrated).

use std::path::PathBuf;

use ab_glyph::FontArc;
use tiny_skia::{Pixmap, Rect};

use super::draw::{self, Align, Area, Palette, Rgb};
use super::layout::Card;
use super::pictures::{self, Pictures};

/// What every card of a video is drawn with.
pub struct Canvas<'a> {
    pub width: u32,
    pub height: u32,
    pub palette: Palette,
    pub font: &'a FontArc,
    pub pictures: &'a Pictures,
    pub ffmpeg: &'a PathBuf,
    /// Whether the lower part is kept for captions.
    pub captioned: bool,
}

impl Canvas<'_> {
    /// The picture of `card`.
    pub fn draw(&self, card: &Card) -> Pixmap {
        let mut pixmap =
            Pixmap::new(self.width, self.height).expect("a video frame has a non-zero size");
        pixmap.fill(self.palette.background.color());
        let (w, h) = (self.width as f32, self.height as f32);
        let band = (h * 0.02).max(8.0);
        draw::fill(
            &mut pixmap,
            Rect::from_xywh(0.0, 0.0, w, band),
            self.palette.primary,
        );
        let margin = w.min(h) * 0.08;
        let bottom = if self.captioned { h * 0.76 } else { h - margin };
        let content = Area {
            x: margin,
            y: band + margin,
            w: w - 2.0 * margin,
            h: bottom - band - margin,
        };
        let unit = w.min(h);
        match card {
            Card::Title { text } => {
                let rest = self.logo(&mut pixmap, content, 0.22);
                self.text(&mut pixmap, text, rest, unit / 9.0, Align::Centre);
            }
            Card::Text { text } => {
                self.text(&mut pixmap, text, content, unit / 12.0, Align::Centre);
            }
            Card::Bullets { items } => self.bullets(&mut pixmap, items, content, unit / 14.0),
            Card::Quote { text, by } => self.quote(&mut pixmap, text, by.as_deref(), content),
            Card::Product { text } => {
                let (top, rest) = content.split_top(content.h * 0.6);
                if let Some(source) = self.pictures.product_shot() {
                    self.picture(&mut pixmap, source, top);
                }
                self.text(&mut pixmap, text, rest, unit / 16.0, Align::Centre);
            }
            Card::End { text, cta } => {
                let rest = self.logo(&mut pixmap, content, 0.18);
                let (body, button) = rest.split_top(rest.h * 0.62);
                if !text.is_empty() {
                    self.text(&mut pixmap, text, body, unit / 15.0, Align::Centre);
                }
                self.button(&mut pixmap, cta, button, unit);
            }
        }
        pixmap
    }

    /// Draws the logo (if any) in the top `share` of `area`; answers the area left.
    fn logo(&self, pixmap: &mut Pixmap, area: Area, share: f32) -> Area {
        let Some(source) = &self.pictures.logo else {
            return area;
        };
        let (top, rest) = area.split_top(area.h * share);
        self.picture(pixmap, source, top);
        rest
    }

    fn picture(&self, pixmap: &mut Pixmap, source: &pictures::Source, area: Area) {
        let (bw, bh) = (area.w.floor() as u32, (area.h * 0.9).floor() as u32);
        if let Some(picture) = pictures::decode(self.ffmpeg, source, bw, bh) {
            let y = area.y + (area.h - bh as f32) / 2.0;
            draw::blit(pixmap, &picture, area.x as i32, y as i32);
        }
    }

    fn text(&self, pixmap: &mut Pixmap, text: &str, area: Area, max: f32, align: Align) {
        let fitted = draw::fit(
            self.font,
            &[text.to_owned()],
            area.w,
            area.h,
            max,
            min_size(self.width),
        );
        draw::draw_fitted(pixmap, self.font, &fitted, area, align, self.palette.text);
    }

    fn bullets(&self, pixmap: &mut Pixmap, items: &[String], area: Area, max: f32) {
        let indent = max * 1.2;
        let inner = Area {
            x: area.x + indent,
            w: area.w - indent,
            ..area
        };
        let fitted = draw::fit(
            self.font,
            items,
            inner.w,
            inner.h,
            max,
            min_size(self.width),
        );
        let starts = draw::draw_fitted(
            pixmap,
            self.font,
            &fitted,
            inner,
            Align::Left,
            self.palette.text,
        );
        let dot = fitted.scale.y * 0.32;
        for y in starts {
            let centre = y + fitted.line_h * 0.45;
            draw::fill_rounded(
                pixmap,
                Area {
                    x: area.x + indent * 0.2,
                    y: centre - dot / 2.0,
                    w: dot,
                    h: dot,
                },
                dot / 2.0,
                self.palette.primary,
                1.0,
            );
        }
    }

    fn quote(&self, pixmap: &mut Pixmap, text: &str, by: Option<&str>, area: Area) {
        let unit = self.width.min(self.height) as f32;
        let (mark, rest) = area.split_top(unit / 5.0);
        let fitted = draw::fit(
            self.font,
            &["“".to_owned()],
            mark.w,
            mark.h,
            unit / 4.0,
            unit / 8.0,
        );
        draw::draw_fitted(
            pixmap,
            self.font,
            &fitted,
            mark,
            Align::Left,
            self.palette.primary,
        );
        let (body, signature) = match by {
            Some(_) => rest.split_top(rest.h * 0.8),
            None => (rest, Area { h: 0.0, ..rest }),
        };
        self.text(pixmap, text, body, unit / 13.0, Align::Centre);
        if let Some(by) = by {
            let fitted = draw::fit(
                self.font,
                &[format!("— {by}")],
                signature.w,
                signature.h,
                unit / 22.0,
                min_size(self.width),
            );
            draw::draw_fitted(
                pixmap,
                self.font,
                &fitted,
                signature,
                Align::Centre,
                self.palette.primary,
            );
        }
    }

    /// The call to action on a primary-colour button.
    fn button(&self, pixmap: &mut Pixmap, cta: &str, area: Area, unit: f32) {
        let max = unit / 14.0;
        let pad = max * 0.6;
        let fitted = draw::fit(
            self.font,
            &[cta.to_owned()],
            area.w - 2.0 * pad,
            (area.h - 2.0 * pad).max(max),
            max,
            min_size(self.width),
        );
        let text_w = fitted
            .paragraphs
            .iter()
            .flatten()
            .map(|l| draw::width(self.font, fitted.scale, l))
            .fold(0.0, f32::max);
        let button_w = (text_w + 2.0 * pad).min(area.w);
        let button_h = fitted.height() + 2.0 * pad;
        let button = Area {
            x: area.x + (area.w - button_w) / 2.0,
            y: area.y + (area.h - button_h) / 2.0,
            w: button_w,
            h: button_h,
        };
        draw::fill_rounded(pixmap, button, button_h * 0.3, self.palette.primary, 1.0);
        let inner = button.inset(pad);
        draw::draw_fitted(
            pixmap,
            self.font,
            &fitted,
            inner,
            Align::Centre,
            self.palette.text,
        );
    }
}

/// The smallest text drawn on a frame `width` wide.
pub fn min_size(width: u32) -> f32 {
    (width as f32 / 40.0).max(12.0)
}

/// Draws `text` as the caption: white on a dark translucent box in the lower part.
pub fn caption(pixmap: &mut Pixmap, font: &FontArc, text: &str) {
    let (w, h) = (pixmap.width() as f32, pixmap.height() as f32);
    let unit = w.min(h);
    let margin = unit * 0.06;
    let pad = unit * 0.025;
    let zone = Area {
        x: margin + pad,
        y: h * 0.79 + pad,
        w: w - 2.0 * (margin + pad),
        h: h * 0.15 - 2.0 * pad,
    };
    let fitted = draw::fit(
        font,
        &[text.to_owned()],
        zone.w,
        zone.h,
        unit / 18.0,
        min_size(pixmap.width()),
    );
    let box_h = fitted.height() + 2.0 * pad;
    let area = Area {
        x: margin,
        y: zone.y - pad + (zone.h + 2.0 * pad - box_h) / 2.0,
        w: w - 2.0 * margin,
        h: box_h,
    };
    draw::fill_rounded(pixmap, area, pad, Rgb(0, 0, 0), 0.62);
    let inner = area.inset(pad);
    draw::draw_fitted(
        pixmap,
        font,
        &fitted,
        inner,
        Align::Centre,
        Rgb(255, 255, 255),
    );
}
