//! What a render reads of the brand besides its colours: the logo and product picture and the
//! music (each a base64 `data:` URI, never a URL: nothing is fetched), the call to action and
//! whether the video is narrated. Anything else in the brand is ignored.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest decoded picture (`brand.logo`, `brand.product_image`).
pub const MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;
/// The largest decoded music (`brand.music`).
pub const MAX_MUSIC_BYTES: usize = 6 * 1024 * 1024;
/// The longest call to action (`brand.cta`), in characters.
pub const MAX_CTA_CHARS: usize = 120;

/// A picture's or a sound's container, from its media type: the one demuxer the worker's
/// ffmpeg is allowed to read it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaFormat {
    Png,
    Jpeg,
    Webp,
    Mp3,
    Wav,
    Ogg,
    Flac,
}

impl MediaFormat {
    fn image(mime: &str) -> Option<Self> {
        match mime {
            "image/png" => Some(Self::Png),
            "image/jpeg" | "image/jpg" => Some(Self::Jpeg),
            "image/webp" => Some(Self::Webp),
            _ => None,
        }
    }

    fn audio(mime: &str) -> Option<Self> {
        match mime {
            "audio/mpeg" | "audio/mp3" => Some(Self::Mp3),
            "audio/wav" | "audio/x-wav" | "audio/wave" => Some(Self::Wav),
            "audio/ogg" => Some(Self::Ogg),
            "audio/flac" | "audio/x-flac" => Some(Self::Flac),
            _ => None,
        }
    }

    /// The file extension it is stored under.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Webp => "webp",
            Self::Mp3 => "mp3",
            Self::Wav => "wav",
            Self::Ogg => "ogg",
            Self::Flac => "flac",
        }
    }
}

/// A decoded `data:` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub format: MediaFormat,
    pub bytes: Vec<u8>,
}

/// What the render takes of a request's brand (colours aside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrandRender {
    pub logo: Option<Media>,
    pub product_image: Option<Media>,
    pub music: Option<Media>,
    pub cta: Option<String>,
    pub narration: bool,
}

impl BrandRender {
    /// Reads `brand.logo`, `brand.product_image`, `brand.music`, `brand.cta` and
    /// `brand.narration`; `Err` names the field and what it must be.
    pub fn from_brand(brand: Option<&Value>) -> Result<Self, String> {
        let empty = serde_json::Map::new();
        let brand = brand.and_then(Value::as_object).unwrap_or(&empty);
        let image = |name: &str| {
            brand
                .get(name)
                .map(|v| {
                    media(v, MediaFormat::image, MAX_IMAGE_BYTES).map_err(|e| {
                        format!("brand.{name} must be a data: URI of a PNG, JPEG or WebP image (base64){e}")
                    })
                })
                .transpose()
        };
        let music = brand
            .get("music")
            .map(|v| {
                media(v, MediaFormat::audio, MAX_MUSIC_BYTES).map_err(|e| {
                    format!(
                        "brand.music must be a data: URI of MP3, WAV, Ogg or FLAC audio (base64){e}"
                    )
                })
            })
            .transpose()?;
        let cta = match brand.get("cta") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) if s.trim().chars().count() <= MAX_CTA_CHARS => {
                Some(s.split_whitespace().collect::<Vec<_>>().join(" "))
            }
            Some(_) => {
                return Err(format!(
                    "brand.cta must be a string of at most {MAX_CTA_CHARS} characters"
                ));
            }
        };
        let narration = match brand.get("narration") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("brand.narration must be true or false".into()),
        };
        Ok(Self {
            logo: image("logo")?,
            product_image: image("product_image")?,
            music,
            cta,
            narration,
        })
    }
}

/// `data:<type>;base64,<payload>` of an accepted type and at most `max` bytes decoded; `Err`
/// is a suffix for the field's message.
fn media(
    value: &Value,
    accept: fn(&str) -> Option<MediaFormat>,
    max: usize,
) -> Result<Media, String> {
    let uri = value.as_str().ok_or_else(String::new)?;
    let rest = uri.trim().strip_prefix("data:").ok_or(", not a URL")?;
    let (header, payload) = rest.split_once(',').ok_or_else(String::new)?;
    let mut parts = header.split(';');
    let mime = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    if !parts.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
        return Err(String::new());
    }
    let format = accept(&mime).ok_or_else(|| format!(", not {mime}"))?;
    if payload.len() / 4 * 3 > max + 3 {
        return Err(format!(" of at most {max} bytes"));
    }
    let compact: String = payload.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| ", whose payload is not base64".to_owned())?;
    if bytes.is_empty() || bytes.len() > max {
        return Err(format!(" of 1 to {max} bytes"));
    }
    Ok(Media { format, bytes })
}

/// A brand medium kept for the worker in the object store (until its render finishes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMedia {
    pub key: String,
    pub format: MediaFormat,
    /// SHA-256 of the bytes, hex: part of the identity of the scenes that draw it.
    pub sha256: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn brand_media_are_decoded_from_data_uris_and_urls_are_refused() {
        let brand = json!({
            "logo": "data:image/png;base64,iVBORw0KGgo=",
            "music": "data:audio/mpeg;base64,SUQz",
            "cta": "  Start   free today ",
            "narration": false,
        });
        let read = BrandRender::from_brand(Some(&brand)).unwrap();
        assert_eq!(read.logo.unwrap().format, MediaFormat::Png);
        assert_eq!(read.music.unwrap().bytes, b"ID3");
        assert_eq!(read.cta.as_deref(), Some("Start free today"));
        assert!(!read.narration);
        assert!(BrandRender::from_brand(None).unwrap().narration);
        for (brand, field) in [
            (
                json!({"logo": "https://example.com/logo.png"}),
                "brand.logo",
            ),
            (json!({"logo": "data:text/html;base64,PGI+"}), "brand.logo"),
            (
                json!({"product_image": "data:image/png;base64,@@@"}),
                "brand.product_image",
            ),
            (
                json!({"music": "data:image/png;base64,SUQz"}),
                "brand.music",
            ),
            (json!({"cta": 3}), "brand.cta"),
            (json!({"narration": "no"}), "brand.narration"),
        ] {
            let err = BrandRender::from_brand(Some(&brand)).unwrap_err();
            assert!(err.starts_with(field), "{brand}: {err}");
        }
    }
}
