//! The workspace's one TLS stack: rustls with the ring crypto provider.
//!
//! Every TLS user of the workspace (reqwest, lettre, the Redis and PostgreSQL clients) is
//! built on rustls with its default features off, so no crate brings OpenSSL or aws-lc in.
//! Cargo unifies features across a build: had any crate asked rustls for a second provider,
//! rustls could no longer pick one by itself, which is why the provider is named here and
//! installed explicitly. [`install`] is called at the start of every binary's `main` and by
//! the test harnesses, before any client is built (reqwest panics without a provider).
//!
//! Certificates are checked against the system's roots, which honour `SSL_CERT_FILE` and
//! `SSL_CERT_DIR`; a setting that takes a CA file ([`client_config`]) adds its certificates.

#[cfg(feature = "testing")]
pub mod testing;

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// Installs the ring provider as the process's default; a second call does nothing.
pub fn install() {
    // Err means a provider is already installed: ours, by an earlier call.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The provider every configuration of the workspace is built with.
pub fn provider() -> Arc<CryptoProvider> {
    install();
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// Why a TLS client configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("CA file {path}: {reason}")]
    CaFile { path: String, reason: String },
    #[error("no trusted root certificate: the system has none and no CA file was given")]
    NoRoots,
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The certificates of a PEM file (one or more `CERTIFICATE` blocks).
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |reason: String| TlsError::CaFile {
        path: path.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| error(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(e.to_string()))?;
    if certs.is_empty() {
        return Err(error("no certificate in it".into()));
    }
    Ok(certs)
}

/// The roots a connection trusts: the CA file's certificates when one is given, else the
/// system's (which honour `SSL_CERT_FILE` / `SSL_CERT_DIR`).
pub fn root_store(ca_file: Option<&Path>) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            for cert in read_ca_file(path)? {
                store.add(cert)?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
        }
    }
    if store.is_empty() {
        return Err(TlsError::NoRoots);
    }
    Ok(store)
}

/// A client configuration that verifies the server's certificate chain and name against
/// [`root_store`]`(ca_file)`.
pub fn client_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let roots = root_store(ca_file)?;
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_twice_is_harmless_and_the_provider_is_ring() {
        install();
        install();
        let provider = provider();
        assert!(!provider.cipher_suites.is_empty());
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_an_error() {
        let missing = client_config(Some(Path::new("/nonexistent/ca.pem")));
        assert!(
            matches!(missing, Err(TlsError::CaFile { .. })),
            "{missing:?}"
        );
        let dir = std::env::temp_dir().join(format!("tls-kit-empty-{}", std::process::id()));
        std::fs::write(&dir, "not a certificate\n").unwrap();
        let empty = client_config(Some(&dir));
        std::fs::remove_file(&dir).unwrap();
        assert!(matches!(empty, Err(TlsError::CaFile { .. })), "{empty:?}");
    }
}
