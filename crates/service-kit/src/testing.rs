//! Running a launched API inside a test: served on an ephemeral port, stopped at the end.

use actix_web::dev::ServerHandle;

use crate::server::{Background, Launched};

pub struct TestServer {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    handle: ServerHandle,
    background: Option<Background>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// Spawns `launched` (bound to `127.0.0.1:0` by the caller's settings).
    pub fn start(launched: Launched) -> Self {
        let handle = launched.server.handle();
        let task = tokio::spawn(launched.server);
        Self {
            base: format!("http://{}", launched.addr),
            handle,
            background: Some(launched.background),
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops gracefully: in-flight requests finish first.
    pub async fn stop(mut self) {
        self.handle.stop(true).await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let Some(background) = self.background.take() {
            background.finish().await;
        }
    }
}
