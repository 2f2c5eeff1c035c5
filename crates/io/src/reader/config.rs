//! How to open a reader.
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

use super::{AccessHint, Calibration, Madvise, ReaderKind};

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
