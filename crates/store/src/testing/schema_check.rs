//! Checks a service's diesel `schema.rs` against its migrated database, so that the two cannot
//! drift: every table and column diesel declares exists, with a matching type and nullability.
//! (Columns only raw SQL reads need not be declared.)

use std::collections::BTreeMap;

use diesel::sql_types::Text;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};

/// A column as `schema.rs` declares it: its diesel type, and whether it is `Nullable<…>`.
#[derive(Debug, PartialEq)]
struct Declared {
    diesel_type: String,
    nullable: bool,
}

/// The tables of a `schema.rs`, by SQL name (several `table!` views of one table merge).
fn parse_schema(schema_rs: &str) -> BTreeMap<String, BTreeMap<String, Declared>> {
    let mut tables: BTreeMap<String, BTreeMap<String, Declared>> = BTreeMap::new();
    let mut depth = 0usize;
    let mut in_table = false;
    let mut sql_name: Option<String> = None;
    let mut table: Option<String> = None;
    for line in schema_rs.lines() {
        let line = line.trim();
        if line.starts_with("diesel::table!") {
            in_table = true;
        }
        if !in_table {
            continue;
        }
        if let Some(name) = line
            .strip_prefix("#[sql_name = \"")
            .and_then(|rest| rest.strip_suffix("\"]"))
        {
            sql_name = Some(name.to_owned());
        } else if line.starts_with("#[") {
            // #[max_length = …] and the like say nothing this check reads.
        } else if depth == 1 && line.ends_with('{') {
            let rust_name = line.split(['(', ' ']).next().unwrap_or_default();
            table = Some(sql_name.take().unwrap_or_else(|| rust_name.to_owned()));
        } else if let (Some(table), Some((column, ty))) = (&table, line.split_once("->")) {
            let column = sql_name.take().unwrap_or_else(|| column.trim().to_owned());
            let ty = ty.trim().trim_end_matches(',').trim();
            let (ty, nullable) = match ty
                .strip_prefix("Nullable<")
                .and_then(|inner| inner.strip_suffix('>'))
            {
                Some(inner) => (inner, true),
                None => (ty, false),
            };
            tables.entry(table.clone()).or_default().insert(
                column,
                Declared {
                    diesel_type: ty.to_owned(),
                    nullable,
                },
            );
        }
        depth += line.matches('{').count();
        depth = depth.saturating_sub(line.matches('}').count());
        if depth == 0 {
            in_table = false;
            table = None;
        }
    }
    tables
}

/// PostgreSQL's `udt_name`s a diesel SQL type may stand for; `None` for a type this check
/// does not know.
fn udt_names(diesel_type: &str) -> Option<Vec<String>> {
    if let Some(element) = diesel_type
        .strip_prefix("Array<")
        .and_then(|inner| inner.strip_suffix('>'))
    {
        let element = element
            .strip_prefix("Nullable<")
            .and_then(|inner| inner.strip_suffix('>'))
            .unwrap_or(element);
        return udt_names(element).map(|names| names.iter().map(|n| format!("_{n}")).collect());
    }
    let names: &[&str] = match diesel_type {
        "Uuid" => &["uuid"],
        "Text" | "VarChar" | "Varchar" => &["text", "varchar", "bpchar"],
        "Timestamptz" => &["timestamptz"],
        "Timestamp" => &["timestamp"],
        "Date" => &["date"],
        "Time" => &["time"],
        "Integer" | "Int4" => &["int4"],
        "BigInt" | "Int8" => &["int8"],
        "SmallInt" | "Int2" => &["int2"],
        "Bool" => &["bool"],
        "Jsonb" => &["jsonb"],
        "Json" => &["json"],
        "Bytea" | "Binary" => &["bytea"],
        "Double" | "Float8" => &["float8"],
        "Float" | "Float4" => &["float4"],
        "Numeric" => &["numeric"],
        "Interval" => &["interval"],
        _ => return None,
    };
    Some(names.iter().map(|n| (*n).to_owned()).collect())
}

#[derive(diesel::QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Text)]
    column_name: String,
    #[diesel(sql_type = Text)]
    udt_name: String,
    #[diesel(sql_type = Text)]
    is_nullable: String,
}

/// What `schema_rs` declares that the database at `database_url` does not have as declared,
/// one line each; empty when they agree.
pub async fn schema_drift(database_url: &str, schema_rs: &str) -> Vec<String> {
    let declared = parse_schema(schema_rs);
    let mut conn = AsyncPgConnection::establish(database_url)
        .await
        .expect("connect to the migrated database");
    let columns: Vec<Column> = diesel::sql_query(
        "SELECT table_name::text, column_name::text, udt_name::text, is_nullable::text \
         FROM information_schema.columns WHERE table_schema = 'public'",
    )
    .load(&mut conn)
    .await
    .expect("read information_schema.columns");
    let mut actual: BTreeMap<(String, String), Column> = BTreeMap::new();
    for column in columns {
        actual.insert(
            (column.table_name.clone(), column.column_name.clone()),
            column,
        );
    }
    let mut drift = Vec::new();
    if declared.is_empty() {
        drift.push("schema.rs declares no table".to_owned());
    }
    for (table, columns) in &declared {
        if !actual.keys().any(|(t, _)| t == table) {
            drift.push(format!("{table}: no such table"));
            continue;
        }
        for (name, column) in columns {
            let Some(found) = actual.get(&(table.clone(), name.clone())) else {
                drift.push(format!("{table}.{name}: no such column"));
                continue;
            };
            match udt_names(&column.diesel_type) {
                None => drift.push(format!(
                    "{table}.{name}: {} is a type this check does not know",
                    column.diesel_type
                )),
                Some(names) if !names.contains(&found.udt_name) => drift.push(format!(
                    "{table}.{name}: declared {}, the database has {}",
                    column.diesel_type, found.udt_name
                )),
                Some(_) => {}
            }
            let nullable = found.is_nullable == "YES";
            if nullable != column.nullable {
                drift.push(format!(
                    "{table}.{name}: declared {}, the database's column is {}",
                    if column.nullable {
                        "Nullable"
                    } else {
                        "NOT NULL"
                    },
                    if nullable { "nullable" } else { "NOT NULL" }
                ));
            }
        }
    }
    drift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_merge_and_sql_names_and_nullability_are_read() {
        let tables = parse_schema(
            r#"
diesel::table! {
    items (id) {
        id -> Uuid,
        #[sql_name = "type"]
        kind -> Text,
        #[max_length = 10]
        note -> Nullable<Text>,
        tags -> Nullable<Array<Text>>,
    }
}

diesel::table! {
    #[sql_name = "items"]
    item_extra (id) {
        id -> Uuid,
        size -> BigInt,
    }
}

diesel::joinable!(items -> other (id));
"#,
        );
        assert_eq!(tables.len(), 1);
        let items = &tables["items"];
        assert_eq!(
            items.keys().collect::<Vec<_>>(),
            ["id", "note", "size", "tags", "type"]
        );
        assert!(items["note"].nullable && !items["type"].nullable);
        assert_eq!(items["tags"].diesel_type, "Array<Text>");
        assert!(
            udt_names("Array<Text>")
                .unwrap()
                .contains(&"_text".to_owned())
        );
        assert!(udt_names("Vector").is_none());
    }
}
