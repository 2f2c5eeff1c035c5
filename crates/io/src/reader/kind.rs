//! What a reader is and the hints it takes: [`ReaderKind`], the
//! [`Madvise`] hint of a mapping, and the caller's [`AccessHint`] (the
//! thesis' swapFlag).

use std::fmt;
use std::str::FromStr;

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
    /// sequential ([`Calibration::sequential_run`](super::Calibration::sequential_run)).
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
