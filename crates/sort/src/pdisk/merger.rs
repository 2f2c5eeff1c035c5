//! The merge computation shared by DSM and SRM: R run cursors, a loser
//! tree over their heads, and the item loop — the paper's *main merge
//! heap* (4.2) and step 11 of 4.4.
//!
//! Where blocks come from is the [`Feed`]'s business: DSM's feed reads
//! logical blocks with double buffering ([`super::dsm`]), SRM's is the
//! forecast-and-flush machinery ([`super::srm`]). The merge tells the feed
//! when a block begins participating ([`Feed::participate`]) and when a
//! leading block is depleted ([`Feed::release`]).
//!
//! # Placeholder heads (SRM)
//!
//! With [`Feed::LAZY`], a run whose leading block is depleted does not ask
//! for its next block at once. Its head in the tree becomes a placeholder
//! carrying that block's forecasting key — the key of the item the run
//! will offer next (see [`super::forecast`]). Only when that placeholder
//! wins does block `next` *begin participating*: the merge cannot output
//! anything further before the run's next item is known, and nothing of the
//! run could go out earlier. Ties are broken as between items (prefix, key
//! bytes, run index), so placeholders win in exactly the order in which the
//! forecasting heap outputs their keys: the participation order that the
//! lookahead queue holds. (Loading the next item as soon as the previous
//! one is output would make block j participate at the time of the *last*
//! item of block j − 1 instead, which is the paper's single-disk
//! forecasting rule; the forecasting keys of 4.1 would then have to be
//! those last items.)

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::disks::Block;
use emsort_io::{Error, ErrorKind, Progress, Result};

use super::cursor::{Head, RunCursor, Settle};
use super::forecast::{beats, DONE};
use crate::codec::Codec;
use crate::tree::LoserTree;

/// Where a merge's input blocks come from.
pub(crate) trait Feed {
    /// Whether runs wait with a placeholder head for their next block
    /// (SRM), or get it as soon as the leading block is depleted (DSM).
    const LAZY: bool;
    /// The first block of run `r` (block 0), in memory, with its length.
    fn first(&mut self, r: usize) -> Result<(Block, usize)>;
    /// The forecasting key of block `j` of run `r` into `key` (LAZY only).
    fn forecast(&mut self, r: usize, j: u64, key: &mut Vec<u8>) -> Result<()>;
    /// Block `j` of run `r` begins participating: it, in memory, its
    /// length, and whether it is the `marked` block (SRM: time for the
    /// next parallel read).
    fn participate(&mut self, r: usize, j: u64) -> Result<(Block, usize, bool)>;
    /// Run `r`'s leading block, block `j`, is depleted.
    fn release(&mut self, r: usize, j: u64, block: Block) -> Result<()>;
}

/// Where merged items go.
pub(crate) trait Out {
    /// Appends one item.
    fn push(&mut self, item: &[u8]) -> Result<()>;
}

/// The merge of R runs (the main merge heap and the R leading blocks).
pub(crate) struct Merger<'a> {
    codec: &'a dyn Codec,
    cur: Vec<RunCursor>,
    /// Each head's prefix and run index, `prefix << 64 | r`; [`DONE`] for
    /// an exhausted run.
    rank: Vec<u128>,
    tree: LoserTree<usize>,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
    /// Named in errors.
    path: &'a Path,
    /// Input bytes consumed.
    pub bytes_in: u64,
    /// `-u`: the raw key of the last item output (`None` before the
    /// first).
    last: Option<Vec<u8>>,
}

