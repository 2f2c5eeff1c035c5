//! The two interfaces between the sort's phases: where run formation puts
//! its runs ([`RunStore`]) and what merges them into the output
//! ([`Merger`]).
//!
//! ```text
//!  Input ──► run formation ──► RunStore ──────────► Merger ──► Output
//!            (SortedChunk)     plain: temp dirs     plain loser tree (merge schedule)
//!                              striped: D disks     DSM · SRM (merge passes)
//! ```
//!
//! Run formation hands each sorted chunk ([`SortedChunk`]: its bytes and
//! their order) to the store, which writes it as a run its way: the plain
//! store ([`crate::plain::PlainStore`]) as a file in one of the temp dirs,
//! the striped store ([`crate::pdisk::StripedStore`]) in blocks over D disks
//! with SRM's forecasting keys. A chunk that is the whole input goes to the
//! output instead ([`SortedChunk::write`]). The merger then takes the store
//! and merges its runs into the output; each method has one
//! ([`crate::plain::Plain`], [`crate::pdisk::Dsm`], [`crate::pdisk::Srm`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::{Error, ErrorKind, Progress, Result};

use crate::byte_stream::BlockSink;
use crate::multiway::{self, MergeKey};
use crate::output::Output;
use crate::plan::SortPlan;
use crate::stats::{ParallelDiskStats, PhaseStats};
use crate::write_behind::WriteBehind;
use crate::Format;

/// The order of a sorted chunk's items.
pub(crate) enum Order {
    /// The chunk itself is sorted (numbers).
    InPlace,
    /// The chunk is sorted segments of numbers, the k-th ending at byte
    /// `ends[k]`; the run is their merge by `merge`.
    Segments { ends: Vec<usize>, merge: SegmentMerge },
    /// Record numbers in order (with their key prefixes).
    Records(Vec<(u64, u32)>),
    /// Lines in order: (key prefix, offset, length without the `\n`).
    Lines(Vec<(u64, u32, u32)>),
    /// Lines in order whose normalised keys ([`crate::keys`]) are at most 8
    /// bytes, each entry's prefix the whole key (zero-padded): the run
    /// carries each line's key before it, [`KEY_BYTES`] bytes big-endian,
    /// so the merge reads the keys instead of parsing the lines again.
    KeyedLines(Vec<(u64, u32, u32)>),
}

/// How the sorted segments of a chunk of numbers are merged as they are
/// written (the chunk, where each segment ends, the blocks, the output's
/// name, the cancel flag): [`merge_segments`] for the
/// numbers' type and order.
pub(crate) type SegmentMerge =
    fn(&SortedChunk<'_>, &[usize], &mut WriteBehind<'_>, &Path, &AtomicBool) -> Result<()>;

/// Bytes of the key before each line of a keyed run ([`Order::KeyedLines`]).
pub(crate) const KEY_BYTES: usize = 8;

/// A chunk sorted by run formation.
pub(crate) struct SortedChunk<'a> {
    /// The chunk's bytes (lines each end with `\n`).
    pub data: &'a [u8],
    /// Their order.
    pub order: &'a Order,
    /// The format of the items.
    pub format: Format,
    /// The threads that gather the items into the output's blocks.
    pub pool: &'a rayon::ThreadPool,
}

