//! The plain method ([`Method::Plain`](crate::Method::Plain)): runs as
//! files in the temp dirs, merged d at a time by a loser tree.
//!
//! - [`PlainStore`]: a temporary directory `emsort-PID-N-…` under each of
//!   the plan's temp dirs (locked while the sort lives, removed with
//!   everything in it on success, error and interrupt); runs go round-robin
//!   across them. Files already sorted (GNU `sort -m`,
//!   [`crate::merge_files`]) enter it as runs that are never removed;
//!   sorted streams (`sort -m -`: standard input, pipes) are first copied
//!   ("spooled") into a run of its own temp dir ([`PlainStore::of_inputs`]),
//!   removed like the runs it makes.
//! - [`Plain`], the merger: merges follow
//!   [`merge_policy::schedule`](crate::merge_policy::schedule) on the real
//!   run sizes (FIFO or optimal, fan-in d); each merge ([`crate::merge`])
//!   reads up to d runs and writes a new one, whose inputs are deleted at
//!   once (temp space stays about one copy of the data); the last merge
//!   writes the output.
//!
//! ```text
//!  run 0, run 1, … run U−1      (temp dirs)
//!     │    │          │
//!     └─┬──┘   …      │        d-way merges, per the schedule
//!     run U    …      │
//!       └──────┬──────┘
//!         last merge ──► output
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use emsort_io::{Error, ErrorKind, Progress, Result, TempDir};

use crate::byte_stream::{BlockSink, ByteOutput};
use crate::compress::CompressedWriter;
use crate::merge::{merge_runs, Dest, RunFile};
use crate::merge_policy::{schedule, schedule_in_order};
use crate::output::Output;
use crate::plan::SortPlan;
use crate::run_store::{MergeCtx, Merged, Order, RunStore, SortedChunk};
use crate::source::Opened;

/// A run on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether the sort made it (and so removes it once merged).
    pub owned: bool,
    /// Whether it was written through the plan's compress program.
    pub compressed: bool,
    /// Whether the sort wrote it in order (see [`RunFile::sorted`]).
    pub sorted: bool,
    /// Whether each line carries its key (see [`RunFile::keyed`]).
    pub keyed: bool,
    /// Bytes of a header at its start (see [`RunFile::skip`]).
    pub skip: u64,
}

impl Run {
    /// A run at `path` of `bytes` bytes, not compressed, in no known order,
    /// its lines without keys.
    fn new(path: PathBuf, bytes: u64, owned: bool) -> Run {
        Run { path, bytes, owned, compressed: false, sorted: false, keyed: false, skip: 0 }
    }

    /// The run as a merge reads it.
    fn file(&self) -> RunFile {
        RunFile {
            path: self.path.clone(),
            compressed: self.compressed,
            sorted: self.sorted,
            keyed: self.keyed,
            free_behind: self.owned && !self.compressed,
            skip: self.skip,
        }
    }
}

/// Runs as files in the temp dirs.
pub(crate) struct PlainStore {
    plan: SortPlan,
    /// Made when the first run is written (GNU checks `-T` only when it
    /// needs a temporary file: a sort that fits in M needs none).
    temps: Mutex<Vec<TempDir>>,
    /// Their names' prefix (`emsort-`, `emsort-merge-`).
    prefix: &'static str,
    runs: Mutex<Vec<Run>>,
    next: AtomicUsize,
}

impl PlainStore {
    /// A store with a temporary directory in each of `plan`'s temp dirs,
    /// made when its first run is written.
    pub fn new(plan: &SortPlan, prefix: &'static str) -> PlainStore {
        PlainStore {
            plan: plan.clone(),
            temps: Mutex::new(Vec::new()),
            prefix,
            runs: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
        }
    }

    /// A store whose runs are the sorted `inputs`, in their order (its
    /// temporary directories made only if a spool or a merge needs them): a
    /// file is a run as it is (never removed); a stream (standard input, a pipe)
    /// is read to its end into a new run in the store's temporary
    /// directory first, so the merge can read it by path like the others.
    /// A spooled run is the sort's own: removed once merged, and with the
    /// directory on success, error and interrupt (and by the binary's
    /// last-resort cleanup, which knows the directory). Progress: phase
    /// `"spool"`, in bytes; `cancel` is polled after every block.
    pub fn of_inputs(
        plan: &SortPlan,
        inputs: Vec<Opened<'_>>,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<PlainStore> {
        let mut store = PlainStore::new(plan, "emsort-merge-");
        let mut runs = Vec::with_capacity(inputs.len());
        for input in inputs {
            runs.push(match input {
                Opened::File(path, bytes) => Run::new(path, bytes, false),
                Opened::Stream(name, reader) => {
                    let path = store.new_path()?;
                    progress.phase_bytes("spool", None);
                    let bytes = spool(plan, &name, reader, &path, progress, cancel)?;
                    progress.finish_phase();
                    Run::new(path, bytes, true)
                }
            });
        }
        *store.runs.get_mut().unwrap_or_else(|e| e.into_inner()) = runs;
        Ok(store)
    }

