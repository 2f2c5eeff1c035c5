//! SRM, simple randomized mergesort, implemented as section 4 of Barve &
//! Vitter describes it: one forecasting heap, the lookahead queue LQ and
//! one occupancy queue OQ_d per disk, with the operations `Lookahead()` and
//! `Parallel_Read`, the flush of the largest prefetched blocks, and the
//! `marked` / `next_marked` bookkeeping of the algorithm of 4.4.
//!
//! ```text
//!  forecasting heap ──Lookahead()──► LQ: [p₀][p₁][p₂][p₃][p₄][p₅] …    placeholders in
//!   (R forecasting data runs)          │   ■   □   ■   □   □           participation order
//!                                      │   (■ block in memory, □ on disk or being read)
//!                OQ_0: ─► p₃ ─► …      │
//!                OQ_1: ─► p₁ ─► p₅     │  Parallel_Read: the head of every OQ_d,
//!                OQ_2: ─► p₄           │  one read per disk, all at once, without waiting
//!                                      ▼
//!   main merge (loser tree over R leading blocks) ──► two D·B output buffers ──► D disks
//! ```
//!
//! # Data structures (4.2)
//!
//! - The **forecasting heap** ([`ForecastHeap`]) merges the R forecasting
//!   data runs one key at a time; each key output names the block (run r,
//!   block i) that begins participating next among those not yet forecast.
//! - The **lookahead queue** LQ ([`Placeholder`]s in a `VecDeque`, the
//!   paper's circular array, traversable both ways) holds a placeholder
//!   for every forecast block of the R runs that is not yet a leading
//!   block, in participation order; `block_ptr` is the block when it is in
//!   memory ([`Ptr`]).
//! - The **occupancy queue** OQ_d of disk d holds (the sequence numbers of)
//!   the placeholders of blocks on disk d that are not in memory, in
//!   participation order.
//! - `Leading_r` are the [`RunCursor`](super::cursor::RunCursor)s' leading
//!   blocks, fed to the main merge ([`Merger`](super::merger::Merger)).
//!
//! # Operations
//!
//! - `Lookahead()` ([`SrmFeed::lookahead`]): the next forecast (r, i) from
//!   the heap becomes a placeholder appended to LQ and to OQ_d for
//!   d = (s_r + i) mod D.
//! - `Parallel_Read` ([`SrmFeed::parallel_read`]): for every disk whose OQ_d
//!   is not empty, the read of the block of OQ_d's head is *issued* to that
//!   disk's I/O thread; it returns at once, and the merge goes on while the
//!   D disks work (the asynchronous variant the paper leaves for future
//!   work: one I/O thread per disk, [`emsort_io::disks::DiskIo`]). A block
//!   being read counts as in memory (it holds a buffer); the merge waits for
//!   it only if it must begin participating before it has arrived.
//! - The flush ([`SrmFeed::flush`], step 6): when fewer than D of the m
//!   input blocks are free, LQ is walked from its tail and the f largest
//!   prefetched blocks (in participation order) are dropped and put back at
//!   the head of their occupancy queues, to be read again later. A block
//!   still being read is waited for first (it holds memory).
//! - `marked` is the smallest block read by the latest `Parallel_Read`;
//!   when it begins participating, the merge stops (flag 1), `marked`
//!   becomes `next_marked` (the smallest unread block after that read), and
//!   the next flush / `Parallel_Read` / `Lookahead()` round runs.
//!
//! # The algorithm (4.4), as [`merge`] runs it
//!
//! 1. Read the first block of every run (on its starting disk s_r): as many
//!    parallel reads as the most first blocks on one disk.
//! 2. Put each forecasting data run's first key in the forecasting heap and
//!    each run's first item in the main merge heap.
//! 3. LQ and the OQ_d start empty.
//! 4. `Lookahead()` while some OQ_d is empty and the heap is not.
//! 5. `marked` := LQ.head.
//! 6. Flush if fewer than D blocks are free.
//! 7. `Parallel_Read`.
//! 8. `Lookahead()` while some OQ_d is empty and the heap is not.
//! 9. `next_marked` := the placeholder closest to LQ.head among the OQ_d
//!    heads.
//! 10. (11.) Merge; when a leading block is depleted, the run's next block
//!     begins participating: it is LQ.head, which is removed (with
//!     placeholder heads, see [`super::merger`]). When that was `marked`,
//!     flag 1; when every run is exhausted, flag 2.
//! 12. On flag 1, `marked` := `next_marked`, back to 6.
//! 13. On flag 2, the output is flushed.
//!
//! Memory: m ≥ 2R + D input blocks (R leading, R prefetched, D being read),
//! two output buffers of D·B, the forecasting data
//! ([`super::order`]). Forecasting keys are needed twice: by the heap, and
//! by the merge for the placeholder head of a run whose leading block is
//! depleted — which happens before the heap may have reached that key — so
//! each forecasting data run is read by two cursors (in the blocked scheme
//! of 4.1.2, two buffers of B_f per run).
//!
//! # Invariants checked in debug builds
//!
//! Blocks in memory (leading, prefetched, being read) ≤ m; every block is
//! read once, or once more per flush; |LQ| ≤ max(m, R·D) + R + D and
//! |OQ_d| ≤ R + D (4.2); each OQ_d in participation order; the block that
//! begins participating is LQ.head (prefetched blocks are consumed in
//! participation order) and is in memory or being read (the prefetching
//! invariant of 4.3).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use emsort_io::disks::{Block, IoClient};
use emsort_io::{Error, ErrorKind, Result};

