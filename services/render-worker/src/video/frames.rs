//! A scene's frames, one at a time: its still picture, crossfaded from the previous scene's
//! over the first [`FADE_SECS`], with the caption being spoken drawn over it. A frame is only
//! composed again when something in it changes, and handed to the encoder as `yuv420p`.

use ab_glyph::FontArc;
use tiny_skia::Pixmap;

use super::cards;
use super::narration::Caption;
use super::yuv;

/// How long a crossfade from the previous scene lasts, in seconds.
pub const FADE_SECS: f32 = 0.5;

/// What a composed frame shows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shown {
    Fading(u32),
    Still(Option<usize>),
}

/// The frames of one scene.
pub struct Frames<'a> {
    pub base: &'a Pixmap,
    pub previous: Option<&'a Pixmap>,
    /// In seconds from the start of the scene.
    pub captions: &'a [Caption],
    pub font: &'a FontArc,
    pub fps: u32,
    out: Pixmap,
    /// `out` as `yuv420p`.
    encoded: Vec<u8>,
    shown: Option<Shown>,
}

impl<'a> Frames<'a> {
    pub fn new(
        base: &'a Pixmap,
        previous: Option<&'a Pixmap>,
        captions: &'a [Caption],
        font: &'a FontArc,
        fps: u32,
    ) -> Self {
        let (width, height) = (base.width() as usize, base.height() as usize);
        Self {
            base,
            previous,
            captions,
            font,
            fps,
            out: base.clone(),
            encoded: vec![0; yuv::frame_len(width, height)],
            shown: None,
        }
    }

    /// Frame `index` as `yuv420p`.
    pub fn frame(&mut self, index: u32) -> &[u8] {
        let t = index as f32 / self.fps as f32;
        let caption = self
            .captions
            .iter()
            .position(|c| c.start as f32 <= t && t < c.end as f32);
        let fading = self.previous.filter(|_| t < FADE_SECS);
        let shown = match fading {
            Some(_) => Shown::Fading(index),
            None => Shown::Still(caption),
        };
        if self.shown != Some(shown) {
            match fading {
                Some(previous) => blend(previous, self.base, ease(t / FADE_SECS), &mut self.out),
                None => self.out.data_mut().copy_from_slice(self.base.data()),
            }
            if let Some(i) = caption {
                cards::caption(&mut self.out, self.font, &self.captions[i].text);
            }
            let (width, height) = (self.out.width() as usize, self.out.height() as usize);
            yuv::from_rgba(self.out.data(), width, height, &mut self.encoded);
            self.shown = Some(shown);
        }
        &self.encoded
    }
}

fn ease(x: f32) -> f32 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// `out = from × (1 − a) + to × a`, byte by byte (opaque pictures).
fn blend(from: &Pixmap, to: &Pixmap, a: f32, out: &mut Pixmap) {
    let a = (a * 256.0).round() as u32;
    for ((o, f), t) in out.data_mut().iter_mut().zip(from.data()).zip(to.data()) {
        *o = ((u32::from(*f) * (256 - a) + u32::from(*t) * a) >> 8) as u8;
    }
}
