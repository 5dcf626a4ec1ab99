//! One computation per key at a time: the first caller (the leader) runs it, and callers that
//! ask for the same key meanwhile wait for the leader's result instead of running it again. So
//! eight threads asking for one kernel at once run NVRTC once.
//!
//! A leader that panics marks its flight abandoned, and its waiters try again (one of them
//! leads), so no one waits forever. A key is forgotten when its flight lands: later callers find
//! the disk cache the leader filled.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub(crate) struct SingleFlight<K, V> {
    flights: Mutex<Option<HashMap<K, Arc<Flight<V>>>>>,
}

struct Flight<V> {
    state: Mutex<State<V>>,
    landed: Condvar,
}

enum State<V> {
    Running,
    Done(V),
    Abandoned,
}

/// Who ran the computation for a caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Led,
    Waited,
}

impl<K: Hash + Eq + Clone, V: Clone> SingleFlight<K, V> {
    pub(crate) const fn new() -> SingleFlight<K, V> {
        SingleFlight {
            flights: Mutex::new(None),
        }
    }

    /// `run()`'s result for `key`: run here, or taken from the flight already running it.
    pub(crate) fn run(&self, key: K, run: impl FnOnce() -> V) -> (V, Role) {
        loop {
            let (flight, leads) = self.join(&key);
            if leads {
                let mut landing = Landing {
                    owner: self,
                    key: &key,
                    flight: &flight,
                    value: None,
                };
                let value = run();
                landing.value = Some(value.clone());
                return (value, Role::Led);
            }
            let mut state = lock(&flight.state);
            loop {
                match &*state {
                    State::Running => {
                        state = flight.landed.wait(state).unwrap_or_else(|p| p.into_inner())
                    }
                    State::Done(value) => return (value.clone(), Role::Waited),
                    // The leader panicked: try again.
                    State::Abandoned => break,
                }
            }
        }
    }

    /// The flight for `key`, and whether this caller starts (leads) it.
    fn join(&self, key: &K) -> (Arc<Flight<V>>, bool) {
        let mut flights = lock(&self.flights);
        let flights = flights.get_or_insert_with(HashMap::new);
        if let Some(flight) = flights.get(key) {
            return (flight.clone(), false);
        }
        let flight = Arc::new(Flight {
            state: Mutex::new(State::Running),
            landed: Condvar::new(),
        });
        flights.insert(key.clone(), flight.clone());
        (flight, true)
    }
}

/// Lands the leader's flight when it returns or unwinds: waiters get the value, or learn that
/// there is none.
struct Landing<'a, K: Hash + Eq, V> {
    owner: &'a SingleFlight<K, V>,
    key: &'a K,
    flight: &'a Arc<Flight<V>>,
    value: Option<V>,
}

impl<K: Hash + Eq, V> Drop for Landing<'_, K, V> {
    fn drop(&mut self) {
        if let Some(flights) = lock(&self.owner.flights).as_mut() {
            if flights
                .get(self.key)
                .is_some_and(|f| Arc::ptr_eq(f, self.flight))
            {
                flights.remove(self.key);
            }
        }
        *lock(&self.flight.state) = match self.value.take() {
            Some(value) => State::Done(value),
            None => State::Abandoned,
        };
        self.flight.landed.notify_all();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    #[test]
    fn concurrent_callers_share_one_run() {
        let flights: SingleFlight<u32, u64> = SingleFlight::new();
        let runs = AtomicUsize::new(0);
        let gate = Mutex::new(());
        let start = Barrier::new(8);
        // The leader holds `gate` until all eight have joined, so every other caller waits.
        let held = lock(&gate);
        let roles: Vec<Role> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let (v, role) = flights.run(1, || {
                            runs.fetch_add(1, Ordering::SeqCst);
                            let _g = lock(&gate);
                            42
                        });
                        assert_eq!(v, 42);
                        role
                    })
                })
                .collect();
            // Release the leader once the other seven are parked on the flight.
            while waiting(&flights, 1) < 7 {
                std::thread::yield_now();
            }
            drop(held);
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(Role::Led))
                .collect()
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(roles.iter().filter(|&&r| r == Role::Waited).count(), 7);
    }

    /// Callers holding the flight of `key`, beyond the map and the leader's landing.
    fn waiting(flights: &SingleFlight<u32, u64>, key: u32) -> usize {
        lock(&flights.flights)
            .as_ref()
            .and_then(|m| m.get(&key))
            .map_or(0, |f| Arc::strong_count(f).saturating_sub(2))
    }

    #[test]
    fn a_panicking_leader_lets_a_waiter_lead() {
        let flights: SingleFlight<u32, u64> = SingleFlight::new();
        let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            flights.run(1, || panic!("leader fails"))
        }));
        assert!(first.is_err());
        assert_eq!(flights.run(1, || 5), (5, Role::Led));
    }
}
