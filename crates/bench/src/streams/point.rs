//! The points of a stream campaign.
//!
//! A [`Point`] is one measurement setting: a stream kind, an [`Op`], k
//! streams of N elements each and a [`BlockSize`], repeated `reps` times. A
//! [`Sweep`] is the cartesian product a parameter-file row or the command
//! line describes (`ops × N × k × B` for one kind); [`Sweep::points`]
//! expands it.

use std::fmt;
use std::str::FromStr;

use emsort_io::{format_size, StreamConfig, StreamKind};

use crate::grid::product;

/// Size in bytes of one element (`u32`).
pub const ELEMENT_SIZE: u64 = 4;

/// Whether a point writes or reads its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Create k files and write N elements to each, round-robin.
    Write,
    /// Read k files round-robin until all are exhausted.
    Read,
}

impl Op {
    /// Both operations, writes first (a read needs the files a write makes).
    pub const ALL: [Op; 2] = [Op::Write, Op::Read];

    /// The name used on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> Result<Op, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read" => Ok(Op::Read),
            "write" => Ok(Op::Write),
            _ => Err(format!("unknown operation '{s}' (expected read or write)")),
        }
    }
}

/// The block size B a point asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockSize {
    /// B bytes.
    Bytes(u64),
    /// The whole file: N · 4 bytes.
    WholeFile,
}

impl BlockSize {
    /// B in bytes for files of `n` elements.
    pub fn bytes(self, n: u64) -> u64 {
        match self {
            BlockSize::Bytes(b) => b,
            BlockSize::WholeFile => n * ELEMENT_SIZE,
        }
    }
}

impl fmt::Display for BlockSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockSize::Bytes(b) => f.write_str(&format_size(*b)),
            BlockSize::WholeFile => f.write_str("file"),
        }
    }
}

/// One measurement setting, run `reps` times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// The stream kind.
    pub kind: StreamKind,
    /// Read or write.
    pub op: Op,
    /// Number of streams open at once.
    pub k: u32,
    /// Elements per stream.
    pub n: u64,
    /// Block size; `None` for kinds that ignore it (`syscall`, `stdio`).
    pub block: Option<BlockSize>,
    /// Repetitions.
    pub reps: u32,
}

impl Point {
    /// The requested block size in bytes, `None` for kinds that ignore B.
    pub fn block_bytes(&self) -> Option<u64> {
        self.block.map(|b| b.bytes(self.n))
    }

    /// Bytes the point's k files hold: k · N · 4.
    pub fn data_bytes(&self) -> u64 {
        u64::from(self.k) * self.n * ELEMENT_SIZE
    }

    /// The stream configuration for a run of this point. Output streams
    /// sync on close so that a write's time ends when the data are on the
    /// device.
    pub fn config(&self) -> StreamConfig {
        let mut cfg = StreamConfig::new(self.kind).sync_on_close(true);
        if let Some(b) = self.block_bytes() {
            cfg = cfg.block_size(usize::try_from(b).unwrap_or(usize::MAX));
        }
        cfg
    }

    /// Memory the point's k streams need for their buffers: k · B (times Q
    /// for `uring`); 0 for kinds without a buffer of size B.
    pub fn buffer_bytes(&self) -> u64 {
        let per_stream = match self.kind {
            StreamKind::Uring | StreamKind::UringDirect => {
                self.block_bytes().unwrap_or(0) * u64::from(StreamConfig::DEFAULT_QUEUE_DEPTH)
            }
            // mmap maps windows of B bytes: they are page cache, not heap,
            // but still have to fit in memory.
            _ => self.block_bytes().unwrap_or(0),
        };
        u64::from(self.k) * per_stream
    }

    /// A short label: `buffered write k=4 N=1e6 B=64K`.
    pub fn label(&self) -> String {
        let mut s = format!("{} {} k={} N={}", self.kind, self.op, self.k, format_count(self.n));
        if let Some(b) = self.block {
            s.push_str(&format!(" B={b}"));
        }
        s
    }

    /// The key that identifies the point regardless of its repetitions.
    pub(crate) fn key(&self) -> (usize, Op, u32, u64, Option<BlockSize>) {
        (kind_rank(self.kind), self.op, self.k, self.n, self.block)
    }
}

/// The position of `kind` in [`StreamKind::ALL`] (the documentation's order).
pub(crate) fn kind_rank(kind: StreamKind) -> usize {
    StreamKind::ALL.iter().position(|&k| k == kind).unwrap_or(usize::MAX)
}

/// A cartesian product of settings for one kind: every op × N × k × B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// The stream kind.
    pub kind: StreamKind,
    /// Operations.
    pub ops: Vec<Op>,
    /// Elements per stream.
    pub n: Vec<u64>,
    /// Numbers of streams.
    pub k: Vec<u32>,
    /// Block sizes (ignored, and may be empty, for `syscall` and `stdio`).
    pub blocks: Vec<BlockSize>,
    /// Repetitions of each point.
    pub reps: u32,
}

impl Sweep {
    /// Every point of the sweep.
    pub fn points(&self) -> Vec<Point> {
        let blocks: Vec<Option<BlockSize>> = if self.kind.uses_block_size() {
            self.blocks.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        product([self.ops.len(), self.n.len(), self.k.len(), blocks.len()])
            .map(|[op, n, k, b]| Point {
                kind: self.kind,
                op: self.ops[op],
                k: self.k[k],
                n: self.n[n],
                block: blocks[b],
                reps: self.reps,
            })
            .collect()
    }
}

/// Formats an element count the way the parameter files write it: `1e6`
/// for round powers of ten times a short mantissa, digits otherwise.
///
/// ```
/// use emsort_bench::streams::format_count;
/// assert_eq!(format_count(1_000_000), "1e6");
/// assert_eq!(format_count(2_500_000), "2.5e6");
/// assert_eq!(format_count(1234), "1234");
/// assert_eq!(format_count(100), "100");
/// ```
pub fn format_count(n: u64) -> String {
    if n < 1000 {
        return n.to_string();
    }
    let mut m = n;
    let mut e = 0;
    while m.is_multiple_of(10) {
        m /= 10;
        e += 1;
    }
    match m {
        1..=9 => format!("{m}e{e}"),
        10..=99 => format!("{}.{}e{}", m / 10, m % 10, e + 1),
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_expands_and_ignores_b_for_syscall() {
        let s = Sweep {
            kind: StreamKind::Syscall,
            ops: vec![Op::Write, Op::Read],
            n: vec![10, 100],
            k: vec![1, 2],
            blocks: vec![BlockSize::Bytes(4), BlockSize::Bytes(8)],
            reps: 3,
        };
        let p = s.points();
        assert_eq!(p.len(), 8);
        assert!(p.iter().all(|p| p.block.is_none() && p.reps == 3));
        let s = Sweep { kind: StreamKind::Buffered, ..s };
        assert_eq!(s.points().len(), 16);
    }

    #[test]
    fn point_sizes_and_label() {
        let p = Point {
            kind: StreamKind::Buffered,
            op: Op::Write,
            k: 4,
            n: 1_000_000,
            block: Some(BlockSize::WholeFile),
            reps: 1,
        };
        assert_eq!(p.block_bytes(), Some(4_000_000));
        assert_eq!(p.data_bytes(), 16_000_000);
        assert_eq!(p.buffer_bytes(), 16_000_000);
        assert_eq!(p.label(), "buffered write k=4 N=1e6 B=file");
        assert!(p.config().sync_on_close);
        assert_eq!(format_count(30_000), "3e4");
        assert_eq!(format_count(1001), "1001");
    }
}
