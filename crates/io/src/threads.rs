//! Starting a thread is an error that can happen, not a panic.
//!
//! `std::thread::scope`'s `spawn` panics when the kernel refuses a thread
//! (`EAGAIN`: the address space under `ulimit -v` has no room for its
//! stack, or `ulimit -u` is reached), which ended a sort with a backtrace
//! and its temporary files left (issue 37). [`spawn_scoped`] returns
//! [`ErrorKind::OutOfMemory`] instead, which unwinds and cleans up like any
//! other error.

use std::path::Path;
use std::thread::{Scope, ScopedJoinHandle};

use crate::{Error, ErrorKind, Result};

/// Starts `f` on a new thread named `name` in `scope`; a thread the kernel
/// refuses is [`ErrorKind::OutOfMemory`] about `about` (what the work is
/// for, for the message).
pub fn spawn_scoped<'scope, 'env, F, T>(
    scope: &'scope Scope<'scope, 'env>,
    name: &str,
    about: &Path,
    f: F,
) -> Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(scope, f)
        .map_err(|e| Error::with_source(ErrorKind::OutOfMemory, about, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_runs_and_returns() {
        let v =
            std::thread::scope(|s| spawn_scoped(s, "t", Path::new("x"), || 6 * 7).unwrap().join().unwrap());
        assert_eq!(v, 42);
    }
}
