//! A database per test, cloned from a template that was migrated once: tests run in parallel
//! (in threads or in separate processes) and never see each other's rows.
//!
//! The template's name carries a hash of the migrations the test binary embeds (each one's name
//! and the SQL it runs), so it always describes what the binary would run: a binary built from
//! other migrations (an older build, another checkout on the same server) builds and uses a
//! template of its own instead of reusing one made by different SQL. Building it is serialized across processes by an advisory lock, and it is
//! renamed into place only once fully migrated.

use std::path::Path;
use std::time::Duration;

use diesel::migration::MigrationSource;
use diesel::pg::Pg;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use diesel_migrations::EmbeddedMigrations;

use crate::{StoreError, run_migrations};

mod schema_check;

pub use schema_check::schema_drift;

/// The server tests use, without a database name.
pub fn server_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

/// A database that exists for as long as this value; dropped (forcefully) after.
pub struct TestDatabase {
    pub url: String,
    pub name: String,
    server: String,
}

impl TestDatabase {
    /// Clones the migrated template of `service` (building it first if needed).
    /// `migrations` makes the embedded set afresh (a set is used up by a run).
    pub async fn new(
        service: &str,
        migrations: fn() -> EmbeddedMigrations,
    ) -> Result<Self, StoreError> {
        let server = server_url();
        let template = template_name(service, &migrations())?;
        ensure_template(&server, service, &template, migrations()).await?;
        let name = format!("t_{service}_{}", uuid::Uuid::new_v4().simple());
        let mut admin = admin_connection(&server).await?;
        let mut attempt = 0;
        loop {
            let created = diesel::sql_query(format!(
                "CREATE DATABASE \"{name}\" TEMPLATE \"{template}\""
            ))
            .execute(&mut admin)
            .await;
            let Err(err) = created else { break };
            attempt += 1;
            let message = err.to_string();
            if attempt > 50 {
                return Err(err.into());
            } else if message.contains("being accessed") {
                // Another process is still disconnecting from the template.
                tokio::time::sleep(Duration::from_millis(50)).await;
            } else if message.contains("does not exist") {
                // A checkout with other migrations dropped it as stale: build it again.
                ensure_template(&server, service, &template, migrations()).await?;
            } else {
                return Err(err.into());
            }
        }
        Ok(Self {
            url: format!("{server}/{name}"),
            name,
            server,
        })
    }
}

impl TestDatabase {
    /// A database with nothing in it (for tests of the `migrate` command itself).
    pub async fn empty(service: &str) -> Result<Self, StoreError> {
        let server = server_url();
        let name = format!("t_{service}_{}", uuid::Uuid::new_v4().simple());
        let mut admin = admin_connection(&server).await?;
        diesel::sql_query(format!("CREATE DATABASE \"{name}\""))
            .execute(&mut admin)
            .await?;
        Ok(Self {
            url: format!("{server}/{name}"),
            name,
            server,
        })
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let server = self.server.clone();
        let name = self.name.clone();
        // Drop runs outside any runtime guarantee: use a private one on a plain thread.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let mut admin = admin_connection(&server).await.ok()?;
                diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            tracing::warn!(database = %self.name, "test database not dropped");
        }
    }
}

async fn admin_connection(server: &str) -> Result<AsyncPgConnection, StoreError> {
    Ok(AsyncPgConnection::establish(&format!("{server}/postgres")).await?)
}

/// `tpl_<service>_<hash>`, the hash over every embedded migration in order: its name, whether
/// it runs in a transaction, and the SQL its `up` executes.
pub fn template_name(service: &str, migrations: &EmbeddedMigrations) -> Result<String, StoreError> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for (name, in_transaction, up) in embedded_migrations(migrations)? {
        for part in [name.as_bytes(), &[u8::from(in_transaction)], up.as_bytes()] {
            // Length-prefixed, so that no two different sets hash the same bytes.
            ctx.update(&(part.len() as u64).to_le_bytes());
            ctx.update(part);
        }
    }
    let hash = hex::encode(ctx.finish());
    Ok(format!("tpl_{service}_{}", &hash[..16]))
}

