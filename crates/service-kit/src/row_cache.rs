//! Read-mostly rows one HTTP worker read lately, so a read of them needs no query of its own.
//!
//! Every change of such a row notifies its table's channel with its owner's key (a trigger,
//! delivered on commit) on the worker's LISTEN connection, the one that also serves the
//! credential cache. A cached row answers a request only when the gate passed that
//! connection's barrier after the request arrived ([`auth::Synced`]): every change committed
//! before then, through any replica, has been applied here, so a write acknowledged anywhere
//! is seen by the next read everywhere. While the connection is down nothing is cached, and a
//! reconnection drops everything (what was missed is unknown).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use auth::Synced;
use store::listen::{ListenEvent, Subscribers};

/// Bounds memory; the whole cache is cleared when full (rows are cheap to refetch). Counts
/// remembered absences too, so asking for names that do not exist cannot grow it.
const MAX_ENTRIES: usize = 10_000;
/// Backstop against anything a notification would not cover.
const MAX_AGE: Duration = Duration::from_secs(300);

/// Reads an owner's key from a notification's payload; `None` (a truncation's `*`, or
/// anything unexpected) drops everything.
pub type ParseOwner<K> = fn(&str) -> Option<K>;

struct Entry<V> {
    /// `None`: no such row (remembered too).
    row: Option<V>,
    fetched: Instant,
}

/// An owner's rows, by name (`""` for a table of one row per owner).
type Rows<V> = HashMap<String, Entry<V>>;

struct Entries<K, V> {
    owners: HashMap<K, Rows<V>>,
    count: usize,
}

struct Inner<K, V> {
    entries: Mutex<Entries<K, V>>,
    /// True only while notifications are being received.
    synced: AtomicBool,
    /// Bumped by every event; a row read under an older generation may be stale.
    generation: AtomicU64,
    parse: ParseOwner<K>,
}

/// One worker's cache of one table's rows, by owner `K` (cheap to clone: the clones share it).
pub struct RowCache<K, V> {
    inner: Arc<Inner<K, V>>,
}

