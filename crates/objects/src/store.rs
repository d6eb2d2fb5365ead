//! The object store behind rendered files, chosen by configuration.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};
use serde::Deserialize;

use crate::{ObjectKey, UrlSigner};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Files under `dir`.
    #[default]
    Local,
    /// An S3-compatible bucket (`s3.*`).
    S3,
}

/// `<PREFIX>_OBJECTS__…`: where rendered files go and how their download URLs are signed.
#[derive(Clone, Deserialize)]
#[serde(default)]
pub struct ObjectSettings {
    /// `BACKEND`: `local` (default) or `s3`.
    pub backend: Backend,
    /// `DIR`: the local store's directory (created when missing).
    pub dir: String,
    pub s3: S3Settings,
    /// `SIGNING_KEY`: at least 32 random bytes in base64 signing download URLs. Empty: a key
    /// derived from the service's sealing key.
    pub signing_key: String,
    /// `URL_TTL_SECS`: how long a download URL stays valid.
    pub url_ttl_secs: u64,
    /// `PUBLIC_URL`: the service's public base URL download links start with (e.g.
    /// `https://memory.example.com`). Empty: a loopback `Host` of the request, else the address
    /// the service listens on (never a forwarded or foreign host).
    pub public_url: String,
}

impl Default for ObjectSettings {
    fn default() -> Self {
        Self {
            backend: Backend::Local,
            dir: "var/objects".into(),
            s3: S3Settings::default(),
            signing_key: String::new(),
            url_ttl_secs: 3600,
            public_url: String::new(),
        }
    }
}

impl std::fmt::Debug for ObjectSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectSettings")
            .field("backend", &self.backend)
            .field("dir", &self.dir)
            .field("s3", &self.s3)
            .field("url_ttl_secs", &self.url_ttl_secs)
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

/// `<PREFIX>_OBJECTS__S3__…`: an S3-compatible bucket (AWS, MinIO, R2, …).
#[derive(Clone, Default, Deserialize)]
#[serde(default)]
pub struct S3Settings {
    pub bucket: String,
    /// Empty for AWS itself; e.g. `http://127.0.0.1:9000` for MinIO.
    pub endpoint: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Allow a plain-HTTP endpoint (local MinIO).
    pub allow_http: bool,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("allow_http", &self.allow_http)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    #[error("object store configuration: {0}")]
    Config(String),
    #[error("object not found")]
    NotFound,
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
}

/// The configured object store.
#[derive(Clone)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Objects({})", self.store)
    }
}

impl Objects {
    pub fn from_settings(settings: &ObjectSettings) -> Result<Self, ObjectsError> {
        let store: Arc<dyn ObjectStore> = match settings.backend {
            Backend::Local => {
                std::fs::create_dir_all(&settings.dir).map_err(|e| {
                    ObjectsError::Config(format!("cannot create {}: {e}", settings.dir))
                })?;
                Arc::new(LocalFileSystem::new_with_prefix(&settings.dir)?)
            }
            Backend::S3 => {
                let s3 = &settings.s3;
                if s3.bucket.is_empty() {
                    return Err(ObjectsError::Config("OBJECTS__S3__BUCKET is empty".into()));
                }
                let mut builder = AmazonS3Builder::new()
                    .with_bucket_name(&s3.bucket)
                    .with_allow_http(s3.allow_http);
                if !s3.endpoint.is_empty() {
                    builder = builder.with_endpoint(&s3.endpoint);
                }
                if !s3.region.is_empty() {
                    builder = builder.with_region(&s3.region);
                }
                if !s3.access_key_id.is_empty() {
                    builder = builder
                        .with_access_key_id(&s3.access_key_id)
                        .with_secret_access_key(&s3.secret_access_key);
                }
                Arc::new(builder.build()?)
            }
        };
        Ok(Self { store })
    }

    /// Stores `bytes` under `key`, replacing what was there (so a retried render that stores
    /// its file again is harmless).
    pub async fn put(&self, key: &ObjectKey, bytes: Vec<u8>) -> Result<(), ObjectsError> {
        self.store
            .put(&path(key), PutPayload::from(Bytes::from(bytes)))
            .await?;
        Ok(())
    }

    /// The whole object (for tests and small files; downloads stream with [`Self::open`]).
    pub async fn get(&self, key: &ObjectKey) -> Result<Bytes, ObjectsError> {
        Ok(self.open(key).await?.bytes().await?)
    }

    /// The object, to stream: its size is `result.meta.size`.
    pub async fn open(&self, key: &ObjectKey) -> Result<object_store::GetResult, ObjectsError> {
        match self.store.get(&path(key)).await {
            Err(object_store::Error::NotFound { .. }) => Err(ObjectsError::NotFound),
            other => Ok(other?),
        }
    }

    pub async fn delete(&self, key: &ObjectKey) -> Result<(), ObjectsError> {
        match self.store.delete(&path(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }
}

fn path(key: &ObjectKey) -> Path {
    Path::from(key.as_str())
}

impl ObjectSettings {
    /// The download URL signer: the configured key, else one derived from `fallback_secret`
    /// (the service's sealing key).
    pub fn signer(&self, fallback_secret: &[u8]) -> Result<UrlSigner, ObjectsError> {
        let ttl = Duration::from_secs(self.url_ttl_secs.max(1));
        if self.signing_key.is_empty() {
            return UrlSigner::derived_from(fallback_secret, ttl)
                .map_err(|e| ObjectsError::Config(e.into()));
        }
        let key = base64::engine::general_purpose::STANDARD
            .decode(self.signing_key.trim())
            .map_err(|_| ObjectsError::Config("OBJECTS__SIGNING_KEY is not base64".into()))?;
        UrlSigner::new(&key, ttl).map_err(|e| ObjectsError::Config(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_local_store_keeps_and_replaces_objects() {
        let dir = std::env::temp_dir().join(format!("objects-test-{}", std::process::id()));
        let settings = ObjectSettings {
            dir: dir.to_string_lossy().into_owned(),
            ..ObjectSettings::default()
        };
        let objects = Objects::from_settings(&settings).unwrap();
        let key = ObjectKey::parse("producibles/x.csv").unwrap();
        assert!(matches!(
            objects.get(&key).await,
            Err(ObjectsError::NotFound)
        ));
        objects.put(&key, b"a,b\n".to_vec()).await.unwrap();
        objects.put(&key, b"c,d\n".to_vec()).await.unwrap();
        assert_eq!(&objects.get(&key).await.unwrap()[..], b"c,d\n");
        objects.delete(&key).await.unwrap();
        objects.delete(&key).await.unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_signer_comes_from_the_key_or_the_fallback() {
        let mut settings = ObjectSettings::default();
        assert!(settings.signer(&[1u8; 32]).is_ok());
        assert!(settings.signer(&[1u8; 8]).is_err());
        settings.signing_key = "not base64!".into();
        assert!(settings.signer(&[1u8; 32]).is_err());
        settings.signing_key = base64::engine::general_purpose::STANDARD.encode([3u8; 32]);
        assert!(settings.signer(&[]).is_ok());
    }
}
