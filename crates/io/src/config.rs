//! Stream kinds and their configuration.
//!
//! A [`StreamConfig`] names the [`StreamKind`] and its parameters (block size
//! B in bytes, io_uring queue depth Q, whether `close` syncs). Each kind
//! rounds B its own way; [`StreamInfo::block_size`] reports what was used:
//!
//! | kind       | B used                                                              |
//! |------------|---------------------------------------------------------------------|
//! | `syscall`  | ignored: one `read`/`write` of one element per call                 |
//! | `stdio`    | ignored: libc's own `FILE` buffer (`BUFSIZ`, 8 KiB on glibc)         |
//! | `buffered` | B rounded up to a whole number of elements (at least one)           |
//! | `mmap`     | B rounded up to a multiple of the page size (at least one page)     |
//! | `direct`   | B rounded up to a multiple of A = max(offset alignment, memory alignment, element size), at least A; alignments from `statx` `STATX_DIOALIGN` (4096 when unknown) |
//! | `uring`    | B rounded up to a whole number of elements; Q (at least 1) buffers of B in flight |
//!
//! [`StreamInfo::fallback`] says when a kind could not use its technique
//! fully: `direct` on a file system that refuses `O_DIRECT`, `mmap` output on
//! one without `fallocate`.

use std::fmt;
use std::str::FromStr;

/// The technique a stream uses to move elements between memory and a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamKind {
    /// One `read()` / `write()` system call per element.
    Syscall,
    /// C stdio `fread` / `fwrite` of one element at a time through libc's `FILE`.
    Stdio,
    /// An own buffer of B bytes filled and drained with `read()` / `write()`.
    Buffered,
    /// A window of B bytes mapped with `mmap` at a time.
    Mmap,
    /// `O_DIRECT` with aligned buffers of B bytes (bypasses the page cache).
    Direct,
    /// io_uring with Q requests of B bytes in flight (read-ahead / write-behind).
    Uring,
    /// `O_DIRECT` through io_uring: Q aligned requests of B bytes in flight,
    /// output files allocated ahead of the writes.
    UringDirect,
}

impl StreamKind {
    /// All kinds, in the order the documentation lists them.
    pub const ALL: [StreamKind; 7] = [
        StreamKind::Syscall,
        StreamKind::Stdio,
        StreamKind::Buffered,
        StreamKind::Mmap,
        StreamKind::Direct,
        StreamKind::Uring,
        StreamKind::UringDirect,
    ];

    /// The kind's name as used on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            StreamKind::Syscall => "syscall",
            StreamKind::Stdio => "stdio",
            StreamKind::Buffered => "buffered",
            StreamKind::Mmap => "mmap",
            StreamKind::Direct => "direct",
            StreamKind::Uring => "uring",
            StreamKind::UringDirect => "uring-direct",
        }
    }

    /// The kind a sort whose temporary files go to `probe` uses when none
    /// is asked for, and why (for `--show-plan` and `--stats`), from a
    /// probe of a few milliseconds: 4 writes of 1 MiB with `O_DIRECT`, one
    /// at a time, into an unnamed file in that directory (`O_TMPFILE`:
    /// nothing to clean up, whatever happens). `None`: no probe (a sort
    /// that writes no runs), `uring-direct`.
    ///
    /// - A device with a latency per request — the probing thread waits
    ///   off the CPU for more than half of the writes' time — gets
    ///   `uring-direct`:
    ///   no copy through the page cache, and Q requests in flight so that
    ///   the device stays busy (issue 38: the synchronous `direct` kind
    ///   waited on a disk with 2.5 ms per 1 MiB write at 41 % CPU).
    /// - Memory (tmpfs, or a cache in front of the device) has no latency
    ///   to hide, and io_uring would add its own cost: `direct`, one request
    ///   at a time (1 GiB of lines on tmpfs: 4.1–4.5 s with `direct`,
    ///   4.7–5.0 s with `uring-direct`).
    /// - Where this process may not use io_uring, or M (`memory`) is below
    ///   [`StreamKind::QUEUED_MEMORY`] (Q blocks per stream would take a
    ///   small budget from the runs, and raise the least M a plan needs):
    ///   `direct`, without a probe.
    /// - Where the probe cannot run (no `O_TMPFILE` or no `O_DIRECT`
    ///   there): `uring-direct`, whose streams fall back to the page cache
    ///   as `direct`'s do, and say so.
    pub fn sort_default(probe: Option<&std::path::Path>, memory: u64) -> (StreamKind, String) {
        if memory < Self::QUEUED_MEMORY {
            return (
                StreamKind::Direct,
                format!(
                    "default: M below {} MiB: one block per stream, O_DIRECT one request at a time",
                    Self::QUEUED_MEMORY >> 20
                ),
            );
        }
        if let Some(why) = crate::uring::unavailable() {
            return (
                StreamKind::Direct,
                format!("default: io_uring is unavailable ({why}), so O_DIRECT one request at a time"),
            );
        }
        match probe.and_then(probe_write_latency) {
            Some((t, on_cpu)) if on_cpu >= 0.5 => (
                StreamKind::Direct,
                format!(
                    "default: a 1 MiB O_DIRECT write in the temp dir took {:.2} ms, {:.0} % of it on the CPU: \
                     memory, no device to wait for, so one request at a time",
                    t.as_secs_f64() * 1e3,
                    on_cpu * 100.0
                ),
            ),
            Some((t, _)) => (
                StreamKind::UringDirect,
                format!(
                    "default: a 1 MiB O_DIRECT write in the temp dir waited {:.2} ms for the device: \
                     O_DIRECT through io_uring, Q requests in flight per stream",
                    t.as_secs_f64() * 1e3
                ),
            ),
            None => (
                StreamKind::UringDirect,
                "default: O_DIRECT through io_uring, Q requests in flight per stream (no probe here)".to_string(),
            ),
        }
    }

    /// The least memory M for which [`StreamKind::sort_default`] keeps Q
    /// blocks in flight per stream.
    pub const QUEUED_MEMORY: u64 = 128 << 20;

    /// Whether the kind keeps Q requests in flight (`uring`,
    /// `uring-direct`): its streams buffer Q blocks.
    pub fn queued(self) -> bool {
        matches!(self, StreamKind::Uring | StreamKind::UringDirect)
    }

    /// Whether the kind bypasses the page cache (`O_DIRECT`: `direct`,
    /// `uring-direct`).
    pub fn bypasses_cache(self) -> bool {
        matches!(self, StreamKind::Direct | StreamKind::UringDirect)
    }

    /// Whether the block size B changes what this kind does (false for
    /// `syscall` and `stdio`).
    pub fn uses_block_size(self) -> bool {
        !matches!(self, StreamKind::Syscall | StreamKind::Stdio)
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StreamKind {
    type Err = String;
    fn from_str(s: &str) -> Result<StreamKind, String> {
        StreamKind::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            format!(
                "unknown stream kind '{s}' (expected one of: {})",
                StreamKind::ALL.map(|k| k.name()).join(", ")
            )
        })
    }
}

