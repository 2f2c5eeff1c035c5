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
