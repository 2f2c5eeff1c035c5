//! What the adaptive reader chose for a request, and why: the [`Rule`] of
//! the thesis' flowchart, the [`Choice`] it makes (from the
//! [`Calibration`](super::Calibration)'s thresholds), and the
//! [`ChoiceCounts`] of a file's requests.

use super::ReaderKind;

/// Why the adaptive reader chose what it did for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A small request and the swapFlag set → `mmap`.
    SmallRandom,
    /// A small request, but the swapFlag clear (hint, or the file does not
    /// fit in the available memory) → `pread`.
    NoSwapFlag,
    /// A small request continuing a sequential run → `pread`.
    SequentialRun,
    /// A small request to a file not yet seen read at random offsets (with
    /// the `auto` hint, fewer than [`Calibration::random_run`](super::Calibration::random_run) jumps) → `pread`.
    NotYetRandom,
    /// Larger than `mmap_max_request`, smaller than `uring_min_request` → `pread`.
    LargerThanMmap,
    /// A request continuing a sequential run, with
    /// [`Calibration::direct_readahead`](super::Calibration::direct_readahead) on → `O_DIRECT` reads ahead of the
    /// run through io_uring.
    DirectRun,
    /// A request continuing a sequential run with the direct read-ahead,
    /// whose bytes the page cache already holds → `pread` from the cache.
    CachedRun,
    /// The direct read-ahead chosen, but `O_DIRECT` or `cachestat` is
    /// unavailable → `pread`.
    DirectUnavailable,
    /// At least `uring_min_request` → `uring`.
    Large,
    /// A request of a batch not served by `mmap` → `uring`.
    Batch,
    /// `uring` chosen, but io_uring is unavailable → `pread`.
    UringUnavailable,
    /// `mmap` chosen, but the file system cannot map files → `pread`.
    MmapUnavailable,
}

impl Rule {
    /// A short name for statistics (`small-random`, `no-swap-flag`, …).
    pub fn name(self) -> &'static str {
        match self {
            Rule::SmallRandom => "small-random",
            Rule::NoSwapFlag => "no-swap-flag",
            Rule::SequentialRun => "sequential-run",
            Rule::NotYetRandom => "not-yet-random",
            Rule::LargerThanMmap => "larger-than-mmap",
            Rule::DirectRun => "direct-run",
            Rule::CachedRun => "cached-run",
            Rule::DirectUnavailable => "direct-unavailable",
            Rule::Large => "large",
            Rule::Batch => "batch",
            Rule::UringUnavailable => "uring-unavailable",
            Rule::MmapUnavailable => "mmap-unavailable",
        }
    }
}

/// The technique the adaptive reader used for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// `Mmap`, `Pread` or `Uring`.
    pub kind: ReaderKind,
    /// Block size B for `pread` and `uring` (0 for `mmap`).
    pub block_size: usize,
    /// Queue depth Q for `uring` (1 otherwise).
    pub queue_depth: u32,
    /// Why.
    pub rule: Rule,
}

/// Requests and bytes per technique the adaptive reader used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChoiceCounts {
    /// Requests served by `mmap`.
    pub mmap_requests: u64,
    /// Bytes read through `mmap`.
    pub mmap_bytes: u64,
    /// Requests served by `pread`.
    pub pread_requests: u64,
    /// Bytes read by `pread`.
    pub pread_bytes: u64,
    /// Requests served by io_uring.
    pub uring_requests: u64,
    /// Bytes read by io_uring.
    pub uring_bytes: u64,
    /// Requests served by the direct read-ahead of a sequential run
    /// ([`Calibration::direct_readahead`](super::Calibration::direct_readahead); not counted as `uring`).
    pub direct_requests: u64,
    /// Bytes read by it.
    pub direct_bytes: u64,
    /// Files whose background prefetch was started ([`Calibration::prefetch`](super::Calibration::prefetch)).
    pub prefetched_files: u64,
    /// Their sizes, summed.
    pub prefetched_bytes: u64,
}

impl std::ops::AddAssign for ChoiceCounts {
    /// Adds `o`'s counts (for totals over files and threads).
    fn add_assign(&mut self, o: ChoiceCounts) {
        self.mmap_requests += o.mmap_requests;
        self.mmap_bytes += o.mmap_bytes;
        self.pread_requests += o.pread_requests;
        self.pread_bytes += o.pread_bytes;
        self.uring_requests += o.uring_requests;
        self.uring_bytes += o.uring_bytes;
        self.direct_requests += o.direct_requests;
        self.direct_bytes += o.direct_bytes;
        self.prefetched_files += o.prefetched_files;
        self.prefetched_bytes += o.prefetched_bytes;
    }
}

impl ChoiceCounts {
    pub(super) fn add(&mut self, c: Choice, bytes: usize) {
        let (r, b) = match c.kind {
            _ if c.rule == Rule::DirectRun => (&mut self.direct_requests, &mut self.direct_bytes),
            ReaderKind::Mmap => (&mut self.mmap_requests, &mut self.mmap_bytes),
            ReaderKind::Uring => (&mut self.uring_requests, &mut self.uring_bytes),
            _ => (&mut self.pread_requests, &mut self.pread_bytes),
        };
        *r += 1;
        *b += bytes as u64;
    }

    /// All requests.
    pub fn requests(&self) -> u64 {
        self.mmap_requests + self.pread_requests + self.uring_requests + self.direct_requests
    }

    /// All bytes.
    pub fn bytes(&self) -> u64 {
        self.mmap_bytes + self.pread_bytes + self.uring_bytes + self.direct_bytes
    }
}
