//! Reading an uploaded file (CSV with a header row, a JSON array of objects, or NDJSON) as a
//! stream of rows handed to a [`RowSink`].

use std::io::{BufRead, BufReader, Read};

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::*;

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
