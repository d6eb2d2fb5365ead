//! Checking a tree given as JSON, naming the first failing path.

use serde_json::{Map, Value};

use crate::Document;

/// The bounds of a tree (the JSON Schema states the same).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub title_chars: usize,
    pub blocks: usize,
    pub runs: usize,
    pub run_chars: usize,
    pub link_chars: usize,
    pub list_items: usize,
    pub table_columns: usize,
    pub table_rows: usize,
    pub code_chars: usize,
    pub language_chars: usize,
    pub src_chars: usize,
    pub alt_chars: usize,
}

pub const LIMITS: Limits = Limits {
    title_chars: 500,
    blocks: 5000,
    runs: 500,
    run_chars: 20_000,
    link_chars: 2000,
    list_items: 1000,
    table_columns: 50,
    table_rows: 5000,
    code_chars: 200_000,
    language_chars: 40,
    src_chars: 1_000_000,
    alt_chars: 1000,
};

/// Why a tree is refused: where, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrError {
    /// e.g. `blocks[3].rows[0][1]` (empty: the tree itself).
    pub path: String,
    pub problem: String,
}

impl std::fmt::Display for IrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.path, self.problem)
        }
    }
}

type Checked = Result<(), IrError>;

fn err(path: &str, problem: impl Into<String>) -> IrError {
    IrError {
        path: path.to_owned(),
        problem: problem.into(),
    }
}

fn field(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, IrError> {
    value
        .as_object()
        .ok_or_else(|| err(path, "must be an object"))
}

fn array<'a>(value: &'a Value, path: &str, min: usize, max: usize) -> Result<&'a [Value], IrError> {
    let items = value
        .as_array()
        .ok_or_else(|| err(path, "must be an array"))?;
    if items.len() < min {
        return Err(err(path, format!("must have at least {min} items")));
    }
    if items.len() > max {
        return Err(err(path, format!("must have at most {max} items")));
    }
    Ok(items)
}

fn string<'a>(value: &'a Value, path: &str, min: usize, max: usize) -> Result<&'a str, IrError> {
    let s = value
        .as_str()
        .ok_or_else(|| err(path, "must be a string"))?;
    let chars = s.chars().count();
    if chars < min {
        return Err(err(path, format!("must be at least {min} characters")));
    }
    if chars > max {
        return Err(err(path, format!("must be at most {max} characters")));
    }
    Ok(s)
}

fn boolean(value: &Value, path: &str) -> Checked {
    value
        .as_bool()
        .map(drop)
        .ok_or_else(|| err(path, "must be a boolean"))
}

/// Only `allowed` keys, and every one of `required`.
fn keys(map: &Map<String, Value>, path: &str, required: &[&str], allowed: &[&str]) -> Checked {
    if let Some(extra) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(err(&field(path, extra), "is not a known field"));
    }
    if let Some(missing) = required.iter().find(|k| !map.contains_key(**k)) {
        return Err(err(&field(path, missing), "is required"));
    }
    Ok(())
}

fn runs(value: &Value, path: &str) -> Checked {
    for (i, run) in array(value, path, 0, LIMITS.runs)?.iter().enumerate() {
        let path = format!("{path}[{i}]");
        let map = object(run, &path)?;
        keys(
            map,
            &path,
            &["text"],
            &["text", "bold", "italic", "code", "link"],
        )?;
        string(&map["text"], &field(&path, "text"), 0, LIMITS.run_chars)?;
        for flag in ["bold", "italic", "code"] {
            if let Some(v) = map.get(flag) {
                boolean(v, &field(&path, flag))?;
            }
        }
        if let Some(link) = map.get("link") {
            let p = field(&path, "link");
            let link = string(link, &p, 1, LIMITS.link_chars)?;
            if !(link.starts_with("https://")
                || link.starts_with("http://")
                || link.starts_with("mailto:"))
            {
                return Err(err(&p, "must be an http(s) or mailto: URL"));
            }
        }
    }
    Ok(())
}

