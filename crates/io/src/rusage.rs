//! Resource usage from the kernel: one safe wrapper of `getrusage(2)` and of
//! `wait4(2)`'s usage, for the sort's statistics and the benchmarks, and
//! the descriptors `RLIMIT_NOFILE` leaves ([`free_descriptors`]).
//!
//! [`Usage::now`] reads the usage of the process, the calling thread or the
//! waited-for children ([`Who`]); [`wait4`] reaps one child and returns its
//! usage; [`Usage::since`] gives what accumulated between two readings.
//!
//! ```
//! use emsort_io::rusage::{Usage, Who};
//! let before = Usage::now(Who::Thread)?;
//! let v: Vec<u8> = vec![1; 1 << 20];
//! let d = Usage::now(Who::Thread)?.since(&before);
//! println!("{} minor faults for {} bytes", d.minor_faults, v.len());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;

/// Whose usage [`Usage::now`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// Every thread of this process (`RUSAGE_SELF`).
    Process,
    /// The calling thread only (`RUSAGE_THREAD`).
    Thread,
    /// The children this process has waited for, and theirs
    /// (`RUSAGE_CHILDREN`).
    Children,
}

/// Resource usage as `struct rusage` gives it, in plain units.
///
/// Negative fields (which the kernel never gives) read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// CPU time in user mode, seconds (`ru_utime`).
    pub user_seconds: f64,
    /// CPU time in the kernel, seconds (`ru_stime`).
    pub system_seconds: f64,
    /// Peak resident set size in bytes (`ru_maxrss`, which Linux gives in
    /// KiB). Linux carries it across `execve`: a process started from a
    /// large parent starts from the parent's peak.
    pub max_rss_bytes: u64,
    /// Voluntary context switches (`ru_nvcsw`).
    pub voluntary_context_switches: u64,
    /// Involuntary context switches (`ru_nivcsw`).
    pub involuntary_context_switches: u64,
    /// Minor page faults (`ru_minflt`).
    pub minor_faults: u64,
    /// Major page faults (`ru_majflt`).
    pub major_faults: u64,
}

impl Usage {
    /// The usage of `who` now.
    pub fn now(who: Who) -> io::Result<Usage> {
        let who = match who {
            Who::Process => libc::RUSAGE_SELF,
            Who::Thread => libc::RUSAGE_THREAD,
            Who::Children => libc::RUSAGE_CHILDREN,
        };
        let mut ru = zeroed_rusage();
        // SAFETY: `ru` is a valid, writable `struct rusage` that getrusage
        // fills; it keeps no pointer to it.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Usage::from_raw(&ru))
    }

    /// What accumulated since `earlier` (a reading of the same `who`): the
    /// differences of the times and counts; the peak RSS stays this
    /// reading's, a peak having no difference.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user_seconds: (self.user_seconds - earlier.user_seconds).max(0.0),
            system_seconds: (self.system_seconds - earlier.system_seconds).max(0.0),
            max_rss_bytes: self.max_rss_bytes,
            voluntary_context_switches: self
                .voluntary_context_switches
                .saturating_sub(earlier.voluntary_context_switches),
            involuntary_context_switches: self
                .involuntary_context_switches
                .saturating_sub(earlier.involuntary_context_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
        }
    }

    fn from_raw(ru: &libc::rusage) -> Usage {
        let count = |x: libc::c_long| x.max(0) as u64;
        let seconds = |t: libc::timeval| t.tv_sec.max(0) as f64 + t.tv_usec.max(0) as f64 / 1e6;
        Usage {
            user_seconds: seconds(ru.ru_utime),
            system_seconds: seconds(ru.ru_stime),
            max_rss_bytes: count(ru.ru_maxrss) * 1024,
            voluntary_context_switches: count(ru.ru_nvcsw),
            involuntary_context_switches: count(ru.ru_nivcsw),
            minor_faults: count(ru.ru_minflt),
            major_faults: count(ru.ru_majflt),
        }
    }
}