    /// Checks the inputs of a merge (the store's runs, as
    /// [`PlainStore::of_inputs`] made them) as a sort checks its sources as
    /// it reads them: with headers, each one's is read, checked against
    /// the first's (which goes into `slot`) and skipped by the merge; with
    /// a field count to enforce (`--fields`), every record is checked.
    pub fn check_inputs(&mut self, plan: &SortPlan, slot: crate::output::HeaderSlot) -> Result<()> {
        let order = plan.line_order();
        let runs = self.runs.get_mut().unwrap_or_else(|e| e.into_inner());
        if plan.header() {
            let mut headers = crate::header::Headers::new(plan, slot);
            for run in runs.iter_mut() {
                let record = crate::header::of_file(&run.path, plan.eol(), order)?;
                run.skip = record.len() as u64;
                headers.found(record, &run.path)?;
            }
        }
        if order.is_some_and(|o| o.field_count().is_some()) {
            let (codec, mut ends) = (crate::codec::for_plan(plan), crate::codec::InputEnds::new(order));
            for run in runs.iter() {
                ends.check_whole(&*codec, &run.path)?;
            }
        }
        Ok(())
    }

    /// Bytes of the store's runs.
    pub fn bytes(&self) -> u64 {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|r| r.bytes).sum()
    }

    /// How many runs the store holds.
    pub fn run_count(&self) -> usize {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// A path for a new run (round-robin over the temp dirs, made the
    /// first time).
    fn new_path(&self) -> Result<PathBuf> {
        let mut temps = self.temps.lock().unwrap_or_else(|e| e.into_inner());
        if temps.is_empty() {
            *temps = self
                .plan
                .temp_dirs()
                .iter()
                .map(|dir| TempDir::new_in(dir, self.prefix))
                .collect::<Result<Vec<_>>>()?;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        Ok(temps[id % temps.len()].path().join(format!("run-{id:06}")))
    }
}

impl RunStore for PlainStore {
    fn write_run(&self, chunk: &SortedChunk<'_>, cancel: &AtomicBool) -> Result<u64> {
        let path = self.new_path()?;
        let block = run_block(&self.plan, chunk.order);
        let out: Box<dyn BlockSink> = match self.plan.compress_program() {
            Some(program) => Box::new(CompressedWriter::create(program, &path)?),
            None => {
                let cfg = self.plan.stream_config(false).block_size(block);
                Box::new(ByteOutput::create(&path, self.plan.unit(), &cfg)?)
            }
        };
        let bytes = chunk.write(out, block, &path, cancel)?;
        let compressed = self.plan.compress_program().is_some();
        let keyed = matches!(chunk.order, Order::KeyedLines(_));
        let run = Run { compressed, sorted: true, keyed, ..Run::new(path, bytes, true) };
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).push(run);
        Ok(bytes)
    }

    fn takes_keyed_runs(&self) -> bool {
        true
    }
}

/// Copies `reader` (named `name` in errors) to the new file `to` through a
/// stream of the plan's output kind; returns the bytes copied. A binary
/// format's stream must be whole items.
fn spool(
    plan: &SortPlan,
    name: &Path,
    mut reader: Box<dyn Read + Send + '_>,
    to: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<u64> {
    // Bytes, not the format's unit: a stream's reads end anywhere.
    let mut out = ByteOutput::create(to, 1, &plan.stream_config(false))?;
    let mut buf = vec![0u8; plan.block_size().max(4096)];
    let mut bytes = 0u64;
    // Items checked as they are read (JSON lines) are checked here.
    let codec = crate::codec::for_plan(plan);
    let mut check = codec.checks_items().then(crate::codec::InputEnds::default);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from_io("read", name, e)),
        };
        if let Some(c) = &mut check {
            c.feed(&*codec, &buf[..n], name)?;
        }
        out.write(&buf[..n])?;
        bytes += n as u64;
        progress.advance(n as u64);
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, name));
        }
    }
    if let Some(c) = &mut check {
        c.finish(&*codec, name)?;
    }
    out.close()?;
    if let Some(s) = plan.format().item_size() {
        if !bytes.is_multiple_of(s as u64) {
            return Err(Error::new(ErrorKind::BadSize { size: bytes, element_size: s }, name));
        }
    }
    Ok(bytes)
}

/// The stream block of a run (or a single-run output) written from a
/// sorted chunk: B for numbers written in one piece, 2B for records and
/// lines gathered through write-behind blocks ([`SortPlan::run_write_block`]).
pub(crate) fn run_block(plan: &SortPlan, order: &Order) -> usize {
    match order {
        Order::InPlace => plan.block_size().max(plan.unit()),
        _ => plan.run_write_block(),
    }
}

/// The plain merger: d-way loser-tree merges following the plan's policy.
pub(crate) struct Plain;

