//! One merge: up to d sorted runs in, one sorted run out.
//!
//! # Algorithm
//!
//! 1. Open an input stream (the plan's input kind) on each run and
//!    read its first item: these are the leaves of a
//!    loser tree (a tournament tree).
//! 2. Repeatedly: the tree's winner is the smallest head (the largest, in
//!    descending order); write it to the output stream, replace it with the
//!    next item of the same run, replay that leaf's path (⌈log₂ d⌉
//!    comparisons). An exhausted run's leaf loses every match.
//! 3. Close the output: a full disk is reported here at the latest.
//!
//! Each stream of a merge of k runs gets b bytes: the plan's block size B,
//! or M/(2(k+1)) when M leaves room (a power of two, at most 16 MiB:
//! [`SortPlan::merge_block`]), so a final merge moves data in requests of
//! megabytes. The output is written behind (module `write_behind`): the
//! merge fills four blocks of b/8 that a writer thread writes through an
//! output stream of b/2, so the output's memory stays b and its copies and system
//! calls run on another core. The runs are read ahead (module
//! `read_ahead`): each run is a stream of b/4 and two page-aligned blocks
//! of b/4 that a reader thread keeps filled (an `O_DIRECT` stream reads
//! straight into them, without a copy through its own buffer), so each
//! input stays within b.
//!
//! ```text
//!   run 0 ──► [head] ┐   (reader thread)               (writer thread)
//!   run 1 ──► [head] ├─► loser tree ──► winner ──► output stream ──► new run
//!    …               │
//!   run d−1 ► [head] ┘
//! ```
//!
//! Numbers are merged in rounds over the blocks in memory, on all the
//! sort's threads (module `multiway`): each round takes every item no
//! larger than the smallest last key among the runs' current blocks, splits
//! it into one part per thread by multi-sequence selection, and each thread
//! merges its part straight into its piece of the output block: through
//! AVX2 or AVX-512 bitonic merge networks where the CPU has them (module
//! `simd_merge`), at the scalar level through a branch-free loser tree
//! over packed normalised keys (module `tree`).
//! Records and lines are merged in rounds too (module `merge_items`), over
//! an index of each run's block: each head is the item's 8-byte key prefix
//! (most comparisons end there) and a pointer to its bytes in the run's
//! read-ahead block (an item straddling two blocks is copied whole into a
//! carry buffer); the parts of a round are split at pivot items and merged
//! through the one loser tree (module `tree`) comparing the heads' prefixes, calling the
//! full comparison only on equal ones (`merge_items::HeadTree`), so the
//! merge copies each item once, into the output. Equal items are all
//! written (the tree breaks ties by run index); the merge does not need
//! stability for correctness.
//!
//! Compressed runs (module `compress`) are read through their codec —
//! frames decoded by the read-ahead thread, or a program's `PROG -d` —
//! and a new run is written through the codec the store chose, the
//! frames compressed by the write-behind thread.
//!
//! The cancel flag is polled every 64 Ki numbers, and every round of records or lines.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::{Error, ErrorKind, Progress, Result};

use crate::byte_stream::BlockSink;
use crate::codec;
use crate::compress::RunCodec;
use crate::merge_items;
use crate::multiway::{self, MergeKey};
use crate::output::Output;
use crate::read_ahead;
use crate::write_behind::WriteBehind;
use crate::{Format, SortPlan};

/// Items between two polls of the cancel flag (and progress reports).
const POLL: u64 = 1 << 16;

/// Bytes read and written by one merge.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Moved {
    pub read: u64,
    pub written: u64,
}

/// A run a merge reads.
#[derive(Debug, Clone)]
pub(crate) struct RunFile {
    /// Where it is.
    pub path: PathBuf,
    /// How it is stored (module `compress`).
    pub codec: RunCodec,
    /// The sort wrote it in order (a run it formed, or merged from such
    /// runs); a file given to `-m` may not be, and the merge checks it.
    pub sorted: bool,
    /// Each line comes after its normalised key, 8 bytes (a run formed
    /// from [`Order::KeyedLines`](crate::run_store::Order::KeyedLines)):
    /// the merge reads the keys instead of parsing the lines, and writes
    /// the lines alone.
    pub keyed: bool,
    /// The sort made it and removes it once merged: its disk space is
    /// freed as the merge reads it (module `read_ahead`). Never a caller's
    /// file; never a run a compress program reads.
    pub free_behind: bool,
    /// Bytes at its start that are not items: a header (`-m --header`).
    pub skip: u64,
}

