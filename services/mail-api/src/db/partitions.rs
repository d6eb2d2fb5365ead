//! Monthly partitions of the event tables. `email_events` and `events` are partitioned by
//! RANGE on their UUIDv7 ids, one partition per month (UTC) and a DEFAULT partition for any id
//! outside every month made (see the migration `monthly_event_partitions` and
//! `docs/PARTITIONS.md`). The upkeep creates the partitions of this month and the next ahead of
//! time, so that the rows of a month never land in the DEFAULT partition: run when the process
//! starts and every hour after.

use chrono::{DateTime, Datelike as _, Months, NaiveDate, Utc};
use diesel::sql_types::{Date, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

/// The tables partitioned by month, each with its `<table>_default` partition.
pub const MONTHLY: [&str; 2] = ["email_events", "events"];

/// How many months ahead of the current one the upkeep creates.
pub const MONTHS_AHEAD: u32 = 1;

#[derive(diesel::QueryableByName)]
struct Created {
    #[diesel(sql_type = Nullable<Text>)]
    created: Option<String>,
}

/// The first day of the month of `at` (UTC).
pub fn month_of(at: DateTime<Utc>) -> NaiveDate {
    at.date_naive()
        .with_day(1)
        .unwrap_or_else(|| at.date_naive())
}

/// Creates, for every table of [`MONTHLY`], the partition of the month of `now` and of the
/// [`MONTHS_AHEAD`] months after it, those that do not exist yet (idempotent; rows of such a
/// month already in the DEFAULT partition move into it). Returns the partitions created.
pub async fn upkeep(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
) -> diesel::QueryResult<Vec<String>> {
    let first = month_of(now);
    let mut created = Vec::new();
    for table in MONTHLY {
        for ahead in 0..=MONTHS_AHEAD {
            let month = first
                .checked_add_months(Months::new(ahead))
                .unwrap_or(first);
            created.extend(create_month(conn, table, month).await?);
        }
    }
    Ok(created)
}

/// Creates the partition of `table` for the month of `month`: its name, or `None` when it
/// exists already.
pub async fn create_month(
    conn: &mut AsyncPgConnection,
    table: &str,
    month: NaiveDate,
) -> diesel::QueryResult<Option<String>> {
    let row: Created =
        diesel::sql_query("SELECT create_month_partition($1::text::regclass, $2) AS created")
            .bind::<Text, _>(table)
            .bind::<Date, _>(month)
            .get_result(conn)
            .await?;
    Ok(row.created)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_month_is_that_of_the_utc_day() {
        let at = DateTime::parse_from_rfc3339("2027-01-31T23:59:59.999Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(month_of(at), NaiveDate::from_ymd_opt(2027, 1, 1).unwrap());
    }
}