impl<'a> Merger<'a> {
    /// A merge of runs of `blocks[r]` blocks.
    pub fn new(
        codec: &'a dyn Codec,
        blocks: &[u64],
        progress: &'a dyn Progress,
        cancel: &'a AtomicBool,
        path: &'a Path,
    ) -> Merger<'a> {
        Merger {
            codec,
            cur: blocks.iter().map(|&b| RunCursor::new(b)).collect(),
            rank: vec![DONE; blocks.len()],
            tree: LoserTree::new(&[], 0, |_, _| false),
            progress,
            cancel,
            path,
            bytes_in: 0,
            last: None,
        }
    }

    /// Takes each run's first block and inserts its first item into the
    /// tree (4.4 steps 1–2, the feed having read the blocks).
    pub fn start<F: Feed>(&mut self, feed: &mut F) -> Result<()> {
        for r in 0..self.cur.len() {
            if self.cur[r].blocks > 0 {
                let (b, len) = feed.first(r)?;
                self.cur[r].install(b, len);
            }
            self.settle(r, feed)?;
        }
        let (c, cur, rank) = (self.codec, &self.cur, &self.rank);
        let head = |r: usize| (&cur[r].hk, cur[r].raw_key(c));
        let runs: Vec<usize> = (0..cur.len()).collect();
        self.tree = LoserTree::new(&runs, 0, |a, b| beats(c, rank, head, a, b));
        Ok(())
    }

    /// Merges (4.4 step 11) until the `marked` block begins participating
    /// (returns true) or every run is exhausted (false).
    pub fn run<F: Feed, O: Out>(&mut self, feed: &mut F, out: &mut O) -> Result<bool> {
        loop {
            let w = self.tree.winner();
            match self.cur[w].head {
                Head::Done => return Ok(false),
                Head::Wait => {
                    let j = self.cur[w].next;
                    let (b, len, marked) = feed.participate(w, j)?;
                    self.cur[w].install(b, len);
                    self.settle(w, feed)?;
                    self.replay(w);
                    if marked {
                        return Ok(true);
                    }
                }
                _ => {
                    let c = &mut self.cur[w];
                    if !self.codec.unique() {
                        out.push(c.item())?;
                    } else {
                        let raw = self.codec.raw_key(c.item());
                        if !self.last.as_deref().is_some_and(|last| self.codec.same(last, raw)) {
                            let last = self.last.get_or_insert_with(Vec::new);
                            last.clear();
                            last.extend_from_slice(raw);
                            out.push(c.item())?;
                        }
                    }
                    c.consume();
                    match c.next_in_block(self.codec) {
                        Some(p) => self.rank[w] = (p as u128) << 64 | w as u128,
                        None => self.settle(w, feed)?,
                    }
                    self.replay(w);
                }
            }
        }
    }

    #[inline]
    fn replay(&mut self, w: usize) {
        let (c, cur, rank) = (self.codec, &self.cur, &self.rank);
        if c.ties() {
            let head = |r: usize| (&cur[r].hk, cur[r].raw_key(c));
            self.tree.replace(w, w, |a, b| beats(c, rank, head, a, b));
        } else {
            // Numbers: the rank (whole key, run index) decides alone.
            self.tree.replace(w, w, |a, b| rank[a] < rank[b]);
        }
    }

    /// Finds run `r`'s next head, giving back a depleted block and, unless
    /// LAZY, taking the next one at once.
    #[inline]
    fn settle<F: Feed>(&mut self, r: usize, feed: &mut F) -> Result<()> {
        loop {
            match self.cur[r].settle(self.codec) {
                Settle::Ready => {
                    self.rank[r] = (self.cur[r].take_key(self.codec) as u128) << 64 | r as u128;
                    return Ok(());
                }
                Settle::Need(depleted) => {
                    if let Some((b, len)) = depleted {
                        self.release(r, b, len, feed)?;
                    }
                    let j = self.cur[r].next;
                    if F::LAZY {
                        let c = &mut self.cur[r];
                        feed.forecast(r, j, &mut c.key)?;
                        self.rank[r] = (c.take_key(self.codec) as u128) << 64 | r as u128;
                        return Ok(());
                    }
                    let (b, len, _) = feed.participate(r, j)?;
                    self.cur[r].install(b, len);
                }
                Settle::End(depleted, truncated) => {
                    if let Some((b, len)) = depleted {
                        self.release(r, b, len, feed)?;
                    }
                    if truncated {
                        return Err(Error::new(
                            ErrorKind::Io("merge (a run ends inside an item)"),
                            self.path,
                        ));
                    }
                    self.rank[r] = DONE;
                    return Ok(());
                }
            }
        }
    }

    fn release<F: Feed>(&mut self, r: usize, b: Block, len: usize, feed: &mut F) -> Result<()> {
        let j = self.cur[r].next - 1;
        feed.release(r, j, b)?;
        self.bytes_in += len as u64;
        self.progress.advance(len as u64);
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, self.path));
        }
        Ok(())
    }
}
