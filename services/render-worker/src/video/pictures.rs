//! The brand's pictures (logo, product image), decoded and scaled to a box by ffmpeg: the
//! bytes go in on stdin through the one image demuxer their media type names (a picture can
//! never make ffmpeg open a file or a URL), straight RGBA of exactly the box comes out, the
//! picture centred in it on transparency.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use memory_api::render_video::brand::MediaFormat;

use super::draw::Picture;

/// A picture's bytes as stored, and its container.
#[derive(Debug, Clone)]
pub struct Source {
    pub format: MediaFormat,
    pub bytes: Arc<Vec<u8>>,
    /// SHA-256 (hex) of the bytes.
    pub sha256: String,
}

/// The pictures a video may draw.
#[derive(Debug, Clone, Default)]
pub struct Pictures {
    pub logo: Option<Source>,
    pub product: Option<Source>,
}

impl Pictures {
    /// The product shot's picture: the product image, else the logo.
    pub fn product_shot(&self) -> Option<&Source> {
        self.product.as_ref().or(self.logo.as_ref())
    }
}

/// Decodes `source` scaled to fit `width`×`height`; `None` (and a warning) when it does not
/// decode: the card is drawn without it.
pub fn decode(ffmpeg: &PathBuf, source: &Source, width: u32, height: u32) -> Option<Picture> {
    match run(ffmpeg, source, width.max(2), height.max(2)) {
        Ok(picture) => Some(picture),
        Err(error) => {
            tracing::warn!(%error, "a brand picture could not be decoded; drawn without it");
            None
        }
    }
}

fn run(ffmpeg: &PathBuf, source: &Source, width: u32, height: u32) -> Result<Picture, String> {
    let demuxer = match source.format {
        MediaFormat::Png => "png_pipe",
        MediaFormat::Jpeg => "jpeg_pipe",
        MediaFormat::Webp => "webp_pipe",
        other => return Err(format!("{other:?} is not a picture")),
    };
    let filter = format!(
        "scale={width}:{height}:force_original_aspect_ratio=decrease:flags=lanczos,\
         format=rgba,pad={width}:{height}:(ow-iw)/2:(oh-ih)/2:color=black@0"
    );
    let mut child = Command::new(ffmpeg)
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
        .args(["-protocol_whitelist", "pipe", "-f", demuxer, "-i", "pipe:0"])
        .args(["-frames:v", "1", "-vf"])
        .arg(filter)
        .args(["-f", "rawvideo", "-pix_fmt", "rgba", "pipe:1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("ffmpeg could not be started: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("ffmpeg has no stdin")?;
    let bytes = Arc::clone(&source.bytes);
    // Written from another thread: ffmpeg may fill its stdout before it has read all input.
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let mut rgba = Vec::with_capacity((width * height * 4) as usize);
    let read = child
        .stdout
        .take()
        .ok_or("ffmpeg has no stdout")?
        .read_to_end(&mut rgba);
    let _ = writer.join();
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if !output.status.success() || read.is_err() || rgba.len() != (width * height * 4) as usize {
        return Err(format!(
            "ffmpeg ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(Picture {
        width,
        height,
        rgba,
    })
}
