//! `rediss://`: a Redis started by the test with TLS only (no plain port), its certificate
//! issued by a test CA. The limiter given that CA connects and counts in Redis; given another
//! CA it cannot connect (the certificate does not verify) and answers from its fallback.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rate_limit::{Backend, Quota, RateLimiter, RedisConfig};
use tls_kit::testing::{TempDir, TestCa};

/// A `redis-server` with TLS on one port and no plain port; stopped on drop.
struct TlsRedis {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TlsRedis {
    fn start(ca: &TestCa) -> Self {
        let dir = TempDir::new("redis-tls");
        let (cert, key) = ca.issue(&["localhost"]).write(dir.path(), "server");
        let ca_file = ca.write(dir.path(), "ca.pem");
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--bind", "127.0.0.1", "--tls-port"])
            .arg(port.to_string())
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-key-file")
            .arg(&key)
            .arg("--tls-ca-cert-file")
            .arg(&ca_file)
            .args([
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server (Debian's package, built with TLS) on the PATH");
        let server = Self {
            child,
            port,
            _dir: dir,
        };
        // Ready when the TLS port accepts connections.
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

async fn limiter(url: &str, ca_file: &std::path::Path) -> RateLimiter {
    RateLimiter::new(Backend::Redis(
        RedisConfig::new(url)
            .with_ca_file(ca_file.to_str().unwrap())
            .with_timeout(Duration::from_secs(5)),
    ))
    .await
    .expect("a lazy limiter")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_with_the_test_ca_connects_and_another_ca_is_refused() {
    tls_kit::install();
    let ca = TestCa::new("redis test CA");
    let other = TestCa::new("another CA");
    let server = TlsRedis::start(&ca);
    let files = TempDir::new("redis-tls-client");
    let ca_file = ca.write(files.path(), "ca.pem");
    let other_file = other.write(files.path(), "other.pem");
    let url = format!("rediss://localhost:{}/0", server.port);

    let trusted = limiter(&url, &ca_file).await;
    let ping = trusted.ping().await;
    assert!(ping.is_ok(), "rediss:// with the test CA: {ping:?}");
    let q = [Quota::sliding(2, Duration::from_secs(60))];
    let allowed: Vec<bool> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(
                trusted
                    .check("tls-key", &q)
                    .await
                    .expect("a decision")
                    .allowed,
            );
        }
        v
    };
    assert_eq!(allowed, [true, true, false], "counted in Redis over TLS");
    let metrics = trusted.fallback_metrics().expect("a Redis limiter");
    assert_eq!(metrics.checks.get(), 0, "no check answered by the fallback");

    let refused = limiter(&url, &other_file).await;
    let ping = refused.ping().await;
    assert!(ping.is_err(), "a certificate of another CA was accepted");

    // The server's certificate names localhost only: the same server by address is refused.
    let wrong_name = limiter(&format!("rediss://127.0.0.1:{}/0", server.port), &ca_file).await;
    assert!(
        wrong_name.ping().await.is_err(),
        "a certificate for another name was accepted"
    );
}

#[test]
fn an_unreadable_ca_file_is_an_error() {
    let config = RedisConfig::new("rediss://localhost:6380/0").with_ca_file("/nonexistent/ca.pem");
    assert!(matches!(config.client(), Err(rate_limit::Error::CaFile(_))));
    // without TLS the CA file is not read
    let plain = RedisConfig::new("redis://localhost:6379/0").with_ca_file("/nonexistent/ca.pem");
    assert!(plain.client().is_ok());
    assert!(
        RedisConfig::new("rediss://localhost:6380/0")
            .with_ca_file("")
            .ca_file
            .is_none()
    );
}
