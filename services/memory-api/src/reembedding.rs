//! The re-embedding after a model upgrade, as this process sees it: the previous model (loaded
//! while rows still have only its vectors, so that search keeps finding them) and how many
//! rows remain, as last counted. Shared by every HTTP worker, the background pass and
//! `/readyz`; once no row remains, the previous model is dropped.

use std::sync::{Arc, RwLock};

use embed::Embedder;
use serde_json::{Value, json};

use crate::domain::reembedding::Translation;

/// The previous model, while rows are re-embedded.
pub struct Previous {
    /// Its embedder (with a query cache of its own).
    pub embedder: Arc<dyn Embedder>,
    /// Its cosines onto the configured model's scale.
    pub translation: Translation,
}

struct Active {
    previous: Arc<Previous>,
    remaining: i64,
}

/// Whether rows are being re-embedded, and with what.
#[derive(Default)]
pub struct Reembedding {
    active: RwLock<Option<Active>>,
}

impl Reembedding {
    /// Rows remain (`remaining`) with only `previous`'s vectors.
    pub fn start(&self, previous: Previous, remaining: i64) {
        *self.active.write().unwrap_or_else(|e| e.into_inner()) = Some(Active {
            previous: Arc::new(previous),
            remaining,
        });
    }

    /// The previous model, while rows remain.
    pub fn previous(&self) -> Option<Arc<Previous>> {
        self.read(|a| Arc::clone(&a.previous))
    }

    /// Whether rows remain, as last counted.
    pub fn is_active(&self) -> bool {
        self.read(|_| ()).is_some()
    }

    /// Records a new count: at 0 the re-embedding is over and the previous model is dropped.
    pub fn counted(&self, remaining: i64) {
        let mut active = self.active.write().unwrap_or_else(|e| e.into_inner());
        if remaining <= 0 {
            *active = None;
        } else if let Some(a) = active.as_mut() {
            a.remaining = remaining;
        }
    }

    /// The `reembedding` fact of `/readyz`: null, or the previous model and the rows remaining.
    pub fn fact(&self) -> Value {
        self.read(|a| {
            json!({
                "from": a.previous.embedder.name(),
                "remaining": a.remaining,
            })
        })
        .unwrap_or(Value::Null)
    }

    fn read<T>(&self, f: impl FnOnce(&Active) -> T) -> Option<T> {
        self.active
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(f)
    }
}
