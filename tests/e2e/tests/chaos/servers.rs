//! Servers a chaos test starts, stops and restarts itself, on spare ports and in a temporary
//! directory of their own, so the machine's servers are never touched: a PostgreSQL cluster,
//! a RabbitMQ node and a Redis server. Each is stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::free_port;

/// A fresh directory under the system's temporary directory.
fn temp_dir(kind: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chaos-{kind}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn wait_until(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "{what} not ready within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A PostgreSQL cluster of Debian's installed server, trust authentication, its socket in its
/// own directory. PostgreSQL refuses to run as root: as root, the cluster runs as `postgres`.
pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    dir: PathBuf,
    as_postgres: bool,
}

impl Postgres {
    pub fn start() -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL's server binaries")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .max()
            .expect("an initdb");
        let dir = temp_dir("pg");
        let as_postgres = is_root();
        if as_postgres {
            assert!(status(
                Command::new("chown").args(["-R", "postgres:"]).arg(&dir)
            ));
        }
        let pg = Self {
            port: free_port(),
            bin,
            dir,
            as_postgres,
        };
        let data = pg.dir.join("data");
        assert!(
            status(
                pg.command("initdb")
                    .args(["-U", "postgres", "--auth=trust", "-D"])
                    .arg(&data)
            ),
            "initdb"
        );
        pg.start_server();
        pg
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }

    pub fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        assert!(
            status(
                self.command("pg_ctl")
                    .arg("-D")
                    .arg(self.dir.join("data"))
                    .args(["-o", &options, "-l"])
                    .arg(self.dir.join("log"))
                    .args(["-w", "start"])
            ),
            "pg_ctl start"
        );
    }

    /// A fast shutdown: sessions are terminated (SQLSTATE 57P01), new connections refused.
    pub fn stop_server(&self) {
        assert!(
            status(
                self.command("pg_ctl")
                    .arg("-D")
                    .arg(self.dir.join("data"))
                    .args(["-m", "fast", "-w", "stop"])
            ),
            "pg_ctl stop"
        );
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    pub fn create_database(&self, name: &str) {
        assert!(status(
            Command::new(self.bin.join("createdb"))
                .args(["-h", "127.0.0.1", "-U", "postgres", "-p"])
                .arg(self.port.to_string())
                .arg(name)
        ));
    }

    /// The rows of a one-column query, as text.
    pub fn query(&self, database: &str, sql: &str) -> Vec<String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-U", "postgres", "-XtA", "-p"])
            .arg(self.port.to_string())
            .args(["-d", database, "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A RabbitMQ node of its own name, ports and directories (no plugins), sharing only the
/// machine's epmd.
pub struct Rabbit {
    pub port: u16,
    node: String,
    dir: PathBuf,
    dist_port: u16,
    server: Option<Child>,
}

const RABBIT_BIN: &str = "/usr/lib/rabbitmq/bin";

impl Rabbit {
    pub fn start() -> Self {
        let dir = temp_dir("rabbit");
        std::fs::write(dir.join("enabled_plugins"), "[].\n").unwrap();
        std::fs::write(dir.join("rabbitmq-env.conf"), "").unwrap();
        let mut rabbit = Self {
            port: free_port(),
            node: format!("chaos{}@localhost", uuid::Uuid::new_v4().simple()),
            dir,
            dist_port: free_port(),
            server: None,
        };
        rabbit.start_server();
        rabbit
    }

    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(Path::new(RABBIT_BIN).join(program));
        let dir = &self.dir;
        cmd.env("HOME", dir)
            .env("RABBITMQ_NODENAME", &self.node)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", dir.join("log"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
            .env("RABBITMQ_CONF_ENV_FILE", dir.join("rabbitmq-env.conf"))
            .env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", dir.join("advanced.config"))
            .env("RABBITMQ_PID_FILE", dir.join("pid"));
        cmd
    }

    pub fn start_server(&mut self) {
        let child = self
            .command("rabbitmq-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rabbitmq-server");
        self.server = Some(child);
        let node = self.node.clone();
        wait_until("the RabbitMQ node", Duration::from_secs(90), || {
            status(
                self.command("rabbitmqctl")
                    .args(["-n", &node, "await_startup"]),
            )
        });
    }

    pub fn stop_server(&mut self) {
        let node = self.node.clone();
        assert!(status(
            self.command("rabbitmqctl").args(["-n", &node, "stop"])
        ));
        if let Some(mut child) = self.server.take() {
            let _ = child.wait();
        }
    }
}

impl Drop for Rabbit {
    fn drop(&mut self) {
        if self.server.is_some() {
            let node = self.node.clone();
            let _ = self
                .command("rabbitmqctl")
                .args(["-n", &node, "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if let Some(mut child) = self.server.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis server without persistence.
pub struct Redis {
    pub port: u16,
    server: Option<Child>,
}

impl Redis {
    pub fn start() -> Self {
        let mut redis = Self {
            port: free_port(),
            server: None,
        };
        redis.start_server();
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn start_server(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--bind", "127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server");
        self.server = Some(child);
        let port = self.port;
        wait_until("Redis", Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }

    pub fn stop_server(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop_server();
    }
}
