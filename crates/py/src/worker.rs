//! Long library calls off the interpreter: progress callbacks and Ctrl-C.
//!
//! [`run`] runs the work on a scoped worker thread with a cancel flag and a
//! [`Tracker`] as its [`Progress`]. The calling thread, with the GIL
//! released, waits for the worker in slices of 50 ms; between two slices it
//! takes the GIL back briefly to
//!
//! 1. call `PyErr_CheckSignals` (Python runs signal handlers on the main
//!    thread only, so the caller's thread must do it): when a handler raises
//!    (`KeyboardInterrupt` for Ctrl-C), the cancel flag is set, the worker
//!    stops between two blocks of work (the library removes its temporary
//!    files and leaves no output) and the handler's exception is raised;
//! 2. call the progress callback `progress(phase, done, total)`, at most 10
//!    times a second, once more at the end of each phase with its final
//!    count; if the callback raises, the work is cancelled the same way and
//!    the callback's exception is raised.
//!
//! ```text
//!  caller (Python thread)                    worker thread
//!  ──────────────────────                    ─────────────
//!  spawn ───────────────────────────────────► library call(tracker, cancel)
//!  loop: release GIL, park ≤ 50 ms                 │ tracker.advance(…)
//!        take GIL: check_signals ─ error? ─► cancel = true ─► Interrupted
//!                  progress(phase, done, total)    │
//!  until the worker is done ◄──────────────────────┘ (unpark)
//! ```
//!
//! Other Python threads run while the work goes on: the GIL is held only
//! for the checks and the callback.
//!
//! [`watch`] is the same loop for work that brings its own [`Tracker`],
//! cancel flag and [`Reporter`]: an `emsort.Sorter` keeps them across its
//! calls (`push`, `finish`, `write`), since its sort outlives each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use emsort_io::Progress;
use emsort_sort::SortError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Locks `m`; a lock poisoned by a panic is taken all the same (the
/// binding's one way of locking).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How long the caller waits between two checks.
const SLICE: Duration = Duration::from_millis(50);
/// The least time between two progress calls within a phase.
const THROTTLE: Duration = Duration::from_millis(100);

/// One progress report: phase, units done, total when known.
type Report = (String, u64, Option<u64>);

#[derive(Default)]
struct State {
    /// The phase under way: name, done, total.
    current: Option<Report>,
    /// Phases finished since the caller last looked, with their final counts.
    finished: Vec<Report>,
}

/// A [`Progress`] that keeps the latest state for the calling thread.
#[derive(Default)]
pub(crate) struct Tracker {
    state: Mutex<State>,
}

impl Tracker {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Takes the finished phases and a copy of the current one.
    fn take(&self) -> (Vec<Report>, Option<Report>) {
        let mut s = self.lock();
        (std::mem::take(&mut s.finished), s.current.clone())
    }
}

impl Progress for Tracker {
    fn phase(&self, name: &str, total: Option<u64>) {
        let s = &mut *self.lock();
        s.finished.extend(s.current.take());
        s.current = Some((name.to_string(), 0, total));
    }

    fn advance(&self, units: u64) {
        if let Some(c) = self.lock().current.as_mut() {
            c.1 += units;
        }
    }

    fn finish_phase(&self) {
        let s = &mut *self.lock();
        s.finished.extend(s.current.take());
    }
}

/// Calls the Python callback from a tracker's state, throttled. An object
/// watched over several calls (`Sorter`) keeps one across them, so the
/// throttle holds between its calls too.
#[derive(Default)]
pub(crate) struct Reporter {
    last: Option<(Report, Instant)>,
}

impl Reporter {
    fn call(&mut self, callback: &Bound<'_, PyAny>, r: &Report) -> PyResult<()> {
        callback.call1((r.0.as_str(), r.1, r.2))?;
        self.last = Some((r.clone(), Instant::now()));
        Ok(())
    }

    /// Reports the finished phases, then the current one if it changed and
    /// the last call is old enough (or at once when `last_call`).
    pub(crate) fn tick(
        &mut self,
        callback: Option<&Bound<'_, PyAny>>,
        tracker: &Tracker,
        last_call: bool,
    ) -> PyResult<()> {
        let Some(cb) = callback else {
            return Ok(());
        };
        let (finished, current) = tracker.take();
        for r in &finished {
            self.call(cb, r)?;
        }
        if let Some(r) = current {
            let due = match &self.last {
                None => true,
                Some((prev, at)) => *prev != r && (last_call || at.elapsed() >= THROTTLE),
            };
            if due {
                self.call(cb, &r)?;
            }
        }
        Ok(())
    }
}

/// Sets the worker's done flag and wakes the caller, even if the work panics.
struct Finished<'a> {
    done: &'a AtomicBool,
    caller: Thread,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        self.caller.unpark();
    }
}