use super::forecast::{ForecastCursor, ForecastHeap};
use super::merger::{Feed, Merger, Out};
use super::run::PdRun;
use crate::codec::Codec;

/// `block_ptr` of a placeholder.
#[derive(Debug)]
pub(crate) enum Ptr {
    /// On disk (the paper's nil).
    Nil,
    /// A read is in flight into a buffer of the m.
    Reading,
    /// In memory, with its length.
    Ready(Block, usize),
}

/// An element of LQ (4.2).
#[derive(Debug)]
pub(crate) struct Placeholder {
    /// The run.
    run_id: usize,
    /// The block's index in its run.
    block_num: u64,
    /// Where the block is.
    block_ptr: Ptr,
}

/// Tag of the step-1 reads (first blocks), or'ed with the run index.
const FIRST: u64 = 1 << 63;

/// What one SRM merge counted.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SrmCounts {
    /// Parallel reads: step 1's, and each `Parallel_Read` that issued a read.
    pub parallel_reads: u64,
    /// Blocks flushed.
    pub flushes: u64,
    /// Bytes read from forecasting files.
    pub forecast_read: u64,
}

/// SRM's prefetching machinery: the feed of the main merge.
pub(crate) struct SrmFeed<'a> {
    client: IoClient,
    runs: &'a [PdRun],
    dir: PathBuf,
    d: usize,
    block: usize,
    /// m, the input blocks.
    m: usize,
    /// Blocks of the m holding data or being read.
    in_use: usize,
    /// Buffers of the m not in use (allocated lazily).
    free: Vec<Block>,
    /// LQ; `lq[i]` has sequence number `head_seq + i`.
    lq: VecDeque<Placeholder>,
    head_seq: u64,
    next_seq: u64,
    /// OQ_d: sequence numbers of placeholders.
    oq: Vec<VecDeque<u64>>,
    heap: ForecastHeap<'a>,
    /// The merge's own cursor over each forecasting data run, and the next
    /// block it forecasts.
    merge_keys: Vec<(ForecastCursor<'a>, u64)>,
    marked: Option<u64>,
    next_marked: Option<u64>,
    first: Vec<Option<(Block, usize)>>,
    counts: SrmCounts,
    /// Per run and block: reads and flushes (debug builds).
    #[cfg(debug_assertions)]
    history: std::collections::HashMap<(usize, u64), (u32, u32)>,
}

