//! csv through the `csv` crate: the title, then one record per line of text; a table's
//! header and rows are records of their cells.

use producible::{Block, Document, plain};

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    let mut record = |fields: &[String]| writer.write_record(fields).map_err(|e| e.to_string());
    record(std::slice::from_ref(&document.title))?;
    for block in &document.blocks {
        match block {
            Block::Heading { runs, .. } | Block::Paragraph { runs } => record(&[plain(runs)])?,
            Block::List { items, .. } => {
                for item in items {
                    record(&[plain(item)])?;
                }
            }
            Block::Table { header, rows } => {
                record(&header.iter().map(|c| plain(c)).collect::<Vec<_>>())?;
                for row in rows {
                    record(&row.iter().map(|c| plain(c)).collect::<Vec<_>>())?;
                }
            }
            Block::Code { text, .. } => record(std::slice::from_ref(text))?,
            Block::Image { alt, .. } => record(std::slice::from_ref(alt))?,
            Block::PageBreak => {}
        }
    }
    writer.into_inner().map_err(|e| e.to_string())
}