/// Each embedded migration's name, transaction flag and up SQL, sorted by name (the order
/// diesel applies them in). The SQL is read by running the migration against [`Recorder`],
/// which keeps what it is given instead of executing it.
fn embedded_migrations(
    migrations: &EmbeddedMigrations,
) -> Result<Vec<(String, bool, String)>, StoreError> {
    let list = MigrationSource::<Pg>::migrations(migrations)
        .map_err(|e| StoreError::Migration(e.to_string()))?;
    let mut out = Vec::with_capacity(list.len());
    for migration in list {
        let mut recorder = Recorder::default();
        migration
            .run(&mut recorder)
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        out.push((
            migration.name().to_string(),
            migration.metadata().run_in_transaction(),
            recorder.sql,
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// A stand-in connection that records the SQL an embedded migration runs (an embedded
/// migration does nothing but `batch_execute` its `up.sql`).
#[derive(Default)]
struct Recorder {
    sql: String,
}

impl diesel::connection::SimpleConnection for Recorder {
    fn batch_execute(&mut self, query: &str) -> diesel::QueryResult<()> {
        self.sql.push_str(query);
        Ok(())
    }
}

impl diesel::connection::BoxableConnection<Pg> for Recorder {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

async fn ensure_template(
    server: &str,
    service: &str,
    template: &str,
    migrations: EmbeddedMigrations,
) -> Result<(), StoreError> {
    let mut admin = admin_connection(server).await?;
    if database_exists(&mut admin, template).await? {
        return Ok(());
    }
    diesel::sql_query(format!("SELECT pg_advisory_lock(hashtext('{template}'))"))
        .execute(&mut admin)
        .await?;
    let built = build_template(server, &mut admin, service, template, migrations).await;
    diesel::sql_query(format!("SELECT pg_advisory_unlock(hashtext('{template}'))"))
        .execute(&mut admin)
        .await?;
    built
}

async fn build_template(
    server: &str,
    admin: &mut AsyncPgConnection,
    service: &str,
    template: &str,
    migrations: EmbeddedMigrations,
) -> Result<(), StoreError> {
    if database_exists(admin, template).await? {
        return Ok(()); // another process built it while we waited for the lock
    }
    let building = format!("{template}_building");
    diesel::sql_query(format!(
        "DROP DATABASE IF EXISTS \"{building}\" WITH (FORCE)"
    ))
    .execute(admin)
    .await?;
    diesel::sql_query(format!("CREATE DATABASE \"{building}\""))
        .execute(admin)
        .await?;
    run_migrations(&format!("{server}/{building}"), migrations).await?;
    diesel::sql_query(format!(
        "ALTER DATABASE \"{building}\" RENAME TO \"{template}\""
    ))
    .execute(admin)
    .await?;
    drop_stale_templates(admin, service, template).await;
    Ok(())
}

/// How many templates of one service are kept: other checkouts on the same server (a CI clone,
/// a branch) may be using theirs.
const TEMPLATES_KEPT: i64 = 8;

/// Templates of older migration sets are no longer useful: all but the newest few (by oid, which
/// grows with creation) are dropped. One still in use is rebuilt by the next `new`.
async fn drop_stale_templates(admin: &mut AsyncPgConnection, service: &str, keep: &str) {
    #[derive(diesel::QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        datname: String,
    }
    let stale: Vec<Name> = diesel::sql_query(format!(
        "SELECT datname FROM pg_database WHERE datname LIKE 'tpl\\_{service}\\_%' \
         AND datname NOT LIKE '%\\_building' AND datname <> '{keep}' \
         ORDER BY oid::bigint DESC OFFSET {}",
        TEMPLATES_KEPT - 1
    ))
    .load(admin)
    .await
    .unwrap_or_default();
    for Name { datname } in stale {
        let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{datname}\""))
            .execute(admin)
            .await;
    }
}

async fn database_exists(admin: &mut AsyncPgConnection, name: &str) -> Result<bool, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        found: bool,
    }
    let row: Found =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS found")
            .bind::<diesel::sql_types::Text, _>(name)
            .get_result(admin)
            .await?;
    Ok(row.found)
}