impl SortedChunk<'_> {
    /// The `n`-th item in order (a line with its `\n`).
    #[inline]
    fn item(&self, n: usize) -> &[u8] {
        match self.order {
            Order::Records(index) => {
                let (size, i) = (self.format.item_size().expect("records"), index[n].1 as usize);
                &self.data[i * size..(i + 1) * size]
            }
            Order::Lines(index) | Order::KeyedLines(index) => {
                let e = index[n];
                &self.data[e.1 as usize..(e.1 + e.2) as usize + 1]
            }
            Order::InPlace => {
                let size = self.format.item_size().expect("numbers");
                &self.data[n * size..(n + 1) * size]
            }
            Order::Segments { .. } => unreachable!("segments are merged, not read item by item"),
        }
    }

    /// The length of its longest item as written (a keyed line with its
    /// key).
    pub fn longest(&self) -> u64 {
        let extra = match self.order {
            Order::Lines(_) => 1,
            Order::KeyedLines(_) => KEY_BYTES as u64 + 1,
            _ => return self.format.item_size().map_or(0, |s| s as u64),
        };
        let (Order::Lines(index) | Order::KeyedLines(index)) = self.order else { unreachable!() };
        index.iter().map(|e| e.2 as u64).max().map_or(0, |l| l + extra)
    }

    /// The length of the `n`-th item in order as written (a keyed line
    /// with its key).
    #[inline]
    fn item_len(&self, n: usize) -> usize {
        match self.order {
            Order::Lines(index) => index[n].2 as usize + 1,
            Order::KeyedLines(index) => KEY_BYTES + index[n].2 as usize + 1,
            _ => self.format.item_size().expect("fixed-size items"),
        }
    }

    /// Copies items `from..to` (in order) into `out`, exactly as long as
    /// they are, on all the pool's threads: the range is cut into pieces of
    /// [`GATHER_PIECE`] items, each copied by one task with the items
    /// [`PREFETCH`] places ahead prefetched. `starts[k]` is where piece k
    /// begins in `out`.
    fn gather(&self, from: usize, to: usize, starts: &[usize], out: &mut [u8]) {
        let mut pieces: Vec<(usize, &mut [u8])> = Vec::with_capacity(starts.len());
        let mut rest = out;
        for (k, w) in starts.windows(2).enumerate() {
            let (piece, tail) = rest.split_at_mut(w[1] - w[0]);
            pieces.push((from + k * GATHER_PIECE, piece));
            rest = tail;
        }
        pieces.push((from + (starts.len() - 1) * GATHER_PIECE, rest));
        let keys = match self.order {
            Order::KeyedLines(index) => Some(index),
            _ => None,
        };
        let copy = |(first, piece): (usize, &mut [u8])| {
            let last = (first + GATHER_PIECE).min(to);
            let mut at = 0;
            for n in first..last {
                if n + PREFETCH < last {
                    prefetch(self.item(n + PREFETCH));
                }
                if let Some(index) = keys {
                    piece[at..at + KEY_BYTES].copy_from_slice(&index[n].0.to_be_bytes());
                    at += KEY_BYTES;
                }
                let item = self.item(n);
                copy_item(&mut piece[at..at + item.len()], item);
                at += item.len();
            }
            debug_assert_eq!(at, piece.len());
        };
        if pieces.len() == 1 {
            pieces.into_iter().for_each(copy);
        } else {
            use rayon::prelude::*;
            self.pool.install(|| pieces.into_par_iter().for_each(copy));
        }
    }

    /// At most `bytes` bytes of the run this chunk makes, as it is written
    /// (keyed lines with their keys), from a quarter into its order: what
    /// `--compress=auto` compresses to decide (module `compress`).
    pub fn sample(&self, bytes: usize) -> Vec<u8> {
        let from_slice = |s: &[u8]| {
            let start = s.len().saturating_sub(bytes) / 2;
            s[start..(start + bytes).min(s.len())].to_vec()
        };
        match self.order {
            Order::InPlace => return from_slice(self.data),
            // The first sorted segment.
            Order::Segments { ends, .. } => {
                return from_slice(&self.data[..ends.first().copied().unwrap_or(0)])
            }
            _ => {}
        }
        let len = self.len();
        let mut out = Vec::with_capacity(bytes.min(self.data.len() + 8 * len));
        let mut n = len / 4;
        while n < len && out.len() + self.item_len(n) <= bytes {
            if let Order::KeyedLines(index) = self.order {
                out.extend_from_slice(&index[n].0.to_be_bytes());
            }
            out.extend_from_slice(self.item(n));
            n += 1;
        }
        out
    }

    /// Items in the chunk.
    fn len(&self) -> usize {
        match self.order {
            Order::Records(index) => index.len(),
            Order::Lines(index) | Order::KeyedLines(index) => index.len(),
            Order::InPlace | Order::Segments { .. } => {
                self.data.len() / self.format.item_size().expect("numbers")
            }
        }
    }

    /// Calls `f` on every item in order, polling `cancel` every 64 Ki items.
    /// The item [`PREFETCH`] places ahead is prefetched while `f` copies
    /// this one: the items sit at random places in the chunk, so each copy
    /// would otherwise wait for a cache miss (perf showed the gather's
    /// copies as a third of a `lines` sort's time without it).
    pub fn for_each_item(
        &self,
        cancel: &AtomicBool,
        name: &Path,
        mut f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        debug_assert!(!matches!(self.order, Order::KeyedLines(_)), "a keyed chunk is gathered");
        let len = self.len();
        for n in 0..len {
            if n + PREFETCH < len {
                prefetch(self.item(n + PREFETCH));
            }
            f(self.item(n))?;
            if n % 65536 == 65535 && cancel.load(Ordering::Relaxed) {
                return Err(Error::new(ErrorKind::Interrupted, name));
            }
        }
        Ok(())
    }

    /// Writes the chunk in order to `out` (named `name` in errors); returns
    /// the bytes written. Numbers go in one piece; records and lines are
    /// *gathered* in index order into write-behind blocks (`block` bytes in
    /// all) that a writer thread writes (module `write_behind`), so the
    /// stream's copies and system calls run on another core; each block's
    /// items are copied by all the pool's threads ([`SortedChunk::gather`]:
    /// the items lie at random places in the chunk, and a copy waits for
    /// its cache miss, so one thread alone gathered at half the speed the
    /// disk writes).
    pub fn write(
        &self,
        mut out: Box<dyn BlockSink + '_>,
        block: usize,
        name: &Path,
        cancel: &AtomicBool,
    ) -> Result<u64> {
        if let Order::InPlace = self.order {
            out.write(self.data)?;
            out.close()?;
            return Ok(self.data.len() as u64);
        }
        std::thread::scope(|scope| {
            let mut w = WriteBehind::new(scope, out, block / 2, name)?;
            if let Order::Segments { ends, merge } = self.order {
                merge(self, ends, &mut w, name, cancel)?;
                return w.finish();
            }
            let len = self.len();
            let mut starts = Vec::new();
            let mut n = 0;
            while n < len {
                let spare = w.spare_for(self.item_len(n))?;
                // The items that fit the block's free part, and where each
                // piece of them starts.
                starts.clear();
                let (mut m, mut bytes) = (n, 0);
                while m < len && bytes + self.item_len(m) <= spare.len() {
                    if (m - n) % GATHER_PIECE == 0 {
                        starts.push(bytes);
                    }
                    bytes += self.item_len(m);
                    m += 1;
                }
                if m == n {
                    // One item longer than the free part.
                    if let Order::KeyedLines(index) = self.order {
                        w.push(&index[n].0.to_be_bytes())?;
                    }
                    w.push(self.item(n))?;
                    n += 1;
                    continue;
                }
                self.gather(n, m, &starts, &mut spare[..bytes]);
                w.commit(bytes);
                n = m;
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, name));
                }
            }
            w.finish()
        })
    }
}

