//! Datasets without HTTP or SQL: the type of a column, how a dataset's schema widens, how a
//! value is coerced to a column's type, a row's key, and reading an uploaded file (CSV with a
//! header row, a JSON array of objects, or NDJSON) as a stream of rows.
//!
//! # Column types and widening
//!
//! A column's type is one of the document's `null`, `boolean`, `number`, `string`, `object`
//! and `array`; a `number` column whose values were all integers says so with
//! `"format": "integer"`. A dataset's schema records, per column, the least type that holds
//! every value written to it, and widens on each write by this lattice:
//!
//! ```text
//!                    string            (top: every value has a text form)
//!      /        /       |        \        \
//! boolean   number   object   array    (each alone)
//!              |
//!      number (integer)
//!      \        \       |        /        /
//!                     null             (bottom: a column of nulls only)
//! ```
//!
//! `null ⊔ T = T`, `integer ⊔ number = number`, `T ⊔ T = T`, and any two other types join
//! to `string`. A null value fits every type. Widening never narrows, and stored rows keep
//! their values (the schema describes them; uploads coerce, see below).
//!
//! # Uploads
//!
//! A CSV cell is text: an empty cell is null; otherwise `true`/`false` (any case) infer
//! `boolean`, a 64-bit integer infers `number` (integer), another finite decimal number
//! `number`, anything else `string` (surrounding white space is ignored when inferring,
//! kept in strings). JSON and NDJSON values infer their own JSON type. At confirm every value
//! is coerced to its column's type (inferred, or overridden): see [`coerce`].

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

mod read;
mod sinks;

pub use read::*;
pub use sinks::*;

/// Rows per `POST /ingest/datasets/{name}/rows`.
pub const ROWS_MIN: usize = 1;
pub const ROWS_MAX: usize = 500;
/// Columns of a dataset (and of an upload).
pub const COLUMNS_MAX: usize = 500;
/// Characters of a column name (a row's key).
pub const COLUMN_NAME_MAX: usize = 200;
/// Characters of a dataset name.
pub const NAME_MAX: usize = 120;
/// Characters of an idempotency key, and of a row's `id` when it is a string.
pub const KEY_MAX: usize = 255;
/// Characters of `owning_worker_type`.
pub const WORKER_TYPE_MAX: usize = 120;
/// Rows a preview shows.
pub const SAMPLE_ROWS: usize = 5;
/// Coercion errors a refused confirm names (it stops looking after these).
pub const COERCION_ERRORS_MAX: usize = 20;

/// A row with its key (see [`row_key`]).
pub type KeyedRow = (Option<String>, Map<String, Value>);

/// The type of a column (see the module's lattice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Object,
    Array,
}

impl ColumnType {
    /// The type of a JSON value.
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::Null,
            Value::Bool(_) => Self::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => Self::Integer,
            Value::Number(_) => Self::Number,
            Value::String(_) => Self::String,
            Value::Array(_) => Self::Array,
            Value::Object(_) => Self::Object,
        }
    }

    /// The type a CSV cell infers (an empty cell is null).
    pub fn of_text(cell: &str) -> Self {
        let trimmed = cell.trim();
        if cell.is_empty() {
            Self::Null
        } else if parse_bool(trimmed).is_some() {
            Self::Boolean
        } else if trimmed.parse::<i64>().is_ok() || trimmed.parse::<u64>().is_ok() {
            Self::Integer
        } else if parse_number(trimmed).is_some() {
            Self::Number
        } else {
            Self::String
        }
    }

    /// The least type holding both.
    pub fn join(self, other: Self) -> Self {
        match (self, other) {
            (a, b) if a == b => a,
            (Self::Null, t) | (t, Self::Null) => t,
            (Self::Integer, Self::Number) | (Self::Number, Self::Integer) => Self::Number,
            _ => Self::String,
        }
    }

    /// The document's name of the type (`number` for integers).
    pub fn name(self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Boolean => "boolean",
            Self::Integer | Self::Number => "number",
            Self::String => "string",
            Self::Object => "object",
            Self::Array => "array",
        }
    }

    /// `{"type": …}`, with `"format": "integer"` for an integer column.
    pub fn to_json(self) -> Value {
        let mut out = Map::new();
        out.insert("type".into(), Value::String(self.name().into()));
        if self == Self::Integer {
            out.insert("format".into(), Value::String("integer".into()));
        }
        Value::Object(out)
    }

    /// Reads [`ColumnType::to_json`] back (`None` for anything else).
    pub fn from_json(value: &Value) -> Option<Self> {
        let integer = match value.get("format") {
            None | Some(Value::Null) => false,
            Some(Value::String(f)) if f == "integer" => true,
            Some(_) => return None,
        };
        let t = Self::from_name(value.get("type")?.as_str()?)?;
        match (t, integer) {
            (Self::Number, true) => Some(Self::Integer),
            (t, false) => Some(t),
            (_, true) => None,
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::Null,
            "boolean" => Self::Boolean,
            "number" => Self::Number,
            "string" => Self::String,
            "object" => Self::Object,
            "array" => Self::Array,
            _ => return None,
        })
    }
}

