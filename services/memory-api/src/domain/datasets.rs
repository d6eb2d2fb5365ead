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
use std::io::{BufRead, BufReader, Read};

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

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

/// The format of an uploaded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
    Ndjson,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Json => "json",
            Self::Ndjson => "ndjson",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "csv" => Some(Self::Csv),
            "json" => Some(Self::Json),
            "ndjson" => Some(Self::Ndjson),
            _ => None,
        }
    }

    /// The format a part's media type names (`text/csv`, `application/json`,
    /// `application/x-ndjson`, …), if it names one.
    pub fn of_media_type(essence: &str) -> Option<Self> {
        match essence.to_ascii_lowercase().as_str() {
            "text/csv" | "application/csv" => Some(Self::Csv),
            "application/json" | "text/json" => Some(Self::Json),
            "application/x-ndjson"
            | "application/ndjson"
            | "application/jsonl"
            | "application/x-jsonlines"
            | "application/jsonlines" => Some(Self::Ndjson),
            _ => None,
        }
    }

    /// The format a file name's extension names, if it names one.
    pub fn of_file_name(name: &str) -> Option<Self> {
        let (_, ext) = name.rsplit_once('.')?;
        match ext.to_ascii_lowercase().as_str() {
            "csv" => Some(Self::Csv),
            "json" => Some(Self::Json),
            "ndjson" | "jsonl" => Some(Self::Ndjson),
            _ => None,
        }
    }

    /// The format the first character of the content says: `[` a JSON array, `{` NDJSON,
    /// anything else CSV.
    pub fn sniff(first: u8) -> Self {
        match first {
            b'[' => Self::Json,
            b'{' => Self::Ndjson,
            _ => Self::Csv,
        }
    }
}

/// What is wrong with an uploaded file: where (row numbers count from 1 in file order; a CSV
/// header is not a row, blank NDJSON lines are skipped) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub row: Option<usize>,
    pub column: Option<String>,
    pub problem: String,
}

impl FileError {
    pub fn new(problem: impl Into<String>) -> Self {
        Self {
            row: None,
            column: None,
            problem: problem.into(),
        }
    }

    pub fn at_row(row: usize, problem: impl Into<String>) -> Self {
        Self {
            row: Some(row),
            ..Self::new(problem)
        }
    }

    pub fn at(row: usize, column: &str, problem: impl Into<String>) -> Self {
        Self {
            row: Some(row),
            column: Some(column.to_owned()),
            problem: problem.into(),
        }
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.row, &self.column) {
            (Some(row), Some(column)) => write!(f, "row {row}, column {column:?}: ")?,
            (Some(row), None) => write!(f, "row {row}: ")?,
            (None, Some(column)) => write!(f, "column {column:?}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.problem)
    }
}

/// Why reading stopped early.
#[derive(Debug)]
pub enum Halt {
    /// The file is wrong.
    Invalid(FileError),
    /// The sink wants no more rows (it has what it needs, or nobody is listening).
    Stop,
}

impl From<FileError> for Halt {
    fn from(e: FileError) -> Self {
        Self::Invalid(e)
    }
}

/// Takes the rows of a file as they are read.
pub trait RowSink {
    /// A CSV file's header, before any row.
    fn header(&mut self, _names: &[String]) -> Result<(), Halt> {
        Ok(())
    }

    /// Row `number` (from 1). CSV cells are text, or null when empty.
    fn row(&mut self, number: usize, row: Map<String, Value>) -> Result<(), Halt>;
}

/// Reads `reader` as a file of `format`, handing each row to `sink` as soon as it is read
/// (one row in memory at a time). A leading UTF-8 byte-order mark is skipped. Answers the
/// number of rows.
pub fn read_rows<R: Read>(
    format: Format,
    reader: R,
    sink: &mut impl RowSink,
) -> Result<usize, Halt> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    skip_bom(&mut reader).map_err(|e| FileError::new(format!("cannot be read: {e}")))?;
    let mut counted = Counted { sink, rows: 0 };
    match format {
        Format::Csv => read_csv(reader, &mut counted)?,
        Format::Json => read_json_array(reader, &mut counted)?,
        Format::Ndjson => read_ndjson(reader, &mut counted)?,
    }
    Ok(counted.rows)
}

