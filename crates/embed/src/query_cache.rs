//! A bounded, least-recently-used cache of query vectors in front of an [`Embedder`]: a search
//! repeated by the same asker (see [`Embedder::embed_query_as`]) skips the model. Only query
//! vectors are cached; stored texts always go to the model.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use tokio::sync::OnceCell;

use crate::{BoxFuture, EmbedError, Embedder};

/// How many query vectors are kept unless configured otherwise (about 1.5 KB each for a
/// 384-dimension model, plus the query text).
pub const DEFAULT_QUERY_CACHE_ENTRIES: usize = 4096;

/// `inner` with its query vectors cached, at most `entries` of them; `inner` itself when
/// `entries` is 0.
pub fn with_query_cache(inner: Arc<dyn Embedder>, entries: usize) -> Arc<dyn Embedder> {
    if entries == 0 {
        return inner;
    }
    Arc::new(QueryCache {
        inner,
        vectors: Arc::new(Lru::new(entries)),
    })
}

/// The vector of a query is the vector of its normalised text: queries that differ only in
/// spacing (or, for an uncased model, in case) share one entry, and the first of them is
/// embedded in its normalised form so that the entry is exactly what each would get.
struct QueryCache {
    inner: Arc<dyn Embedder>,
    /// Shared with the same model calling with a user's own credential: the vectors are the same.
    vectors: Arc<Lru<Arc<OnceCell<Vec<f32>>>>>,
}

impl Embedder for QueryCache {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        self.inner.embed(texts)
    }

    fn query_prefix(&self) -> &str {
        self.inner.query_prefix()
    }

    fn passage_prefix(&self) -> &str {
        self.inner.passage_prefix()
    }

    fn uncased(&self) -> bool {
        self.inner.uncased()
    }

    fn embed_query<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>, EmbedError>> {
        self.embed_query_as("", query)
    }

    fn embed_query_as<'a>(
        &'a self,
        asker: &'a str,
        query: &'a str,
    ) -> BoxFuture<'a, Result<Vec<f32>, EmbedError>> {
        async move {
            let text = normalize_query(query, self.inner.uncased());
            let key = cache_key(asker, self.inner.name(), &text);
            let cell = self
                .vectors
                .get_or_insert_with(key, || Arc::new(OnceCell::new()));
            // Concurrent misses of one query wait for the first caller's computation; when it
            // fails (or is dropped) the next waiter computes instead.
            let vector = cell
                .get_or_try_init(|| self.inner.embed_query(&text))
                .await?;
            Ok(vector.clone())
        }
        .boxed()
    }

    fn embed_passages<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        self.inner.embed_passages(texts)
    }

    fn credential_service(&self) -> Option<&str> {
        self.inner.credential_service()
    }

    fn with_credential(&self, api_key: String) -> Option<Arc<dyn Embedder>> {
        let inner = self.inner.with_credential(api_key)?;
        Some(Arc::new(QueryCache {
            inner,
            vectors: Arc::clone(&self.vectors),
        }))
    }
}

/// Trimmed, every run of whitespace made one space, and lowercased character by character
/// (as a lowercasing tokenizer does: no final-sigma rule) when the model is uncased.
pub fn normalize_query(query: &str, uncased: bool) -> String {
    let mut out = String::with_capacity(query.len());
    for word in query.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        if uncased {
            out.extend(word.chars().flat_map(char::to_lowercase));
        } else {
            out.push_str(word);
        }
    }
    out
}

/// Who asks, the model and the normalised query (which holds no newline). The length of
/// `asker` comes first so that no asker's name can end inside another's key.
fn cache_key(asker: &str, model: &str, normalized: &str) -> Arc<str> {
    Arc::from(format!("{}:{asker}\n{model}\n{normalized}", asker.len()))
}

/// A map of at most `capacity` entries that drops the least recently used one to make room.
struct Lru<V> {
    capacity: usize,
    state: Mutex<LruState<V>>,
}

struct LruState<V> {
    entries: HashMap<Arc<str>, Slot<V>>,
    /// The keys by their last use, oldest first.
    by_use: BTreeMap<u64, Arc<str>>,
    clock: u64,
}

struct Slot<V> {
    value: V,
    used: u64,
}

