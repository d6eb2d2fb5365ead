//! `raw_content` of `POST /memory/import-mif`: plain text or Markdown notes turned into an
//! identity kernel (an identity-only import).
//!
//! - Markdown headings (`#` to `######`) open sections; text before the first heading belongs
//!   to a section named `notes`.
//! - A section's items are its list entries (`-`, `*`, `+`, `1.`), or else its paragraphs
//!   (lines joined by one space). Whitespace inside an item is collapsed.
//! - A section's key is its heading in lowercase with runs of other characters than letters
//!   and digits turned into `_` ("Model Preferences" → `model_preferences`).
//! - `identity` and `model_preferences` become objects: `key: value` items are members, other
//!   items are collected under `notes`. Every other section (`constraints`, `products`, …)
//!   becomes an array of strings. Sections with the same key are concatenated.

use serde_json::{Map, Value};

const OBJECT_SECTIONS: [&str; 2] = ["identity", "model_preferences"];

/// The kernel the notes describe (empty when the text has no content).
pub fn to_kernel(text: &str) -> Map<String, Value> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut current = "notes".to_owned();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut items: Vec<String> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, items: &mut Vec<String>| {
        if !paragraph.is_empty() {
            items.push(collapse(&paragraph.join(" ")));
            paragraph.clear();
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(title) = heading(trimmed) {
            flush(&mut paragraph, &mut items);
            push(&mut sections, &current, std::mem::take(&mut items));
            current = key(title);
        } else if let Some(item) = list_item(trimmed) {
            flush(&mut paragraph, &mut items);
            if !item.is_empty() {
                items.push(collapse(item));
            }
        } else if trimmed.is_empty() {
            flush(&mut paragraph, &mut items);
        } else {
            paragraph.push(trimmed);
        }
    }
    flush(&mut paragraph, &mut items);
    push(&mut sections, &current, items);

    let mut kernel = Map::new();
    for (name, items) in sections {
        let value = if OBJECT_SECTIONS.contains(&name.as_str()) {
            Value::Object(members(items))
        } else {
            Value::Array(items.into_iter().map(Value::String).collect())
        };
        kernel.insert(name, value);
    }
    kernel
}

fn push(sections: &mut Vec<(String, Vec<String>)>, name: &str, items: Vec<String>) {
    if items.is_empty() || name.is_empty() {
        return;
    }
    match sections.iter_mut().find(|(n, _)| n == name) {
        Some((_, existing)) => existing.extend(items),
        None => sections.push((name.to_owned(), items)),
    }
}

fn heading(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
        Some(line[hashes..].trim().trim_end_matches('#').trim())
    } else {
        None
    }
}

fn list_item(line: &str) -> Option<&str> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(bullet) {
            return Some(rest.trim());
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(rest.trim());
        }
    }
    None
}

fn key(title: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in title.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn members(items: Vec<String>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut notes: Vec<Value> = Vec::new();
    for item in items {
        match item.split_once(':') {
            Some((k, v)) if !key(k).is_empty() && !v.trim().is_empty() => {
                out.insert(key(k), Value::String(v.trim().to_owned()));
            }
            _ => notes.push(Value::String(item)),
        }
    }
    if !notes.is_empty() {
        out.insert("notes".to_owned(), Value::Array(notes));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markdown_sections_become_kernel_keys() {
        let notes = "I build small tools.\nMostly in Rust.\n\n\
            # Identity\n- Name: Ada\n- role: founder\n- likes tea\n\n\
            ## Constraints\n1. No vendor lock-in\n2. Ship   weekly\n\n\
            ## Model Preferences\n- default: small\n";
        assert_eq!(
            Value::Object(to_kernel(notes)),
            json!({
                "notes": ["I build small tools. Mostly in Rust."],
                "identity": {"name": "Ada", "role": "founder", "notes": ["likes tea"]},
                "constraints": ["No vendor lock-in", "Ship weekly"],
                "model_preferences": {"default": "small"},
            })
        );
    }

    #[test]
    fn plain_text_is_notes_and_empty_text_is_empty() {
        assert_eq!(
            Value::Object(to_kernel("one\n\ntwo")),
            json!({"notes": ["one", "two"]})
        );
        assert!(to_kernel("  \n# Empty\n").is_empty());
    }
}