fn skip_bom(reader: &mut impl BufRead) -> std::io::Result<()> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    // The buffer may hold fewer than 3 bytes at first: fill until it has 3 or the end.
    let mut seen = Vec::with_capacity(3);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let take = (3 - seen.len()).min(buf.len());
        if buf[..take] != BOM[seen.len()..seen.len() + take] {
            // Not a BOM: give back what was taken (only possible while nothing was consumed).
            if !seen.is_empty() {
                return Err(std::io::Error::other("a truncated byte-order mark"));
            }
            return Ok(());
        }
        seen.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if seen.len() == 3 {
            return Ok(());
        }
    }
    if seen.is_empty() {
        Ok(())
    } else {
        Err(std::io::Error::other("a truncated byte-order mark"))
    }
}

/// Counts rows and enforces the text rules on the way to the sink. A file's rows are not
/// capped: the 10 MiB body bounds them, and neither side keeps them (the preview infers as
/// it reads, the confirm writes in batches).
struct Counted<'a, S> {
    sink: &'a mut S,
    rows: usize,
}

impl<S: RowSink> Counted<'_, S> {
    fn header(&mut self, names: &[String]) -> Result<(), Halt> {
        self.sink.header(names)
    }

    fn row(&mut self, row: Map<String, Value>) -> Result<(), Halt> {
        self.rows += 1;
        let number = self.rows;
        if row.len() > COLUMNS_MAX {
            return Err(
                FileError::at_row(number, format!("has more than {COLUMNS_MAX} columns")).into(),
            );
        }
        for (name, value) in &row {
            if let Some(problem) = column_name_problem(name) {
                return Err(FileError::at_row(number, problem).into());
            }
            if name.contains('\0') || holds_nul(value) {
                return Err(FileError::at(number, name, "holds a NUL character (U+0000)").into());
            }
        }
        self.sink.row(number, row)
    }
}

fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(members) => members
            .iter()
            .any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

fn read_csv<R: Read, S: RowSink>(reader: R, out: &mut Counted<'_, S>) -> Result<(), Halt> {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(reader);
    let header = csv.headers().map_err(|e| csv_error(&e, true))?.clone();
    if header.len() > COLUMNS_MAX {
        return Err(
            FileError::new(format!("the header has more than {COLUMNS_MAX} columns")).into(),
        );
    }
    let names: Vec<String> = header.iter().map(str::to_owned).collect();
    let mut seen = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if let Some(problem) = column_name_problem(name) {
            return Err(FileError::new(format!("header column {}: {problem}", i + 1)).into());
        }
        if name.contains('\0') {
            return Err(FileError::new(format!(
                "header column {}: holds a NUL character (U+0000)",
                i + 1
            ))
            .into());
        }
        if seen.insert(name.as_str(), i).is_some() {
            return Err(FileError::new(format!("the header names column {name:?} twice")).into());
        }
    }
    out.header(&names)?;
    let mut record = csv::StringRecord::new();
    loop {
        match csv.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => return Err(csv_error(&e, false)),
        }
        let row: Map<String, Value> = names
            .iter()
            .zip(record.iter())
            .map(|(name, cell)| {
                let value = if cell.is_empty() {
                    Value::Null
                } else {
                    Value::String(cell.to_owned())
                };
                (name.clone(), value)
            })
            .collect();
        out.row(row)?;
    }
}

