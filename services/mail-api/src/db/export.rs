//! The tenant export's reads: the exported tables, their columns, and one page of a table at a
//! time in `(project_id, id)` order (keyset pagination on the tables' `(project_id, id)`
//! indexes), rendered by PostgreSQL either as JSON objects or as CSV cells.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection as _};
use uuid::Uuid;

/// An exported column: its name, the SQL giving its value (the table is `t`), and whether the
/// value is structured (an object or array: JSON in a CSV cell).
pub struct Column {
    pub name: &'static str,
    expr: &'static str,
    structured: bool,
}

const fn col(name: &'static str, expr: &'static str) -> Column {
    Column {
        name,
        expr,
        structured: false,
    }
}

const fn structured(name: &'static str, expr: &'static str) -> Column {
    Column {
        name,
        expr,
        structured: true,
    }
}

/// An exported table. Its rows are the project's, narrowed to a site by `site_filter` (where
/// `$3` is the site) when the export names one.
pub struct Table {
    /// The key of the JSON document and the CSV file's name (without `.csv`).
    pub name: &'static str,
    from: &'static str,
    site_filter: &'static str,
    pub columns: &'static [Column],
}

/// A contact subscribed to the site `$3` (the site filter of contacts and of their rows).
const SUBSCRIBED: &str = "EXISTS (SELECT 1 FROM contact_sites cs WHERE cs.contact_id = t.contact_id AND cs.site_id = $3)";

pub const TABLES: [Table; 4] = [
    Table {
        name: "contacts",
        from: "contacts",
        site_filter: "EXISTS (SELECT 1 FROM contact_sites cs \
                      WHERE cs.contact_id = t.id AND cs.site_id = $3)",
        columns: &[
            col("contact_id", "t.id"),
            col("email", "t.email"),
            col("first_name", "t.first_name"),
            col("last_name", "t.last_name"),
            structured("properties", "t.properties"),
            structured("tags", "t.tags"),
            structured("attribution", "t.attribution"),
            structured(
                "site_ids",
                "(SELECT coalesce(array_agg(cs.site_id ORDER BY cs.created_at, cs.site_id), '{}') \
                  FROM contact_sites cs WHERE cs.contact_id = t.id)",
            ),
            col("source", "t.source"),
            col("created_at", "export_ts(t.created_at)"),
            col("updated_at", "export_ts(t.updated_at)"),
        ],
    },
    Table {
        name: "email_log",
        from: "email_log",
        site_filter: "t.site_id = $3",
        columns: &[
            col("id", "t.id"),
            col("site_id", "t.site_id"),
            col("contact_id", "t.contact_id"),
            col("campaign_id", "t.campaign_id"),
            col("to", "t.to_email"),
            col("subject", "t.subject"),
            col("status", "t.status"),
            col("provider_message_id", "t.provider_message_id"),
            col("open_count", "t.open_count"),
            structured("clicked_urls", "t.clicked_urls"),
            col("created_at", "export_ts(t.created_at)"),
            col("sent_at", "export_ts(t.sent_at)"),
            col("last_opened_at", "export_ts(t.last_opened_at)"),
            col("last_clicked_at", "export_ts(t.last_clicked_at)"),
        ],
    },
    Table {
        name: "events",
        from: "events",
        site_filter: SUBSCRIBED,
        columns: &[
            col("id", "t.id"),
            col("contact_id", "t.contact_id"),
            col("event", "t.name"),
            structured("data", "t.data"),
            col("created_at", "export_ts(t.created_at)"),
        ],
    },
    Table {
        name: "conversions",
        from: "conversions",
        site_filter: SUBSCRIBED,
        columns: &[
            col("id", "t.id"),
            col("contact_id", "t.contact_id"),
            col("email_log_id", "t.email_log_id"),
            col("campaign_id", "t.campaign_id"),
            col("event", "t.event"),
            col("revenue", "t.revenue"),
            col("currency", "t.currency"),
            col("order_id", "t.order_id"),
            structured("metadata", "t.metadata"),
            col("attribution", "t.attribution"),
            col("attributed_at", "export_ts(t.attributed_at)"),
        ],
    },
];

/// What an export covers.
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    pub project_id: Uuid,
    /// The site's contacts (and their events and conversions) and the site's email log.
    pub site_id: Option<Uuid>,
}

impl Table {
    /// `SELECT t.id, <select> ... ` one page after `$2` (all of the project's rows from the
    /// nil uuid), `$4` rows at most.
    fn page_sql(&self, select: &str) -> String {
        format!(
            "SELECT t.id, {select} FROM {from} t \
             WHERE t.project_id = $1 AND t.id > $2 AND ($3::uuid IS NULL OR {filter}) \
             ORDER BY t.id LIMIT $4",
            from = self.from,
            filter = self.site_filter,
        )
    }

    /// The page query giving each row as the text of one JSON object.
    pub fn json_sql(&self) -> String {
        let fields: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("'{}', {}", c.name, c.expr))
            .collect();
        self.page_sql(&format!(
            "json_build_object({})::text AS doc",
            fields.join(", ")
        ))
    }

    /// The page query giving each row as its CSV cells (structured values as JSON text).
    pub fn csv_sql(&self) -> String {
        let cells: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                if c.structured {
                    format!("to_json({})::text", c.expr)
                } else {
                    format!("({})::text", c.expr)
                }
            })
            .collect();
        self.page_sql(&format!("ARRAY[{}]::text[] AS cells", cells.join(", ")))
    }

    pub fn header(&self) -> Vec<&'static str> {
        self.columns.iter().map(|c| c.name).collect()
    }
}

