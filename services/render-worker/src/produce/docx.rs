//! docx through `docx-rs`: headings as heading styles, runs with their emphasis, links as
//! hyperlinks, lists, tables, code in a monospace font, page breaks.

use docx_rs::{
    BreakType, Docx, Hyperlink, HyperlinkType, Paragraph, Pic, Run as DocxRun, RunFonts, Table,
    TableCell, TableRow,
};
use producible::images::{Picture, read_picture};
use producible::{Block, Document, Run};

fn run(run: &Run) -> DocxRun {
    let mut r = DocxRun::new().add_text(&run.text);
    if run.bold {
        r = r.bold();
    }
    if run.italic {
        r = r.italic();
    }
    if run.code {
        r = r.fonts(RunFonts::new().ascii("Courier New"));
    }
    r
}

fn paragraph(runs: &[Run]) -> Paragraph {
    append(Paragraph::new(), runs)
}

fn append(p: Paragraph, runs: &[Run]) -> Paragraph {
    runs.iter().fold(p, |p, r| match &r.link {
        Some(link) => p.add_hyperlink(
            Hyperlink::new(link, HyperlinkType::External).add_run(run(r).underline("single")),
        ),
        None => p.add_run(run(r)),
    })
}

fn cell(runs: &[Run], header: bool) -> TableCell {
    let p = runs.iter().fold(Paragraph::new(), |p, r| {
        let r = run(r);
        p.add_run(if header { r.bold() } else { r })
    });
    TableCell::new().add_paragraph(p)
}

/// The widest a picture is printed: A4's text width (6.3 in) in EMU.
const MAX_WIDTH_EMU: u64 = 5_760_720;

/// A picture as a PNG drawing (docx-rs writes its media as PNG), no wider than the text.
fn pic(picture: &Picture) -> Result<Pic, String> {
    let pic = Pic::new_with_dimensions(picture.png()?, picture.width, picture.height);
    let (w, h) = (
        u64::from(picture.width) * 9525,
        u64::from(picture.height) * 9525,
    );
    Ok(if w > MAX_WIDTH_EMU {
        let scaled_h = (h * MAX_WIDTH_EMU / w).max(1);
        pic.size(MAX_WIDTH_EMU as u32, scaled_h as u32)
    } else {
        pic
    })
}

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    let mut docx = Docx::new().add_paragraph(
        Paragraph::new()
            .style("Title")
            .add_run(DocxRun::new().add_text(&document.title).bold().size(44)),
    );
    for block in &document.blocks {
        docx = match block {
            Block::Heading { level, runs } => {
                docx.add_paragraph(paragraph(runs).style(&format!("Heading{level}")))
            }
            Block::Paragraph { runs } => docx.add_paragraph(paragraph(runs)),
            Block::List { ordered, items } => {
                items.iter().enumerate().fold(docx, |d, (i, item)| {
                    let marker = if *ordered {
                        format!("{}. ", i + 1)
                    } else {
                        "• ".to_owned()
                    };
                    d.add_paragraph(append(
                        Paragraph::new().add_run(DocxRun::new().add_text(marker)),
                        item,
                    ))
                })
            }
            Block::Table { header, rows } => {
                let mut table_rows = vec![TableRow::new(
                    header.iter().map(|c| cell(c, true)).collect(),
                )];
                table_rows.extend(
                    rows.iter()
                        .map(|row| TableRow::new(row.iter().map(|c| cell(c, false)).collect())),
                );
                docx.add_table(Table::new(table_rows))
            }
            Block::Code { text, .. } => text.split('\n').fold(docx, |d, line| {
                d.add_paragraph(
                    Paragraph::new().add_run(
                        DocxRun::new()
                            .add_text(line)
                            .fonts(RunFonts::new().ascii("Courier New")),
                    ),
                )
            }),
            Block::Image { src, alt } => match read_picture(src) {
                Ok(Some(picture)) => docx
                    .add_paragraph(
                        Paragraph::new().add_run(DocxRun::new().add_image(pic(&picture)?)),
                    )
                    .add_paragraph(Paragraph::new().add_run(DocxRun::new().add_text(alt).italic())),
                _ => docx.add_paragraph(
                    Paragraph::new()
                        .add_run(DocxRun::new().add_text(format!("[image: {alt}]")).italic()),
                ),
            },
            Block::PageBreak => docx
                .add_paragraph(Paragraph::new().add_run(DocxRun::new().add_break(BreakType::Page))),
        };
    }
    let mut out = std::io::Cursor::new(Vec::new());
    docx.build().pack(&mut out).map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}
