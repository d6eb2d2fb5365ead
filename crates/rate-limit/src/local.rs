//! In-process backend: a mutex-guarded map, never held across an await.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use crate::{Decision, Quota, Usage, Window, decide, micros};

/// Stale slots are swept at least this often (µs)...
const SWEEP_INTERVAL_US: u64 = 60 * 1_000_000;
/// ...and whenever the map has doubled since the last sweep (at least this).
const MIN_SWEEP_LEN: usize = 1_024;

pub(crate) struct LocalStore {
    state: Mutex<State>,
}

struct State {
    slots: HashMap<SlotKey, Slot>,
    next_sweep_us: u64,
    sweep_at_len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SlotKey {
    key: String,
    window: Window,
}

enum Slot {
    Fixed {
        index: u64,
        count: u64,
    },
    /// The admissions in the window, ascending, one entry per millisecond that had any, and
    /// their number.
    Sliding {
        log: VecDeque<Admitted>,
        total: u64,
    },
}

/// The admissions of one millisecond (aligned to the epoch): they leave the window together,
/// when the last of them does. A burst thus costs the log at most an entry a millisecond,
/// however many requests it brings, and a slot is never freed early (at most 1 ms late).
#[derive(Debug, Clone, Copy)]
struct Admitted {
    /// The latest admission time (µs).
    last: u64,
    count: u64,
}

/// The width of a log entry (µs).
const ENTRY_US: u64 = 1_000;

fn same_entry(a: u64, b: u64) -> bool {
    a / ENTRY_US == b / ENTRY_US
}

impl Slot {
    /// Whether the slot no longer holds anything that counts at `now`.
    fn is_stale(&self, window: Window, now: u64) -> bool {
        let len = micros(window.length());
        match self {
            Slot::Fixed { index, .. } => (index + 1).saturating_mul(len) <= now,
            Slot::Sliding { log, .. } => {
                log.back().is_none_or(|a| a.last.saturating_add(len) <= now)
            }
        }
    }
}

impl LocalStore {
    pub(crate) fn new() -> Self {
        LocalStore {
            state: Mutex::new(State {
                slots: HashMap::new(),
                next_sweep_us: 0,
                sweep_at_len: MIN_SWEEP_LEN,
            }),
        }
    }