impl<'a> SrmFeed<'a> {
    /// The feed of a merge of `runs` with `m` input blocks; forecasting
    /// data on disk is read through buffers of `fc_buf` bytes.
    pub fn new(
        client: IoClient,
        runs: &'a [PdRun],
        codec: &'a dyn Codec,
        m: usize,
        fc_buf: usize,
        dir: &Path,
    ) -> Result<SrmFeed<'a>> {
        let d = runs.first().map_or(1, |r| r.striped.disks);
        let block = runs.first().map_or(1, |r| r.striped.block);
        let open = |r: &'a PdRun| ForecastCursor::open(&r.forecast, codec, fc_buf);
        let heap = ForecastHeap::new(codec, runs.iter().map(open).collect::<Result<_>>()?)?;
        let merge_keys = runs.iter().map(|r| Ok((open(r)?, 1))).collect::<Result<_>>()?;
        debug_assert!(runs.iter().all(|r| r.forecast.keys() + 1 == r.striped.blocks().max(1)));
        Ok(SrmFeed {
            client,
            runs,
            dir: dir.to_path_buf(),
            d,
            block,
            m,
            in_use: 0,
            free: Vec::new(),
            lq: VecDeque::new(),
            head_seq: 0,
            next_seq: 0,
            oq: vec![VecDeque::new(); d],
            heap,
            merge_keys,
            marked: None,
            next_marked: None,
            first: runs.iter().map(|_| None).collect(),
            counts: SrmCounts::default(),
            #[cfg(debug_assertions)]
            history: Default::default(),
        })
    }

    fn error(&self, what: &'static str) -> Error {
        Error::new(ErrorKind::Io(what), &self.dir)
    }

    fn buffer(&mut self) -> Block {
        self.in_use += 1;
        debug_assert!(self.in_use <= self.m, "blocks in memory {} > m = {}", self.in_use, self.m);
        self.free.pop().unwrap_or_else(|| Block::new(self.block))
    }

    #[cfg(debug_assertions)]
    fn note_read(&mut self, r: usize, j: u64) {
        let h = self.history.entry((r, j)).or_default();
        h.0 += 1;
        assert!(h.0 <= h.1 + 1, "block {j} of run {r} read {} times with {} flushes", h.0, h.1);
    }

    /// Step 1: reads the first block of every run, all at once; counts as
    /// many parallel reads as the most first blocks on one disk.
    fn read_first_blocks(&mut self) -> Result<()> {
        let mut per_disk = vec![0u64; self.d];
        for (r, run) in self.runs.iter().enumerate() {
            if run.striped.blocks() == 0 {
                continue;
            }
            let b = self.buffer();
            self.client.read(&run.striped, 0, b, FIRST | r as u64);
            per_disk[run.striped.start_disk] += 1;
            #[cfg(debug_assertions)]
            self.note_read(r, 0);
        }
        self.counts.parallel_reads += per_disk.iter().copied().max().unwrap_or(0);
        while self.client.in_flight() > 0 {
            let done = self.client.wait()?;
            self.first[(done.tag & !FIRST) as usize] = Some((done.buf, done.len));
        }
        Ok(())
    }

    /// `Lookahead()` (4.2): the next forecast becomes a placeholder at the
    /// tail of LQ and of the occupancy queue of its block's disk.
    fn lookahead(&mut self) -> Result<bool> {
        let Some((r, i)) = self.heap.pop()? else { return Ok(false) };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.lq.push_back(Placeholder { run_id: r, block_num: i, block_ptr: Ptr::Nil });
        let d = self.runs[r].striped.disk_of(i);
        self.oq[d].push_back(seq);
        Ok(true)
    }

    /// Steps 4 and 8: `Lookahead()` while some OQ_d is empty and the
    /// forecasting heap is not.
    fn fill_occupancy_queues(&mut self) -> Result<()> {
        while self.oq.iter().any(|q| q.is_empty()) && self.lookahead()? {}
        self.check_bounds();
        Ok(())
    }

    /// The sizes of LQ and the OQ_d within 4.2's bounds, each OQ_d in
    /// participation order (debug builds).
    fn check_bounds(&self) {
        if cfg!(debug_assertions) {
            let (r, d, m) = (self.runs.len(), self.d, self.m);
            let lq_bound = m.max(r * d) + r + d;
            assert!(self.lq.len() <= lq_bound, "|LQ| = {} > max(m, RD) + R + D = {lq_bound}", self.lq.len());
            for (disk, q) in self.oq.iter().enumerate() {
                assert!(q.len() <= r + d, "|OQ_{disk}| = {} > R + D = {}", q.len(), r + d);
                assert!(q.iter().zip(q.iter().skip(1)).all(|(a, b)| a < b), "OQ_{disk} out of order");
            }
        }
    }

    /// The index in LQ of the placeholder numbered `seq`.
    fn at(&self, seq: u64) -> Result<usize> {
        match seq.checked_sub(self.head_seq) {
            Some(i) if (i as usize) < self.lq.len() => Ok(i as usize),
            _ => Err(self.error("SRM merge (a placeholder left LQ before its block was read)")),
        }
    }

    /// Files one completed read into its placeholder (waits for it).
    fn collect(&mut self) -> Result<()> {
        let done = self.client.wait()?;
        let i = self.at(done.tag)?;
        match self.lq[i].block_ptr {
            Ptr::Reading => self.lq[i].block_ptr = Ptr::Ready(done.buf, done.len),
            _ => return Err(self.error("SRM merge (a read completed for a block not being read)")),
        }
        Ok(())
    }

    /// Waits until the block of LQ entry `i` is in memory.
    fn wait_for(&mut self, i: usize) -> Result<()> {
        while matches!(self.lq[i].block_ptr, Ptr::Reading) {
            self.collect()?;
        }
        Ok(())
    }

    /// Step 6: if fewer than D blocks are free, flush the f = D − free
    /// largest prefetched blocks: walking LQ from its tail, each placeholder
    /// with a block gives it up (`block_ptr` := nil), goes back to the head
    /// of its disk's occupancy queue, and becomes `marked` if it is ahead
    /// of `marked`.
    fn flush(&mut self) -> Result<()> {
        let free = self.m - self.in_use;
        if free >= self.d {
            return Ok(());
        }
        let mut f = self.d - free;
        let mut i = self.lq.len();
        while f > 0 && i > 0 {
            i -= 1;
            if matches!(self.lq[i].block_ptr, Ptr::Nil) {
                continue;
            }
            self.wait_for(i)?;
            let p = &mut self.lq[i];
            let Ptr::Ready(b, _) = std::mem::replace(&mut p.block_ptr, Ptr::Nil) else { unreachable!() };
            self.free.push(b);
            self.in_use -= 1;
            let seq = self.head_seq + i as u64;
            let disk = self.runs[p.run_id].striped.disk_of(p.block_num);
            self.oq[disk].push_front(seq);
            if self.marked.is_none_or(|m| seq < m) {
                self.marked = Some(seq);
            }
            #[cfg(debug_assertions)]
            {
                let key = (p.run_id, p.block_num);
                self.history.entry(key).or_default().1 += 1;
            }
            self.counts.flushes += 1;
            f -= 1;
        }
        if f > 0 {
            return Err(self.error("SRM merge (too few prefetched blocks to flush)"));
        }
        Ok(())
    }

    /// `Parallel_Read` (4.2, step 7): issues the read of the block of
    /// OQ_d.head on every disk d whose queue is not empty, into a free
    /// block, and returns without waiting.
    fn parallel_read(&mut self) -> Result<()> {
        let mut issued = 0;
        for d in 0..self.d {
            let Some(&seq) = self.oq[d].front() else { continue };
            self.oq[d].pop_front();
            let i = self.at(seq)?;
            let b = self.buffer();
            let p = &mut self.lq[i];
            p.block_ptr = Ptr::Reading;
            let (r, j) = (p.run_id, p.block_num);
            self.client.read(&self.runs[r].striped, j, b, seq);
            #[cfg(debug_assertions)]
            self.note_read(r, j);
            issued += 1;
        }
        if issued > 0 {
            self.counts.parallel_reads += 1;
        }
        Ok(())
    }

    /// Steps 6–9: flush, `Parallel_Read`, refill the occupancy queues, and
    /// set `next_marked`.
    fn io_round(&mut self) -> Result<()> {
        self.flush()?;
        self.parallel_read()?;
        self.fill_occupancy_queues()?;
        self.next_marked = self.oq.iter().filter_map(|q| q.front().copied()).min();
        Ok(())
    }
}

