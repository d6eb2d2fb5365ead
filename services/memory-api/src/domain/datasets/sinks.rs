//! What the rows of a file are read into: an [`Inference`] (the preview's schema and sample)
//! or a [`Coercion`] (each value coerced to its column's type, in batches).

use serde_json::{Map, Value};

use super::*;

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
