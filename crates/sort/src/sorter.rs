//! The sort in phases, for a program that makes its own data: push the
//! items, finish, then pull them sorted or write them to a file (TPIE's
//! `sort` in its push, end and pull phases).
//!
//! ```text
//!  push(bytes) ─► blocks of B ─► [pipeline thread: run formation ─► runs ─► merges]
//!  finish()    ─► end of input; returns once only the last merge is left
//!  Sorted::write_to(path) or Sorted::blocks() ◄── the last merge, as it runs
//! ```
//!
//! A [`Sorter`] runs the same pipeline as [`sort`](crate::sort) (module
//! `pipeline`) in a thread of its own, whose input is the pushed bytes and
//! whose output is chosen after [`Sorter::finish`]. The memory budget is the
//! plan's M throughout: pushed bytes are copied into blocks of B and handed
//! over one at a time (a push waits while run formation is busy), so the
//! sorter holds at most M plus two blocks plus the documented overhead
//! ([`crate::plan`]), however much is pushed (and, pulled by
//! [`Sorted::blocks`], up to 16 blocks of the output made ahead). Pushed
//! bytes may cut items anywhere; the sorter sees one stream. The sorted items come back in
//! blocks of whole items ([`Sorted::blocks`]; lines with their `\n`).
//!
//! Dropping a `Sorter` or a `Sorted` before the end cancels the sort and
//! removes its temporary files.
//!
//! ```
//! use emsort_sort::{Format, SortPlan, Sorter};
//! # fn main() -> Result<(), emsort_sort::SortError> {
//! let dir = tempfile::tempdir().unwrap();
//! let plan = SortPlan::builder(Format::U32).memory(256 << 10).temp_dir(dir.path()).build()?;
//! let mut sorter = Sorter::new(plan)?;
//! for i in 0..100_000u32 {
//!     sorter.push(&i.wrapping_mul(2_654_435_761).to_ne_bytes())?;
//! }
//! let mut last = 0;
//! for block in sorter.finish()?.blocks() {
//!     for x in block?.chunks_exact(4).map(|b| u32::from_ne_bytes(b.try_into().unwrap())) {
//!         assert!(x >= last);
//!         last = x;
//!     }
//! }
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use emsort_io::{Error, ErrorKind, NoProgress, Progress};

use crate::codec;
use crate::output::{Block, Choice, ItemCut, Output};
use crate::pipeline::{remove_stale, run, Work};
use crate::source::Input;
use crate::{SortError, SortPlan, SortStats};

type Outcome = Result<SortStats, SortError>;

/// Sorts items pushed by the caller; see the module docs.
pub struct Sorter {
    blocks: Option<SyncSender<Vec<u8>>>,
    stage: Vec<u8>,
    block: usize,
    rest: Rest,
}

/// Where the whole items of `codec` end in a block of the sorted output
/// ([`ItemCut`]): after the last terminator or whole fixed-size item, or,
/// for items whose ends are parsed (CSV records), after the last end the
/// parse of the output so far finds.
fn item_cut(codec: codec::SharedCodec) -> ItemCut {
    let mut state = 0;
    Box::new(move |block: &[u8], from: usize| match codec.fixed() {
        Some(s) => block.len() / s * s,
        None if codec.ends_at_terminators() => {
            memchr::memrchr(codec.terminator(), block).map_or(0, |p| p + 1)
        }
        None => {
            let mut whole = 0;
            codec.scan_ends(&block[from..], &mut state, &mut |p| {
                whole = from + p + 1;
                true
            });
            whole
        }
    })
}

/// What a sorter and its result share: the pipeline thread and its
/// channels.
struct Rest {
    ready: Receiver<()>,
    choice: Option<SyncSender<Choice>>,
    thread: Option<JoinHandle<Outcome>>,
    cancel: Arc<AtomicBool>,
    /// Where the blocks of [`Sorted::blocks`] end.
    cut: Option<ItemCut>,
}

impl Rest {
    /// Waits for the pipeline thread's end.
    fn join(&mut self) -> Outcome {
        self.choice = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::new(ErrorKind::Io("the sort thread panicked"), "<sorter>").into()),
            None => Err(Error::new(ErrorKind::Interrupted, "<sorter>").into()),
        }
    }

    /// The pipeline thread stopped early: its error.
    fn failed(&mut self) -> SortError {
        match self.join() {
            Err(e) => e,
            Ok(_) => Error::new(ErrorKind::Io("the sort thread ended early"), "<sorter>").into(),
        }
    }
}

impl Drop for Rest {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.cancel.store(true, Ordering::Relaxed);
            let _ = self.join();
        }
    }
}

impl Sorter {
    /// A sorter with `plan` (its format, memory, temp dirs …).
    pub fn new(plan: SortPlan) -> Result<Sorter, SortError> {
        Sorter::with_progress(plan, Arc::new(NoProgress), Arc::new(AtomicBool::new(false)))
    }

