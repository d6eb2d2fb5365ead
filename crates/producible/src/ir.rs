//! The document tree.

use serde::{Deserialize, Serialize};

/// The formats a tree is produced in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Pdf,
    Docx,
    Pptx,
    Xlsx,
    Csv,
    Svg,
    Html,
}

impl Format {
    pub const ALL: [Format; 7] = [
        Self::Pdf,
        Self::Docx,
        Self::Pptx,
        Self::Xlsx,
        Self::Csv,
        Self::Svg,
        Self::Html,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Docx => "docx",
            Self::Pptx => "pptx",
            Self::Xlsx => "xlsx",
            Self::Csv => "csv",
            Self::Svg => "svg",
            Self::Html => "html",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// What kind of producible the format makes (`producibleKind`).
    pub fn kind(self) -> &'static str {
        match self {
            Self::Pdf | Self::Docx => "document",
            Self::Pptx => "presentation",
            Self::Xlsx | Self::Csv => "spreadsheet",
            Self::Svg => "image",
            Self::Html => "web_page",
        }
    }
}

/// `{"title", "blocks": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

/// Inline text: an array of runs.
pub type Runs = Vec<Run>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub text: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bold: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub italic: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Heading {
        level: u8,
        runs: Runs,
    },
    Paragraph {
        runs: Runs,
    },
    List {
        ordered: bool,
        items: Vec<Runs>,
    },
    Table {
        header: Vec<Runs>,
        rows: Vec<Vec<Runs>>,
    },
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        text: String,
    },
    Image {
        src: String,
        alt: String,
    },
    PageBreak,
}

/// The plain text of runs.
pub fn plain(runs: &[Run]) -> String {
    runs.iter().map(|r| r.text.as_str()).collect()
}

impl Document {
    /// Every piece of text of the tree, in reading order (what a reader of any format finds).
    pub fn texts(&self) -> Vec<String> {
        let mut out = vec![self.title.clone()];
        for block in &self.blocks {
            match block {
                Block::Heading { runs, .. } | Block::Paragraph { runs } => out.push(plain(runs)),
                Block::List { items, .. } => out.extend(items.iter().map(|r| plain(r))),
                Block::Table { header, rows } => {
                    out.extend(header.iter().map(|r| plain(r)));
                    for row in rows {
                        out.extend(row.iter().map(|r| plain(r)));
                    }
                }
                Block::Code { text, .. } => out.push(text.clone()),
                Block::Image { alt, .. } => out.push(alt.clone()),
                Block::PageBreak => {}
            }
        }
        out
    }
}