const IMAGE_PREFIXES: [&str; 5] = [
    "data:image/png;base64,",
    "data:image/jpeg;base64,",
    "data:image/gif;base64,",
    "data:image/webp;base64,",
    "data:image/svg+xml;base64,",
];

fn block(value: &Value, path: &str) -> Checked {
    let map = object(value, path)?;
    let kind = map
        .get("type")
        .ok_or_else(|| err(&field(path, "type"), "is required"))?
        .as_str()
        .ok_or_else(|| err(&field(path, "type"), "must be a string"))?;
    let f = |name: &str| field(path, name);
    match kind {
        "heading" => {
            keys(
                map,
                path,
                &["type", "level", "runs"],
                &["type", "level", "runs"],
            )?;
            match map["level"].as_u64() {
                Some(1..=6) => {}
                _ => return Err(err(&f("level"), "must be an integer from 1 to 6")),
            }
            runs(&map["runs"], &f("runs"))
        }
        "paragraph" => {
            keys(map, path, &["type", "runs"], &["type", "runs"])?;
            runs(&map["runs"], &f("runs"))
        }
        "list" => {
            keys(
                map,
                path,
                &["type", "ordered", "items"],
                &["type", "ordered", "items"],
            )?;
            boolean(&map["ordered"], &f("ordered"))?;
            let items = array(&map["items"], &f("items"), 1, LIMITS.list_items)?;
            for (i, item) in items.iter().enumerate() {
                runs(item, &format!("{}[{i}]", f("items")))?;
            }
            Ok(())
        }
        "table" => {
            keys(
                map,
                path,
                &["type", "header", "rows"],
                &["type", "header", "rows"],
            )?;
            let header = array(&map["header"], &f("header"), 1, LIMITS.table_columns)?;
            for (i, cell) in header.iter().enumerate() {
                runs(cell, &format!("{}[{i}]", f("header")))?;
            }
            let rows = array(&map["rows"], &f("rows"), 0, LIMITS.table_rows)?;
            for (r, row) in rows.iter().enumerate() {
                let row_path = format!("{}[{r}]", f("rows"));
                let cells = array(row, &row_path, 1, LIMITS.table_columns)?;
                if cells.len() != header.len() {
                    return Err(err(
                        &row_path,
                        format!("must have {} cells, as the header does", header.len()),
                    ));
                }
                for (c, cell) in cells.iter().enumerate() {
                    runs(cell, &format!("{row_path}[{c}]"))?;
                }
            }
            Ok(())
        }
        "code" => {
            keys(map, path, &["type", "text"], &["type", "text", "language"])?;
            if let Some(language) = map.get("language") {
                string(language, &f("language"), 0, LIMITS.language_chars)?;
            }
            string(&map["text"], &f("text"), 0, LIMITS.code_chars).map(drop)
        }
        "image" => {
            keys(map, path, &["type", "src", "alt"], &["type", "src", "alt"])?;
            let src = string(&map["src"], &f("src"), 1, LIMITS.src_chars)?;
            if !(src.starts_with("https://") || IMAGE_PREFIXES.iter().any(|p| src.starts_with(p))) {
                return Err(err(
                    &f("src"),
                    "must be an https URL or a base64 data: URI of a png, jpeg, gif, webp or svg image",
                ));
            }
            string(&map["alt"], &f("alt"), 0, LIMITS.alt_chars).map(drop)
        }
        "page_break" => keys(map, path, &["type"], &["type"]),
        _ => Err(err(
            &f("type"),
            "must be one of heading, paragraph, list, table, code, image, page_break",
        )),
    }
}

