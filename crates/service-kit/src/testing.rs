//! Running a launched API inside a test: served on an ephemeral port, stopped at the end.

use actix_web::dev::ServerHandle;

use crate::config::{CommonSettings, RateLimitBackend};
use crate::server::{Background, Launched};

/// `common` made fit for a test server: the database at `db_url` with a small pool, one worker
/// on an ephemeral port of 127.0.0.1, a short graceful stop and the in-process limiter.
pub fn adapt(common: &mut CommonSettings, db_url: &str) {
    common.database.url = db_url.to_owned();
    common.database.pool_size = 4;
    common.http.bind = "127.0.0.1:0".to_owned();
    common.http.workers = 1;
    common.http.shutdown_timeout_secs = 5;
    common.rate_limit.backend = RateLimitBackend::Inprocess;
}

/// `common` with the Redis limiter under the key prefix `prefix`.
pub fn use_redis(common: &mut CommonSettings, prefix: &str) {
    common.rate_limit.backend = RateLimitBackend::Redis;
    common.rate_limit.key_prefix = prefix.to_owned();
}

/// A served API. [`TestServer::stop`] stops it gracefully; dropped without that (a test that
/// failed), it is stopped at once.
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

impl Drop for TestServer {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else {
            return;
        };
        // The stop command is sent when `stop` is called; its future only waits for the end.
        drop(self.handle.stop(false));
        task.abort();
        if let Some(background) = self.background.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(background.finish());
        }
    }
}