/// An all-zero `struct rusage` for the kernel to fill.
fn zeroed_rusage() -> libc::rusage {
    // SAFETY: `struct rusage` is plain integers (and `timeval`s of
    // integers), for which all zeros is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `wait4(pid, options)`: waits for the child `pid` and returns its wait
/// status and its usage (that of its threads and of the children it waited
/// for), or `None` when `options` has `WNOHANG` and the child is still
/// running. An `EINTR` is returned as an error of kind `Interrupted`, for
/// the caller to retry.
///
/// `pid` must be a child of this process that nothing else reaps (std's
/// [`Child`](std::process::Child) only reaps in its `wait`/`try_wait`).
pub fn wait4(pid: libc::pid_t, options: libc::c_int) -> io::Result<Option<(libc::c_int, Usage)>> {
    let mut status: libc::c_int = 0;
    let mut ru = zeroed_rusage();
    // SAFETY: `status` and `ru` are valid and writable for the call, which
    // keeps no pointer to them.
    let r = unsafe { libc::wait4(pid, &mut status, options, &mut ru) };
    match r {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some((status, Usage::from_raw(&ru)))),
    }
}

/// How many more descriptors this process may open now: the numbers
/// below `RLIMIT_NOFILE` not in use (a descriptor inherited above the
/// limit takes none of them). Counted in `/proc/self/fd`; where it cannot
/// be read, 0, 1 and 2 are taken to be the ones in use. What a merge's
/// fan-in, a held lock and an optional counter share (GNU sort sizes its
/// merges from the same limit).
pub fn free_descriptors() -> u64 {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX);
    let listing = match std::fs::read_dir("/proc/self/fd") {
        Ok(d) => d,
        // None left to list them with: none is free.
        Err(e) if e.raw_os_error() == Some(libc::EMFILE) => return 0,
        Err(_) => return limit.saturating_sub(3),
    };
    let numbers: Vec<u64> =
        listing.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect();
    // The listing's own descriptor is among them, and closed again: the
    // highest of the numbers below the limit is not always it, but one of
    // them is.
    let used = numbers.iter().filter(|&&n| n < limit).count().saturating_sub(1) as u64;
    limit.saturating_sub(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_grow_and_differences_are_what_happened() {
        for who in [Who::Process, Who::Thread, Who::Children] {
            Usage::now(who).unwrap();
        }
        let a = Usage::now(Who::Thread).unwrap();
        // Touch fresh pages and spend some CPU: minor faults and user time.
        let mut v = vec![0u8; 16 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = i as u8;
        }
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i ^ v[(i as usize) & 0xffff] as u64);
        }
        std::hint::black_box((x, &v));
        let b = Usage::now(Who::Thread).unwrap();
        let d = b.since(&a);
        assert!(d.minor_faults >= 1, "{d:?}");
        assert!(d.user_seconds + d.system_seconds > 0.0, "{d:?}");
        assert!(b.minor_faults >= a.minor_faults && b.user_seconds >= a.user_seconds);
        assert_eq!(d.max_rss_bytes, b.max_rss_bytes);
        assert!(b.max_rss_bytes > 0 && b.max_rss_bytes.is_multiple_of(1024));
        // Never negative, even backwards.
        let z = a.since(&b);
        assert_eq!((z.minor_faults, z.user_seconds), (0, 0.0));
    }

    #[test]
    // The child is reaped by `wait4`, which clippy does not know.
    #[allow(clippy::zombie_processes)]
    fn wait4_reaps_a_child_with_its_usage() {
        let child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; exit 3"])
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let (status, u) = loop {
            match wait4(pid, libc::WNOHANG) {
                Ok(Some(done)) => break done,
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(2)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("{e}"),
            }
        };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3, "{status}");
        assert!(u.max_rss_bytes > 0 && u.minor_faults > 0, "{u:?}");
        // Reaped: a second wait finds no such child.
        let e = wait4(pid, libc::WNOHANG).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ECHILD));
    }
}