    /// Checks and (if every quota has room) counts one request at `now` (µs).
    /// Quotas are already validated.
    pub(crate) fn check(&self, now: u64, key: &str, quotas: &[Quota]) -> Decision {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        state.maybe_sweep(now);

        let slot_keys: Vec<SlotKey> = quotas
            .iter()
            .map(|q| SlotKey {
                key: key.to_owned(),
                window: q.window,
            })
            .collect();

        // Read every quota first; nothing is written unless all have room.
        let mut usages: Vec<Usage> = quotas
            .iter()
            .zip(&slot_keys)
            .map(|(q, sk)| {
                let len = micros(q.window.length());
                let mut used = 0;
                let reset_us = match q.window {
                    Window::Fixed(_) => {
                        let index = now / len;
                        if q.limit.is_some()
                            && let Some(Slot::Fixed { index: i, count }) = state.slots.get(sk)
                            && *i == index
                        {
                            used = *count;
                        }
                        (index + 1).saturating_mul(len)
                    }
                    Window::Sliding(_) => {
                        if q.limit.is_some()
                            && let Some(Slot::Sliding { log, total }) = state.slots.get_mut(sk)
                        {
                            while let Some(oldest) =
                                log.front().filter(|a| a.last.saturating_add(len) <= now)
                            {
                                *total -= oldest.count;
                                log.pop_front();
                            }
                            release_unused(log);
                            used = *total;
                        }
                        // Refined below for limited quotas.
                        now.saturating_add(len)
                    }
                };
                Usage {
                    limit: q.limit,
                    used,
                    reset_us,
                }
            })
            .collect();

        let allowed = usages.iter().all(|u| !u.is_full());

        for ((q, sk), usage) in quotas.iter().zip(slot_keys).zip(&mut usages) {
            let Some(limit) = q.limit else { continue };
            let len = micros(q.window.length());
            match q.window {
                Window::Fixed(_) => {
                    if allowed {
                        usage.used += 1;
                        state.slots.insert(
                            sk,
                            Slot::Fixed {
                                index: now / len,
                                count: usage.used,
                            },
                        );
                    }
                }
                Window::Sliding(_) => {
                    // Slot keys include the window kind, so this always matches.
                    let Slot::Sliding { log, total } =
                        state.slots.entry(sk).or_insert_with(|| Slot::Sliding {
                            log: VecDeque::new(),
                            total: 0,
                        })
                    else {
                        continue;
                    };
                    if allowed {
                        usage.used += 1;
                        *total += 1;
                        admit(log, now);
                    }
                    // The slot that admits the next request: the oldest one,
                    // or further in when the log holds more than the limit.
                    let rank = usage.used.saturating_sub(limit);
                    if let Some(t) = nth_admission(log, rank) {
                        usage.reset_us = t.saturating_add(len);
                    }
                }
            }
        }

        drop(guard);
        decide(now, allowed, &usages)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .slots
            .len()
    }
}

/// Counts an admission at `now` in its millisecond's entry.
fn admit(log: &mut VecDeque<Admitted>, now: u64) {
    // Requests mostly arrive in order: the binary search is for a clock read late on another
    // thread.
    let pos = match log.back() {
        Some(back) if back.last <= now => log.len(),
        _ => log.partition_point(|a| a.last <= now),
    };
    let before = pos.checked_sub(1).and_then(|i| log.get_mut(i));
    if let Some(entry) = before.filter(|a| same_entry(a.last, now)) {
        entry.last = now;
        entry.count += 1;
        return;
    }
    if let Some(entry) = log.get_mut(pos).filter(|a| same_entry(a.last, now)) {
        entry.count += 1;
        return;
    }
    log.insert(
        pos,
        Admitted {
            last: now,
            count: 1,
        },
    );
}

/// When the admission of rank `rank` (0: the oldest) leaves with its entry: that entry's
/// latest time.
fn nth_admission(log: &VecDeque<Admitted>, rank: u64) -> Option<u64> {
    let mut seen = 0;
    log.iter().find_map(|a| {
        seen += a.count;
        (seen > rank).then_some(a.last)
    })
}

/// Entries below which a log keeps whatever room it has.
const MIN_LOG_ROOM: usize = 64;

/// Gives back most of a log's room once it holds under a quarter of it, so that a burst's
/// memory does not outlive the burst's window.
fn release_unused(log: &mut VecDeque<Admitted>) {
    if log.capacity() > MIN_LOG_ROOM && log.len() < log.capacity() / 4 {
        log.shrink_to((log.len() * 2).max(MIN_LOG_ROOM));
    }
}

impl State {
    fn maybe_sweep(&mut self, now: u64) {
        if now < self.next_sweep_us && self.slots.len() < self.sweep_at_len {
            return;
        }
        self.slots.retain(|k, slot| !slot.is_stale(k.window, now));
        self.sweep_at_len = (self.slots.len() * 2).max(MIN_SWEEP_LEN);
        self.next_sweep_us = now.saturating_add(SWEEP_INTERVAL_US);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limit;
    use crate::policy::{Tier, memory_quotas};
    use std::time::Duration;

    const S: u64 = 1_000_000;

    #[test]
    fn fixed_windows_are_epoch_aligned() {
        let store = LocalStore::new();
        let q = [Quota::fixed(2, Duration::from_secs(60))];
        // 10:00:59.5 UTC on some day, then 10:01:00.0.
        let t0 = 1_700_000_000 / 60 * 60 * S + 59 * S + 500_000;
        let d = store.check(t0, "k", &q);
        assert_eq!(d.reset_at, (t0 / S + 1) / 60 * 60);
        assert!(store.check(t0, "k", &q).allowed);
        let d = store.check(t0 + 100_000, "k", &q);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, Some(1));
        let d = store.check(t0 + 500_000, "k", &q);
        assert!(d.allowed, "new minute");
        assert_eq!(d.remaining, Limit::Count(1));
    }

