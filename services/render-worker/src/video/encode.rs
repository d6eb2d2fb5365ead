//! Encoding with ffmpeg as a child process: a scene's raw RGBA frames are written to its
//! stdin and come out as H.264 (libx264, yuv420p) in MP4; the scenes' files are then joined
//! by the concat demuxer without re-encoding. Only one frame is in memory at a time.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ab_glyph::FontArc;

use super::draw::{Frame, Palette};

/// How scenes are encoded (the same for every scene, so that they can be joined as they are).
#[derive(Debug, Clone)]
pub struct Encoder {
    /// The ffmpeg program.
    pub ffmpeg: PathBuf,
    pub fps: u32,
    /// libx264's preset.
    pub preset: String,
}

/// One scene to encode.
pub struct SceneSpec<'a> {
    pub width: u32,
    pub height: u32,
    pub palette: Palette,
    pub text: &'a str,
    pub seconds: u32,
}

impl Encoder {
    /// Draws and encodes one scene into `out` (blocking: run it off the async runtime).
    pub fn scene(&self, font: &FontArc, spec: &SceneSpec<'_>, out: &Path) -> Result<(), String> {
        let mut frame = Frame::new(spec.width, spec.height, spec.palette, font, spec.text);
        let frames = spec.seconds * self.fps;
        let mut child = Command::new(&self.ffmpeg)
            .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
            .args(["-f", "rawvideo", "-pix_fmt", "rgba"])
            .arg("-s")
            .arg(format!("{}x{}", spec.width, spec.height))
            .arg("-framerate")
            .arg(self.fps.to_string())
            .args(["-i", "pipe:0", "-an", "-c:v", "libx264", "-preset"])
            .arg(&self.preset)
            .args(["-tune", "stillimage", "-crf", "23", "-pix_fmt", "yuv420p"])
            .args(["-movflags", "+faststart"])
            .arg(out)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("ffmpeg could not be started: {e}"))?;
        let written = {
            let mut stdin = child.stdin.take().ok_or("ffmpeg has no stdin")?;
            (0..frames).try_for_each(|i| {
                frame.progress(i as f32 / frames.saturating_sub(1).max(1) as f32);
                stdin.write_all(frame.rgba())
            })
            // stdin is closed here: ffmpeg sees the end of the video.
        };
        finish(child, written.err())
    }

    /// Joins the scene files, in order, into `out` without re-encoding.
    pub fn concat(&self, parts: &[PathBuf], list: &Path, out: &Path) -> Result<(), String> {
        let mut listing = String::new();
        for part in parts {
            let path = part.to_str().ok_or("a scene path is not UTF-8")?;
            listing.push_str(&format!("file '{}'\n", path.replace('\'', "'\\''")));
        }
        std::fs::write(list, listing).map_err(|e| format!("concat list: {e}"))?;
        let child = Command::new(&self.ffmpeg)
            .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
            .args(["-f", "concat", "-safe", "0", "-i"])
            .arg(list)
            .args(["-c", "copy", "-movflags", "+faststart"])
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("ffmpeg could not be started: {e}"))?;
        finish(child, None)
    }
}

fn finish(child: std::process::Child, write_error: Option<std::io::Error>) -> Result<(), String> {
    let output = child
        .wait_with_output()
        .map_err(|e| format!("ffmpeg: {e}"))?;
    if output.status.success() && write_error.is_none() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: String = stderr
        .chars()
        .rev()
        .take(400)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(match write_error {
        Some(err) => format!("ffmpeg stopped reading frames ({err}): {tail}"),
        None => format!("ffmpeg failed ({}): {tail}", output.status),
    })
}
