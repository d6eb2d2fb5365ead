//! Where rendered videos and reusable scene chunks are stored: the object store memory-api
//! serves signed downloads from.

use objects::{ObjectKey, Objects, ObjectsError};

/// The object store of rendered files, by key.
#[derive(Debug, Clone)]
pub struct Assets {
    objects: Objects,
}

impl Assets {
    pub fn new(objects: Objects) -> Self {
        Self { objects }
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), String> {
        self.objects
            .put(&parse(key)?, bytes)
            .await
            .map_err(|e| format!("store {key}: {e}"))
    }

    /// The object, or `None` when it is gone.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        match self.objects.get(&parse(key)?).await {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(ObjectsError::NotFound) => Ok(None),
            Err(err) => Err(format!("read {key}: {err}")),
        }
    }
}

impl Assets {
    /// Removes the object (gone already is fine).
    pub async fn delete(&self, key: &str) -> Result<(), String> {
        self.objects
            .delete(&parse(key)?)
            .await
            .map_err(|e| format!("delete {key}: {e}"))
    }
}

fn parse(key: &str) -> Result<ObjectKey, String> {
    ObjectKey::parse(key).ok_or_else(|| format!("{key} is not an object key"))
}
