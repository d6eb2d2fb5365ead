//! Credential lookup with a per-replica cache that every replica drops entries from the moment
//! a credential changes (PostgreSQL LISTEN/NOTIFY on `credential_changed`, sent by a trigger on
//! the key tables). While the LISTEN connection is down the cache is bypassed, so a missed
//! notification can never keep a revoked key alive.
//!
//! A cache hit is trusted only after the listener's barrier ([`Listener::sync`]): every change
//! committed before the request arrived has then been applied, so a key revoked anywhere is
//! refused by every replica on the very next request. The barrier costs one empty query on the
//! listening connection shared by all requests waiting at that moment, not a lookup each.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use store::listen::{ListenEvent, Listener, Placement, Subscribers, dispatch, spawn_listener};
use tokio::sync::watch;

use crate::credential::{self, CredentialKind, hashes_equal};
use crate::jwt::JwtVerifier;
use crate::{AuthError, Caller, Environment, Origin, Scope, Scopes};

/// The NOTIFY channel the key-table triggers publish on.
pub const CHANNEL: &str = "credential_changed";
/// Bounds memory; the whole cache is cleared when full (entries are cheap to refetch).
const MAX_ENTRIES: usize = 100_000;
/// Backstop against anything a notification would not cover.
const MAX_AGE: Duration = Duration::from_secs(300);
/// How long a well-formed key that matched no row is answered 401 without asking again. Any
/// notification (a key inserted included) forgets every such miss at once.
const MISS_TTL: Duration = Duration::from_secs(30);
/// Bounds the misses remembered; they are all forgotten when full.
const MAX_MISSES: usize = 10_000;

/// `auth_credential_lookups_total`: the lookups that reached the store (cache misses), to be
/// registered once per process and shared by every worker's [`Authenticator`].
pub fn lookup_counter() -> prometheus::IntCounter {
    prometheus::IntCounter::new(
        "auth_credential_lookups_total",
        "Credential lookups that reached the database (not answered by the cache)",
    )
    .expect("static metric definition")
}

/// A credential row as the service's store returns it.
#[derive(Debug, Clone)]
pub struct StoredCredential {
    pub caller: Caller,
    pub key_hash: Vec<u8>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked: bool,
}

/// Why a credential lookup failed: an outage of the store (answered 503) or anything else
/// (500). Never "no such credential", which is `Ok(None)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    pub message: String,
    pub unavailable: bool,
}

impl LookupError {
    /// A database error, classed by [`store::is_unavailable`].
    pub fn database(err: &(dyn std::error::Error + 'static)) -> Self {
        Self {
            message: err.to_string(),
            unavailable: store::is_unavailable(err),
        }
    }
}

/// Anything that is not the database's: a bad stored value, a bug.
impl From<String> for LookupError {
    fn from(message: String) -> Self {
        Self {
            message,
            unavailable: false,
        }
    }
}

/// Each service looks credentials up in its own tables.
pub trait CredentialStore: Send + Sync + 'static {
    fn find(
        &self,
        kind: CredentialKind,
        hash: [u8; 32],
    ) -> impl Future<Output = Result<Option<StoredCredential>, LookupError>> + Send;

    /// The grade of the owner a verified first-party JWT names (`sub`); `None` when there is
    /// no such owner. Only services that accept JWTs need it.
    fn find_subject(
        &self,
        subject: uuid::Uuid,
    ) -> impl Future<Output = Result<Option<crate::Grade>, LookupError>> + Send {
        let _ = subject;
        async { Ok(None) }
    }
}

struct Entry {
    stored: StoredCredential,
    fetched: Instant,
}

/// What the cache knows about a hash.
enum Cached {
    Found(StoredCredential),
    /// Looked up recently and matched no row.
    Unknown,
}

#[derive(Default)]
struct Entries {
    found: HashMap<[u8; 32], Entry>,
    /// When each hash was last looked up in vain.
    misses: HashMap<[u8; 32], Instant>,
}

#[derive(Default)]
struct Cache {
    entries: Mutex<Entries>,
    /// True only while notifications are being received.
    synced: AtomicBool,
    /// Bumped by every event; an entry fetched under an older generation may be stale.
    generation: AtomicU64,
}

