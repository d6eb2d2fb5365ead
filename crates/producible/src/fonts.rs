//! The TrueType fonts a PDF is printed in, and which characters they can print. memory-api
//! refuses a tree with a character no font covers (400 naming the path) before it queues the
//! render; the render worker embeds the same fonts and, character by character, prints each
//! in the first font of its role's chain that has a glyph for it. Both read the same
//! `MEMORY_PDF_FONTS__…` settings, so both agree on what is covered.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::{Block, Document, IrError, Runs};

/// `MEMORY_PDF_FONTS__REGULAR`, `__BOLD`, `__MONO`: the TrueType files of body text, of
/// titles, headings and table headers, and of code. `__FALLBACKS`: more TrueType files
/// (comma-separated) tried, in order, for a character the role's font lacks; by default
/// those of [`DROID_FALLBACK`] that are installed (none is no error, unlike a configured
/// file that is missing).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct FontSettings {
    pub regular: String,
    pub bold: String,
    pub mono: String,
    #[serde(deserialize_with = "comma_separated")]
    pub fallbacks: Vec<String>,
}

/// Debian's fonts-droid-fallback: TrueType (glyf) fonts of Chinese, Japanese and Korean (Noto
/// CJK has CFF outlines, which printpdf cannot embed). A pdf embeds each font it uses whole, so
/// first the file of the common ideographs, the kana and the Korean syllables (3.4 MB), then the
/// full one (4 MB), which adds the rarer ideographs of CJK Extension A but lacks the Korean
/// syllables, for those ideographs only.
pub const DROID_FALLBACK: [&str; 2] = [
    "/usr/share/fonts-droid-fallback/truetype/DroidSansFallback.ttf",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
];

impl Default for FontSettings {
    fn default() -> Self {
        const DEJAVU: &str = "/usr/share/fonts/truetype/dejavu";
        Self {
            regular: format!("{DEJAVU}/DejaVuSans.ttf"),
            bold: format!("{DEJAVU}/DejaVuSans-Bold.ttf"),
            mono: format!("{DEJAVU}/DejaVuSansMono.ttf"),
            fallbacks: installed(&DROID_FALLBACK),
        }
    }
}

/// Those of `paths` that exist on this machine.
fn installed(paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| Path::new(p).exists())
        .map(|&p| p.to_owned())
        .collect()
}

/// A list given as an array (configuration file) or a comma-separated string (environment).
fn comma_separated<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum List {
        Many(Vec<String>),
        One(String),
    }
    Ok(match List::deserialize(d)? {
        List::Many(items) => items,
        List::One(text) => text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// What a piece of text is printed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Regular,
    Bold,
    Mono,
}

/// One loaded font: its file (embedded as it is) and the advance of each character it has a
/// glyph for, in ems.
#[derive(Debug)]
pub struct Font {
    pub path: String,
    pub bytes: Arc<[u8]>,
    advances: HashMap<char, f32>,
}

impl Font {
    fn load(path: &str) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("font {path}: {e}"))?;
        let face = ttf_parser::Face::parse(&bytes, 0).map_err(|e| format!("font {path}: {e}"))?;
        if face.tables().glyf.is_none() {
            return Err(format!(
                "font {path}: not a TrueType-outline font (a PDF embeds glyf outlines only)"
            ));
        }
        let em = f32::from(face.units_per_em());
        let mut advances = HashMap::new();
        if let Some(cmap) = face.tables().cmap {
            for subtable in cmap.subtables.into_iter().filter(|s| s.is_unicode()) {
                subtable.codepoints(|cp| {
                    if let Some(c) = char::from_u32(cp)
                        && let Some(glyph) = subtable.glyph_index(cp)
                        && glyph.0 != 0
                    {
                        let advance = face.glyph_hor_advance(glyph).unwrap_or(0);
                        advances.insert(c, f32::from(advance) / em);
                    }
                });
            }
        }
        Ok(Self {
            path: path.to_owned(),
            bytes: bytes.into(),
            advances,
        })
    }

    pub fn covers(&self, c: char) -> bool {
        self.advances.contains_key(&c)
    }
}

/// The fonts of every role, loaded once per process.
#[derive(Debug)]
pub struct Fonts {
    /// Regular, bold, mono, then the fallbacks.
    fonts: Vec<Font>,
}

impl Fonts {
    pub fn load(settings: &FontSettings) -> Result<Self, String> {
        let paths = [&settings.regular, &settings.bold, &settings.mono]
            .into_iter()
            .chain(&settings.fallbacks);
        Ok(Self {
            fonts: paths.map(|p| Font::load(p)).collect::<Result<_, _>>()?,
        })
    }

    /// Every font, by index (regular 0, bold 1, mono 2, then the fallbacks).
    pub fn all(&self) -> &[Font] {
        &self.fonts
    }

    /// The index of the font `c` is printed in as `role`: the role's own font when it has
    /// the glyph, else the first of the others that has; characters no font has (spaces and
    /// controls, which [`Fonts::uncovered`] lets through) stay in the role's font.
    pub fn pick(&self, role: Role, c: char) -> usize {
        let own = role as usize;
        if self.fonts[own].covers(c) {
            return own;
        }
        (0..self.fonts.len())
            .find(|&i| self.fonts[i].covers(c))
            .unwrap_or(own)
    }

    /// The advance of `c` printed as `role`, in ems.
    pub fn advance(&self, role: Role, c: char) -> f32 {
        let font = &self.fonts[self.pick(role, c)];
        font.advances
            .get(&c)
            .or_else(|| font.advances.get(&' '))
            .copied()
            .unwrap_or(0.5)
    }

    /// Whether some font prints `c` (spaces and controls need no glyph).
    pub fn covers(&self, c: char) -> bool {
        c.is_whitespace() || c.is_control() || self.fonts.iter().any(|f| f.covers(c))
    }

