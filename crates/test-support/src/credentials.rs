//! The server's memory of unknown credentials, watched through `/metrics`.

use std::fmt::Display;
use std::time::Duration;

use service_kit::testing::TestServer;

use crate::Client;

/// Three requests with `key` to `path` on each of `replicas`, each served: all of them have the
/// key cached. Answers a client with the key for each replica.
pub async fn warm<const N: usize>(
    replicas: [&TestServer; N],
    path: &str,
    key: &str,
) -> [Client; N] {
    let clients = replicas.map(|server| Client::of(server).with_key(key));
    for api in &clients {
        for _ in 0..3 {
            assert_eq!(api.get(path).await.status(), 200);
        }
    }
    clients
}

/// Requests to a route that needs a key, and the credential lookups they cost.
pub struct Lookups {
    api: Client,
    path: String,
}

impl Lookups {
    /// Watches `GET path` (a route that needs a key) on the server of `api`.
    pub fn new(api: Client, path: &str) -> Self {
        Self {
            api,
            path: path.to_owned(),
        }
    }

    /// `auth_credential_lookups_total` on the server's `/metrics`.
    pub async fn count(&self) -> u64 {
        let text = self.api.get("/metrics").await.text().await.unwrap();
        crate::metric(&text, "auth_credential_lookups_total")
    }

    /// The status of the route with `key`.
    pub async fn status_with(&self, key: &str) -> u16 {
        self.get_with(key).await.status().as_u16()
    }

    /// The route with `key`.
    pub async fn get_with(&self, key: &str) -> reqwest::Response {
        self.api.with_key(key).get(&self.path).await
    }

    /// Waits until `unknown`, a well-formed key no credential has, is refused without a
    /// lookup: the cache is used once the worker's LISTEN connection is up.
    pub async fn wait_until_remembered(&self, unknown: &str) {
        for _ in 0..100 {
            let before = self.count().await;
            assert_eq!(self.status_with(unknown).await, 401);
            if self.count().await == before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the unknown warm-up key was never remembered");
    }

    /// The key `key_id` (`key`, known to the server), set aside and deleted, is well-formed and
    /// unknown: ten requests with it, each answer checked by `refused`, cost one lookup; inserted
    /// again, the very next request is served.
    pub async fn assert_a_deleted_key_is_looked_up_once(
        &self,
        db_url: &str,
        key_id: impl Display,
        key: &str,
        refused: impl AsyncFn(reqwest::Response),
    ) {
        assert_eq!(self.status_with(key).await, 200);
        crate::sql::exec(
            db_url,
            &format!("CREATE TABLE set_aside AS SELECT * FROM api_keys WHERE id = '{key_id}'"),
        )
        .await;
        crate::sql::exec(
            db_url,
            &format!("DELETE FROM api_keys WHERE id = '{key_id}'"),
        )
        .await;
        let before = self.count().await;
        for _ in 0..10 {
            refused(self.get_with(key).await).await;
        }
        assert_eq!(self.count().await - before, 1, "one lookup for ten");

        crate::sql::exec(db_url, "INSERT INTO api_keys SELECT * FROM set_aside").await;
        assert_eq!(self.status_with(key).await, 200);
    }
}