/// The tree in `value`, or the first path where it breaks the rules.
pub fn parse(value: &Value) -> Result<Document, IrError> {
    let map = object(value, "")?;
    keys(map, "", &["title", "blocks"], &["title", "blocks"])?;
    string(&map["title"], "title", 1, LIMITS.title_chars)?;
    for (i, b) in array(&map["blocks"], "blocks", 0, LIMITS.blocks)?
        .iter()
        .enumerate()
    {
        block(b, &format!("blocks[{i}]"))?;
    }
    serde_json::from_value(value.clone()).map_err(|e| err("", e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Block, SCHEMA};

    fn valid() -> Value {
        json!({
            "title": "Quarterly report",
            "blocks": [
                {"type": "heading", "level": 1, "runs": [{"text": "Summary"}]},
                {"type": "paragraph", "runs": [{"text": "Revenue ", "bold": true}, {"text": "grew", "italic": true, "link": "https://example.com"}]},
                {"type": "list", "ordered": true, "items": [[{"text": "one"}], [{"text": "two", "code": true}]]},
                {"type": "table", "header": [[{"text": "Region"}], [{"text": "Sales"}]], "rows": [[[{"text": "EU"}], [{"text": "12"}]], [[], [{"text": "3"}]]]},
                {"type": "code", "language": "rust", "text": "fn main() {}"},
                {"type": "image", "src": "data:image/png;base64,iVBORw0KGgo=", "alt": "A chart"},
                {"type": "page_break"}
            ]
        })
    }

    fn schema() -> jsonschema::Validator {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    }

    #[test]
    fn a_valid_tree_parses_and_matches_the_schema() {
        let doc = parse(&valid()).unwrap();
        assert_eq!(doc.blocks.len(), 7);
        assert!(matches!(doc.blocks[6], Block::PageBreak));
        assert!(schema().is_valid(&valid()));
        assert!(doc.texts().contains(&"Revenue grew".to_owned()));
    }

    #[test]
    fn errors_name_the_failing_path_and_the_schema_agrees() {
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|v| v["title"] = json!("")), "title"),
            (
                Box::new(|v| v["blocks"][3]["rows"][0][1] = json!("x")),
                "blocks[3].rows[0][1]",
            ),
            (
                Box::new(|v| v["blocks"][3]["rows"][1][0] = json!([{"text": 5}])),
                "blocks[3].rows[1][0][0].text",
            ),
            (
                Box::new(|v| v["blocks"][0]["level"] = json!(7)),
                "blocks[0].level",
            ),
            (
                Box::new(|v| v["blocks"][1]["runs"][1]["link"] = json!("javascript:alert(1)")),
                "blocks[1].runs[1].link",
            ),
            (
                Box::new(|v| v["blocks"][2]["items"] = json!([])),
                "blocks[2].items",
            ),
            (
                Box::new(|v| v["blocks"][5]["src"] = json!("http://plain.example/x.png")),
                "blocks[5].src",
            ),
            (
                Box::new(|v| v["blocks"][6]["extra"] = json!(1)),
                "blocks[6].extra",
            ),
            (
                Box::new(|v| v["blocks"][4] = json!({"type": "video"})),
                "blocks[4].type",
            ),
            (
                Box::new(|v| {
                    v["blocks"][2].as_object_mut().unwrap().remove("ordered");
                }),
                "blocks[2].ordered",
            ),
            (Box::new(|v| v["blocks"] = json!({})), "blocks"),
        ];
        let schema = schema();
        for (change, path) in cases {
            let mut tree = valid();
            change(&mut tree);
            let error = parse(&tree).unwrap_err();
            assert_eq!(error.path, path, "{error}");
            assert!(
                !schema.is_valid(&tree),
                "the schema accepts what {path} refuses"
            );
        }
        // The one rule a JSON Schema cannot state: a row has as many cells as the header.
        let mut tree = valid();
        tree["blocks"][3]["rows"][0] = json!([[{"text": "EU"}]]);
        assert_eq!(parse(&tree).unwrap_err().path, "blocks[3].rows[0]");
    }
}
