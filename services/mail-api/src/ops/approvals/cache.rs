//! What every gate asks before an action, kept by each replica so that an action the policy
//! does not hold back costs no query: the projects' policies (forgotten when one changes, by
//! the trigger on `approval_policies`) and the keys' marks (set once, in the transaction that
//! makes the key). A request that passed the listener's barrier ([`auth::Synced`]) reads
//! them here; any other reads the database. A connection is taken only to read what is not
//! cached.

use auth::{Caller, Synced};
use http_kit::ApiError;
use service_kit::row_cache::RowCache;
use store::Pool;
use store::listen::Subscribers;
use uuid::Uuid;

use crate::db::approvals::{self, Policy};

/// The NOTIFY channel of the triggers on `approval_policies` (payload: the project id).
const POLICY_CHANNEL: &str = "approval_policy_changed";

/// One replica's policies and key marks (cheap to clone: the clones share them).
#[derive(Clone)]
pub struct GateCache {
    policies: RowCache<Uuid, Policy>,
    /// By project, then key id: `(agent, approve)`.
    marks: RowCache<Uuid, (bool, bool)>,
}

impl GateCache {
    pub fn subscribed(listen: &Subscribers) -> Self {
        Self {
            policies: RowCache::subscribed(listen, POLICY_CHANNEL, |p| p.parse().ok()),
            // A key's marks never change; a key changing (its payload is no project id)
            // empties this cache, which costs a query per key at most.
            marks: RowCache::subscribed(listen, auth::cache::CHANNEL, |p| p.parse().ok()),
        }
    }

    /// The cache as a request reads it: `synced` when it passed the barrier (REST), `None`
    /// to read the database (tools, jobs).
    pub fn view(&self, synced: Option<Synced>) -> GateView<'_> {
        GateView {
            cache: self,
            synced,
        }
    }
}

/// The cache as one request may read it.
#[derive(Clone, Copy)]
pub struct GateView<'a> {
    pub cache: &'a GateCache,
    /// Present when the request passed the barrier; `None` reads the database.
    pub synced: Option<Synced>,
}

impl GateView<'_> {
    /// The project's policy row, if one was set.
    pub(super) async fn policy(
        &self,
        pool: &Pool,
        project_id: Uuid,
    ) -> Result<Option<Policy>, ApiError> {
        let fetch = async || {
            let mut conn = store::conn(pool).await?;
            Ok::<_, ApiError>(approvals::policy(&mut conn, project_id).await?)
        };
        self.cache
            .policies
            .find(self.synced, &project_id, "", fetch)
            .await
    }

    /// The caller's key's `(agent, approve)` marks (`None`: not a key of the project).
    pub(super) async fn marks(
        &self,
        pool: &Pool,
        caller: &Caller,
    ) -> Result<Option<(bool, bool)>, ApiError> {
        let fetch = async || {
            let mut conn = store::conn(pool).await?;
            Ok::<_, ApiError>(
                approvals::key_marks(&mut conn, caller.owner_id, caller.key_id).await?,
            )
        };
        self.cache
            .marks
            .find(
                self.synced,
                &caller.owner_id,
                &caller.key_id.to_string(),
                fetch,
            )
            .await
    }
}