impl crate::run_store::Merger for Plain {
    type Store = PlainStore;

    fn merge(
        &self,
        store: PlainStore,
        out: &Output<'_>,
        written: bool,
        ctx: &MergeCtx<'_>,
    ) -> Result<Merged> {
        let mut merged = Merged::default();
        if written {
            return Ok(merged);
        }
        let plan = ctx.plan;
        let runs = std::mem::take(&mut *store.runs.lock().unwrap_or_else(|e| e.into_inner()));
        let sizes: Vec<u64> = runs.iter().map(|r| r.bytes).collect();
        let sched = if plan.keeps_input_order() {
            schedule_in_order(&sizes, plan.fan_in())
        } else {
            schedule(&sizes, plan.fan_in(), plan.policy())
        };
        let total: u64 = sizes.iter().sum();
        if sched.merges.is_empty() {
            // No run: an empty output. One (from a stream whose end came
            // just after a full chunk, or a single file to merge): a copy.
            if runs.is_empty() {
                out.open(plan.block_size())?.close()?;
                return Ok(merged);
            }
            ctx.progress.phase_bytes("merge", Some(total));
            let files: Vec<RunFile> = runs.iter().map(Run::file).collect();
            let moved = merge_runs(plan, ctx.pool, &files, Dest::Output(out), ctx.progress, ctx.cancel)?;
            (merged.phase.bytes_read, merged.phase.bytes_written) = (moved.read, moved.written);
            (merged.merged_bytes, merged.merges, merged.order) = (total, 0, 1);
            merged.output_bytes = moved.written;
            remove_owned(&runs)?;
            ctx.progress.finish_phase();
            return Ok(merged);
        }
        ctx.progress.phase_bytes("merge", Some(sched.merged));
        let first_new = runs.len();
        let mut table: Vec<Option<Run>> = runs.into_iter().map(Some).collect();
        for (k, m) in sched.merges.iter().enumerate() {
            let inputs: Vec<Run> =
                m.inputs.iter().map(|&i| table[i].take().expect("each run merged once")).collect();
            let files: Vec<RunFile> = inputs.iter().map(Run::file).collect();
            let last = k + 1 == sched.merges.len();
            // The output's own descriptors come on top of the last merge's
            // inputs: where the limit leaves too few (`ulimit -n`), the last
            // merge writes a run, which is then copied to the output.
            let squeezed = last && !output_fits(plan, files.len());
            let (dest, new) = if last && !squeezed {
                (Dest::Output(out), None)
            } else {
                let p = store.new_path()?;
                (Dest::Run(p.clone()), Some(p))
            };
            let moved = merge_runs(plan, ctx.pool, &files, dest, ctx.progress, ctx.cancel)?;
            merged.phase.bytes_read += moved.read;
            merged.phase.bytes_written += moved.written;
            if last && !squeezed {
                merged.output_bytes = moved.written;
            }
            remove_owned(&inputs)?;
            if let (true, Some(path)) = (squeezed, &new) {
                let compressed = plan.compress_program().is_some();
                let run = Run { compressed, sorted: true, ..Run::new(path.clone(), m.size, true) };
                let copied =
                    merge_runs(plan, ctx.pool, &[run.file()], Dest::Output(out), ctx.progress, ctx.cancel)?;
                merged.phase.bytes_read += copied.read;
                merged.phase.bytes_written += copied.written;
                merged.output_bytes = copied.written;
                remove_owned(&[run])?;
                break;
            }
            debug_assert_eq!(m.output, first_new + k);
            let compressed = plan.compress_program().is_some();
            let sorted = inputs.iter().all(|r| r.sorted);
            // A merge writes plain lines (the keys stay with run formation's
            // runs).
            table.push(new.map(|path| Run { compressed, sorted, ..Run::new(path, m.size, true) }));
        }
        ctx.progress.finish_phase();
        merged.merged_bytes = sched.merged;
        merged.levels = sched.levels;
        merged.merges = sched.merges.len();
        merged.order = sched.merges.iter().map(|m| m.inputs.len()).max().unwrap_or(0);
        drop(store);
        Ok(merged)
    }
}

/// Whether the output fits beside a merge of `inputs` runs in the
/// descriptors the process has left: a stream each (and its ring with
/// io_uring), and the output's own file besides its stream.
fn output_fits(plan: &SortPlan, inputs: usize) -> bool {
    let per_stream = if plan.input_kind().queued() || plan.output_kind().queued() { 2 } else { 1 };
    (inputs as u64 + 1) * per_stream < emsort_io::rusage::free_descriptors()
}

/// Removes the runs the sort made (never a caller's file).
fn remove_owned(runs: &[Run]) -> Result<()> {
    for r in runs.iter().filter(|r| r.owned) {
        std::fs::remove_file(&r.path).map_err(|e| Error::from_io("remove", &r.path, e))?;
    }
    Ok(())
}
