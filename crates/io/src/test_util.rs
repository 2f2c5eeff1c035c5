//! Helpers for the workspace's fuzz tests (the `fuzz_*` property tests that
//! feed outside bytes to every parser); compiled for this crate's tests and,
//! with the `test-util` feature, for the other crates' tests.
//!
//! - [`cases`]: a test's default number of cases, unless `PROPTEST_CASES`
//!   is set: the default suite stays fast, and the large tier runs with
//!   e.g. `PROPTEST_CASES=20000 cargo test -p emsort-io fuzz`.
//! - [`within`]: runs a parser on another thread and stops the whole test
//!   process when it does not return in [`LIMIT`] (a parser that loops
//!   forever, or allocates without end, would otherwise hang the suite);
//!   a panic in the parser reaches the caller (so proptest shrinks it).
//!
//! ```text
//! proptest!(ProptestConfig::with_cases(cases(256)), |(s in ".*")| {
//!     let _ = within(&s, || parse_size(&s)); // Ok or Err, no panic, no hang
//! });
//! ```

use std::fmt::Debug;
use std::sync::mpsc;
use std::time::Duration;

/// The longest a single parse may take before [`within`] gives up on it.
/// Generous: a debug build on a busy machine parses any fuzz input in
/// microseconds.
pub const LIMIT: Duration = Duration::from_secs(20);

/// `default` cases for a property test, or `$PROPTEST_CASES` when set (the
/// variable proptest itself reads, which an explicit `cases` would override).
pub fn cases(default: u32) -> u32 {
    match std::env::var("PROPTEST_CASES").ok().and_then(|v| v.trim().parse().ok()) {
        Some(n) if n >= 1 => n,
        _ => default,
    }
}

/// Runs `f` on a scoped thread and returns its result. A panic in `f` is
/// resumed here. If `f` has not returned after [`LIMIT`], prints `what`
/// and aborts the process: the input made the code under test loop (or
/// allocate) without end, and the thread cannot be stopped otherwise.
pub fn within<T: Send>(what: impl Debug, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let h = s.spawn(move || {
            let _ = tx.send(f());
        });
        match rx.recv_timeout(LIMIT) {
            Ok(v) => {
                let _ = h.join();
                v
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the thread sends before it ends"),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => {
                eprintln!("fuzz: no result after {LIMIT:?}, aborting: {what:?}");
                std::process::abort();
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_returns_and_resumes_panics() {
        assert_eq!(within("add", || 1 + 1), 2);
        let r = std::panic::catch_unwind(|| within("boom", || -> u32 { panic!("boom") }));
        let msg = r.unwrap_err();
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"boom"));
    }
}