/// Merges the sorted segments of numbers of `T` of `chunk` (ending at
/// `ends`, each ascending or, with `REV`, descending) into `w`'s
/// blocks: for each block, the items that fill it are selected from
/// the segments' fronts and merged on all the pool's threads
/// ([`multiway::merge_front`]) while the block before is written. The
/// codec of numbers gives this function, for its type, as the
/// [`SegmentMerge`] of [`Order::Segments`].
pub(crate) fn merge_segments<T: MergeKey, const REV: bool>(
    chunk: &SortedChunk<'_>,
    ends: &[usize],
    w: &mut WriteBehind<'_>,
    name: &Path,
    cancel: &AtomicBool,
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let mut from = 0;
    let mut segments: Vec<&[T]> = ends
        .iter()
        .map(|&end| {
            let s = bytemuck::cast_slice(&chunk.data[from..end]);
            from = end;
            s
        })
        .collect();
    let (mut left, mut counts) = (chunk.data.len() / size, Vec::new());
    while left > 0 {
        let spare = w.spare_for(size)?;
        // At most MERGE_STEP items at a time: the merge's scratch
        // (module `simd_merge`) stays small.
        let q = (spare.len() / size).min(left).min(MERGE_STEP);
        // At most q items of each segment go into this block.
        let fronts: Vec<&[T]> = segments.iter().map(|s| &s[..q.min(s.len())]).collect();
        let out: &mut [T] = bytemuck::cast_slice_mut(&mut spare[..q * size]);
        multiway::merge_front::<T, REV>(chunk.pool, &fronts, out, &mut counts);
        w.commit(q * size);
        for (s, &c) in segments.iter_mut().zip(&counts) {
            *s = &s[c..];
        }
        left -= q;
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, name));
        }
    }
    Ok(())
}

