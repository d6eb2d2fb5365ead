//! Where rendered videos and reusable scene chunks are stored.

use std::path::PathBuf;

/// The object store of rendered files.
#[derive(Debug, Clone)]
pub struct Assets {
    dir: PathBuf,
}

impl Assets {
    pub fn local(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), String> {
        let path = self.dir.join(key);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| format!("store {key}: {e}"))?;
        }
        tokio::fs::write(&path, bytes)
            .await
            .map_err(|e| format!("store {key}: {e}"))
    }

    /// The object, or `None` when it is gone.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        match tokio::fs::read(self.dir.join(key)).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(format!("read {key}: {err}")),
        }
    }
}
