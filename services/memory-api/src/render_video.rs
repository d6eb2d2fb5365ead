//! Marketing video renders: the route records a job ([`crate::db::render_video`]) and
//! publishes its task on `render.job` (see [`crate::run_queue`]); the render worker draws and
//! encodes it. This module holds what both sides share: the queued-run kind, the formats and
//! the colours taken from the brand.

use queue::Broker;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run_queue::{RunKind, RunQueue};

pub mod brand;

/// `render_video_jobs`, queued on `render.job`.
pub static RENDER_VIDEO_JOBS: RunKind = RunKind {
    table: "render_video_jobs",
    queue: "render.job",
    kind: "render_video",
    id_field: "job_id",
    name: "video render",
};

/// The video jobs' publisher.
pub fn render_video_queue(broker: &Broker, prefix: &str) -> RunQueue {
    RunQueue::new(&RENDER_VIDEO_JOBS, broker, prefix)
}

/// A video's aspect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VideoFormat {
    #[default]
    ShortVideo,
    SquareVideo,
    StoryVideo,
    WideVideo,
}

impl VideoFormat {
    pub const ALL: [Self; 4] = [
        Self::ShortVideo,
        Self::SquareVideo,
        Self::StoryVideo,
        Self::WideVideo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ShortVideo => "short_video",
            Self::SquareVideo => "square_video",
            Self::StoryVideo => "story_video",
            Self::WideVideo => "wide_video",
        }
    }

    pub fn parse(format: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == format)
    }

    /// Width and height in pixels.
    pub fn size(self) -> (u32, u32) {
        match self {
            Self::ShortVideo | Self::StoryVideo => (1080, 1920),
            Self::SquareVideo => (1080, 1080),
            Self::WideVideo => (1920, 1080),
        }
    }
}

/// The colours a video is drawn with, as `#rrggbb`: what is kept of the brand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Style {
    pub background: String,
    pub primary: String,
    pub text: String,
}

impl Default for Style {
    fn default() -> Self {
        Self {
            background: "#101828".into(),
            primary: "#7c3aed".into(),
            text: "#ffffff".into(),
        }
    }
}

impl Style {
    /// The brand's colours where it names them (`background`, `primary`, `text`, also as
    /// `…_color`/`…Color`, at the top level or under `colors`/`colours`), as `#rgb` or
    /// `#rrggbb`; the defaults otherwise. Anything else in the brand is ignored.
    pub fn from_brand(brand: Option<&Value>) -> Self {
        let mut style = Self::default();
        let Some(brand) = brand.and_then(Value::as_object) else {
            return style;
        };
        let scopes = [
            Some(brand),
            brand.get("colors").and_then(Value::as_object),
            brand.get("colours").and_then(Value::as_object),
        ];
        let pick = |name: &str| {
            let names = [
                name.to_owned(),
                format!("{name}_color"),
                format!("{name}Color"),
                format!("{name}_colour"),
            ];
            scopes.iter().flatten().find_map(|scope| {
                names
                    .iter()
                    .find_map(|n| scope.get(n).and_then(Value::as_str).and_then(hex_colour))
            })
        };
        if let Some(c) = pick("background") {
            style.background = c;
        }
        if let Some(c) = pick("primary") {
            style.primary = c;
        }
        if let Some(c) = pick("text") {
            style.text = c;
        }
        style
    }

    /// The stored form (a JSON object).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `#rgb` or `#rrggbb` (any case) as lowercase `#rrggbb`.
fn hex_colour(raw: &str) -> Option<String> {
    let digits = raw.trim().strip_prefix('#')?;
    if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let full: String = match digits.len() {
        3 => digits.chars().flat_map(|c| [c, c]).collect(),
        6 => digits.to_owned(),
        _ => return None,
    };
    Some(format!("#{}", full.to_ascii_lowercase()))
}

/// `MEMORY_RENDER_VIDEO__…`.
#[derive(Debug, Clone, Deserialize)]
pub struct RenderVideoSettings {
    /// How long `POST /render/video` waits for the worker before answering 202.
    #[serde(default = "default_wait_secs")]
    pub wait_secs: u64,
}

fn default_wait_secs() -> u64 {
    120
}

impl Default for RenderVideoSettings {
    fn default() -> Self {
        Self {
            wait_secs: default_wait_secs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn brand_colours_are_read_where_named_and_defaulted_otherwise() {
        assert_eq!(Style::from_brand(None), Style::default());
        let style = Style::from_brand(Some(&json!({
            "primary": "#F00",
            "colors": {"backgroundColor": "#00ff00", "text": "not a colour"},
        })));
        assert_eq!(style.primary, "#ff0000");
        assert_eq!(style.background, "#00ff00");
        assert_eq!(style.text, Style::default().text);
    }
}