    #[test]
    fn day_window_is_utc_day() {
        let store = LocalStore::new();
        let quotas = memory_quotas(Tier::Free);
        // 2024-01-01T23:59:30Z
        let t0 = 1_704_153_570 * S;
        let d = store.check(t0, "cred", &quotas);
        assert_eq!(d.limit, Limit::Count(60));
        assert_eq!(d.reset_at, 1_704_153_600);
        // Exhaust the day partially: the day counter survives minute changes
        // but not the UTC midnight.
        for i in 1..60 {
            assert!(store.check(t0 + i, "cred", &quotas).allowed);
        }
        let d = store.check(t0 + 60, "cred", &quotas);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, Some(30));
        let d = store.check(t0 + 30 * S, "cred", &quotas);
        assert!(d.allowed);
        assert_eq!(d.remaining, Limit::Count(59));
    }

    #[test]
    fn day_refusal_consumes_no_minute() {
        let store = LocalStore::new();
        let minute = Quota::fixed(5, Duration::from_secs(60));
        let day = Quota::fixed(3, Duration::from_secs(86_400));
        let t0 = 1_704_067_200 * S; // midnight UTC
        for _ in 0..3 {
            assert!(store.check(t0, "c", &[minute, day]).allowed);
        }
        let d = store.check(t0, "c", &[minute, day]);
        assert!(!d.allowed);
        assert_eq!(d.limit, Limit::Count(3));
        assert_eq!(d.reset_at, 1_704_067_200 + 86_400);
        assert_eq!(d.retry_after, Some(86_400));
        let d = store.check(t0, "c", &[minute]);
        assert_eq!(d.remaining, Limit::Count(1), "minute holds 3 + this one");
    }

