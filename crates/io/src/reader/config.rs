//! Reader kinds and their configuration.
//!
//! A [`ReaderConfig`] names the [`ReaderKind`] and its parameters:
//!
//! | parameter      | default  | used by                          | meaning                                                    |
//! |----------------|----------|----------------------------------|------------------------------------------------------------|
//! | `block_size` B | 4 MiB    | `pread`, `uring`                 | largest piece one system call / one ring request reads     |
//! | `queue_depth` Q| 32       | `uring`                          | pieces in flight                                           |
//! | `madvise`      | `normal` | `mmap`                           | `madvise` hint for the whole mapping                       |
//! | `access`       | `auto`   | `adaptive`                       | what the caller knows about the file (the thesis' swapFlag) |
//! | `calibration`  | built in | `adaptive`                       | thresholds ([`Calibration`])                                |
//!
//! The defaults are the thesis' choices: B = 4 MiB, "one of the best
//! performing block sizes for a buffered read" (§4.1.4), and Q = 32 (§4.2.3).
//! The `stream` reader ignores B: it uses the standard library's own buffer
//! (8 KiB), as the thesis' `StreamReader` used iostream's.

use std::fmt;
use std::str::FromStr;

use super::Calibration;

/// The technique a reader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReaderKind {
    /// `std::io::BufReader` with seek.
    Stream,
    /// The whole file mapped; reads copy out of the mapping.
    Mmap,
    /// `pread` in pieces of at most B bytes.
    Pread,
    /// io_uring with up to Q pieces of B bytes in flight.
    Uring,
    /// `mmap`, `pread` or `uring` per request by the thesis' guidelines.
    Adaptive,
}

impl ReaderKind {
    /// All kinds, in the order the documentation lists them.
    pub const ALL: [ReaderKind; 5] =
        [ReaderKind::Stream, ReaderKind::Mmap, ReaderKind::Pread, ReaderKind::Uring, ReaderKind::Adaptive];

    /// The kind's name as used on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            ReaderKind::Stream => "stream",
            ReaderKind::Mmap => "mmap",
            ReaderKind::Pread => "pread",
            ReaderKind::Uring => "uring",
            ReaderKind::Adaptive => "adaptive",
        }
    }

    /// Whether the block size B changes what this kind does.
    pub fn uses_block_size(self) -> bool {
        matches!(self, ReaderKind::Pread | ReaderKind::Uring)
    }

    /// Whether the queue depth Q changes what this kind does.
    pub fn uses_queue_depth(self) -> bool {
        matches!(self, ReaderKind::Uring)
    }
}

impl fmt::Display for ReaderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReaderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<ReaderKind, String> {
        ReaderKind::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            format!(
                "unknown reader '{s}' (expected one of: {})",
                ReaderKind::ALL.map(|k| k.name()).join(", ")
            )
        })
    }
}

/// The `madvise(2)` hint an `mmap` reader gives for its whole mapping.
///
/// On Linux, `normal` reads around a faulting page (up to the device's
/// `read_ahead_kb`), `random` reads only the faulting page, `sequential`
/// reads ahead aggressively, `willneed` starts reading the whole file at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Madvise {
    /// `MADV_NORMAL` (the kernel's default; the thesis gave no hint).
    #[default]
    Normal,
    /// `MADV_RANDOM`.
    Random,
    /// `MADV_SEQUENTIAL`.
    Sequential,
    /// `MADV_WILLNEED`.
    WillNeed,
}

impl Madvise {
    /// All hints.
    pub const ALL: [Madvise; 4] = [Madvise::Normal, Madvise::Random, Madvise::Sequential, Madvise::WillNeed];

    /// The hint's name (`normal`, `random`, `sequential`, `willneed`).
    pub fn name(self) -> &'static str {
        match self {
            Madvise::Normal => "normal",
            Madvise::Random => "random",
            Madvise::Sequential => "sequential",
            Madvise::WillNeed => "willneed",
        }
    }

    pub(crate) fn advice(self) -> memmap2::Advice {
        match self {
            Madvise::Normal => memmap2::Advice::Normal,
            Madvise::Random => memmap2::Advice::Random,
            Madvise::Sequential => memmap2::Advice::Sequential,
            Madvise::WillNeed => memmap2::Advice::WillNeed,
        }
    }
}

impl fmt::Display for Madvise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Madvise {
    type Err = String;
    fn from_str(s: &str) -> Result<Madvise, String> {
        Madvise::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            format!(
                "unknown madvise hint '{s}' (expected one of: {})",
                Madvise::ALL.map(|k| k.name()).join(", ")
            )
        })
    }
}

