//! A scene's narration: its caption chunks spoken one by one and laid end to end in the
//! scene's length (a short lead-in, a pause between chunks, a breath at the end), each chunk's
//! caption shown exactly while it is voiced. Speech longer than the scene is sped up, up to
//! the voice's fastest; only past that is the end cut off.

use super::captions;
use super::voice::{SAMPLE_RATE, Voice};

/// Silence before the first chunk (the crossfade is under way), in seconds.
const LEAD_SECS: f64 = 0.35;
/// Silence between two chunks.
const GAP_SECS: f64 = 0.3;
/// Silence after the last chunk, before the next scene.
const TAIL_SECS: f64 = 0.3;

/// A caption and when it is spoken, in seconds from the start of its scene (or video).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Caption {
    pub start: f64,
    pub end: f64,
    pub text: String,
}

/// A scene's voice track (exactly the scene's length) and its captions.
#[derive(Debug, Clone)]
pub struct SceneVoice {
    pub samples: Vec<i16>,
    pub captions: Vec<Caption>,
    /// The speed it was spoken at.
    pub wpm: u32,
}

/// Speaks `text` into a track of `seconds`.
pub fn narrate(voice: &Voice, text: &str, seconds: u32) -> Result<SceneVoice, String> {
    let chunks = captions::chunks(text);
    let length = (seconds * SAMPLE_RATE) as usize;
    let samples_of = |secs: f64| (secs * f64::from(SAMPLE_RATE)).round() as usize;
    let pauses = samples_of(LEAD_SECS)
        + samples_of(TAIL_SECS)
        + samples_of(GAP_SECS) * chunks.len().saturating_sub(1);
    let room = length.saturating_sub(pauses).max(1);
    let mut wpm = voice.wpm;
    let mut spoken = speak_all(voice, &chunks, wpm)?;
    // Speech length is close to inversely proportional to the speed: a few tries converge.
    for _ in 0..4 {
        let total: usize = spoken.iter().map(Vec::len).sum();
        if total <= room || wpm >= voice.max_wpm {
            break;
        }
        let wanted = (f64::from(wpm) * total as f64 / room as f64 * 1.04).ceil() as u32;
        wpm = wanted.clamp(wpm + 1, voice.max_wpm);
        spoken = speak_all(voice, &chunks, wpm)?;
    }
    let mut samples = vec![0i16; length];
    let mut captions = Vec::with_capacity(chunks.len());
    let mut at = samples_of(LEAD_SECS).min(length);
    for (text, speech) in chunks.into_iter().zip(spoken) {
        let room = length.saturating_sub(at);
        if room == 0 || speech.is_empty() {
            continue;
        }
        let take = speech.len().min(room);
        samples[at..at + take].copy_from_slice(&speech[..take]);
        if take < speech.len() {
            tracing::warn!(wpm, "narration cut at the end of its scene");
        }
        let seconds = |s: usize| s as f64 / f64::from(SAMPLE_RATE);
        captions.push(Caption {
            start: seconds(at),
            end: seconds(at + take),
            text,
        });
        at += take + samples_of(GAP_SECS);
    }
    Ok(SceneVoice {
        samples,
        captions,
        wpm,
    })
}

fn speak_all(voice: &Voice, chunks: &[String], wpm: u32) -> Result<Vec<Vec<i16>>, String> {
    chunks.iter().map(|c| voice.speak(c, wpm)).collect()
}

/// The narration track of a whole video, written scene by scene: a 16-bit mono WAV.
pub struct Track {
    file: std::io::BufWriter<std::fs::File>,
}

impl Track {
    /// Starts a track of `seconds` at `path`.
    pub fn create(path: &std::path::Path, seconds: u32) -> Result<Self, String> {
        use std::io::Write as _;
        let file = std::fs::File::create(path).map_err(|e| format!("narration track: {e}"))?;
        let mut file = std::io::BufWriter::new(file);
        let data = seconds * SAMPLE_RATE * 2;
        let mut header = Vec::with_capacity(44);
        header.extend_from_slice(b"RIFF");
        header.extend_from_slice(&(36 + data).to_le_bytes());
        header.extend_from_slice(b"WAVEfmt ");
        header.extend_from_slice(&16u32.to_le_bytes());
        header.extend_from_slice(&1u16.to_le_bytes()); // PCM
        header.extend_from_slice(&1u16.to_le_bytes()); // mono
        header.extend_from_slice(&SAMPLE_RATE.to_le_bytes());
        header.extend_from_slice(&(SAMPLE_RATE * 2).to_le_bytes());
        header.extend_from_slice(&2u16.to_le_bytes());
        header.extend_from_slice(&16u16.to_le_bytes());
        header.extend_from_slice(b"data");
        header.extend_from_slice(&data.to_le_bytes());
        file.write_all(&header)
            .map_err(|e| format!("narration track: {e}"))?;
        Ok(Self { file })
    }

    /// Appends a scene's samples.
    pub fn append(&mut self, samples: &[i16]) -> Result<(), String> {
        use std::io::Write as _;
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.file
            .write_all(&bytes)
            .map_err(|e| format!("narration track: {e}"))
    }

    pub fn finish(mut self) -> Result<(), String> {
        use std::io::Write as _;
        self.file
            .flush()
            .map_err(|e| format!("narration track: {e}"))
    }
}
