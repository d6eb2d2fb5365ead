//! html through `maud` (every text escaped): a standalone page.

use maud::{DOCTYPE, Markup, html};
use producible::{Block, Document, Run};

fn runs(runs: &[Run]) -> Markup {
    html! {
        @for r in runs {
            @let inner = html! {
                @if r.code { code { (r.text) } } @else { (r.text) }
            };
            @let inner = if r.italic { html! { em { (inner) } } } else { inner };
            @let inner = if r.bold { html! { strong { (inner) } } } else { inner };
            @if let Some(link) = &r.link {
                a href=(link) rel="noopener noreferrer" { (inner) }
            } @else {
                (inner)
            }
        }
    }
}

fn block(block: &Block) -> Markup {
    html! {
        @match block {
            Block::Heading { level, runs: r } => {
                @match level {
                    1 => h2 { (runs(r)) },
                    2 => h3 { (runs(r)) },
                    3 => h4 { (runs(r)) },
                    4 => h5 { (runs(r)) },
                    _ => h6 { (runs(r)) },
                }
            }
            Block::Paragraph { runs: r } => p { (runs(r)) },
            Block::List { ordered: true, items } => ol { @for i in items { li { (runs(i)) } } },
            Block::List { ordered: false, items } => ul { @for i in items { li { (runs(i)) } } },
            Block::Table { header, rows } => table {
                thead { tr { @for c in header { th { (runs(c)) } } } }
                tbody { @for row in rows { tr { @for c in row { td { (runs(c)) } } } } }
            },
            Block::Code { language, text } => pre {
                code class=[language.as_ref().map(|l| format!("language-{l}"))] { (text) }
            },
            Block::Image { src, alt } => img src=(src) alt=(alt);,
            Block::PageBreak => div style="break-after: page" {},
        }
    }
}

pub fn produce(document: &Document) -> Vec<u8> {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (document.title) }
                style { "body{font-family:sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.25rem .5rem}" }
            }
            body {
                h1 { (document.title) }
                @for b in &document.blocks { (block(b)) }
            }
        }
    }
    .into_string()
    .into_bytes()
}