fn csv_error(e: &csv::Error, header: bool) -> Halt {
    // The csv crate counts records from 0, the header included.
    let row = e
        .position()
        .map(|p| p.record() as usize)
        .filter(|&r| r > 0 && !header);
    let problem = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "is not valid UTF-8".to_owned(),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("has {len} fields where the header has {expected_len}"),
        csv::ErrorKind::Io(io) => format!("cannot be read: {io}"),
        _ => format!("is not valid CSV: {e}"),
    };
    let problem = if header && row.is_none() {
        format!("the header {problem}")
    } else {
        problem
    };
    Halt::Invalid(FileError {
        row,
        column: None,
        problem,
    })
}

fn object_row(value: Value, number: usize) -> Result<Map<String, Value>, Halt> {
    match value {
        Value::Object(row) => Ok(row),
        _ => Err(FileError::at_row(number, "is not a JSON object").into()),
    }
}

fn read_ndjson<R: BufRead, S: RowSink>(
    mut reader: R,
    out: &mut Counted<'_, S>,
) -> Result<(), Halt> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| FileError::new(format!("cannot be read: {e}")))?;
        if read == 0 {
            return Ok(());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let number = out.rows + 1;
        let value: Value = serde_json::from_slice(&line)
            .map_err(|e| FileError::at_row(number, format!("is not valid JSON: {e}")))?;
        out.row(object_row(value, number)?)?;
    }
}

fn read_json_array<R: Read, S: RowSink>(reader: R, out: &mut Counted<'_, S>) -> Result<(), Halt> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut halted = None;
    let read = serde::Deserializer::deserialize_seq(
        &mut de,
        Rows {
            out,
            halted: &mut halted,
        },
    );
    if let Some(halt) = halted {
        return Err(halt);
    }
    let rows = out.rows;
    read.and_then(|()| de.end()).map_err(|e| {
        let problem = if e.is_data() && rows == 0 {
            "must be a JSON array of objects".to_owned()
        } else {
            format!("is not valid JSON: {e}")
        };
        Halt::Invalid(FileError::new(problem))
    })
}

/// The elements of a JSON array, each handed on as it is read.
struct Rows<'a, 'b, S> {
    out: &'a mut Counted<'b, S>,
    halted: &'a mut Option<Halt>,
}

impl<'de, S: RowSink> Visitor<'de> for Rows<'_, '_, S> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element_seed(OneValue)? {
            let number = self.out.rows + 1;
            let step = object_row(value, number).and_then(|row| self.out.row(row));
            if let Err(halt) = step {
                *self.halted = Some(halt);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

struct OneValue;

impl<'de> DeserializeSeed<'de> for OneValue {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

/// A preview: the schema the rows infer, their count and the first few rows.
#[derive(Debug)]
pub struct Inference {
    format: Format,
    pub schema: Schema,
    pub rows: usize,
    sample: Vec<Map<String, Value>>,
}

impl Inference {
    pub fn new(format: Format) -> Self {
        Self {
            format,
            schema: Schema::default(),
            rows: 0,
            sample: Vec::new(),
        }
    }

    /// The first rows, coerced to the inferred schema (as confirming without overrides would
    /// store them).
    pub fn sample(&self) -> Vec<Value> {
        self.sample
            .iter()
            .map(|row| Value::Object(coerce_row(row.clone(), &self.schema).unwrap_or_default()))
            .collect()
    }
}

fn too_many_columns() -> FileError {
    FileError::new(format!(
        "has more than {COLUMNS_MAX} distinct columns, the most a dataset may have"
    ))
}

impl RowSink for Inference {
    fn header(&mut self, names: &[String]) -> Result<(), Halt> {
        for name in names {
            self.schema
                .widen(name, ColumnType::Null)
                .map_err(|_| too_many_columns())?;
        }
        Ok(())
    }

    fn row(&mut self, number: usize, row: Map<String, Value>) -> Result<(), Halt> {
        for (name, value) in &row {
            let t = match (self.format, value) {
                (Format::Csv, Value::String(cell)) => ColumnType::of_text(cell),
                (_, value) => ColumnType::of(value),
            };
            self.schema.widen(name, t).map_err(|_| too_many_columns())?;
        }
        self.rows = number;
        if self.sample.len() < SAMPLE_ROWS {
            self.sample.push(row);
        }
        Ok(())
    }
}

/// One value that does not fit its column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoercionError {
    pub row: usize,
    pub column: String,
    pub problem: String,
}

impl std::fmt::Display for CoercionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "row {}, column {:?}: {}",
            self.row, self.column, self.problem
        )
    }
}