impl Feed for SrmFeed<'_> {
    const LAZY: bool = true;

    fn first(&mut self, r: usize) -> Result<(Block, usize)> {
        self.first[r].take().ok_or_else(|| self.error("SRM merge (first block missing)"))
    }

    fn forecast(&mut self, r: usize, j: u64, key: &mut Vec<u8>) -> Result<()> {
        let (cursor, next) = &mut self.merge_keys[r];
        debug_assert_eq!(*next, j, "run {r}: forecast of block {j} asked out of order");
        *next += 1;
        if !cursor.next(key)? {
            return Err(self.error("SRM merge (a forecasting data run ends early)"));
        }
        Ok(())
    }

    /// Block `j` of run `r` begins participating: it must be LQ.head
    /// (participation order), and in memory or being read (the prefetching
    /// invariant).
    fn participate(&mut self, r: usize, j: u64) -> Result<(Block, usize, bool)> {
        let Some(p) = self.lq.front() else {
            return Err(self.error("SRM merge (a block begins participating with LQ empty)"));
        };
        debug_assert_eq!(
            (p.run_id, p.block_num),
            (r, j),
            "prefetched blocks consumed out of participation order"
        );
        if (p.run_id, p.block_num) != (r, j) {
            return Err(self.error("SRM merge (blocks out of participation order)"));
        }
        debug_assert!(
            !matches!(p.block_ptr, Ptr::Nil),
            "block {j} of run {r} participates before it was read"
        );
        if matches!(p.block_ptr, Ptr::Nil) {
            return Err(self.error("SRM merge (a block participates before it was read)"));
        }
        self.wait_for(0)?;
        let p = self.lq.pop_front().expect("LQ.head");
        let seq = self.head_seq;
        self.head_seq += 1;
        let Ptr::Ready(b, len) = p.block_ptr else { unreachable!() };
        Ok((b, len, self.marked == Some(seq)))
    }

    fn release(&mut self, _: usize, _: u64, block: Block) -> Result<()> {
        self.in_use -= 1;
        self.free.push(block);
        Ok(())
    }
}

/// Runs one SRM merge of `runs` into `out` with `m` input blocks (the
/// algorithm of 4.4); returns its counts.
pub(crate) fn merge<O: Out>(
    merger: &mut Merger<'_>,
    mut feed: SrmFeed<'_>,
    out: &mut O,
) -> Result<SrmCounts> {
    feed.read_first_blocks()?; // 1
    merger.start(&mut feed)?; // 2
    feed.fill_occupancy_queues()?; // 3, 4
    feed.marked = feed.lq.front().map(|_| feed.head_seq); // 5
    loop {
        feed.io_round()?; // 6–9
        if !merger.run(&mut feed, out)? {
            break; // 11(g), 13: flag 2
        }
        feed.marked = feed.next_marked; // 12
    }
    feed.counts.forecast_read =
        feed.heap.file_bytes() + feed.merge_keys.iter().map(|(c, _)| c.file_bytes).sum::<u64>();
    Ok(feed.counts)
}