    #[test]
    fn sliding_log_is_exact() {
        let store = LocalStore::new();
        let q = [Quota::sliding(3, Duration::from_secs(10))];
        let t0 = 1_000 * S;
        assert!(store.check(t0, "p", &q).allowed);
        assert!(store.check(t0 + 4 * S, "p", &q).allowed);
        let d = store.check(t0 + 6 * S, "p", &q);
        assert!(d.allowed);
        assert_eq!(d.remaining, Limit::Count(0));
        assert_eq!(d.reset_at, 1_010, "oldest + window");
        let d = store.check(t0 + 9 * S, "p", &q);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, Some(1));
        // The oldest leaves at exactly t0 + 10 s.
        assert!(!store.check(t0 + 10 * S - 1, "p", &q).allowed);
        let d = store.check(t0 + 10 * S, "p", &q);
        assert!(d.allowed);
        assert_eq!(d.reset_at, 1_014, "next oldest + window");
        let d = store.check(t0 + 10 * S, "p", &q);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, Some(4));
    }

    /// The entries and the room of the sliding log of `key` (its first window).
    fn log_size(store: &LocalStore, key: &str) -> (usize, usize) {
        let state = store.state.lock().unwrap();
        let (_, slot) = state.slots.iter().find(|(k, _)| k.key == key).unwrap();
        match slot {
            Slot::Sliding { log, .. } => (log.len(), log.capacity()),
            Slot::Fixed { .. } => panic!("not a sliding slot"),
        }
    }

    #[test]
    fn a_burst_and_a_late_clock_are_counted_an_entry_a_millisecond() {
        let store = LocalStore::new();
        let q = [Quota::sliding(100_000, Duration::from_secs(10))];
        let t0 = 1_000 * S;
        // 10,000 requests in 10 ms.
        for i in 0..10_000 {
            assert!(store.check(t0 + i, "p", &q).allowed);
        }
        // A request whose clock was read before the last one's still counts, in its
        // millisecond.
        let d = store.check(t0 + 5_000, "p", &q);
        assert_eq!(d.remaining, Limit::Count(100_000 - 10_001));
        assert_eq!(log_size(&store, "p").0, 10);
        // A millisecond's requests leave together, when the last of them does.
        let d = store.check(t0 + 10 * S + 9_998, "p", &q);
        assert_eq!(
            d.remaining,
            Limit::Count(100_000 - 1_000 - 1),
            "the last millisecond's and this one"
        );
        let d = store.check(t0 + 10 * S + 9_999, "p", &q);
        assert_eq!(d.remaining, Limit::Count(100_000 - 2), "the two since");
    }

    #[test]
    fn a_long_bursts_room_is_given_back() {
        let store = LocalStore::new();
        let q = [Quota::sliding(100_000, Duration::from_secs(20))];
        let t0 = 1_000 * S;
        // One request a millisecond for 10 s: an entry each.
        for i in 0..10_000 {
            assert!(store.check(t0 + i * 1_000, "p", &q).allowed);
        }
        let (entries, room) = log_size(&store, "p");
        assert!(
            entries == 10_000 && room >= 10_000,
            "{entries} entries, room {room}"
        );
        // Once the burst has left the window, so has its room.
        let d = store.check(t0 + 30 * S, "p", &q);
        assert_eq!(d.remaining, Limit::Count(100_000 - 1));
        let (entries, room) = log_size(&store, "p");
        assert!(
            entries == 1 && room <= 2 * MIN_LOG_ROOM,
            "{entries} entries, room {room}"
        );
    }

    #[test]
    fn sliding_over_limit_after_downgrade() {
        let store = LocalStore::new();
        let len = Duration::from_secs(10);
        let t0 = 1_000 * S;
        for i in 0..5 {
            assert!(
                store
                    .check(t0 + i * S, "p", &[Quota::sliding(10, len)])
                    .allowed
            );
        }
        // Five in the log, limit now 2: room only once four have left,
        // i.e. when the fourth oldest (t0 + 3 s) expires.
        let d = store.check(t0 + 5 * S, "p", &[Quota::sliding(2, len)]);
        assert!(!d.allowed);
        assert_eq!(d.reset_at, 1_013);
        assert_eq!(d.retry_after, Some(8));
    }

    #[test]
    fn unlimited_quotas_store_nothing() {
        let store = LocalStore::new();
        let q = [
            Quota::unlimited(Window::Fixed(Duration::from_secs(60))),
            Quota::unlimited(Window::Sliding(Duration::from_secs(60))),
        ];
        for _ in 0..100 {
            let d = store.check(5 * S, "u", &q);
            assert!(d.allowed);
            assert_eq!(d.remaining, Limit::Unlimited);
        }
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn stale_slots_are_evicted() {
        let store = LocalStore::new();
        let q = [
            Quota::fixed(5, Duration::from_secs(1)),
            Quota::sliding(5, Duration::from_secs(1)),
        ];
        let t0 = 1_000 * S;
        for i in 0..10_000u64 {
            store.check(t0 + i, &format!("key-{i}"), &q);
        }
        assert!(store.len() <= 20_000);
        // Two seconds later everything is stale; the next sweep (due to the
        // interval) leaves only the new key.
        store.check(t0 + 2 * S + SWEEP_INTERVAL_US, "fresh", &q);
        assert_eq!(store.len(), 2);
        // Growth alone also triggers sweeps: memory stays bounded by about
        // twice the number of live slots.
        let t1 = t0 + 10 * SWEEP_INTERVAL_US;
        for i in 0..50_000u64 {
            store.check(t1 + i * 100, &format!("burst-{i}"), &q[..1]);
            assert!(store.len() <= 2 * 10_002, "{}", store.len());
        }
    }
}