/// A `TypeError` unless `progress` is None or callable.
pub(crate) fn check_callback(progress: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match progress {
        Some(cb) if !cb.is_callable() => Err(pyo3::exceptions::PyTypeError::new_err(
            "progress must be a callable progress(phase: str, done: int, total: int | None)",
        )),
        _ => Ok(()),
    }
}

/// Runs `work` on a worker thread while the caller watches for signals and
/// reports progress to `progress` (see the module docs). Library errors
/// become Python exceptions with [`crate::error::sort_error`].
pub(crate) fn run<T, F>(py: Python<'_>, progress: Option<&Bound<'_, PyAny>>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&dyn Progress, &AtomicBool) -> Result<T, SortError> + Send,
{
    check_callback(progress)?;
    let tracker = Tracker::default();
    let cancel = AtomicBool::new(false);
    let mut reporter = Reporter::default();
    watch(py, progress, &mut reporter, &tracker, &cancel, true, || work(&tracker, &cancel))
}

/// [`run`] for work that already has its tracker and cancel flag (a
/// `Sorter`'s, which outlive one call): runs `work` on a worker thread and
/// watches it as the module docs say, setting `cancel` on Ctrl-C or when
/// the callback raises. With `last_call`, the current phase is reported
/// at the end even within the throttle ([`run`] does, a `Sorter`'s pushes
/// do not: they are many calls in one phase).
pub(crate) fn watch<T, F>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    reporter: &mut Reporter,
    tracker: &Tracker,
    cancel: &AtomicBool,
    last_call: bool,
    work: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, SortError> + Send,
{
    let done = AtomicBool::new(false);
    let (outcome, failure) = std::thread::scope(|s| {
        let caller = std::thread::current();
        let done = &done;
        let worker = std::thread::Builder::new().name("emsort-py".into()).spawn_scoped(s, move || {
            let _finished = Finished { done, caller };
            work()
        });
        let worker = match worker {
            Ok(w) => w,
            Err(e) => {
                return (None, Some(PyRuntimeError::new_err(format!("cannot start a worker thread: {e}"))))
            }
        };
        let mut failure: Option<PyErr> = None;
        while !done.load(Ordering::SeqCst) {
            py.detach(|| std::thread::park_timeout(SLICE));
            if failure.is_none() && !done.load(Ordering::SeqCst) {
                if let Err(e) = py.check_signals().and_then(|()| reporter.tick(progress, tracker, false)) {
                    cancel.store(true, Ordering::SeqCst);
                    failure = Some(e);
                }
            }
        }
        (Some(py.detach(|| worker.join())), failure)
    });
    if let Some(e) = failure {
        return Err(e);
    }
    match outcome.expect("the worker ran") {
        Ok(Ok(value)) => {
            reporter.tick(progress, tracker, last_call)?;
            Ok(value)
        }
        Ok(Err(e)) => Err(crate::error::sort_error(py, &e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(PyRuntimeError::new_err(format!("emsort panicked: {what}")))
        }
    }
}
