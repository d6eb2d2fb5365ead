//! PostgreSQL over TLS: a throwaway cluster started by the test (`ssl = on`, a certificate
//! for `localhost` issued by a test CA) on a free port, stopped and removed afterwards. The
//! pool given `sslmode=verify-full&sslrootcert=<the test CA>` connects over TLS; given another
//! CA, or the same server under a name its certificate does not carry, it cannot connect.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use diesel::QueryableByName;
use diesel::sql_types::Bool;
use diesel_async::RunQueryDsl as _;
use store::PoolOptions;
use tls_kit::testing::{TempDir, TestCa};

/// The server's programs (`initdb`, `pg_ctl`): the newest under Debian's layout.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL server programs under /usr/lib/postgresql")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    versions.pop().expect("an initdb")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program args…`, as the `postgres` user when the test runs as root (the server refuses
/// to run as root).
fn run(program: &Path, args: &[&str]) {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = command
        .args(args)
        .output()
        .expect("run a PostgreSQL program");
    assert!(
        out.status.success(),
        "{} {args:?}: {}\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

struct TlsPostgres {
    dir: TempDir,
    port: u16,
}

impl TlsPostgres {
    fn start(ca: &TestCa) -> Self {
        let dir = TempDir::new("pg-tls");
        if is_root() {
            let ok = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown the cluster's directory to postgres");
        }
        let data = dir.path().join("data");
        let bin = bin_dir();
        run(
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        let (cert, key) = ca.issue(&["localhost"]).write(&data, "server");
        if is_root() {
            let ok = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&cert)
                .arg(&key)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown the server's key to postgres");
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let options = format!(
            "-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{}' \
             -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c fsync=off",
            dir.path().display()
        );
        run(
            &bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                dir.path().join("log").to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
        Self { dir, port }
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        run(
            &bin_dir().join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }
}

#[derive(QueryableByName)]
struct Ssl {
    #[diesel(sql_type = Bool)]
    ssl: bool,
}

async fn ssl_in_use(url: &str) -> Result<bool, String> {
    let pool = store::pool(url, &PoolOptions::default()).map_err(|e| e.to_string())?;
    let mut conn = store::conn(&pool).await.map_err(|e| e.to_string())?;
    let row: Ssl = diesel::sql_query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .get_result(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    Ok(row.ssl)
}

#[tokio::test]
async fn verify_full_with_the_test_ca_connects_over_tls_and_another_ca_is_refused() {
    tls_kit::install();
    let ca = TestCa::new("postgres test CA");
    let other = TestCa::new("another CA");
    let files = TempDir::new("pg-tls-client");
    let ca_file = ca.write(files.path(), "ca.pem");
    let other_file = other.write(files.path(), "other.pem");
    let server = TlsPostgres::start(&ca);
    let url = |host: &str, mode: &str, ca: &Path| {
        format!(
            "postgres://postgres@{host}:{}/postgres?sslmode={mode}&sslrootcert={}",
            server.port,
            ca.display()
        )
    };

    let tls = ssl_in_use(&url("localhost", "verify-full", &ca_file)).await;
    assert_eq!(tls, Ok(true), "verify-full with the test CA");
    let tls = ssl_in_use(&url("localhost", "require", &ca_file)).await;
    assert_eq!(tls, Ok(true), "require with the test CA");
    // migrations and LISTEN connect the same way
    store::run_migrations(
        &url("localhost", "verify-full", &ca_file),
        store::EmbeddedMigrations::new(&[]),
    )
    .await
    .expect("the migration connection over TLS");

    let refused = ssl_in_use(&url("localhost", "verify-full", &other_file)).await;
    assert!(
        refused.is_err(),
        "a certificate of another CA was accepted: {refused:?}"
    );
    let refused = ssl_in_use(&url("127.0.0.1", "verify-full", &ca_file)).await;
    assert!(
        refused.is_err(),
        "a certificate for another name was accepted: {refused:?}"
    );
    // without sslmode the connection is plain text, as before
    let plain = ssl_in_use(&format!(
        "postgres://postgres@localhost:{}/postgres",
        server.port
    ))
    .await;
    assert_eq!(plain, Ok(false));
}