/// `row` coerced to `schema` (columns it lacks are left as they are); the failing columns and
/// problems otherwise.
pub fn coerce_row(
    row: Map<String, Value>,
    schema: &Schema,
) -> Result<Map<String, Value>, Vec<(String, String)>> {
    let mut out = Map::with_capacity(row.len());
    let mut failed = Vec::new();
    for (name, value) in row {
        let Some(t) = schema.get(&name) else {
            out.insert(name, value);
            continue;
        };
        let shown = excerpt(&value);
        match coerce(value, t) {
            Ok(v) => {
                out.insert(name, v);
            }
            Err(problem) => failed.push((name, format!("{shown} {problem}"))),
        }
    }
    if failed.is_empty() {
        Ok(out)
    } else {
        Err(failed)
    }
}

/// A value as a message shows it: JSON, at most 40 characters.
fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// Coerces the rows of an upload to its final schema, refusing a row `id` seen before, and
/// hands them on in batches; after the first problem it only collects problems (at most
/// [`COERCION_ERRORS_MAX`]).
pub struct Coercion<F> {
    schema: Schema,
    /// The types of the coerced values (what the dataset's schema widens by).
    pub written: Schema,
    pub errors: Vec<CoercionError>,
    keys: HashMap<String, usize>,
    batch: Vec<KeyedRow>,
    batch_size: usize,
    flush: F,
}

impl<F> Coercion<F>
where
    F: FnMut(Vec<KeyedRow>) -> bool,
{
    /// `flush` takes each batch of (key, row); it answers false to stop.
    pub fn new(schema: Schema, batch_size: usize, flush: F) -> Self {
        Self {
            schema,
            written: Schema::default(),
            errors: Vec::new(),
            keys: HashMap::new(),
            batch: Vec::with_capacity(batch_size),
            batch_size,
            flush,
        }
    }

    /// Hands on the last batch; false when the receiver stopped.
    pub fn finish(&mut self) -> bool {
        if self.errors.is_empty() && !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            return (self.flush)(batch);
        }
        true
    }

    fn error(&mut self, row: usize, column: String, problem: String) -> Result<(), Halt> {
        self.batch.clear();
        self.errors.push(CoercionError {
            row,
            column,
            problem,
        });
        if self.errors.len() >= COERCION_ERRORS_MAX {
            return Err(Halt::Stop);
        }
        Ok(())
    }
}

impl<F> RowSink for Coercion<F>
where
    F: FnMut(Vec<KeyedRow>) -> bool,
{
    fn row(&mut self, number: usize, row: Map<String, Value>) -> Result<(), Halt> {
        let row = match coerce_row(row, &self.schema) {
            Ok(row) => row,
            Err(failed) => {
                for (column, problem) in failed {
                    self.error(number, column, problem)?;
                }
                return Ok(());
            }
        };
        let key = match row_key(&row) {
            Ok(key) => key,
            Err(problem) => return self.error(number, "id".into(), problem.into()),
        };
        if let Some(key) = &key {
            if let Some(first) = self.keys.get(key) {
                let problem = format!("repeats the id of row {first}");
                return self.error(number, "id".into(), problem);
            }
            self.keys.insert(key.clone(), number);
        }
        if !self.errors.is_empty() {
            return Ok(());
        }
        if self.written.widen_row(&row).is_err() {
            return Err(too_many_columns().into());
        }
        self.batch.push((key, row));
        if self.batch.len() >= self.batch_size {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
            if !(self.flush)(batch) {
                return Err(Halt::Stop);
            }
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