impl<K, V> Clone for RowCache<K, V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K, V> RowCache<K, V>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    fn new(parse: ParseOwner<K>) -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: Mutex::new(Entries {
                    owners: HashMap::new(),
                    count: 0,
                }),
                synced: AtomicBool::new(false),
                generation: AtomicU64::new(0),
                parse,
            }),
        }
    }

    /// A cache fed by the notifications of `channel` on the worker's LISTEN connection, whose
    /// payloads `parse` reads.
    pub fn subscribed(listen: &Subscribers, channel: &'static str, parse: ParseOwner<K>) -> Self {
        let cache = Self::new(parse);
        let inner = Arc::clone(&cache.inner);
        listen.subscribe(channel, move |event| inner.on_event(event));
        cache
    }

    /// The owner's row called `name`: from the cache when `synced` proves it current, else
    /// from `fetch` (whose answer is kept unless a change arrived while it ran).
    pub async fn find<E>(
        &self,
        synced: Option<Synced>,
        owner: &K,
        name: &str,
        fetch: impl AsyncFnOnce() -> Result<Option<V>, E>,
    ) -> Result<Option<V>, E> {
        self.find_when(synced.is_some(), owner, name, fetch).await
    }

    async fn find_when<E>(
        &self,
        synced: bool,
        owner: &K,
        name: &str,
        fetch: impl AsyncFnOnce() -> Result<Option<V>, E>,
    ) -> Result<Option<V>, E> {
        if synced && let Some(row) = self.inner.get(owner, name) {
            return Ok(row);
        }
        // Read before the query: a notification that lands during it wins.
        let generation = self.inner.generation();
        let row = fetch().await?;
        self.inner.put(owner, name, row.clone(), generation);
        Ok(row)
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Inner<K, V> {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn get(&self, owner: &K, name: &str) -> Option<Option<V>> {
        if !self.synced.load(Ordering::Acquire) {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .owners
            .get(owner)?
            .get(name)
            .filter(|entry| entry.fetched.elapsed() < MAX_AGE)
            .map(|entry| entry.row.clone())
    }

    fn put(&self, owner: &K, name: &str, row: Option<V>, generation: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !self.synced.load(Ordering::Acquire) || self.generation() != generation {
            return;
        }
        if entries.count >= MAX_ENTRIES {
            entries.clear();
        }
        let fetched = Instant::now();
        let rows = entries.owners.entry(owner.clone()).or_default();
        if rows
            .insert(name.to_owned(), Entry { row, fetched })
            .is_none()
        {
            entries.count += 1;
        }
    }

    fn on_event(&self, event: &ListenEvent) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        match event {
            ListenEvent::Connected => {
                entries.clear();
                self.synced.store(true, Ordering::Release);
            }
            ListenEvent::Disconnected => {
                self.synced.store(false, Ordering::Release);
                entries.clear();
            }
            ListenEvent::Notification(n) => match (self.parse)(&n.payload) {
                Some(owner) => {
                    if let Some(rows) = entries.owners.remove(&owner) {
                        entries.count -= rows.len();
                    }
                }
                None => entries.clear(),
            },
        }
    }
}

impl<K, V> Entries<K, V> {
    fn clear(&mut self) {
        self.owners.clear();
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use store::listen::Notification;

    use super::*;

    type Owner = (u32, String);

    fn parse(payload: &str) -> Option<Owner> {
        let (id, environment) = payload.split_once(' ')?;
        Some((id.parse().ok()?, environment.to_owned()))
    }

    fn key() -> Owner {
        (7, "live".to_owned())
    }

    fn synced_cache() -> Inner<Owner, u32> {
        let cache = RowCache::<Owner, u32>::new(parse);
        cache.inner.on_event(&ListenEvent::Connected);
        Arc::into_inner(cache.inner).unwrap()
    }

    fn notification(payload: &str) -> ListenEvent {
        ListenEvent::Notification(Notification {
            channel: "changed".into(),
            payload: payload.into(),
        })
    }

    #[test]
    fn rows_are_kept_only_while_notifications_flow() {
        let cache = synced_cache();
        cache.on_event(&ListenEvent::Disconnected);
        cache.put(&key(), "", Some(1), cache.generation());
        assert!(cache.get(&key(), "").is_none(), "not synced: nothing kept");
        cache.on_event(&ListenEvent::Connected);
        cache.put(&key(), "", Some(1), cache.generation());
        assert_eq!(cache.get(&key(), ""), Some(Some(1)));
        cache.on_event(&ListenEvent::Disconnected);
        assert!(cache.get(&key(), "").is_none(), "disconnected: dropped");
        cache.on_event(&ListenEvent::Connected);
        assert!(cache.get(&key(), "").is_none(), "reconnected: still empty");
    }

    #[test]
    fn a_notification_evicts_its_owner_and_a_wildcard_everyone() {
        let cache = synced_cache();
        let other = (7, "test".to_owned());
        cache.put(&key(), "a", Some(1), cache.generation());
        cache.put(&key(), "b", None, cache.generation());
        cache.put(&other, "a", None, cache.generation());
        cache.on_event(&notification("7 live"));
        assert!(cache.get(&key(), "a").is_none());
        assert!(cache.get(&key(), "b").is_none());
        assert_eq!(cache.get(&other, "a"), Some(None), "an absence is kept too");
        assert_eq!(cache.entries.lock().unwrap().count, 1);
        cache.on_event(&notification("*"));
        assert!(cache.get(&other, "a").is_none());
    }

    #[test]
    fn a_row_read_before_a_notification_is_not_kept() {
        let cache = synced_cache();
        let before = cache.generation();
        cache.on_event(&notification("7 live"));
        cache.put(&key(), "", Some(1), before);
        assert!(cache.get(&key(), "").is_none());
    }

    #[test]
    fn the_cache_is_emptied_when_full() {
        let cache = synced_cache();
        for n in 0..MAX_ENTRIES {
            cache.put(&key(), &n.to_string(), None, cache.generation());
        }
        assert_eq!(cache.get(&key(), "0"), Some(None));
        cache.put(&key(), "last", Some(1), cache.generation());
        assert!(cache.get(&key(), "0").is_none());
        assert_eq!(cache.get(&key(), "last"), Some(Some(1)));
    }

    #[tokio::test]
    async fn only_a_synced_request_is_answered_from_the_cache() {
        let cache = RowCache::<Owner, u32>::new(parse);
        cache.inner.on_event(&ListenEvent::Connected);
        let fetched = |version| async move || Ok::<_, ()>(Some(version));
        let first = cache.find_when(false, &key(), "", fetched(1)).await;
        assert_eq!(first, Ok(Some(1)));
        let unsynced = cache.find_when(false, &key(), "", fetched(2)).await;
        assert_eq!(unsynced, Ok(Some(2)), "no proof: asked again");
        let hit = cache.find_when(true, &key(), "", fetched(3)).await;
        assert_eq!(hit, Ok(Some(2)), "proof: the cached row");
    }
}
