//! An authoritative DNS server in process (`hickory-server`) on a random loopback port, UDP
//! and TCP, serving one zone whose records a test adds and removes while it runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hickory_server::Server;
use hickory_server::proto::rr::rdata::{A, CNAME, SOA, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneHandler, ZoneType};
use tokio::net::{TcpListener, UdpSocket};

pub struct TestDns {
    pub addr: SocketAddr,
    zone: Arc<InMemoryZoneHandler>,
    /// Serves while it lives (its tasks stop when it is dropped).
    _server: Server<Catalog>,
}

fn name(text: &str) -> Name {
    Name::from_ascii(format!("{}.", text.trim_end_matches('.'))).expect("a DNS name")
}

impl TestDns {
    /// Serves the zone `origin` (with its SOA and nothing else yet).
    pub async fn start(origin: &str) -> Self {
        let origin = name(origin);
        let mut zone =
            InMemoryZoneHandler::empty(origin.clone(), ZoneType::Primary, AxfrPolicy::Deny);
        let soa = SOA::new(
            name(&format!("ns.{origin}")),
            name(&format!("hostmaster.{origin}")),
            1,
            3600,
            600,
            86_400,
            0,
        );
        assert!(zone.upsert_mut(Record::from_rdata(origin.clone(), 0, RData::SOA(soa)), 1));
        let zone = Arc::new(zone);
        let mut catalog = Catalog::new();
        catalog.upsert(
            LowerName::new(&origin),
            vec![Arc::clone(&zone) as Arc<dyn ZoneHandler>],
        );
        let (udp, tcp, addr) = bind_pair().await;
        let mut server = Server::new(catalog);
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(5), 16);
        Self {
            addr,
            zone,
            _server: server,
        }
    }

    /// `host:port` for `MAIL_DNS__RESOLVER`.
    pub fn resolver(&self) -> String {
        self.addr.to_string()
    }

    /// Adds a TXT record at `at` (split into strings of at most 255 bytes, as DNS hosts do).
    pub async fn add_txt(&self, at: &str, text: &str) {
        let parts = text
            .as_bytes()
            .chunks(255)
            .map(|c| String::from_utf8(c.to_vec()).expect("ASCII"))
            .collect();
        self.add(Record::from_rdata(name(at), 0, RData::TXT(TXT::new(parts))))
            .await;
    }

    /// Adds an A record at `at` (a blocklist's return code).
    pub async fn add_a(&self, at: &str, ip: std::net::Ipv4Addr) {
        self.add(Record::from_rdata(name(at), 0, RData::A(A(ip))))
            .await;
    }

    pub async fn add_cname(&self, at: &str, target: &str) {
        self.add(Record::from_rdata(
            name(at),
            0,
            RData::CNAME(CNAME(name(target))),
        ))
        .await;
    }

    async fn add(&self, record: Record) {
        assert!(self.zone.upsert(record, 1).await, "record added");
    }

    /// Removes every record of `record_type` at `at`.
    pub async fn remove(&self, at: &str, record_type: RecordType) {
        let key = RrKey::new(LowerName::new(&name(at)), record_type);
        assert!(
            self.zone.records_mut().await.remove(&key).is_some(),
            "{at} had a {record_type} record"
        );
    }
}

/// A UDP socket and a TCP listener on one free port: the UDP port the system picks may be
/// taken for TCP by another process, so a few ports are tried.
async fn bind_pair() -> (UdpSocket, TcpListener, std::net::SocketAddr) {
    for _ in 0..20 {
        let udp = UdpSocket::bind("127.0.0.1:0").await.expect("bind UDP");
        let addr = udp.local_addr().expect("UDP address");
        if let Ok(tcp) = TcpListener::bind(addr).await {
            return (udp, tcp, addr);
        }
    }
    panic!("no port free for both UDP and TCP after 20 tries");
}
