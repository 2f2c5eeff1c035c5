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
use std::sync::{Arc, Mutex, OnceLock};

use emsort_io::{Error, ErrorKind, Progress, Result, TempDir};

use crate::byte_stream::{BlockSink, ByteOutput};
use crate::compress::{Choice, Compression, RunCodec, Traffic};
use crate::merge::{merge_runs, Dest, RunFile};
use crate::merge_policy::{schedule, schedule_in_order};
use crate::output::Output;
use crate::plan::SortPlan;
use crate::run_store::{MergeCtx, Merged, Order, RunStore, SortedChunk};
use crate::source::Opened;

/// A run on disk.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether the sort made it (and so removes it once merged).
    pub owned: bool,
    /// How it is stored.
    pub codec: RunCodec,
    /// Whether the sort wrote it in order (see [`RunFile::sorted`]).
    pub sorted: bool,
    /// Whether each line carries its key (see [`RunFile::keyed`]).
    pub keyed: bool,
    /// Bytes of a header at its start (see [`RunFile::skip`]).
    pub skip: u64,
    /// The length of its longest item, when known (0: no longer than a
    /// block, as far as the sort knows).
    pub longest: u64,
}

impl Run {
    /// A run at `path` of `bytes` bytes, not compressed, in no known order,
    /// its lines without keys.
    fn new(path: PathBuf, bytes: u64, owned: bool) -> Run {
        Run { path, bytes, owned, codec: RunCodec::Plain, sorted: false, keyed: false, skip: 0, longest: 0 }
    }

    /// The run as a merge reads it.
    fn file(&self) -> RunFile {
        RunFile {
            path: self.path.clone(),
            codec: self.codec.clone(),
            sorted: self.sorted,
            keyed: self.keyed,
            free_behind: self.owned && self.codec.frees_behind(),
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
    /// How its runs are stored: the plan's compression, `auto` decided at
    /// the first run (module `compress`), and why.
    codec: OnceLock<(RunCodec, Choice)>,
    /// The plan the runs are written and read with: the store's own, but
    /// where `--io auto` kept the runs in the page cache, decided again at
    /// the first run from the CPU the sort needed
    /// ([`emsort_io::device::runs_stay_cached`]), with why.
    runs_plan: OnceLock<(SortPlan, Option<String>)>,
    traffic: Arc<Traffic>,
    /// The process's CPU time when the store was made (`auto` weighs the
    /// CPU run formation needed until the first run).
    cpu_at_start: f64,
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
            codec: OnceLock::new(),
            runs_plan: OnceLock::new(),
            traffic: Arc::new(Traffic::default()),
            cpu_at_start: process_cpu(),
        }
    }

    /// How runs are stored: decided at the first run formed (`chunk`, whose
    /// sample `auto` weighs), or at a merge's first new run (`-m` of more
    /// files than d: no run to sample, so `auto` is none).
    fn codec(&self, chunk: Option<&SortedChunk<'_>>) -> RunCodec {
        let (codec, _) = self.codec.get_or_init(|| {
            let plan = &self.plan;
            let choice = match (plan.compression(), chunk) {
                (Compression::Auto, Some(_)) if !plan.frames_fit() => Choice {
                    compression: Compression::None,
                    why: "none: M leaves each stream of a merge no room for compressed frames".into(),
                    ratio: None,
                },
                (Compression::Auto, Some(chunk)) => {
                    let per_byte = self.cpu_per_byte(chunk);
                    let sample = chunk.sample(crate::compress::SAMPLE);
                    // The probe of `--io auto` or `build` is skipped where no run
                    // was expected (an input that nearly fits): measured now.
                    let device = plan
                        .device_cost()
                        .or_else(|| emsort_io::device::DeviceCost::probe(plan.temp_dirs().first()?));
                    crate::compress::choose(&sample, plan.run_frame(), device, per_byte, plan.threads())
                }
                (Compression::Auto, None) => Choice {
                    compression: Compression::None,
                    why: "none: a merge of sorted files forms no run to sample".into(),
                    ratio: None,
                },
                (c, _) => Choice { compression: c.clone(), why: "asked for".into(), ratio: None },
            };
            (RunCodec::of(&choice.compression, plan.run_frame(), &self.traffic), choice)
        });
        codec.clone()
    }

    /// The CPU seconds the sort has needed per byte of `chunk` (its first
    /// run's), over all its threads.
    fn cpu_per_byte(&self, chunk: &SortedChunk<'_>) -> f64 {
        (process_cpu() - self.cpu_at_start).max(0.0) / chunk.data.len().max(1) as f64
    }