    /// The first text of `document` with a character no font prints: its path and the
    /// character.
    pub fn uncovered(&self, document: &Document) -> Option<IrError> {
        let check = |text: &str, path: String| {
            text.chars().find(|&c| !self.covers(c)).map(|c| IrError {
                path,
                problem: format!(
                    "the PDF's fonts have no glyph for {c:?} (U+{:04X}); \
                     write it with other characters or choose another format",
                    c as u32
                ),
            })
        };
        let runs = |runs: &Runs, path: &str| {
            runs.iter()
                .enumerate()
                .find_map(|(i, run)| check(&run.text, format!("{path}[{i}].text")))
        };
        if let Some(e) = check(&document.title, "title".to_owned()) {
            return Some(e);
        }
        document.blocks.iter().enumerate().find_map(|(b, block)| {
            let path = format!("blocks[{b}]");
            match block {
                Block::Heading { runs: r, .. } | Block::Paragraph { runs: r } => {
                    runs(r, &format!("{path}.runs"))
                }
                Block::List { items, .. } => items
                    .iter()
                    .enumerate()
                    .find_map(|(i, item)| runs(item, &format!("{path}.items[{i}]"))),
                Block::Table { header, rows } => header
                    .iter()
                    .enumerate()
                    .find_map(|(c, cell)| runs(cell, &format!("{path}.header[{c}]")))
                    .or_else(|| {
                        rows.iter().enumerate().find_map(|(r, row)| {
                            row.iter()
                                .enumerate()
                                .find_map(|(c, cell)| runs(cell, &format!("{path}.rows[{r}][{c}]")))
                        })
                    }),
                Block::Code { text, .. } => check(text, format!("{path}.text")),
                Block::Image { alt, .. } => check(alt, format!("{path}.alt")),
                Block::PageBreak => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fonts() -> Fonts {
        Fonts::load(&FontSettings::default())
            .expect("DejaVu fonts (Debian's fonts-dejavu-core, installed by scripts/tools.sh) load")
    }

    fn droid_installed() {
        for path in DROID_FALLBACK {
            assert!(
                Path::new(path).exists(),
                "{path} is missing: run scripts/tools.sh (Debian's fonts-droid-fallback)"
            );
        }
    }

    #[test]
    fn the_default_fonts_cover_latin_greek_cyrillic_and_cjk_and_name_what_they_do_not() {
        droid_installed();
        let fonts = fonts();
        for c in "Ã©ßøŁžΑλωЖщЁ€漢字㐀ひらがなカタカナ한국어".chars() {
            assert!(fonts.covers(c), "{c:?} is not covered");
        }
        // An Egyptian hieroglyph (U+13000), which no default font has.
        let tree = json!({"title": "Ελληνικά", "blocks": [
            {"type": "paragraph", "runs": [{"text": "Привет 漢字"}]},
            {"type": "table", "header": [[{"text": "a"}]], "rows": [[[{"text": "ok"}, {"text": "\u{13000}"}]]]}
        ]});
        let document = crate::parse(&tree).unwrap();
        let error = fonts.uncovered(&document).expect("U+13000 is refused");
        assert_eq!(error.path, "blocks[1].rows[0][0][1].text", "{error}");
        assert!(error.problem.contains("U+13000"), "{error}");
    }

    #[test]
    fn the_droid_fallback_is_a_default_where_installed_and_a_configured_missing_font_fails() {
        droid_installed();
        let fonts = fonts();
        assert_eq!(FontSettings::default().fallbacks, DROID_FALLBACK);
        // The common ideographs and Korean in the first; CJK Extension A in the full one.
        assert_eq!(fonts.pick(Role::Regular, '漢'), 3);
        assert_eq!(fonts.pick(Role::Bold, '한'), 3);
        assert_eq!(fonts.pick(Role::Regular, '㐀'), 4);
        // A machine without the package starts without it...
        assert_eq!(
            installed(&[
                "/usr/share/fonts/truetype/none/Missing.ttf",
                DROID_FALLBACK[0]
            ]),
            [DROID_FALLBACK[0]]
        );
        // ...but a configured font that is missing stops the start.
        let settings: FontSettings = serde_json::from_value(
            json!({"fallbacks": "/usr/share/fonts/truetype/none/Missing.ttf"}),
        )
        .unwrap();
        let error = Fonts::load(&settings).expect_err("a missing configured font is refused");
        assert!(
            error.starts_with("font /usr/share/fonts/truetype/none/Missing.ttf: "),
            "{error}"
        );
    }

    #[test]
    fn a_character_missing_from_the_role_font_falls_back_to_another() {
        let fonts = fonts();
        assert_eq!(fonts.pick(Role::Mono, 'a'), Role::Mono as usize);
        let (sans, mono) = (&fonts.all()[0], &fonts.all()[2]);
        let only_in_sans = sans
            .advances
            .keys()
            .copied()
            .filter(|&c| !mono.covers(c))
            .min()
            .expect("DejaVu Sans has glyphs DejaVu Sans Mono lacks");
        assert_eq!(
            fonts.pick(Role::Mono, only_in_sans),
            Role::Regular as usize,
            "{only_in_sans:?}"
        );
        assert!(fonts.advance(Role::Regular, 'W') > fonts.advance(Role::Regular, 'i'));
    }

    #[test]
    fn fallbacks_read_from_a_comma_separated_setting() {
        let settings: FontSettings =
            serde_json::from_value(json!({"fallbacks": "/a.ttf, /b.ttf"})).unwrap();
        assert_eq!(settings.fallbacks, ["/a.ttf", "/b.ttf"]);
        assert!(settings.regular.ends_with("DejaVuSans.ttf"));
    }
}