#[derive(QueryableByName)]
pub struct JsonRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub doc: String,
}

#[derive(QueryableByName)]
pub struct CsvRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Array<Nullable<Text>>)]
    pub cells: Vec<Option<String>>,
}

/// One page of `sql` (a [`Table::json_sql`] or [`Table::csv_sql`]) after `after`.
pub async fn page<R>(
    conn: &mut AsyncPgConnection,
    sql: &str,
    scope: Scope,
    after: Uuid,
    limit: i64,
) -> QueryResult<Vec<R>>
where
    R: QueryableByName<diesel::pg::Pg> + Send + 'static,
{
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(scope.project_id)
        .bind::<SqlUuid, _>(after)
        .bind::<Nullable<SqlUuid>, _>(scope.site_id)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

/// Starts the read-only transaction the whole export reads in: one snapshot, so the tables
/// agree with each other however long the download takes. The server ends the session should
/// the transaction stay idle longer than `idle_timeout` (a stream stuck without closing it).
pub async fn begin_snapshot(
    conn: &mut AsyncPgConnection,
    idle_timeout: std::time::Duration,
) -> QueryResult<()> {
    conn.batch_execute(&format!(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
         SET LOCAL idle_in_transaction_session_timeout = {}",
        idle_timeout.as_millis()
    ))
    .await
}

pub async fn end_snapshot(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    conn.batch_execute("COMMIT").await
}

/// What the full export (`GET /export/full`, `tenant_export_full`) adds to [`TABLES`]: the
/// project's configuration and records. With a site, its row (with its brand voice) and its
/// campaigns; the records that belong to no site (templates, suppressions, team, API keys,
/// notifications, the erasure log) are the whole project's only.
pub const ACCOUNT_TABLES: [Table; 8] = [
    Table {
        name: "sites",
        from: "sites",
        site_filter: "t.id = $3",
        columns: &[
            col("id", "t.id"),
            col("name", "t.name"),
            col("slug", "t.slug"),
            col("from_name", "t.from_name"),
            structured(
                "brand_voice",
                "(SELECT json_build_object('tone', b.tone, 'audience', b.audience, \
                         'guidelines', b.guidelines, 'words_to_avoid', b.words_to_avoid, \
                         'updated_at', export_ts(b.updated_at)) \
                  FROM brand_voices b WHERE b.project_id = t.project_id AND b.site_id = t.id)",
            ),
            col("created_at", "export_ts(t.created_at)"),
            col("updated_at", "export_ts(t.updated_at)"),
        ],
    },
    Table {
        name: "campaigns",
        from: "campaigns",
        site_filter: "t.site_id = $3",
        columns: &[
            col("id", "t.id"),
            col("site_id", "t.site_id"),
            col("name", "t.name"),
            col("type", "t.type"),
            col("status", "t.status"),
            col("trigger_event_name", "t.trigger_event_name"),
            col("created_at", "export_ts(t.created_at)"),
            col("updated_at", "export_ts(t.updated_at)"),
        ],
    },
    Table {
        name: "templates",
        from: "templates",
        site_filter: "false",
        columns: &[
            col("id", "t.id"),
            col("name", "t.name"),
            col("brief", "t.brief"),
            col("subject_hint", "t.subject_hint"),
            col("category", "t.category"),
            structured("tags", "t.tags"),
            col("html", "t.html"),
            col("created_at", "export_ts(t.created_at)"),
            col("updated_at", "export_ts(t.updated_at)"),
        ],
    },
    Table {
        name: "suppressions",
        from: "suppressions",
        site_filter: "false",
        columns: &[
            col("id", "t.id"),
            col("email", "t.email"),
            col("reason", "t.reason"),
            col("note", "t.note"),
            col("created_at", "export_ts(t.created_at)"),
        ],
    },
    Table {
        name: "team_members",
        from: "team_members",
        site_filter: "false",
        columns: &[
            col("id", "t.id"),
            col("email", "t.email"),
            col("role", "t.role"),
            col("status", "t.status"),
            col("invited_at", "export_ts(t.invited_at)"),
            col("expires_at", "export_ts(t.expires_at)"),
            col("accepted_at", "export_ts(t.accepted_at)"),
        ],
    },
    Table {
        name: "api_keys",
        from: "api_keys",
        site_filter: "false",
        columns: &[
            col("id", "t.id"),
            col("name", "t.name"),
            col("scope", "t.scope"),
            structured("tool_groups", "t.tool_groups"),
            col("prefix", "t.key_prefix"),
            col("created_at", "export_ts(t.created_at)"),
            col("expires_at", "export_ts(t.expires_at)"),
            col("revoked_at", "export_ts(t.revoked_at)"),
        ],
    },
    Table {
        name: "notifications",
        from: "notifications",
        site_filter: "false",
        columns: &[
            col("id", "t.id"),
            col("kind", "t.kind"),
            col("title", "t.title"),
            structured("data", "t.data"),
            col("created_at", "export_ts(t.created_at)"),
            col("read_at", "export_ts(t.read_at)"),
        ],
    },
    Table {
        name: "deletion_log",
        from: "gdpr_deletion_log",
        site_filter: "false",
        columns: &[
            col("id", "t.id"),
            col("contact_id", "t.contact_id"),
            col("email_sha256", "t.email_sha256"),
            structured("erased", "t.erased"),
            col("key_id", "t.key_id"),
            col("created_at", "export_ts(t.created_at)"),
        ],
    },
];
