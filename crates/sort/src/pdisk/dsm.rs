//! DSM, disk-striped mergesort (Barve & Vitter 2.4).
//!
//! Every run starts on disk 0, so its logical block k — blocks kD … kD+D−1
//! — lies at the same offset k·B on every disk, and one parallel I/O moves
//! it whole. Each run has two logical buffers of D·B (double buffering):
//! at the start both are read; whenever the merge depletes a run's leading
//! logical block, the read of the run's logical block k + 2 is issued into
//! the freed buffer while the merge goes on with block k + 1. The output is
//! double-buffered too (two logical blocks, [`super::run`]). Memory:
//! M_dsm(R) = 2·R·D·B + 2·D·B ([`super::order`]).
//!
//! ```text
//!   run r:  [ logical k   (D blocks) ]  being merged
//!           [ logical k+1 (D blocks) ]  read in flight or ready
//!                   │ depleted → read logical k+2 into it
//! ```
//!
//! Each logical block read counts as one parallel read, so ν ≈ 1 (a run's
//! last, short logical block is a parallel read of fewer than D blocks).

use std::collections::VecDeque;

use emsort_io::disks::{Block, IoClient};
use emsort_io::{Error, ErrorKind, Result};

use super::merger::Feed;
use super::run::PdRun;

/// A block of a run's two logical buffers.
struct Slot {
    j: u64,
    data: Option<(Block, usize)>,
}

/// The double-buffered feed of a DSM merge.
pub(crate) struct DsmFeed<'a> {
    client: IoClient,
    runs: &'a [PdRun],
    dir: std::path::PathBuf,
    d: u64,
    block: usize,
    /// Per run, the blocks of its two logical buffers, in order.
    slots: Vec<VecDeque<Slot>>,
    /// Per run, blocks given back from its depleted logical block.
    free: Vec<Vec<Block>>,
    /// Parallel reads issued.
    pub parallel_reads: u64,
}

/// Tags carry the run and the block.
fn tag(r: usize, j: u64) -> u64 {
    (r as u64) << 40 | j
}

impl<'a> DsmFeed<'a> {
    /// Issues the reads of the first two logical blocks of every run.
    pub fn new(
        client: IoClient,
        runs: &'a [PdRun],
        d: usize,
        block: usize,
        dir: &std::path::Path,
    ) -> DsmFeed<'a> {
        let mut feed = DsmFeed {
            client,
            runs,
            dir: dir.to_path_buf(),
            d: d as u64,
            block,
            slots: runs.iter().map(|_| VecDeque::new()).collect(),
            free: runs.iter().map(|_| Vec::new()).collect(),
            parallel_reads: 0,
        };
        for r in 0..runs.len() {
            feed.read_logical(r, 0);
            feed.read_logical(r, 1);
        }
        feed
    }

    /// Issues the read of logical block `k` of run `r`, if it exists: one
    /// block on each disk at once.
    fn read_logical(&mut self, r: usize, k: u64) {
        let run = &self.runs[r].striped;
        let (first, end) = (k * self.d, ((k + 1) * self.d).min(run.blocks()));
        if first >= end {
            return;
        }
        for j in first..end {
            let b = self.free[r].pop().unwrap_or_else(|| Block::new(self.block));
            self.client.read(run, j, b, tag(r, j));
            self.slots[r].push_back(Slot { j, data: None });
        }
        self.parallel_reads += 1;
    }

    /// Waits for one completion and files it.
    fn collect(&mut self) -> Result<()> {
        let done = self.client.wait()?;
        let (r, j) = ((done.tag >> 40) as usize, done.tag & ((1 << 40) - 1));
        let slot = self.slots[r].iter_mut().find(|s| s.j == j).expect("a read was issued for this block");
        slot.data = Some((done.buf, done.len));
        Ok(())
    }
}

impl Feed for DsmFeed<'_> {
    const LAZY: bool = false;

    fn first(&mut self, r: usize) -> Result<(Block, usize)> {
        let (b, len, _) = self.participate(r, 0)?;
        Ok((b, len))
    }

    fn forecast(&mut self, _: usize, _: u64, _: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }

    fn participate(&mut self, r: usize, j: u64) -> Result<(Block, usize, bool)> {
        let front = self.slots[r].front().map(|s| s.j);
        if front != Some(j) {
            return Err(Error::new(ErrorKind::Io("DSM merge (blocks out of order)"), &self.dir));
        }
        while self.slots[r].front().is_some_and(|s| s.data.is_none()) {
            self.collect()?;
        }
        let (b, len) = self.slots[r].pop_front().and_then(|s| s.data).expect("just filled");
        Ok((b, len, false))
    }

    fn release(&mut self, r: usize, j: u64, block: Block) -> Result<()> {
        self.free[r].push(block);
        let blocks = self.runs[r].striped.blocks();
        if j % self.d == self.d - 1 || j + 1 == blocks {
            // Logical block j / D is depleted: refill its buffer.
            self.read_logical(r, j / self.d + 2);
            self.free[r].clear();
        }
        Ok(())
    }
}