/// Where a merge writes.
pub(crate) enum Dest<'o, 'a> {
    /// A new run, stored with a codec.
    Run(PathBuf, RunCodec),
    /// The sort's output (the last merge).
    Output(&'o Output<'a>),
}

/// Merges the sorted runs `inputs` into `dest` with `plan`'s format,
/// order and streams.
pub(crate) fn merge_runs(
    plan: &SortPlan,
    pool: &rayon::ThreadPool,
    inputs: &[RunFile],
    dest: Dest<'_, '_>,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<Moved> {
    let framed =
        inputs.iter().any(|r| r.codec.in_frames()) || matches!(&dest, Dest::Run(_, c) if c.in_frames());
    let block = plan.merge_block_framed(inputs.len(), framed);
    // The output: a stream of b/2 fed by four write-behind blocks of b/8.
    let unit = plan.unit();
    let stream_block = (block / 2).max(unit);
    let (sink, name): (Box<dyn BlockSink + '_>, PathBuf) = match dest {
        Dest::Run(p, codec) => {
            let cfg = plan.stream_config(false).block_size(stream_block);
            (codec.create(&p, unit, &cfg)?, p)
        }
        Dest::Output(o) => (o.open(stream_block)?, o.name().to_path_buf()),
    };
    let output = name.as_path();
    let sink = std::sync::Mutex::new(Some(sink));
    let ctx = Ctx { plan, pool, block, output, sink, progress, cancel };
    // The merge runs on a worker of the pool: a round's parts go to the
    // other workers while this one merges the first part itself, and no
    // thread is woken only to hand the round over (with the merge on a
    // thread of its own, a 1 GiB merge of lines on 2 cores made 100k
    // involuntary context switches, with it on the pool 5k).
    pool.install(|| match (plan.format(), plan.reverse()) {
        (Format::U32, false) => ctx.numbers::<u32, false>(inputs),
        (Format::U32, true) => ctx.numbers::<u32, true>(inputs),
        (Format::I32, false) => ctx.numbers::<i32, false>(inputs),
        (Format::I32, true) => ctx.numbers::<i32, true>(inputs),
        (Format::U64, false) => ctx.numbers::<u64, false>(inputs),
        (Format::U64, true) => ctx.numbers::<u64, true>(inputs),
        (Format::I64, false) => ctx.numbers::<i64, false>(inputs),
        (Format::I64, true) => ctx.numbers::<i64, true>(inputs),
        (Format::F32, false) => ctx.numbers::<f32, false>(inputs),
        (Format::F32, true) => ctx.numbers::<f32, true>(inputs),
        (Format::F64, false) => ctx.numbers::<f64, false>(inputs),
        (Format::F64, true) => ctx.numbers::<f64, true>(inputs),
        (Format::Rec(_) | Format::Lines, _) => ctx.bytes(inputs),
    })
}

struct Ctx<'a, 's> {
    plan: &'a SortPlan,
    pool: &'a rayon::ThreadPool,
    /// Memory per stream: [`SortPlan::merge_block`].
    block: usize,
    output: &'a Path,
    /// The output, taken by [`Ctx::write_behind`].
    sink: std::sync::Mutex<Option<Box<dyn BlockSink + 's>>>,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
}

impl<'s> Ctx<'_, 's> {
    /// The output (a stream of blocks of b/2), fed by four blocks of b/8
    /// through a writer thread (b: the merge's memory per stream,
    /// [`SortPlan::merge_block`]).
    fn write_behind<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
    ) -> Result<WriteBehind<'scope>>
    where
        's: 'scope,
    {
        let out =
            self.sink.lock().unwrap_or_else(|e| e.into_inner()).take().expect("the output is opened once");
        WriteBehind::new(scope, out, self.block / 4, self.output)
    }

    fn poll(&self, bytes: u64) -> Result<()> {
        self.progress.advance(bytes);
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, self.output));
        }
        Ok(())
    }

    /// Opens the runs as streams of the format's unit with blocks of b/4
    /// (compressed runs through their codec); read ahead in two blocks of
    /// b/4 each.
    fn open_runs(&self, inputs: &[RunFile]) -> Result<(Vec<read_ahead::Input>, usize)> {
        let unit = self.plan.unit();
        let b = self.block;
        let cfg = self.plan.stream_config(true).block_size((b / 4).max(unit));
        let open = |r: &RunFile| r.codec.open(&r.path, unit, &cfg);
        let runs = inputs
            .iter()
            .map(|r| {
                Ok(read_ahead::Input {
                    stream: open(r)?,
                    path: r.path.clone(),
                    free_behind: r.free_behind,
                    skip: r.skip,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((runs, (b / 4).max(unit)))
    }

    /// Merges numbers in rounds over the runs' blocks in memory (module
    /// [`multiway`]): each round emits every item no larger than the smallest
    /// last key of the current blocks (at most what the output block has
    /// room for), merged by `threads` threads straight into the output
    /// block, then refills the blocks it used up.
    fn numbers<T: MergeKey, const REV: bool>(&self, inputs: &[RunFile]) -> Result<Moved> {
        let (runs, block) = self.open_runs(inputs)?;
        let n = std::thread::scope(|scope| -> Result<u64> {
            let mut ins = read_ahead::start(scope, runs, block)?;
            let mut done = vec![false; ins.len()];
            let mut out = self.write_behind(scope)?;
            let (mut n, mut reported) = (0u64, 0u64);
            let (mut counts, mut live) = (Vec::new(), Vec::new());
            loop {
                for (r, inp) in ins.iter_mut().enumerate() {
                    if !done[r] && inp.pos == inp.end {
                        done[r] = !inp.refill()?;
                        if inp.end % T::SIZE != 0 {
                            let size = inp.end as u64;
                            return Err(Error::new(
                                ErrorKind::BadSize { size, element_size: T::SIZE },
                                inp.path(),
                            ));
                        }
                    }
                }
                live.clear();
                live.extend((0..ins.len()).filter(|&r| !done[r]));
                if live.is_empty() {
                    break;
                }
                let windows: Vec<&[T]> = live
                    .iter()
                    .map(|&r| bytemuck::cast_slice(&ins[r].buf.bytes()[ins[r].pos..ins[r].end]))
                    .collect();
                // Safe to emit: items ≤ the smallest last key in memory.
                let bound =
                    windows.iter().map(|w| multiway::key64::<T, REV>(w[w.len() - 1])).min().expect("live");
                multiway::count_le::<T, REV>(&windows, bound, &mut counts);
                let safe: Vec<&[T]> = windows.iter().zip(&counts).map(|(w, &c)| &w[..c]).collect();
                let spare: &mut [T] = bytemuck::cast_slice_mut(out.spare()?);
                let q = counts.iter().sum::<usize>().min(spare.len());
                multiway::merge_front::<T, REV>(self.pool, &safe, &mut spare[..q], &mut counts);
                out.commit(q * T::SIZE);
                for (&r, &c) in live.iter().zip(&counts) {
                    ins[r].pos += c * T::SIZE;
                }
                n += q as u64;
                if n - reported >= POLL {
                    self.poll((n - reported) * T::SIZE as u64)?;
                    reported = n;
                }
            }
            out.finish()?;
            self.progress.advance((n - reported) * T::SIZE as u64);
            Ok(n)
        })?;
        let bytes = n * T::SIZE as u64;
        Ok(Moved { read: bytes, written: bytes })
    }

    /// Merges records or lines in rounds on all threads (module
    /// [`merge_items`](crate::merge_items)).
    fn bytes(&self, inputs: &[RunFile]) -> Result<Moved> {
        let (runs, block) = self.open_runs(inputs)?;
        let threads = self.plan.threads().max(1);
        let written = std::thread::scope(|scope| -> Result<merge_items::Moved> {
            let readers = read_ahead::start(scope, runs, block)?;
            let mut out = self.write_behind(scope)?;
            let mut poll = |bytes| self.poll(bytes);
            let codec = codec::for_plan(self.plan);
            let kinds: Vec<merge_items::RunKind> =
                inputs.iter().map(|r| merge_items::RunKind { sorted: r.sorted, keyed: r.keyed }).collect();
            let moved =
                merge_items::merge(readers, &kinds, block, &*codec, &mut out, self.pool, threads, &mut poll)?;
            out.finish()?;
            Ok(moved)
        })?;
        Ok(Moved { read: written.read, written: written.written })
    }
}