/// `true`/`false` in any case.
fn parse_bool(text: &str) -> Option<bool> {
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// A finite number written in decimal (integers stay integers).
fn parse_number(text: &str) -> Option<Number> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(i.into());
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(u.into());
    }
    // Rust also reads `inf` and `NaN`, which are not JSON numbers.
    let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    Number::from_f64(f)
}

/// An integral number as an integer (`2.0` → `2`).
fn integer(n: &Number) -> Option<Number> {
    if n.is_i64() || n.is_u64() {
        return Some(n.clone());
    }
    let f = n.as_f64()?;
    // Beyond 2^53 a double's integral value is not the number written.
    (f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0).then(|| Number::from(f as i64))
}

/// `value` as a value of `to`; null fits every type. The problem names what the value is not.
///
/// - `string`: text as is; numbers and booleans as written; objects and arrays as JSON text.
/// - `number`: numbers; text holding a finite decimal number (white space around it ignored).
///   `number` with `format: integer` also needs an integral value (`2.0` becomes `2`).
/// - `boolean`: booleans; the text `true` or `false` in any case.
/// - `object` / `array`: the same JSON type, or text holding one as JSON.
/// - `null`: only null.
pub fn coerce(value: Value, to: ColumnType) -> Result<Value, &'static str> {
    use ColumnType as T;
    match (to, value) {
        (_, Value::Null) => Ok(Value::Null),
        (T::String, Value::String(s)) => Ok(Value::String(s)),
        (T::String, Value::Number(n)) => Ok(Value::String(n.to_string())),
        (T::String, Value::Bool(b)) => Ok(Value::String(b.to_string())),
        (T::String, other) => Ok(Value::String(other.to_string())),
        (T::Boolean, Value::Bool(b)) => Ok(Value::Bool(b)),
        (T::Boolean, Value::String(s)) => parse_bool(s.trim())
            .map(Value::Bool)
            .ok_or("is not a boolean"),
        (T::Boolean, _) => Err("is not a boolean"),
        (T::Integer, Value::Number(n)) => integer(&n).map(Value::Number).ok_or("is not an integer"),
        (T::Integer, Value::String(s)) => parse_number(s.trim())
            .and_then(|n| integer(&n))
            .map(Value::Number)
            .ok_or("is not an integer"),
        (T::Integer, _) => Err("is not an integer"),
        (T::Number, Value::Number(n)) => Ok(Value::Number(n)),
        (T::Number, Value::String(s)) => parse_number(s.trim())
            .map(Value::Number)
            .ok_or("is not a number"),
        (T::Number, _) => Err("is not a number"),
        (T::Object, v @ Value::Object(_)) => Ok(v),
        (T::Object, Value::String(s)) => match serde_json::from_str(&s) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err("is not a JSON object"),
        },
        (T::Object, _) => Err("is not a JSON object"),
        (T::Array, v @ Value::Array(_)) => Ok(v),
        (T::Array, Value::String(s)) => match serde_json::from_str(&s) {
            Ok(v @ Value::Array(_)) => Ok(v),
            _ => Err("is not a JSON array"),
        },
        (T::Array, _) => Err("is not a JSON array"),
        (T::Null, _) => Err("is not null"),
    }
}

