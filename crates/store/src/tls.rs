//! Connections to PostgreSQL, over TLS when the URL asks for it.
//!
//! `sslmode` in the URL's query: `disable`, `allow`, `prefer` or none connect in plain text
//! (as before); `require`, `verify-ca` and `verify-full` connect over TLS (the workspace's
//! rustls) and always verify the server's certificate chain and name, against `sslrootcert`
//! (a PEM file of CA certificates) when given, else the system's roots. This is stricter than
//! libpq, whose `require` and `verify-ca` skip some checks: a connection here is never
//! encrypted without being verified.

use std::path::PathBuf;

use diesel::ConnectionError;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};

/// How to reach the server: the URL without the TLS parameters, and the TLS to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    /// `Some` for TLS: the CA file (`None`: the system's roots).
    pub tls: Option<Option<PathBuf>>,
}

/// Reads `sslmode` and `sslrootcert` out of a `postgres://` URL's query.
pub fn target(url: &str) -> Result<Target, String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok(Target {
            url: url.to_owned(),
            tls: None,
        });
    };
    let mut mode = None;
    let mut root_cert = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some(value.to_owned()),
            "sslrootcert" => root_cert = Some(PathBuf::from(percent_decode(value)?)),
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let tls = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => None,
        Some("require" | "verify-ca" | "verify-full") => Some(root_cert),
        Some(other) => {
            return Err(format!(
                "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, \
                 verify-full"
            ));
        }
    };
    Ok(Target { url, tls })
}

fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in {value:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{value:?} is not UTF-8"))
}

/// A connection to `url`, over TLS when its `sslmode` asks for it.
pub async fn establish(url: &str) -> Result<AsyncPgConnection, ConnectionError> {
    let target = target(url).map_err(ConnectionError::BadConnection)?;
    let Some(ca_file) = target.tls else {
        return AsyncPgConnection::establish(&target.url).await;
    };
    let config = tls_kit::client_config(ca_file.as_deref())
        .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
    let mut pg: tokio_postgres::Config = target
        .url
        .parse()
        .map_err(|e: tokio_postgres::Error| ConnectionError::BadConnection(e.to_string()))?;
    pg.ssl_mode(tokio_postgres::config::SslMode::Require);
    let (client, connection) = pg
        .connect(tokio_postgres_rustls::MakeRustlsConnect::new(config))
        .await
        .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
    AsyncPgConnection::try_from_client_and_connection(client, connection).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_read_out_of_the_url() {
        let plain = target("postgres://u:p@h:5432/db").unwrap();
        assert_eq!(plain.tls, None);
        assert_eq!(plain.url, "postgres://u:p@h:5432/db");
        let prefer = target("postgres://h/db?sslmode=prefer&application_name=x").unwrap();
        assert_eq!(prefer.tls, None);
        assert_eq!(prefer.url, "postgres://h/db?application_name=x");
        let full =
            target("postgres://h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem").unwrap();
        assert_eq!(full.tls, Some(Some(PathBuf::from("/etc/ca.pem"))));
        assert_eq!(full.url, "postgres://h/db");
        let require = target("postgres://h/db?sslmode=require").unwrap();
        assert_eq!(require.tls, Some(None));
        assert!(target("postgres://h/db?sslmode=bogus").is_err());
    }
}
