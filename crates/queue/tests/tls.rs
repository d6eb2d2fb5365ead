//! `amqps://`: a RabbitMQ node started by the test with a TLS listener only (no plain port), its
//! certificate issued by a test CA. A broker given that CA (`BROKER__CA_FILE`) connects and
//! round-trips a message; given another CA, or the server by a name its certificate does not
//! carry, it does not connect.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use queue::{Broker, BrokerConfig, QueueError};
use tls_kit::testing::{TempDir, TestCa};

const RABBIT_BIN: &str = "/usr/lib/rabbitmq/bin";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A private RabbitMQ node (its own name, ports and data directory), stopped on drop.
struct TlsRabbit {
    node: String,
    port: u16,
    dist_port: u16,
    dir: PathBuf,
    server: Child,
    _dir: TempDir,
}

impl TlsRabbit {
    fn start(ca: &TestCa) -> Self {
        let temp = TempDir::new("rabbit-tls");
        let dir = temp.path().to_owned();
        let (cert, key) = ca.issue(&["localhost"]).write(&dir, "server");
        let ca_file = ca.write(&dir, "ca.pem");
        let port = free_port();
        std::fs::write(dir.join("enabled_plugins"), "[].\n").unwrap();
        std::fs::write(dir.join("rabbitmq-env.conf"), "").unwrap();
        std::fs::write(
            dir.join("rabbitmq.conf"),
            format!(
                "listeners.tcp = none\n\
                 listeners.ssl.default = {port}\n\
                 ssl_options.cacertfile = {}\n\
                 ssl_options.certfile = {}\n\
                 ssl_options.keyfile = {}\n\
                 ssl_options.verify = verify_none\n\
                 ssl_options.fail_if_no_peer_cert = false\n",
                ca_file.display(),
                cert.display(),
                key.display()
            ),
        )
        .unwrap();
        let node = format!("tls{}@localhost", uuid::Uuid::now_v7().simple());
        let dist_port = free_port();
        let server = command(&dir, &node, dist_port, "rabbitmq-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rabbitmq-server (Debian's package)");
        let rabbit = Self {
            node,
            port,
            dist_port,
            dir,
            server,
            _dir: temp,
        };
        let started = Instant::now();
        while !rabbit.ctl(&["await_startup"]) {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the RabbitMQ node did not start (logs in {})",
                rabbit.dir.join("log").display()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        rabbit
    }

    fn ctl(&self, args: &[&str]) -> bool {
        command(&self.dir, &self.node, self.dist_port, "rabbitmqctl")
            .args(["-n", &self.node])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for TlsRabbit {
    fn drop(&mut self) {
        self.ctl(&["stop"]);
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn command(dir: &Path, node: &str, dist_port: u16, program: &str) -> Command {
    let mut cmd = Command::new(Path::new(RABBIT_BIN).join(program));
    cmd.env("HOME", dir)
        .env("RABBITMQ_NODENAME", node)
        .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
        .env("RABBITMQ_DIST_PORT", dist_port.to_string())
        .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
        .env("RABBITMQ_LOG_BASE", dir.join("log"))
        .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
        .env("RABBITMQ_CONF_ENV_FILE", dir.join("rabbitmq-env.conf"))
        .env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq"))
        .env("RABBITMQ_ADVANCED_CONFIG_FILE", dir.join("advanced.config"))
        .env("RABBITMQ_PID_FILE", dir.join("pid"));
    cmd
}

/// `patience`: how long to keep trying; a refused certificate fails every try, so the
/// refusals are checked with a short one.
async fn connect(url: &str, ca_file: &Path, patience: Duration) -> Result<Broker, QueueError> {
    let mut config = BrokerConfig::new(url)
        .with_connection_name("queue-tls-test")
        .with_ca_file(ca_file.to_str().unwrap())?;
    config.connect_timeout = patience;
    Broker::connect(config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqps_with_the_test_ca_connects_and_another_ca_is_refused() {
    tls_kit::install();
    let ca = TestCa::new("rabbitmq test CA");
    let other = TestCa::new("another CA");
    let rabbit = TlsRabbit::start(&ca);
    let files = TempDir::new("rabbit-tls-client");
    let ca_file = ca.write(files.path(), "ca.pem");
    let other_file = other.write(files.path(), "other.pem");
    let url = format!("amqps://guest:guest@localhost:{}/%2f", rabbit.port);

    let broker = connect(&url, &ca_file, Duration::from_secs(30))
        .await
        .expect("amqps:// with the test CA connects");
    broker.ping().await.expect("a round trip over TLS");
    broker.close().await;

    let refused = connect(&url, &other_file, Duration::from_secs(2)).await;
    assert!(
        refused.is_err(),
        "a certificate of another CA was accepted: {refused:?}"
    );

    // The certificate names localhost only: the same node by address is refused.
    let by_address = format!("amqps://guest:guest@127.0.0.1:{}/%2f", rabbit.port);
    let wrong_name = connect(&by_address, &ca_file, Duration::from_secs(2)).await;
    assert!(
        wrong_name.is_err(),
        "a certificate for another name was accepted: {wrong_name:?}"
    );
}

#[test]
fn an_unreadable_or_empty_ca_file_is_an_error_at_once() {
    let missing =
        BrokerConfig::new("amqps://localhost:5671/%2f").with_ca_file("/nonexistent/ca.pem");
    assert!(
        matches!(missing, Err(QueueError::Config(ref m)) if m.contains("/nonexistent/ca.pem")),
        "{missing:?}"
    );
    let dir = TempDir::new("rabbit-tls-empty");
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let not_pem =
        BrokerConfig::new("amqps://localhost:5671/%2f").with_ca_file(empty.to_str().unwrap());
    assert!(matches!(not_pem, Err(QueueError::Config(_))), "{not_pem:?}");
    let unset = BrokerConfig::new("amqp://localhost:5672/%2f")
        .with_ca_file("")
        .expect("an empty setting changes nothing");
    assert!(unset.ca_pem.is_none());
}