    /// The plan runs are written and read with (see `runs_plan`): decided
    /// at the first run formed (`chunk`), or the store's at a merge's first
    /// new run (`-m`: no run formed).
    fn runs_plan(&self, chunk: Option<&SortedChunk<'_>>) -> &SortPlan {
        let (plan, _) = self.runs_plan.get_or_init(|| {
            let plan = &self.plan;
            let (Some(files), Some(chunk), Some(cost)) = (plan.files_kind(), chunk, plan.device_cost())
            else {
                return (plan.clone(), None);
            };
            let (stay, why) =
                emsort_io::device::runs_stay_cached(&cost, self.cpu_per_byte(chunk), plan.threads());
            if stay {
                let why = format!("{}: the runs stay in the page cache: {why}", plan.output_kind());
                return (plan.clone(), Some(why));
            }
            let why = format!("{files}: the runs go to the device as the files do: {why}");
            (plan.with_run_kind(files), Some(why))
        });
        plan
    }

    /// What the runs were stored as, for the statistics: `None` when no
    /// compression was asked for, or no run written.
    fn compression_stats(&self) -> Option<crate::stats::CompressionStats> {
        let (_, choice) = self.codec.get().filter(|_| *self.plan.compression() != Compression::None)?;
        let t = &self.traffic;
        Some(crate::stats::CompressionStats {
            requested: self.plan.compression().to_string(),
            chosen: choice.compression.to_string(),
            why: choice.why.clone(),
            sample_ratio: choice.ratio,
            raw_written: t.raw_written.load(Ordering::Relaxed),
            raw_read: t.raw_read.load(Ordering::Relaxed),
            stored_written: t.stored_written.load(Ordering::Relaxed),
            stored_read: t.stored_read.load(Ordering::Relaxed),
        })
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
        let plan = self.runs_plan(Some(chunk));
        let block = run_block(plan, chunk.order);
        let codec = self.codec(Some(chunk));
        let cfg = plan.stream_config(false).block_size(block);
        let out: Box<dyn BlockSink> = codec.create(&path, self.plan.unit(), &cfg)?;
        let bytes = chunk.write(out, block, &path, cancel)?;
        let keyed = matches!(chunk.order, Order::KeyedLines(_));
        let run = Run { codec, sorted: true, keyed, longest: chunk.longest(), ..Run::new(path, bytes, true) };
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
        // The runs' streams as the first run decided them.
        let runs_plan = store.runs_plan(None).clone();
        merged.runs_io = store.runs_plan.get().and_then(|(_, why)| why.clone());
        let plan = &runs_plan;
        let runs = std::mem::take(&mut *store.runs.lock().unwrap_or_else(|e| e.into_inner()));
        let sizes: Vec<u64> = runs.iter().map(|r| r.bytes).collect();
        // Items longer than a block (wide table rows) are gathered whole by
        // each run's reader: fewer runs at a time then.
        let fan_in = plan.fan_in_for_items(runs.iter().map(|r| r.longest).max().unwrap_or(0));
        let sched = if plan.keeps_input_order() {
            schedule_in_order(&sizes, fan_in)
        } else {
            schedule(&sizes, fan_in, plan.policy())
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
            merged.compression = store.compression_stats();
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
                (Dest::Run(p.clone(), store.codec(None)), Some(p))
            };
            let moved = merge_runs(plan, ctx.pool, &files, dest, ctx.progress, ctx.cancel)?;
            merged.phase.bytes_read += moved.read;
            merged.phase.bytes_written += moved.written;
            if last && !squeezed {
                merged.output_bytes = moved.written;
            }
            remove_owned(&inputs)?;
            if let (true, Some(path)) = (squeezed, &new) {
                let run =
                    Run { codec: store.codec(None), sorted: true, ..Run::new(path.clone(), m.size, true) };
                let copied =
                    merge_runs(plan, ctx.pool, &[run.file()], Dest::Output(out), ctx.progress, ctx.cancel)?;
                merged.phase.bytes_read += copied.read;
                merged.phase.bytes_written += copied.written;
                merged.output_bytes = copied.written;
                remove_owned(&[run])?;
                break;
            }
            debug_assert_eq!(m.output, first_new + k);
            let (codec, sorted) = (store.codec(None), inputs.iter().all(|r| r.sorted));
            // A merge writes plain lines (the keys stay with run formation's
            // runs).
            table.push(new.map(|path| Run { codec, sorted, ..Run::new(path, m.size, true) }));
        }
        ctx.progress.finish_phase();
        merged.merged_bytes = sched.merged;
        merged.levels = sched.levels;
        merged.merges = sched.merges.len();
        merged.order = sched.merges.iter().map(|m| m.inputs.len()).max().unwrap_or(0);
        merged.compression = store.compression_stats();
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

/// The process's CPU time so far, user and system, in seconds.
fn process_cpu() -> f64 {
    emsort_io::rusage::Usage::now(emsort_io::rusage::Who::Process)
        .map_or(0.0, |u| u.user_seconds + u.system_seconds)
}

/// Removes the runs the sort made (never a caller's file).
fn remove_owned(runs: &[Run]) -> Result<()> {
    for r in runs.iter().filter(|r| r.owned) {
        std::fs::remove_file(&r.path).map_err(|e| Error::from_io("remove", &r.path, e))?;
    }
    Ok(())
}