    /// A sorter reporting to `progress` (phases `"run formation"` and
    /// `"merge"`) and stopped by `cancel` (the next push or pull fails with
    /// [`ErrorKind::Interrupted`]).
    pub fn with_progress(
        plan: SortPlan,
        progress: Arc<dyn Progress>,
        cancel: Arc<AtomicBool>,
    ) -> Result<Sorter, SortError> {
        let block = plan.block_size().max(4096);
        let cut = Some(item_cut(codec::for_plan(&plan)));
        let (tx, rx) = sync_channel::<Vec<u8>>(1);
        let (ready_tx, ready) = sync_channel::<()>(1);
        let (choice, choice_rx) = sync_channel::<Choice>(1);
        let flag = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("emsort-sorter".into())
            .spawn(move || {
                remove_stale(&plan);
                let input = Input::pushed(&plan, rx);
                let output = Output::later(&plan, ready_tx, choice_rx, &flag);
                run(&plan, Work::Sort(input), output, &*progress, &flag)
            })
            .map_err(|e| Error::from_io("spawn", "<sorter>", e))?;
        let rest = Rest { ready, choice: Some(choice), thread: Some(thread), cancel, cut };
        Ok(Sorter { blocks: Some(tx), stage: Vec::with_capacity(block), block, rest })
    }

    /// Adds `bytes` to the input: items of the plan's format (numbers,
    /// records, text lines), cut anywhere. Waits while run formation is busy.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), SortError> {
        while !bytes.is_empty() {
            let take = (self.block - self.stage.len()).min(bytes.len());
            self.stage.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.stage.len() == self.block {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// Adds the bytes of `block` as [`Sorter::push`] does, but hands the
    /// vector itself over (after what is staged) rather than copying it
    /// into blocks of B: for a caller that makes its items in blocks of
    /// its own. The sorter then holds such a block in place of one of B.
    pub fn push_vec(&mut self, block: Vec<u8>) -> Result<(), SortError> {
        if block.len() < self.block / 2 {
            return self.push(&block);
        }
        self.hand_over()?;
        let tx = self.blocks.as_ref().expect("open until finish");
        tx.send(block).map_err(|_| self.rest.failed())
    }

    fn hand_over(&mut self) -> Result<(), SortError> {
        if self.stage.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.stage, Vec::with_capacity(self.block));
        let tx = self.blocks.as_ref().expect("open until finish");
        tx.send(full).map_err(|_| self.rest.failed())
    }

    /// Ends the input; returns once every run is formed and every merge but
    /// the last is done.
    pub fn finish(mut self) -> Result<Sorted, SortError> {
        self.hand_over()?;
        self.blocks = None;
        let mut rest = std::mem::replace(
            &mut self.rest,
            Rest { ready: sync_channel(0).1, choice: None, thread: None, cancel: Arc::default(), cut: None },
        );
        if rest.ready.recv().is_err() {
            return Err(rest.failed());
        }
        Ok(Sorted { rest })
    }
}

/// Blocks the last merge of [`Sorted::blocks`] may make ahead of its
/// caller: a caller that takes them in bursts (a table sort decodes a
/// batch of rows, then waits for the next) and a merge that makes them in
/// rounds then wait less for each other (with one block ahead, a 1 GiB
/// Parquet sort was 10 % slower).
const BLOCKS_AHEAD: usize = 16;

/// The sorted result of a [`Sorter`], ready for its last merge.
pub struct Sorted {
    rest: Rest,
}

impl Sorted {
    /// Writes the sorted items to `path` (replaced atomically when
    /// complete, as [`Sink::Path`](crate::Sink::Path)); returns the sort's
    /// statistics.
    pub fn write_to(mut self, path: &Path) -> Result<SortStats, SortError> {
        self.choose(Choice::Path(path.to_path_buf()))?;
        self.rest.join()
    }

    /// The sorted items in blocks of whole items, as the last merge makes
    /// them; an error ends the iteration. The merge runs up to 16 blocks
    /// (each of its write-behind blocks' size, B/8 for a merge of many
    /// runs) ahead of the caller. A block is the merge's own buffer, lent
    /// (given back when dropped: drop it once read).
    pub fn blocks(mut self) -> Blocks {
        let (tx, rx) = sync_channel::<Block>(BLOCKS_AHEAD);
        let cut = self.rest.cut.take().expect("one choice");
        let sent = self.choose(Choice::Items(tx, cut));
        Blocks { rx, rest: self.rest, error: sent.err(), stats: None }
    }

    fn choose(&mut self, c: Choice) -> Result<(), SortError> {
        let tx = self.rest.choice.take().expect("chosen once");
        tx.send(c).map_err(|_| self.rest.failed())
    }
}

/// The sorted items of a [`Sorted`], block by block.
pub struct Blocks {
    rx: Receiver<Block>,
    rest: Rest,
    error: Option<SortError>,
    stats: Option<SortStats>,
}

impl Blocks {
    /// The sort's statistics, once every block has been taken.
    pub fn stats(&self) -> Option<&SortStats> {
        self.stats.as_ref()
    }
}

impl Iterator for Blocks {
    type Item = Result<Block, SortError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.error.take() {
            return Some(Err(e));
        }
        self.rest.thread.as_ref()?;
        match self.rx.recv() {
            Ok(b) => Some(Ok(b)),
            Err(_) => match self.rest.join() {
                Ok(s) => {
                    self.stats = Some(s);
                    None
                }
                Err(e) => Some(Err(e)),
            },
        }
    }
}
