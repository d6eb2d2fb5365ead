//! xlsx through `rust_xlsxwriter`: one worksheet; the title, then each block from the first
//! column down (tables across columns, header in bold).

use producible::{Block, Document, plain};
use rust_xlsxwriter::{Format, Workbook};

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    let e = |e: rust_xlsxwriter::XlsxError| e.to_string();
    let mut workbook = Workbook::new();
    let bold = Format::new().set_bold();
    let title = Format::new().set_bold().set_font_size(16);
    let sheet = workbook.add_worksheet();
    sheet.set_name("Document").map_err(e)?;
    sheet.set_column_width(0, 60).map_err(e)?;
    sheet
        .write_string_with_format(0, 0, &document.title, &title)
        .map_err(e)?;
    let mut row: u32 = 2;
    for block in &document.blocks {
        match block {
            Block::Heading { runs, .. } => {
                sheet
                    .write_string_with_format(row, 0, plain(runs), &bold)
                    .map_err(e)?;
                row += 1;
            }
            Block::Paragraph { runs } => {
                sheet.write_string(row, 0, plain(runs)).map_err(e)?;
                row += 1;
            }
            Block::List { ordered, items } => {
                for (i, item) in items.iter().enumerate() {
                    let marker = if *ordered {
                        format!("{}. ", i + 1)
                    } else {
                        "• ".to_owned()
                    };
                    sheet
                        .write_string(row, 0, format!("{marker}{}", plain(item)))
                        .map_err(e)?;
                    row += 1;
                }
            }
            Block::Table { header, rows } => {
                for (c, cell) in header.iter().enumerate() {
                    sheet
                        .write_string_with_format(row, c as u16, plain(cell), &bold)
                        .map_err(e)?;
                }
                row += 1;
                for cells in rows {
                    for (c, cell) in cells.iter().enumerate() {
                        let text = plain(cell);
                        // Numbers stay numbers, so the sheet can compute with them.
                        match text.trim().parse::<f64>() {
                            Ok(n) if n.is_finite() => sheet.write_number(row, c as u16, n),
                            _ => sheet.write_string(row, c as u16, text),
                        }
                        .map_err(e)?;
                    }
                    row += 1;
                }
            }
            Block::Code { text, .. } => {
                for line in text.split('\n') {
                    sheet.write_string(row, 0, line).map_err(e)?;
                    row += 1;
                }
            }
            Block::Image { alt, .. } => {
                sheet
                    .write_string(row, 0, format!("[image: {alt}]"))
                    .map_err(e)?;
                row += 1;
            }
            Block::PageBreak => {}
        }
        row += 1;
    }
    workbook.save_to_buffer().map_err(e)
}
