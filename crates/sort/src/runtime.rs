//! What every sort runs on, whichever its method: its own thread pool, its
//! clock, its resource usage and its CPU migrations.
//!
//! [`Runtime::start`] opens the migration counter (before any of the
//! sort's threads exist, so they inherit it), notes the time and the
//! process's resource usage, and starts a rayon pool of the plan's threads
//! named `emsortN-i`; [`Runtime::finish`] shuts the pool down, waits for its
//! threads (a thread's perf counts reach the inherited counter only when it
//! exits) and returns the totals.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::plan::SortPlan;
use crate::stats::{MigrationCounter, Rusage};
use crate::SortError;

/// The free descriptors below which the migration counter is not opened.
const SPARE_FOR_COUNTER: u64 = 16;

/// The pool and the counters of one sort.
pub(crate) struct Runtime {
    /// The sort's own pool (in-memory sorting, merge rounds).
    pub pool: rayon::ThreadPool,
    pool_name: String,
    start: Instant,
    usage0: Rusage,
    migrations: Option<MigrationCounter>,
}

/// What [`Runtime::finish`] measured.
pub(crate) struct Totals {
    /// Wall-clock seconds from [`Runtime::start`] until the sort's work was done.
    pub seconds: f64,
    /// Resource usage since [`Runtime::start`].
    pub rusage: Rusage,
    /// CPU migrations of the sort's threads, where perf events can be read.
    pub cpu_migrations: Option<u64>,
}

impl Runtime {
    /// Starts the clock, the counters and a pool of `plan`'s threads.
    pub fn start(plan: &SortPlan) -> Result<Runtime, SortError> {
        static SORTS: AtomicU64 = AtomicU64::new(0);
        let start = Instant::now();
        let usage0 = Rusage::now();
        // Opened before the sort's threads start, so they inherit it; left
        // out when descriptors are so scarce that a merge needs this one
        // (`ulimit -n 6`: GNU sort still merges there).
        let spare = emsort_io::rusage::free_descriptors() >= SPARE_FOR_COUNTER;
        let migrations = if spare { MigrationCounter::start() } else { None };
        let pool_name = format!("emsort{}", SORTS.fetch_add(1, Ordering::Relaxed) % 100_000);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(plan.threads())
            .thread_name({
                let name = pool_name.clone();
                move |i| format!("{name}-{i}")
            })
            .build()
            // The kernel refused a thread: no room for its stack (ulimit -v).
            .map_err(|_| {
                SortError::from(emsort_io::Error::new(
                    emsort_io::ErrorKind::OutOfMemory,
                    format!("{} sort threads", plan.threads()),
                ))
            })?;
        Ok(Runtime { pool, pool_name, start, usage0, migrations })
    }

    /// Stops the clock, shuts the pool down and reads the counters.
    pub fn finish(self) -> Totals {
        let seconds = self.start.elapsed().as_secs_f64();
        drop(self.pool);
        let cpu_migrations = self.migrations.and_then(|m| {
            wait_for_exit(&self.pool_name);
            m.read()
        });
        Totals { seconds, rusage: Rusage::now().since(&self.usage0), cpu_migrations }
    }
}

/// Waits (up to a second) until no thread of this process is named
/// `{name}-…`: a dropped rayon pool's threads exit on their own time.
fn wait_for_exit(name: &str) {
    let prefix = format!("{name}-");
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(1) {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
        let alive = tasks
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(&prefix)));
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
