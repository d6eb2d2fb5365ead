//! A page's readable text: an HTML page without its scripts, styles, navigation and other
//! chrome, one line per block of text; an RSS/Atom/JSON feed as its items' titles and
//! summaries, one line each.

use std::cell::Cell;
use std::rc::Rc;

use lol_html::{EndTagHandler, RewriteStrSettings, element, rewrite_str, text};

/// Elements whose text is not the page's content.
const SKIPPED: &str = "script, style, noscript, template, nav, header, footer, svg, head, iframe";

/// Elements that end a line of text.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "tr",
    "td",
    "th",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "main",
    "table",
    "ul",
    "ol",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "hr",
];

/// The readable text of an answer, by its content type (or its first bytes when the type says
/// nothing useful).
pub fn readable_text(content_type: &str, body: &[u8]) -> Result<String, String> {
    let content_type = content_type.to_ascii_lowercase();
    let looks_like_feed = content_type.contains("rss")
        || content_type.contains("atom")
        || content_type.contains("feed+json")
        || (content_type.contains("xml") && !content_type.contains("html"))
        || starts_like_feed(body);
    if looks_like_feed {
        return feed_text(body);
    }
    html_text(&String::from_utf8_lossy(body))
}

fn starts_like_feed(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<rss") || head.contains("<feed") || head.contains("<rdf:rdf")
}

/// An HTML document's text, one trimmed line per block, blank lines dropped.
pub fn html_text(html: &str) -> Result<String, String> {
    let skipping = Rc::new(Cell::new(0usize));
    let out = Rc::new(std::cell::RefCell::new(String::new()));
    let blocks = BLOCKS.join(", ");
    let (skip, write, end) = (Rc::clone(&skipping), Rc::clone(&out), Rc::clone(&out));
    rewrite_str(
        html,
        RewriteStrSettings {
            element_content_handlers: vec![
                element!(SKIPPED, move |el| {
                    skip.set(skip.get() + 1);
                    let skip = Rc::clone(&skip);
                    if let Some(handlers) = el.end_tag_handlers() {
                        let leave: EndTagHandler<'static> = Box::new(move |_| {
                            skip.set(skip.get().saturating_sub(1));
                            Ok(())
                        });
                        handlers.push(leave);
                    } else {
                        // A void element has no content to skip.
                        skip.set(skip.get().saturating_sub(1));
                    }
                    Ok(())
                }),
                element!(blocks.as_str(), move |el| {
                    end.borrow_mut().push('\n');
                    let end = Rc::clone(&end);
                    if let Some(handlers) = el.end_tag_handlers() {
                        let close: EndTagHandler<'static> = Box::new(move |_| {
                            end.borrow_mut().push('\n');
                            Ok(())
                        });
                        handlers.push(close);
                    }
                    Ok(())
                }),
                text!("*", move |chunk| {
                    if skipping.get() == 0 {
                        write.borrow_mut().push_str(chunk.as_str());
                    }
                    Ok(())
                }),
            ],
            ..RewriteStrSettings::new()
        },
    )
    .map_err(|e| format!("not readable HTML: {e}"))?;
    let text = out.borrow();
    Ok(clean_lines(&decode_entities(&text)))
}

/// A feed's items: `title: summary`, one line each.
pub fn feed_text(body: &[u8]) -> Result<String, String> {
    let feed = feed_rs::parser::parse(body).map_err(|e| format!("not a feed: {e}"))?;
    let lines: Vec<String> = feed
        .entries
        .iter()
        .map(|entry| {
            let title = entry.title.as_ref().map(|t| t.content.as_str());
            let summary = entry.summary.as_ref().map(|t| t.content.as_str());
            let summary = summary.map(|s| html_text(s).unwrap_or_else(|_| s.to_owned()));
            match (title, summary) {
                (Some(title), Some(summary)) => format!("{title}: {summary}"),
                (Some(title), None) => title.to_owned(),
                (None, Some(summary)) => summary,
                (None, None) => String::new(),
            }
        })
        .collect();
    Ok(clean_lines(&lines.join("\n")))
}

/// Whitespace collapsed within each line, empty lines dropped.
fn clean_lines(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The entities text chunks keep as written.
fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&euro;", "€")
        .replace("&pound;", "£")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_keeps_the_content_and_drops_the_chrome() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
            <nav><a href=/>Home</a></nav><h1>Pricing</h1><p>Pro: $29/month &amp; more</p>\
            <script>var x = 1;</script><ul><li>One</li><li>Two</li></ul></body></html>";
        assert_eq!(
            html_text(html).unwrap(),
            "Pricing\nPro: $29/month & more\nOne\nTwo"
        );
    }

    #[test]
    fn a_feed_is_its_items_titles_and_summaries() {
        let rss = br#"<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
            <item><title>Launch</title><description>&lt;p&gt;New plan&lt;/p&gt;</description></item>
            <item><title>Hiring</title></item></channel></rss>"#;
        assert_eq!(
            readable_text("application/rss+xml", rss).unwrap(),
            "Launch: New plan\nHiring"
        );
        assert_eq!(
            readable_text("text/plain", rss).unwrap(),
            "Launch: New plan\nHiring"
        );
    }
}