/// What the caller knows about how a file will be read: the thesis'
/// *swapFlag* (§5.1), for the `adaptive` reader.
///
/// The thesis sets swapFlag when three file-level statements all hold: the
/// data read from the file are less than the available memory, the reads are
/// at random offsets, and a large part of the file will be read. With
/// swapFlag set, small requests go to `mmap`; without it, the reader never
/// maps the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AccessHint {
    /// Not known: swapFlag is "the file fits in the available memory"
    /// (`MemAvailable`, checked when the file is first about to be mapped),
    /// and a run of requests that continue each other is taken as
    /// sequential ([`Calibration::sequential_run`]).
    #[default]
    Auto,
    /// swapFlag set: random reads of a large part of a file that fits in
    /// memory (what the thesis' benchmark set for every file).
    Random,
    /// The file is read front to back: buffered reads, never `mmap`.
    Sequential,
    /// The data read exceed the available memory (the file is being
    /// swapped): never `mmap`, whose pages the kernel evicts late (§4.4.2.4).
    LargerThanMemory,
}

impl AccessHint {
    /// All hints.
    pub const ALL: [AccessHint; 4] =
        [AccessHint::Auto, AccessHint::Random, AccessHint::Sequential, AccessHint::LargerThanMemory];

    /// The hint's name (`auto`, `random`, `sequential`, `larger-than-memory`).
    pub fn name(self) -> &'static str {
        match self {
            AccessHint::Auto => "auto",
            AccessHint::Random => "random",
            AccessHint::Sequential => "sequential",
            AccessHint::LargerThanMemory => "larger-than-memory",
        }
    }
}

impl fmt::Display for AccessHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AccessHint {
    type Err = String;
    fn from_str(s: &str) -> Result<AccessHint, String> {
        AccessHint::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            format!(
                "unknown access hint '{s}' (expected one of: {})",
                AccessHint::ALL.map(|k| k.name()).join(", ")
            )
        })
    }
}

/// How to open a reader: kind, block size, queue depth, hints, thresholds.
///
/// ```
/// use emsort_io::{AccessHint, ReaderConfig, ReaderKind};
/// let cfg = ReaderConfig::new(ReaderKind::Uring).block_size(1 << 20).queue_depth(8);
/// assert_eq!((cfg.block_size, cfg.queue_depth), (1 << 20, 8));
/// let cfg = ReaderConfig::new(ReaderKind::Adaptive).access(AccessHint::LargerThanMemory);
/// assert_eq!(cfg.access, AccessHint::LargerThanMemory);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderConfig {
    /// The technique.
    pub kind: ReaderKind,
    /// Largest piece read at once, in bytes (at least 1; `uring` caps it at
    /// 1 GiB per request).
    pub block_size: usize,
    /// io_uring queue depth Q (at least 1).
    pub queue_depth: u32,
    /// The `mmap` reader's `madvise` hint.
    pub madvise: Madvise,
    /// The `adaptive` reader's knowledge of the access pattern.
    pub access: AccessHint,
    /// The `adaptive` reader's thresholds.
    pub calibration: Calibration,
}

impl ReaderConfig {
    /// Default block size: 4 MiB (the thesis' `BufferReader4MB`).
    pub const DEFAULT_BLOCK_SIZE: usize = 4 << 20;
    /// Default queue depth: 32 (the thesis' §4.2.3).
    pub const DEFAULT_QUEUE_DEPTH: u32 = 32;

    /// A configuration for `kind` with the defaults.
    pub fn new(kind: ReaderKind) -> ReaderConfig {
        ReaderConfig {
            kind,
            block_size: Self::DEFAULT_BLOCK_SIZE,
            queue_depth: Self::DEFAULT_QUEUE_DEPTH,
            madvise: Madvise::Normal,
            access: AccessHint::Auto,
            calibration: Calibration::default(),
        }
    }

    /// Sets the block size B in bytes.
    pub fn block_size(mut self, b: usize) -> ReaderConfig {
        self.block_size = b;
        self
    }

    /// Sets the io_uring queue depth Q.
    pub fn queue_depth(mut self, q: u32) -> ReaderConfig {
        self.queue_depth = q;
        self
    }

    /// Sets the `mmap` reader's `madvise` hint.
    pub fn madvise(mut self, m: Madvise) -> ReaderConfig {
        self.madvise = m;
        self
    }

    /// Sets the `adaptive` reader's access hint (its swapFlag).
    pub fn access(mut self, a: AccessHint) -> ReaderConfig {
        self.access = a;
        self
    }

    /// Sets the `adaptive` reader's thresholds.
    pub fn calibration(mut self, c: Calibration) -> ReaderConfig {
        self.calibration = c;
        self
    }
}

impl Default for ReaderConfig {
    fn default() -> ReaderConfig {
        ReaderConfig::new(ReaderKind::Adaptive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ReaderKind::ALL {
            assert_eq!(k.to_string().parse::<ReaderKind>().unwrap(), k);
        }
        for m in Madvise::ALL {
            assert_eq!(m.to_string().parse::<Madvise>().unwrap(), m);
        }
        for a in AccessHint::ALL {
            assert_eq!(a.to_string().parse::<AccessHint>().unwrap(), a);
        }
        let e = "fast".parse::<ReaderKind>().unwrap_err();
        assert!(e.contains("stream, mmap, pread, uring, adaptive"), "{e}");
    }
}
