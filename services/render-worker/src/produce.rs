//! Producers: one module per format, each on a library made for it.

mod csv;
mod docx;
mod html;
mod layout;
mod pdf;
mod pptx;
mod svg;
mod xlsx;

use producible::fonts::Fonts;
use producible::{Document, Format};

/// The file of `document` in `format` (a pdf printed in `fonts`).
pub fn produce(document: &Document, format: Format, fonts: &Fonts) -> Result<Vec<u8>, String> {
    match format {
        Format::Pdf => pdf::produce(document, fonts),
        Format::Docx => docx::produce(document),
        Format::Pptx => pptx::produce(document),
        Format::Xlsx => xlsx::produce(document),
        Format::Csv => csv::produce(document),
        Format::Svg => svg::produce(document),
        Format::Html => Ok(html::produce(document)),
    }
}
