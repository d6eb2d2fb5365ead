//! csv through the `csv` crate: the title, then one record per line of text; a table's
//! header and rows are records of their cells. A cell a spreadsheet would evaluate as a
//! formula gets a leading `'` (the rule of every CSV the services write).

use producible::spreadsheet::neutralised;
use producible::{Block, Document, plain};

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    let mut record = |fields: &[String]| {
        writer
            .write_record(
                fields
                    .iter()
                    .map(|f| neutralised(f))
                    .map(|f| f.into_owned()),
            )
            .map_err(|e| e.to_string())
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_that_would_start_a_formula_are_neutralised() {
        let document = producible::parse(&serde_json::json!({
            "title": "=HYPERLINK(\"http://x\")",
            "blocks": [
                {"type": "paragraph", "runs": [{"text": "+1"}]},
                {"type": "table", "header": [[{"text": "-a"}], [{"text": "@b"}]],
                 "rows": [[[{"text": "\tc"}], [{"text": "\rd"}]], [[{"text": "e=1"}], [{"text": "f"}]]]}
            ]
        }))
        .unwrap();
        let csv = String::from_utf8(produce(&document).unwrap()).unwrap();
        assert_eq!(
            csv, "\"'=HYPERLINK(\"\"http://x\"\")\"\n'+1\n'-a,'@b\n'\tc,\"'\rd\"\ne=1,f\n",
            "{csv:?}"
        );
    }
}