/// A row's key: its `id` (a string of 1..=255 characters or a number) as JSON text, so `"1"`
/// and `1` are different keys; `None` when it has no `id` or a null one.
pub fn row_key(row: &Map<String, Value>) -> Result<Option<String>, &'static str> {
    match row.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if (1..=KEY_MAX).contains(&s.chars().count()) => {
            Ok(Some(Value::String(s.clone()).to_string()))
        }
        Some(Value::String(_)) => Err("must be 1 to 255 characters"),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err("must be a string or a number"),
    }
}

/// What is wrong with a column name, if anything.
pub fn column_name_problem(name: &str) -> Option<&'static str> {
    let len = name.chars().count();
    if len == 0 {
        Some("a column name must not be empty")
    } else if len > COLUMN_NAME_MAX {
        Some("a column name must be at most 200 characters")
    } else {
        None
    }
}

/// Column names and types in the order columns first appeared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    columns: Vec<(String, ColumnType)>,
    index: HashMap<String, usize>,
}

/// A write would give the dataset more than [`COLUMNS_MAX`] columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyColumns;

impl Schema {
    /// Reads a stored schema: `[[name, {"type": …}], …]` (an array, because PostgreSQL's
    /// `jsonb` does not keep an object's key order); entries it cannot read widen to
    /// `string`.
    pub fn from_stored(value: &Value) -> Self {
        let mut schema = Self::default();
        for entry in value.as_array().into_iter().flatten() {
            let (Some(name), t) = (entry[0].as_str(), &entry[1]) else {
                continue;
            };
            let t = ColumnType::from_json(t).unwrap_or(ColumnType::String);
            if !schema.index.contains_key(name) {
                schema.index.insert(name.to_owned(), schema.columns.len());
                schema.columns.push((name.to_owned(), t));
            }
        }
        schema
    }

    /// What [`Schema::from_stored`] reads.
    pub fn to_stored(&self) -> Value {
        Value::Array(
            self.columns
                .iter()
                .map(|(name, t)| Value::Array(vec![Value::String(name.clone()), t.to_json()]))
                .collect(),
        )
    }