/// Copies `src` into `dst` (as long): items of at most 64 bytes as two
/// fixed-size copies that may overlap, which the compiler inlines, instead
/// of a call to `memmove` for each of them (called for every 36-byte line
/// of a CSV, it was a tenth of a `-t, -k3,3n` sort's CPU time).
#[inline(always)]
pub(crate) fn copy_item(dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    fn two<const N: usize>(dst: &mut [u8], src: &[u8]) {
        let n = src.len();
        dst[..N].copy_from_slice(&src[..N]);
        dst[n - N..].copy_from_slice(&src[n - N..]);
    }
    match src.len() {
        33..=64 => two::<32>(dst, src),
        16..=32 => two::<16>(dst, src),
        8..=15 => two::<8>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}

/// The most items of sorted segments merged at once
/// ([`SortedChunk::merge_segments`]).
const MERGE_STEP: usize = 64 << 10;

/// Items one task of [`SortedChunk::gather`] copies.
const GATHER_PIECE: usize = 4096;

/// How many items ahead [`SortedChunk::for_each_item`] prefetches.
const PREFETCH: usize = 16;

/// Asks the CPU to bring `item` (its first and last bytes) into the cache.
#[inline]
fn prefetch(item: &[u8]) {
    // Its last byte too: a line of a few dozen bytes crosses a cache line
    // boundary about half the time.
    if let (Some(first), Some(last)) = (item.first(), item.last()) {
        crate::radix::prefetch(first);
        crate::radix::prefetch(last);
    }
}

/// Where run formation writes its runs.
pub(crate) trait RunStore: Sync {
    /// Writes `chunk` as the next run; returns the bytes written (the run's
    /// and any side data's, such as forecasting keys).
    fn write_run(&self, chunk: &SortedChunk<'_>, cancel: &AtomicBool) -> Result<u64>;

    /// Whether its runs may be keyed ([`Order::KeyedLines`]): the store
    /// tells the merge which are.
    fn takes_keyed_runs(&self) -> bool {
        false
    }
}

/// What a merger needs besides its runs and the output.
pub(crate) struct MergeCtx<'a> {
    pub plan: &'a SortPlan,
    pub pool: &'a rayon::ThreadPool,
    pub progress: &'a dyn Progress,
    pub cancel: &'a AtomicBool,
}

/// What the merge phase did.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// Bytes read and written (seconds are the caller's).
    pub phase: PhaseStats,
    /// Bytes of the runs merged, over all merges (the passes' numerator).
    pub merged_bytes: u64,
    /// Depth of the merge tree.
    pub levels: u32,
    /// Number of merges.
    pub merges: usize,
    /// The most runs one merge read.
    pub order: usize,
    /// Bytes written to the output by the merges.
    pub output_bytes: u64,
    /// DSM and SRM: their numbers.
    pub parallel_disks: Option<ParallelDiskStats>,
    /// How the runs were stored (the plain store, when it compressed or
    /// was asked to decide).
    pub compression: Option<crate::stats::CompressionStats>,
    /// The runs' stream kind where the first run decided it, and why (the
    /// plain store: `--io auto`'s runs in the page cache weighed again).
    pub runs_io: Option<String>,
}

/// Merges a store's runs into the output.
pub(crate) trait Merger {
    /// The store it merges from.
    type Store: RunStore;
    /// Merges every run of `store` into `out` (opening it once), deleting
    /// runs it made as soon as they are merged. `written`: run formation
    /// already wrote the whole result to `out` (a single run).
    fn merge(
        &self,
        store: Self::Store,
        out: &Output<'_>,
        written: bool,
        ctx: &MergeCtx<'_>,
    ) -> Result<Merged>;
}

#[cfg(test)]
mod tests {
    use super::copy_item;

    /// Every length, each at every offset of a larger buffer: the bytes
    /// copied are the source's, and none outside the destination changes.
    #[test]
    fn copy_item_copies_exactly_its_bytes() {
        let src: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..=130 {
            for off in [0, 1, 5, 31] {
                let mut out = [0xEEu8; 200];
                copy_item(&mut out[off..off + len], &src[off + 3..off + 3 + len]);
                assert_eq!(&out[off..off + len], &src[off + 3..off + 3 + len], "len {len} off {off}");
                assert!(out[..off].iter().chain(&out[off + len..]).all(|&b| b == 0xEE), "len {len}");
            }
        }
    }
}