impl<V: Clone> Lru<V> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            state: Mutex::new(LruState {
                entries: HashMap::new(),
                by_use: BTreeMap::new(),
                clock: 0,
            }),
        }
    }

    /// The value of `key` (now the most recently used), inserting `make()` when absent.
    fn get_or_insert_with(&self, key: Arc<str>, make: impl FnOnce() -> V) -> V {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *state;
        state.clock += 1;
        let now = state.clock;
        if let Some(slot) = state.entries.get_mut(&key) {
            state.by_use.remove(&slot.used);
            slot.used = now;
            state.by_use.insert(now, key);
            return slot.value.clone();
        }
        if state.entries.len() >= self.capacity
            && let Some((_, oldest)) = state.by_use.pop_first()
        {
            state.entries.remove(&oldest);
        }
        let value = make();
        state.by_use.insert(now, Arc::clone(&key));
        state.entries.insert(
            key,
            Slot {
                value: value.clone(),
                used: now,
            },
        );
        value
    }

    #[cfg(test)]
    fn contains(&self, key: &str) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.entries.contains_key(key)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Semaphore;

    use super::*;

    /// Vectors that name their text's length, counting the texts it was asked to embed; with a
    /// gate, each call waits for a permit.
    struct Counting {
        calls: AtomicUsize,
        texts: Mutex<Vec<String>>,
        uncased: bool,
        gate: Option<Semaphore>,
        fail: bool,
    }

    impl Counting {
        fn new(uncased: bool) -> Self {
            Self {
                calls: AtomicUsize::new(0),
                texts: Mutex::new(Vec::new()),
                uncased,
                gate: None,
                fail: false,
            }
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    impl Embedder for Counting {
        fn name(&self) -> &str {
            "test/counting"
        }

        fn dimensions(&self) -> usize {
            1
        }

        fn uncased(&self) -> bool {
            self.uncased
        }

        fn embed<'a>(
            &'a self,
            texts: &'a [String],
        ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
            async move {
                self.calls.fetch_add(1, Ordering::SeqCst);
                self.texts.lock().unwrap().extend(texts.iter().cloned());
                if let Some(gate) = &self.gate {
                    gate.acquire().await.unwrap().forget();
                }
                if self.fail {
                    return Err(EmbedError::Inference("failing on purpose".into()));
                }
                Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
            }
            .boxed()
        }
    }

    fn cached(inner: &Arc<Counting>, entries: usize) -> Arc<dyn Embedder> {
        with_query_cache(Arc::clone(inner) as Arc<dyn Embedder>, entries)
    }

    #[test]
    fn normalisation_trims_collapses_and_lowercases_only_uncased() {
        assert_eq!(
            normalize_query("  Which\tDB \n\n for  payments? ", false),
            "Which DB for payments?"
        );
        assert_eq!(
            normalize_query("  Which\tDB \n for  payments? ", true),
            "which db for payments?"
        );
        assert_eq!(normalize_query("ÉCOLE", true), "école");
        // Character by character, as the tokenizer lowercases: no final sigma.
        assert_eq!(normalize_query("ΟΔΟΣ", true), "οδοσ");
        assert_eq!(normalize_query(" \u{3000}x\u{a0}y ", false), "x y");
        assert_eq!(normalize_query("   ", true), "");
    }

    #[tokio::test]
    async fn a_repeated_query_is_embedded_once() {
        let inner = Arc::new(Counting::new(false));
        let embedder = cached(&inner, 8);
        let first = embedder
            .embed_query("where are secrets kept")
            .await
            .unwrap();
        let second = embedder
            .embed_query("where are secrets kept")
            .await
            .unwrap();
        assert_eq!(first, second);
        assert_eq!(inner.calls(), 1);
        embedder.embed_query("another question").await.unwrap();
        assert_eq!(inner.calls(), 2);
    }

    #[tokio::test]
    async fn spacing_never_matters_and_case_only_for_a_cased_model() {
        let uncased = Arc::new(Counting::new(true));
        let embedder = cached(&uncased, 8);
        embedder
            .embed_query("Where are  secrets kept")
            .await
            .unwrap();
        embedder
            .embed_query("  where ARE secrets\tkept ")
            .await
            .unwrap();
        assert_eq!(uncased.calls(), 1);
        // What the model saw is the normalised text.
        assert_eq!(*uncased.texts.lock().unwrap(), ["where are secrets kept"]);

        let cased = Arc::new(Counting::new(false));
        let embedder = cached(&cased, 8);
        embedder
            .embed_query("Where are secrets kept")
            .await
            .unwrap();
        embedder
            .embed_query(" Where are  secrets kept")
            .await
            .unwrap();
        assert_eq!(cased.calls(), 1);
        embedder
            .embed_query("where are secrets kept")
            .await
            .unwrap();
        assert_eq!(cased.calls(), 2);
    }

    #[tokio::test]
    async fn the_least_recently_used_query_is_evicted() {
        let inner = Arc::new(Counting::new(false));
        let embedder = cached(&inner, 2);
        embedder.embed_query("a").await.unwrap();
        embedder.embed_query("b").await.unwrap();
        embedder.embed_query("a").await.unwrap(); // b is now the oldest
        embedder.embed_query("c").await.unwrap(); // evicts b
        assert_eq!(inner.calls(), 3);
        embedder.embed_query("a").await.unwrap();
        embedder.embed_query("c").await.unwrap();
        assert_eq!(inner.calls(), 3);
        embedder.embed_query("b").await.unwrap();
        assert_eq!(inner.calls(), 4);
    }

    #[test]
    fn the_map_never_holds_more_than_its_capacity() {
        let lru = Lru::new(3);
        for i in 0..10 {
            let key: Arc<str> = Arc::from(format!("k{i}"));
            assert_eq!(lru.get_or_insert_with(key, || i), i);
            assert!(lru.len() <= 3);
        }
        assert!(!lru.contains("k6"));
        assert!(lru.contains("k7") && lru.contains("k8") && lru.contains("k9"));
        // A hit returns the stored value, not a new one.
        assert_eq!(lru.get_or_insert_with(Arc::from("k7"), || 99), 7);
    }

    #[tokio::test]
    async fn askers_never_share_entries() {
        let inner = Arc::new(Counting::new(false));
        let embedder = cached(&inner, 8);
        embedder.embed_query_as("alice", "q").await.unwrap();
        embedder.embed_query_as("alice", "q").await.unwrap();
        assert_eq!(inner.calls(), 1);
        embedder.embed_query_as("bob", "q").await.unwrap();
        assert_eq!(inner.calls(), 2);
        embedder.embed_query("q").await.unwrap();
        assert_eq!(inner.calls(), 3);
    }

    #[tokio::test]
    async fn zero_entries_disables_the_cache() {
        let inner = Arc::new(Counting::new(false));
        let embedder = cached(&inner, 0);
        embedder.embed_query("q").await.unwrap();
        embedder.embed_query("q").await.unwrap();
        assert_eq!(inner.calls(), 2);
    }

    #[tokio::test]
    async fn concurrent_misses_of_one_query_share_one_computation() {
        let inner = Arc::new(Counting {
            gate: Some(Semaphore::new(0)),
            ..Counting::new(false)
        });
        let embedder = cached(&inner, 8);
        // Polled in order: the first call starts the computation and waits at the gate, the
        // second finds it under way, then the gate opens.
        let (a, b, ()) = futures_util::future::join3(
            embedder.embed_query("q"),
            embedder.embed_query("q"),
            async { inner.gate.as_ref().unwrap().add_permits(1) },
        )
        .await;
        assert_eq!(a.unwrap(), b.unwrap());
        assert_eq!(inner.calls(), 1);
    }

    #[tokio::test]
    async fn failures_are_not_cached_and_passages_are_never_cached() {
        let failing = Arc::new(Counting {
            fail: true,
            ..Counting::new(false)
        });
        let embedder = cached(&failing, 8);
        assert!(embedder.embed_query("q").await.is_err());
        assert!(embedder.embed_query("q").await.is_err());
        assert_eq!(failing.calls(), 2);

        let inner = Arc::new(Counting::new(false));
        let embedder = cached(&inner, 8);
        let texts = vec!["p".to_owned()];
        embedder.embed_passages(&texts).await.unwrap();
        embedder.embed_passages(&texts).await.unwrap();
        assert_eq!(inner.calls(), 2);
    }
}
