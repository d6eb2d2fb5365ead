//! Object keys: a few `/`-separated segments of safe characters, so that a key read from a URL
//! can never leave the store's directory or name a hidden file.

use std::fmt;

const MAX_SEGMENTS: usize = 4;
const MAX_LEN: usize = 200;

/// A validated object key, e.g. `producibles/0193….pdf`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey(String);

impl ObjectKey {
    /// `None` unless every segment is 1..=100 characters of `[A-Za-z0-9._-]`, not starting
    /// with a dot.
    pub fn parse(key: &str) -> Option<Self> {
        if key.is_empty() || key.len() > MAX_LEN {
            return None;
        }
        let segments: Vec<&str> = key.split('/').collect();
        let valid = segments.len() <= MAX_SEGMENTS
            && segments.iter().all(|s| {
                !s.is_empty()
                    && s.len() <= 100
                    && !s.starts_with('.')
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            });
        valid.then(|| Self(key.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last segment: the name a download is saved under.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The extension of the file name, lowercased (`""` when none).
    pub fn extension(&self) -> String {
        match self.file_name().rsplit_once('.') {
            Some((_, ext)) => ext.to_ascii_lowercase(),
            None => String::new(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The media type a download of `key` is served with, from its extension.
pub fn content_type(key: &ObjectKey) -> &'static str {
    match key.extension().as_str() {
        "pdf" => "application/pdf",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "csv" => "text/csv; charset=utf-8",
        "svg" => "image/svg+xml",
        "html" => "text/html; charset=utf-8",
        "mp4" => "video/mp4",
        "png" => "image/png",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_inside_the_store() {
        for bad in [
            "",
            "../x",
            "a/../b",
            "a//b",
            "/a",
            "a/",
            ".hidden",
            "a/.b",
            "a b",
            "a\\b",
            "a/b/c/d/e",
            "é",
        ] {
            assert!(ObjectKey::parse(bad).is_none(), "{bad:?} accepted");
        }
        let key = ObjectKey::parse("producibles/0193-ab.PDF").unwrap();
        assert_eq!(key.file_name(), "0193-ab.PDF");
        assert_eq!(content_type(&key), "application/pdf");
        assert_eq!(
            content_type(&ObjectKey::parse("x").unwrap()),
            "application/octet-stream"
        );
    }
}