/// How to open a stream: kind, block size, queue depth, sync on close.
///
/// ```
/// use emsort_io::{StreamConfig, StreamKind};
/// let cfg = StreamConfig::new(StreamKind::Buffered).block_size(64 << 10);
/// assert_eq!(cfg.block_size, 65536);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// The technique.
    pub kind: StreamKind,
    /// Requested block size B in bytes (rounded per kind, see the module docs).
    pub block_size: usize,
    /// io_uring queue depth Q (requests in flight); other kinds ignore it.
    pub queue_depth: u32,
    /// Whether an output stream's `close` calls `fsync` before closing, so the
    /// data is on the device when `close` returns.
    pub sync_on_close: bool,
}

impl StreamConfig {
    /// Default block size: 1 MiB.
    pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;
    /// Default io_uring queue depth.
    pub const DEFAULT_QUEUE_DEPTH: u32 = 4;

    /// A configuration for `kind` with the default block size and queue depth.
    pub fn new(kind: StreamKind) -> StreamConfig {
        StreamConfig {
            kind,
            block_size: Self::DEFAULT_BLOCK_SIZE,
            queue_depth: Self::DEFAULT_QUEUE_DEPTH,
            sync_on_close: false,
        }
    }

    /// Sets the block size B in bytes.
    pub fn block_size(mut self, bytes: usize) -> StreamConfig {
        self.block_size = bytes;
        self
    }

    /// Sets the io_uring queue depth Q.
    pub fn queue_depth(mut self, q: u32) -> StreamConfig {
        self.queue_depth = q;
        self
    }

    /// Sets whether an output stream's `close` calls `fsync`.
    pub fn sync_on_close(mut self, yes: bool) -> StreamConfig {
        self.sync_on_close = yes;
        self
    }
}

/// What a stream actually does, after rounding and fallbacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The kind.
    pub kind: StreamKind,
    /// The block size in bytes the stream really uses (element size for
    /// `syscall`, libc's buffer size for `stdio`, rounded B for the others).
    pub block_size: usize,
    /// The queue depth in use (`uring`), else 1.
    pub queue_depth: u32,
    /// Set when the stream could not use its technique and fell back (e.g.
    /// `direct` on a file system that refuses `O_DIRECT`), saying why.
    pub fallback: Option<String>,
}

/// 4 writes of 1 MiB with `O_DIRECT`, one at a time, into an unnamed file
/// in `dir`: their median wall time, and the share of their wall time the
/// thread spent on a CPU (a device leaves the thread waiting; memory keeps
/// it copying); `None` where that cannot be done.
fn probe_write_latency(dir: &std::path::Path) -> Option<(std::time::Duration, f64)> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::DIRECT | OFlags::CLOEXEC;
    let fd = rustix::fs::open(dir, flags, Mode::from_raw_mode(0o600)).ok()?;
    let buf = crate::AlignedBuf::with_align(1 << 20, 4096);
    let cpu = || {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `t` is a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let (wall0, cpu0) = (std::time::Instant::now(), cpu());
    let mut times = Vec::with_capacity(4);
    for i in 0..4u64 {
        let t = std::time::Instant::now();
        let n = rustix::io::pwrite(&fd, buf.bytes(), i << 20).ok()?;
        if n != buf.capacity() {
            return None;
        }
        times.push(t.elapsed());
    }
    let on_cpu = (cpu() - cpu0).as_secs_f64() / wall0.elapsed().as_secs_f64().max(1e-9);
    times.sort();
    Some((times[times.len() / 2], on_cpu))
}
