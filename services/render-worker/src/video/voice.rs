//! The narration voice: espeak-ng (a local text-to-speech engine) as a child process, the
//! text on its stdin (never an argument it could read as an option), a WAV on its stdout,
//! read as 16-bit mono samples.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The samples per second espeak-ng speaks at (and the narration track is written at).
pub const SAMPLE_RATE: u32 = 22_050;
/// A sample louder than this (about -30 dBFS) is speech, quieter is silence.
const VOICED: i16 = 1_000;

/// How the narration is spoken.
#[derive(Debug, Clone)]
pub struct Voice {
    pub program: PathBuf,
    /// espeak-ng's voice name (`-v`).
    pub voice: String,
    /// The usual speed, in words per minute (`-s`).
    pub wpm: u32,
    /// The fastest it may be sped up to fit a scene.
    pub max_wpm: u32,
    /// The engine's version, part of the identity of a narrated scene.
    pub version: String,
}

impl Voice {
    /// The program's version line; `Err` when it cannot be run.
    pub fn probe_version(program: &str) -> Result<String, String> {
        let out = Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{program} could not be run ({e}): install espeak-ng"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text
            .split("Data at")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned())
    }

    /// `text` spoken at `wpm`, its leading and trailing silence cut off.
    pub fn speak(&self, text: &str, wpm: u32) -> Result<Vec<i16>, String> {
        let mut child = Command::new(&self.program)
            .args(["--stdout", "-v"])
            .arg(&self.voice)
            .arg("-s")
            .arg(wpm.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{} could not be started: {e}", self.program.display()))?;
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut stdin = child.stdin.take().ok_or("espeak-ng has no stdin")?;
        // A sentence is a few kilobytes: it fits the pipe, so writing before reading is safe.
        let written = stdin.write_all(line.as_bytes());
        drop(stdin);
        let mut wav = Vec::new();
        let read = child
            .stdout
            .take()
            .ok_or("espeak-ng has no stdout")?
            .read_to_end(&mut wav);
        let output = child.wait_with_output().map_err(|e| e.to_string())?;
        if !output.status.success() || written.is_err() || read.is_err() {
            return Err(format!(
                "espeak-ng failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(trim_silence(samples(&wav)?))
    }
}

/// The samples of a 16-bit mono WAV at [`SAMPLE_RATE`] (its data runs to the end: espeak-ng
/// writing to a pipe cannot fill in the sizes).
fn samples(wav: &[u8]) -> Result<Vec<i16>, String> {
    if wav.len() < 12 || &wav[..4] != b"RIFF" || &wav[8..12] != b"WAVE" {
        return Err("espeak-ng did not answer a WAV".into());
    }
    let mut at = 12;
    while at + 8 <= wav.len() {
        let id = &wav[at..at + 4];
        let size = u32::from_le_bytes([wav[at + 4], wav[at + 5], wav[at + 6], wav[at + 7]]);
        let body = at + 8;
        if id == b"fmt " {
            let field = |o: usize| {
                wav.get(body + o..body + o + 2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
            };
            let rate = wav
                .get(body + 4..body + 8)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if field(0) != Some(1)
                || field(2) != Some(1)
                || field(14) != Some(16)
                || rate != Some(SAMPLE_RATE)
            {
                return Err("espeak-ng's WAV is not 16-bit mono PCM at 22050 Hz".into());
            }
        } else if id == b"data" {
            return Ok(wav[body..]
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect());
        }
        at = body + size as usize;
    }
    Err("espeak-ng's WAV has no data".into())
}

/// `samples` from the first voiced one to the last.
fn trim_silence(mut samples: Vec<i16>) -> Vec<i16> {
    let voiced = |s: &i16| s.unsigned_abs() > VOICED.unsigned_abs();
    let Some(first) = samples.iter().position(voiced) else {
        return Vec::new();
    };
    let last = samples.iter().rposition(voiced).unwrap_or(first);
    samples.truncate(last + 1);
    samples.drain(..first);
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_is_trimmed_from_both_ends() {
        assert_eq!(
            trim_silence(vec![0, 5, 2000, 0, -3000, 10]),
            [2000, 0, -3000]
        );
        assert!(trim_silence(vec![0, 1, -1]).is_empty());
    }
}