    /// `{"name": {"type": …}, …}` in the order columns first appeared (as answers show it).
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.columns
                .iter()
                .map(|(name, t)| (name.clone(), t.to_json()))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<ColumnType> {
        self.index.get(name).map(|&i| self.columns[i].1)
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|(name, _)| name.as_str())
    }

    /// Widens `name` to hold `t` (adding the column when new).
    pub fn widen(&mut self, name: &str, t: ColumnType) -> Result<(), TooManyColumns> {
        if let Some(&i) = self.index.get(name) {
            let slot = &mut self.columns[i].1;
            *slot = slot.join(t);
            return Ok(());
        }
        if self.columns.len() >= COLUMNS_MAX {
            return Err(TooManyColumns);
        }
        self.index.insert(name.to_owned(), self.columns.len());
        self.columns.push((name.to_owned(), t));
        Ok(())
    }

    /// Widens by every column of `other`.
    pub fn widen_all(&mut self, other: &Schema) -> Result<(), TooManyColumns> {
        for (name, t) in &other.columns {
            self.widen(name, *t)?;
        }
        Ok(())
    }

    /// Sets a column's type (an override); the column must exist.
    pub fn set(&mut self, name: &str, t: ColumnType) -> bool {
        match self.index.get(name) {
            Some(&i) => {
                self.columns[i].1 = t;
                true
            }
            None => false,
        }
    }

    /// Widens by every value of `row`.
    pub fn widen_row(&mut self, row: &Map<String, Value>) -> Result<(), TooManyColumns> {
        for (name, value) in row {
            self.widen(name, ColumnType::of(value))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_lattice_widens_and_never_narrows() {
        use ColumnType as T;
        assert_eq!(T::Null.join(T::Integer), T::Integer);
        assert_eq!(T::Integer.join(T::Number), T::Number);
        assert_eq!(T::Number.join(T::Integer), T::Number);
        assert_eq!(T::Number.join(T::String), T::String);
        assert_eq!(T::Boolean.join(T::Integer), T::String);
        assert_eq!(T::Object.join(T::Array), T::String);
        assert_eq!(T::String.join(T::Null), T::String);
        let all = [
            T::Null,
            T::Boolean,
            T::Integer,
            T::Number,
            T::String,
            T::Object,
            T::Array,
        ];
        for a in all {
            for b in all {
                let j = a.join(b);
                assert_eq!(j, b.join(a), "commutative");
                assert_eq!(j.join(a), j, "{a:?} ⊑ {j:?}");
                assert_eq!(j.join(b), j, "{b:?} ⊑ {j:?}");
                for c in all {
                    assert_eq!(a.join(b).join(c), a.join(b.join(c)), "associative");
                }
            }
        }
    }

    #[test]
    fn a_stored_schema_keeps_its_column_order() {
        let mut schema = Schema::default();
        for name in ["zeta", "a", "mid"] {
            schema.widen(name, ColumnType::Integer).unwrap();
        }
        let back = Schema::from_stored(&schema.to_stored());
        assert_eq!(back, schema);
        assert_eq!(back.names().collect::<Vec<_>>(), ["zeta", "a", "mid"]);
    }

    #[test]
    fn types_read_back() {
        for t in [
            ColumnType::Null,
            ColumnType::Boolean,
            ColumnType::Integer,
            ColumnType::Number,
            ColumnType::String,
            ColumnType::Object,
            ColumnType::Array,
        ] {
            assert_eq!(ColumnType::from_json(&t.to_json()), Some(t));
        }
        assert_eq!(
            ColumnType::Integer.to_json(),
            json!({"type": "number", "format": "integer"})
        );
        assert_eq!(
            ColumnType::from_json(&json!({"type": "string", "format": "integer"})),
            None
        );
    }

    #[test]
    fn a_cell_infers_a_type_its_text_coerces_to() {
        for cell in [
            "",
            " ",
            "true",
            "FALSE",
            "12",
            "-3",
            " 7 ",
            "1.5",
            "1e3",
            "abc",
            "inf",
            "NaN",
            "18446744073709551615",
            "0x10",
        ] {
            let t = ColumnType::of_text(cell);
            let value = if cell.is_empty() {
                Value::Null
            } else {
                Value::String(cell.into())
            };
            for wider in [t, t.join(ColumnType::Number), ColumnType::String] {
                if t.join(wider) == wider {
                    assert!(
                        coerce(value.clone(), wider).is_ok(),
                        "{cell:?} as {wider:?}"
                    );
                }
            }
        }
        assert_eq!(ColumnType::of_text("inf"), ColumnType::String);
        assert_eq!(ColumnType::of_text("1.5"), ColumnType::Number);
        assert_eq!(ColumnType::of_text(" 7 "), ColumnType::Integer);
    }

    #[test]
    fn coercion() {
        use ColumnType as T;
        assert_eq!(coerce(json!("42"), T::Integer), Ok(json!(42)));
        assert_eq!(coerce(json!(2.0), T::Integer), Ok(json!(2)));
        assert_eq!(coerce(json!(2.5), T::Integer), Err("is not an integer"));
        assert_eq!(coerce(json!("2.5"), T::Number), Ok(json!(2.5)));
        assert_eq!(coerce(json!("x"), T::Number), Err("is not a number"));
        assert_eq!(coerce(json!(true), T::Number), Err("is not a number"));
        assert_eq!(coerce(json!(" True "), T::Boolean), Ok(json!(true)));
        assert_eq!(coerce(json!(1), T::String), Ok(json!("1")));
        assert_eq!(coerce(json!({"a": 1}), T::String), Ok(json!("{\"a\":1}")));
        assert_eq!(coerce(json!("{\"a\":1}"), T::Object), Ok(json!({"a": 1})));
        assert_eq!(coerce(json!("[1]"), T::Object), Err("is not a JSON object"));
        assert_eq!(coerce(json!("[1]"), T::Array), Ok(json!([1])));
        assert_eq!(coerce(Value::Null, T::Boolean), Ok(Value::Null));
        assert_eq!(coerce(json!(0), T::Null), Err("is not null"));
    }

    #[test]
    fn row_keys() {
        let row = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(row_key(&row(json!({"id": "a"}))), Ok(Some("\"a\"".into())));
        assert_eq!(row_key(&row(json!({"id": 1}))), Ok(Some("1".into())));
        assert_eq!(row_key(&row(json!({"id": null}))), Ok(None));
        assert_eq!(row_key(&row(json!({"x": 1}))), Ok(None));
        assert!(row_key(&row(json!({"id": true}))).is_err());
        assert!(row_key(&row(json!({"id": ""}))).is_err());
    }

    struct Collect(Vec<Map<String, Value>>, Vec<String>);

    impl RowSink for Collect {
        fn header(&mut self, names: &[String]) -> Result<(), Halt> {
            self.1 = names.to_vec();
            Ok(())
        }
        fn row(&mut self, _: usize, row: Map<String, Value>) -> Result<(), Halt> {
            self.0.push(row);
            Ok(())
        }
    }

    fn read(format: Format, text: &str) -> Result<Collect, FileError> {
        let mut sink = Collect(Vec::new(), Vec::new());
        match read_rows(format, text.as_bytes(), &mut sink) {
            Ok(n) => {
                assert_eq!(n, sink.0.len());
                Ok(sink)
            }
            Err(Halt::Invalid(e)) => Err(e),
            Err(Halt::Stop) => panic!("stopped"),
        }
    }

    #[test]
    fn reading_the_three_formats() {
        let csv = read(Format::Csv, "\u{feff}id,name\n1,a\n2,\n").unwrap();
        assert_eq!(csv.1, ["id", "name"]);
        assert_eq!(
            csv.0[1],
            *json!({"id": "2", "name": null}).as_object().unwrap()
        );
        let json = read(Format::Json, " [{\"a\": 1}, {\"b\": [true]}] \n").unwrap();
        assert_eq!(json.0.len(), 2);
        let nd = read(Format::Ndjson, "{\"a\": 1}\n\n{\"a\": 2}\r\n").unwrap();
        assert_eq!(nd.0.len(), 2);
        assert_eq!(read(Format::Json, "[]").unwrap().0.len(), 0);
        assert_eq!(read(Format::Csv, "").unwrap().0.len(), 0);
    }

    #[test]
    fn file_errors_name_the_row() {
        let e = read(Format::Csv, "a,b\n1,2\n3\n").err().unwrap();
        assert_eq!(e.row, Some(2), "{e}");
        let e = read(Format::Json, "[{\"a\": 1}, 3]").err().unwrap();
        assert_eq!(e.to_string(), "row 2: is not a JSON object");
        let e = read(Format::Json, "{\"a\": 1}").err().unwrap();
        assert_eq!(e.to_string(), "must be a JSON array of objects");
        let e = read(Format::Json, "[{\"a\": 1}] x").err().unwrap();
        assert!(e.problem.starts_with("is not valid JSON"), "{e}");
        let e = read(Format::Ndjson, "{\"a\": 1}\n{oops\n").err().unwrap();
        assert_eq!(e.row, Some(2), "{e}");
        let e = read(Format::Ndjson, "{\"a\": \"x\\u0000\"}\n")
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "row 1, column \"a\": holds a NUL character (U+0000)"
        );
        let e = read(Format::Csv, "a,a\n1,2\n").err().unwrap();
        assert!(e.problem.contains("twice"), "{e}");
        let e = read(Format::Csv, "a\n\u{0}\n").err().unwrap();
        assert_eq!(e.row, Some(1), "{e}");
    }

    #[test]
    fn inference_and_sample() {
        let mut inference = Inference::new(Format::Csv);
        let text = "id,score,flag,note\n1,2,true,x\n2,2.5,false,\n3,,TRUE,4\n";
        read_rows(Format::Csv, text.as_bytes(), &mut inference).unwrap();
        assert_eq!(
            inference.schema.to_json(),
            json!({"id": {"type": "number", "format": "integer"}, "score": {"type": "number"},
                   "flag": {"type": "boolean"}, "note": {"type": "string"}})
        );
        assert_eq!(inference.rows, 3);
        assert_eq!(
            inference.sample()[2],
            json!({"id": 3, "score": null, "flag": true, "note": "4"})
        );
    }
}
