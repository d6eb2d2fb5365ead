//! Development provider: each message becomes `<directory>/<email id>.eml`.

use std::path::PathBuf;

use futures_util::future::BoxFuture;

use super::{Accepted, Provider, SendError};
use crate::{OutgoingEmail, mime};

pub struct FileProvider {
    directory: PathBuf,
}

impl FileProvider {
    pub fn new(directory: impl Into<PathBuf>) -> Self {
        Self {
            directory: directory.into(),
        }
    }
}

impl Provider for FileProvider {
    fn name(&self) -> &'static str {
        "file"
    }

    /// Written to a temporary name and renamed, so a reader never sees half a message; a
    /// repeated send of the same id replaces the file with identical content (idempotent).
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let bytes = mime::render(email).map_err(|e| SendError::Permanent(e.to_string()))?;
            let io = |e: std::io::Error| {
                SendError::Temporary(format!("{}: {e}", self.directory.display()))
            };
            tokio::fs::create_dir_all(&self.directory)
                .await
                .map_err(io)?;
            let target = self.directory.join(format!("{}.eml", email.id));
            let partial = self.directory.join(format!(".{}.eml.partial", email.id));
            tokio::fs::write(&partial, &bytes).await.map_err(io)?;
            tokio::fs::rename(&partial, &target).await.map_err(io)?;
            Ok(Accepted {
                provider_message_id: email.message_id(),
            })
        })
    }
}