/// Checks that every `down.sql` undoes its `up.sql`: on an empty database, run every migration,
/// revert them all, run them again, and find nothing left to apply.
/// `migrations` makes the set afresh each time (an embedded set is used up by a run).
pub async fn assert_migrations_round_trip(service: &str, migrations: fn() -> EmbeddedMigrations) {
    let db = TestDatabase::empty(service).await.expect("empty database");
    let applied = run_migrations(&db.url, migrations())
        .await
        .expect("first run");
    assert!(!applied.is_empty(), "no migrations to apply");
    let reverted = crate::revert_all_migrations(&db.url, migrations())
        .await
        .expect("revert all");
    assert_eq!(reverted, applied.len(), "every migration reverts");
    let again = run_migrations(&db.url, migrations())
        .await
        .expect("second run");
    assert_eq!(again, applied, "the same migrations apply again");
    let rest = run_migrations(&db.url, migrations())
        .await
        .expect("third run");
    assert!(rest.is_empty(), "nothing left to apply");
}

/// Checks a service's `schema.rs` (its text) against a database cloned from its migrated
/// template: every table and column diesel declares exists there, typed and nullable as declared.
pub async fn assert_schema_matches_migrations(
    service: &str,
    migrations: fn() -> EmbeddedMigrations,
    schema_rs: &str,
) {
    let db = TestDatabase::new(service, migrations)
        .await
        .expect("migrated database");
    let drift = schema_drift(&db.url, schema_rs).await;
    assert!(
        drift.is_empty(),
        "schema.rs and the migrations disagree:\n{}",
        drift.join("\n")
    );
}

/// Prepares every statement (`(name, text)`, as [`statements!`](crate::statements) lists them)
/// on `conn`, a database migrated like production, and deallocates it: a statement naming a
/// table, column or function the migrations do not make, or whose parameters cannot be typed,
/// fails here. Nothing is executed. Panics listing every statement that does not prepare.
pub async fn assert_statements_prepare(
    conn: &mut AsyncPgConnection,
    statements: &[(&str, String)],
) {
    assert!(!statements.is_empty(), "no statements to prepare");
    let mut failed = Vec::new();
    for (i, (name, text)) in statements.iter().enumerate() {
        let handle = format!("statement_check_{i}");
        let prepared = diesel::sql_query(format!("PREPARE {handle} AS {}", text.trim_end()))
            .execute(conn)
            .await;
        match prepared {
            Ok(_) => {
                diesel::sql_query(format!("DEALLOCATE {handle}"))
                    .execute(conn)
                    .await
                    .expect("deallocate");
            }
            Err(err) => failed.push(format!("{name}: {err}")),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} statements do not prepare:\n{}",
        failed.len(),
        statements.len(),
        failed.join("\n")
    );
}

/// Checks that the `.sql` files under `dir` are exactly those `listed` (paths relative to `dir`,
/// `/`-separated): a file nobody declared is never prepared by the test, nor run.
pub fn assert_statement_files_listed(dir: &Path, listed: &[&str]) {
    let mut files = Vec::new();
    collect_files(dir, &mut files);
    let mut on_disk: Vec<String> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "sql"))
        .filter_map(|f| f.strip_prefix(dir).ok())
        .map(|f| {
            f.components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    on_disk.sort();
    let mut declared: Vec<String> = listed.iter().map(|s| (*s).to_owned()).collect();
    declared.sort();
    let undeclared: Vec<&String> = on_disk.iter().filter(|f| !declared.contains(f)).collect();
    let missing: Vec<&String> = declared.iter().filter(|f| !on_disk.contains(f)).collect();
    assert!(
        undeclared.is_empty() && missing.is_empty(),
        "statement files and the declared list disagree: not declared {undeclared:?}, \
         declared but absent {missing:?}"
    );
    assert!(
        !on_disk.is_empty(),
        "no statement files under {}",
        dir.display()
    );
}