impl Cache {
    fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    fn get(&self, hash: &[u8; 32]) -> Option<Cached> {
        if !self.is_synced() {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = entries.found.get(hash)
            && entry.fetched.elapsed() < MAX_AGE
        {
            return Some(Cached::Found(entry.stored.clone()));
        }
        entries
            .misses
            .get(hash)
            .filter(|at| at.elapsed() < MISS_TTL)
            .map(|_| Cached::Unknown)
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches `stored` unless an event arrived since `generation` was read.
    fn put(&self, hash: [u8; 32], stored: StoredCredential, generation: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !self.synced.load(Ordering::Acquire) || self.generation() != generation {
            return;
        }
        if entries.found.len() >= MAX_ENTRIES {
            entries.found.clear();
        }
        let fetched = Instant::now();
        entries.found.insert(hash, Entry { stored, fetched });
    }

    /// Remembers that `hash` matched no row, unless an event arrived since `generation` was
    /// read (the key may have been inserted meanwhile).
    fn put_miss(&self, hash: [u8; 32], generation: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !self.synced.load(Ordering::Acquire) || self.generation() != generation {
            return;
        }
        if entries.misses.len() >= MAX_MISSES {
            entries.misses.clear();
        }
        entries.misses.insert(hash, Instant::now());
    }

    fn on_event(&self, event: &ListenEvent) {
        if matches!(event, ListenEvent::Notification(n) if n.channel != CHANNEL) {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        // Whatever happened, a key may now exist that did not: forget every miss.
        entries.misses.clear();
        match event {
            ListenEvent::Connected => {
                entries.found.clear();
                self.synced.store(true, Ordering::Release);
            }
            ListenEvent::Disconnected => {
                self.synced.store(false, Ordering::Release);
                entries.found.clear();
            }
            ListenEvent::Notification(n) => {
                let mut hash = [0u8; 32];
                match hex::decode_to_slice(n.payload.as_bytes(), &mut hash) {
                    Ok(()) => {
                        entries.found.remove(&hash);
                    }
                    // '*' (a tier or plan change) or anything unexpected: drop everything.
                    Err(_) => entries.found.clear(),
                }
            }
        }
    }
}

/// Authenticates bearer tokens of the service's credential kinds.
pub struct Authenticator<S> {
    store: S,
    accepted: &'static [CredentialKind],
    cache: Arc<Cache>,
    listener: OnceLock<Listener>,
    lookups: Option<prometheus::IntCounter>,
    jwt: Option<Arc<JwtVerifier>>,
}

impl<S: CredentialStore> Authenticator<S> {
    /// Without [`Self::listen`] the cache stays off and every request asks the store.
    pub fn new(store: S, accepted: &'static [CredentialKind]) -> Self {
        Self {
            store,
            accepted,
            cache: Arc::default(),
            listener: OnceLock::new(),
            lookups: None,
            jwt: None,
        }
    }

    /// Also accepts first-party JWTs the verifier takes (`None`: none).
    pub fn accept_jwt(mut self, verifier: Option<Arc<JwtVerifier>>) -> Self {
        self.jwt = verifier;
        self
    }

    /// A dashboard JWT: verified by signature, issuer, audience and expiry, then its subject
    /// must still exist. It acts first-party, with the token's scopes or else the full ones.
    async fn authenticate_jwt(&self, jwt: &JwtVerifier, token: &str) -> Result<Caller, AuthError> {
        let verified = jwt.verify(token)?;
        let grade = self
            .store
            .find_subject(verified.subject)
            .await
            .map_err(AuthError::from)?
            .ok_or(AuthError::Unknown)?;
        let full = Scopes::default()
            .with(Scope::Read)
            .with(Scope::Write)
            .with(Scope::Propose);
        Ok(Caller {
            // The user stands for the credential: the dashboard's rate limit is per user.
            key_id: verified.subject,
            owner_id: verified.subject,
            scopes: verified.scopes.unwrap_or(full),
            grade,
            origin: Origin::FirstParty,
            environment: Environment::Live,
            tool_groups: None,
            audience: None,
        })
    }

    /// Counts every lookup that reaches the store in `counter`.
    pub fn count_lookups(mut self, counter: prometheus::IntCounter) -> Self {
        self.lookups = Some(counter);
        self
    }

    /// Starts the LISTEN connection that keeps the cache trustworthy. An HTTP worker's
    /// authenticator listens on that worker's runtime ([`Placement::CurrentRuntime`]). The
    /// same connection serves `also`, so the barrier every authenticated request passes
    /// ([`Synced`]) covers their channels as well.
    pub fn listen(
        &self,
        database_url: String,
        shutdown: watch::Receiver<bool>,
        placement: Placement,
        also: &Subscribers,
    ) {
        let cache = Arc::clone(&self.cache);
        let also = also.snapshot();
        let mut channels = vec![CHANNEL];
        channels.extend(also.iter().map(|(channel, _)| *channel));
        channels.dedup();
        let listener = spawn_listener(database_url, channels, shutdown, placement, move |event| {
            cache.on_event(&event);
            dispatch(&also, &event);
        });
        if self.listener.set(listener).is_err() {
            tracing::warn!("the credential listener was started twice");
        }
    }

    /// Passes the listener's barrier, when the cache can be trusted at all.
    async fn barrier(&self) -> Option<Synced> {
        let listener = self.listener.get()?;
        (self.cache.is_synced() && listener.sync().await).then_some(Synced(()))
    }

    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Caller, AuthError> {
        self.authenticate_synced(authorization)
            .await
            .map(|(caller, _)| caller)
    }

    /// The caller, and whether the listener's barrier was passed on the way.
    pub async fn authenticate_synced(
        &self,
        authorization: Option<&str>,
    ) -> Result<(Caller, Option<Synced>), AuthError> {
        let token = credential::bearer_token(authorization)?;
        if let Some(jwt) = &self.jwt
            && JwtVerifier::looks_like_jwt(token)
        {
            return Ok((self.authenticate_jwt(jwt, token).await?, None));
        }
        let parsed = credential::parse(token, self.accepted)?;
        let synced = self.barrier().await;
        let cached = synced.and_then(|_| self.cache.get(&parsed.hash));
        let stored = match cached {
            Some(Cached::Found(stored)) => stored,
            Some(Cached::Unknown) => return Err(AuthError::Unknown),
            None => {
                // Read before the query: a notification that lands during it wins.
                let generation = self.cache.generation();
                if let Some(lookups) = &self.lookups {
                    lookups.inc();
                }
                let found = self
                    .store
                    .find(parsed.kind, parsed.hash)
                    .await
                    .map_err(AuthError::from)?;
                let Some(stored) = found else {
                    self.cache.put_miss(parsed.hash, generation);
                    return Err(AuthError::Unknown);
                };
                self.cache.put(parsed.hash, stored.clone(), generation);
                stored
            }
        };
        if !hashes_equal(&stored.key_hash, &parsed.hash) {
            return Err(AuthError::Unknown);
        }
        if stored.revoked {
            return Err(AuthError::Revoked);
        }
        if stored.expires_at.is_some_and(|at| at <= Utc::now()) {
            return Err(AuthError::Expired);
        }
        Ok((stored.caller, synced))
    }
}

/// Proof that the worker's listener passed its barrier after the request arrived: every
/// notification committed before then, on any channel the listener serves, has been handed
/// to its subscribers. The gate puts it in the request's extensions; a cache fed by those
/// notifications may answer that request without asking the database.
#[derive(Debug, Clone, Copy)]
pub struct Synced(());

/// Object-safe face of an [`Authenticator`], so the middleware does not care which store.
pub trait Authenticate: Send + Sync {
    fn authenticate<'a>(
        &'a self,
        authorization: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(Caller, Option<Synced>), AuthError>>;
}

impl<S: CredentialStore> Authenticate for Authenticator<S> {
    fn authenticate<'a>(
        &'a self,
        authorization: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(Caller, Option<Synced>), AuthError>> {
        Box::pin(Authenticator::authenticate_synced(self, authorization))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use rate_limit::policy::Tier;

    use super::*;
    use crate::{Environment, Grade, Origin, Scope, Scopes};

    /// A store that counts lookups and whose answer can be changed.
    struct FakeStore {
        lookups: AtomicUsize,
        revoked: AtomicBool,
        hash: [u8; 32],
    }

    impl CredentialStore for Arc<FakeStore> {
        async fn find(
            &self,
            _kind: CredentialKind,
            hash: [u8; 32],
        ) -> Result<Option<StoredCredential>, LookupError> {
            self.lookups.fetch_add(1, Ordering::SeqCst);
            if hash != self.hash {
                return Ok(None);
            }
            Ok(Some(StoredCredential {
                caller: Caller {
                    key_id: uuid::Uuid::nil(),
                    owner_id: uuid::Uuid::nil(),
                    scopes: Scopes::default().with(Scope::Read),
                    grade: Grade::Tier(Tier::Free),
                    origin: Origin::FirstParty,
                    environment: Environment::Live,
                    tool_groups: None,
                    audience: None,
                },
                key_hash: hash.to_vec(),
                expires_at: None,
                revoked: self.revoked.load(Ordering::SeqCst),
            }))
        }
    }

    fn notification(payload: impl Into<String>) -> ListenEvent {
        ListenEvent::Notification(store::listen::Notification {
            channel: CHANNEL.into(),
            payload: payload.into(),
        })
    }

    fn setup() -> (Authenticator<Arc<FakeStore>>, Arc<FakeStore>, String) {
        let credential = credential::generate(CredentialKind::MemoryLive);
        let store = Arc::new(FakeStore {
            lookups: AtomicUsize::new(0),
            revoked: AtomicBool::new(false),
            hash: credential.hash,
        });
        let auth = Authenticator::new(Arc::clone(&store), CredentialKind::MEMORY);
        (auth, store, format!("Bearer {}", credential.plaintext))
    }

    fn stored(store: &FakeStore) -> StoredCredential {
        StoredCredential {
            caller: Caller {
                key_id: uuid::Uuid::nil(),
                owner_id: uuid::Uuid::nil(),
                scopes: Scopes::default(),
                grade: Grade::Tier(Tier::Free),
                origin: Origin::FirstParty,
                environment: Environment::Live,
                tool_groups: None,
                audience: None,
            },
            key_hash: store.hash.to_vec(),
            expires_at: None,
            revoked: false,
        }
    }

    #[test]
    fn the_cache_holds_entries_only_while_notifications_flow() {
        let (auth, store, _) = setup();
        let cache = &auth.cache;
        cache.put(store.hash, stored(&store), cache.generation());
        assert!(
            !matches!(cache.get(&store.hash), Some(Cached::Found(_))),
            "not synced: nothing kept"
        );

        cache.on_event(&ListenEvent::Connected);
        cache.put(store.hash, stored(&store), cache.generation());
        assert!(
            matches!(cache.get(&store.hash), Some(Cached::Found(_))),
            "synced: kept"
        );

        cache.on_event(&ListenEvent::Disconnected);
        assert!(
            !matches!(cache.get(&store.hash), Some(Cached::Found(_))),
            "disconnected: dropped and bypassed"
        );
    }

    #[test]
    fn a_notification_evicts_one_entry_and_a_wildcard_all() {
        let (auth, store, _) = setup();
        let cache = &auth.cache;
        cache.on_event(&ListenEvent::Connected);
        let other = [7u8; 32];
        cache.put(store.hash, stored(&store), cache.generation());
        cache.put(other, stored(&store), cache.generation());
        cache.on_event(&notification(hex::encode(store.hash)));
        assert!(!matches!(cache.get(&store.hash), Some(Cached::Found(_))));
        assert!(matches!(cache.get(&other), Some(Cached::Found(_))));
        cache.on_event(&notification("*"));
        assert!(!matches!(cache.get(&other), Some(Cached::Found(_))));
    }

    #[test]
    fn a_notification_on_another_channel_is_not_the_caches() {
        let (auth, store, _) = setup();
        let cache = &auth.cache;
        cache.on_event(&ListenEvent::Connected);
        cache.put(store.hash, stored(&store), cache.generation());
        cache.on_event(&ListenEvent::Notification(store::listen::Notification {
            channel: "some_other_channel".into(),
            payload: "*".into(),
        }));
        assert!(matches!(cache.get(&store.hash), Some(Cached::Found(_))));
    }

    #[tokio::test]
    async fn without_a_listener_every_request_asks_the_store() {
        let (auth, store, header) = setup();
        auth.cache.on_event(&ListenEvent::Connected);
        auth.authenticate(Some(&header)).await.unwrap();
        auth.authenticate(Some(&header)).await.unwrap();
        assert_eq!(store.lookups.load(Ordering::SeqCst), 2);
        store.revoked.store(true, Ordering::SeqCst);
        assert_eq!(
            auth.authenticate(Some(&header)).await.unwrap_err(),
            AuthError::Revoked
        );
    }

    #[test]
    fn an_entry_fetched_before_a_notification_is_not_cached() {
        let (auth, store, _) = setup();
        auth.cache.on_event(&ListenEvent::Connected);
        let before = auth.cache.generation();
        auth.cache.on_event(&notification(hex::encode(store.hash)));
        auth.cache.put(store.hash, stored(&store), before);
        assert!(auth.cache.get(&store.hash).is_none());
    }

    #[test]
    fn a_miss_is_remembered_until_any_notification() {
        let (auth, store, _) = setup();
        let cache = &auth.cache;
        cache.on_event(&ListenEvent::Connected);
        cache.put_miss(store.hash, cache.generation());
        assert!(matches!(cache.get(&store.hash), Some(Cached::Unknown)));
        cache.on_event(&notification(hex::encode([9u8; 32])));
        assert!(cache.get(&store.hash).is_none(), "forgotten on any event");

        let before = cache.generation();
        cache.on_event(&notification(hex::encode(store.hash)));
        cache.put_miss(store.hash, before);
        assert!(
            cache.get(&store.hash).is_none(),
            "a miss older than an event"
        );

        cache.put_miss(store.hash, cache.generation());
        cache.on_event(&ListenEvent::Disconnected);
        assert!(cache.get(&store.hash).is_none());
    }

    #[tokio::test]
    async fn unknown_and_wrong_service_credentials_are_refused() {
        let (auth, _, _) = setup();
        let unknown = credential::generate(CredentialKind::MemoryLive).plaintext;
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {unknown}")))
                .await
                .unwrap_err(),
            AuthError::Unknown
        );
        let mail = credential::generate(CredentialKind::Mail).plaintext;
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {mail}")))
                .await
                .unwrap_err(),
            AuthError::Malformed
        );
        assert_eq!(
            auth.authenticate(None).await.unwrap_err(),
            AuthError::Missing
        );
    }
}
