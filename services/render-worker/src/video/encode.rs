//! Encoding with ffmpeg as a child process: a scene's raw `yuv420p` frames are written to its
//! stdin and come out as H.264 (libx264, yuv420p) in MP4; the scenes' files are then joined
//! by the concat demuxer without re-encoding the video, and the narration track (and the
//! brand's music, looped or cut and mixed under the voice) encoded to AAC beside it. Only one
//! frame is in memory at a time (with the scene's still pictures).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ab_glyph::FontArc;
use memory_api::render_video::brand::MediaFormat;
use tiny_skia::Pixmap;

use super::frames::Frames;
use super::narration::Caption;

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
    pub base: &'a Pixmap,
    /// The previous scene's picture, crossfaded from.
    pub previous: Option<&'a Pixmap>,
    pub captions: &'a [Caption],
    pub seconds: u32,
}

/// The sound of a video.
pub struct Soundtrack<'a> {
    /// The narration, a WAV of the video's length.
    pub voice: Option<&'a Path>,
    pub music: Option<(&'a Path, MediaFormat)>,
    pub seconds: u32,
}

/// How loud the music is under the voice, and alone.
const MUSIC_UNDER_VOICE: f32 = 0.18;
const MUSIC_ALONE: f32 = 0.6;

impl Encoder {
    /// Draws and encodes one scene into `out` (blocking: run it off the async runtime).
    pub fn scene(&self, font: &FontArc, spec: &SceneSpec<'_>, out: &Path) -> Result<(), String> {
        let mut frames_of = Frames::new(spec.base, spec.previous, spec.captions, font, self.fps);
        let frames = spec.seconds * self.fps;
        let mut child = Command::new(&self.ffmpeg)
            .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
            .args(["-f", "rawvideo", "-pix_fmt", "yuv420p"])
            .arg("-s")
            .arg(format!("{}x{}", spec.base.width(), spec.base.height()))
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
            (0..frames).try_for_each(|i| stdin.write_all(frames_of.frame(i)))
            // stdin is closed here: ffmpeg sees the end of the video.
        };
        finish(child, written.err())
    }

    /// Joins the scene files, in order, into `out` without re-encoding the video, with the
    /// soundtrack (if any) as AAC of exactly the video's length.
    pub fn concat(
        &self,
        parts: &[PathBuf],
        list: &Path,
        sound: &Soundtrack<'_>,
        out: &Path,
    ) -> Result<(), String> {
        let mut listing = String::new();
        for part in parts {
            let path = part.to_str().ok_or("a scene path is not UTF-8")?;
            listing.push_str(&format!("file '{}'\n", path.replace('\'', "'\\''")));
        }
        std::fs::write(list, listing).map_err(|e| format!("concat list: {e}"))?;
        let mut command = Command::new(&self.ffmpeg);
        command
            .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
            .args([
                "-protocol_whitelist",
                "file",
                "-f",
                "concat",
                "-safe",
                "0",
                "-i",
            ])
            .arg(list);
        sound_args(&mut command, sound);
        let child = command
            .args(["-c:v", "copy", "-movflags", "+faststart"])
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("ffmpeg could not be started: {e}"))?;
        finish(child, None)
    }
}

/// The soundtrack's inputs and how they are mixed: the voice as it is, the music looped and
/// faded out at the end (under the voice: quieter), cut at the video's length.
fn sound_args(command: &mut Command, sound: &Soundtrack<'_>) {
    let seconds = sound.seconds;
    let fade_at = seconds.saturating_sub(1);
    let music_filter = |volume: f32| {
        format!(
            "aresample=44100,aformat=channel_layouts=stereo,volume={volume},\
             atrim=0:{seconds},afade=t=out:st={fade_at}:d=1"
        )
    };
    if let Some(voice) = sound.voice {
        command.args(["-f", "wav", "-i"]).arg(voice);
    }
    if let Some((music, format)) = sound.music {
        let demuxer = match format {
            MediaFormat::Mp3 => "mp3",
            MediaFormat::Wav => "wav",
            MediaFormat::Ogg => "ogg",
            MediaFormat::Flac => "flac",
            // Pictures are refused by the API as music; never reached.
            MediaFormat::Png | MediaFormat::Jpeg | MediaFormat::Webp => "mp3",
        };
        command
            .args(["-stream_loop", "-1", "-f", demuxer, "-i"])
            .arg(music);
    }
    let graph = match (sound.voice.is_some(), sound.music.is_some()) {
        (false, false) => {
            command.arg("-an");
            return;
        }
        (true, false) => "[1:a]aresample=44100,aformat=channel_layouts=stereo[a]".to_owned(),
        (false, true) => format!("[1:a]{}[a]", music_filter(MUSIC_ALONE)),
        (true, true) => format!(
            "[1:a]aresample=44100,aformat=channel_layouts=stereo[v];[2:a]{}[m];\
             [v][m]amix=inputs=2:duration=first:normalize=0[a]",
            music_filter(MUSIC_UNDER_VOICE)
        ),
    };
    command
        .args(["-filter_complex", &graph, "-map", "0:v", "-map", "[a]"])
        .args(["-c:a", "aac", "-b:a", "128k", "-t"])
        .arg(seconds.to_string());
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
