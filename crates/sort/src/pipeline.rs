//! The sort pipeline, written once for every method and every front end.
//!
//! ```text
//!  Source(s) ──► run formation ──► RunStore ──► Merger ──► Output (Sink)
//!  files, stdin,   sort chunks of     plain temp dirs   plain loser tree      atomic file, stdout,
//!  pipes, pushed   M on all cores     or D disks        (schedule) · DSM · SRM device/FIFO, items
//! ```
//!
//! [`sort`] (and [`sort_file`], [`merge_files`], [`crate::Sorter`]) run
//! these phases, in this order, in one function (`run`):
//!
//! 1. **Clean and check.** What killed sorts left in the temp dirs and
//!    disks is removed ([`emsort_io::temp::remove_stale`]); every source is
//!    checked ([`crate::source`]) and the output prepared
//!    ([`crate::output`]: a file to be replaced gets its temporary file
//!    now, so a target this user may not write is refused before any work).
//! 2. **Plan.** The input's size, when every source has one, goes into the
//!    plan (an input of unknown size gets two chunk buffers of M/2) and
//!    its numbers are derived; the plan was checked when it was built, and
//!    the input size changes nothing the checks look at.
//! 3. **Runtime** ([`crate::runtime`]): the sort's pool and counters.
//! 4. **Store and merger** for the plan's method
//!    ([`crate::run_store`]): plain temp dirs and the loser-tree merger, or
//!    D disks and DSM or SRM.
//! 5. **Run formation** ([`crate::run_formation`]) from the input into the
//!    store (a single run goes straight to the output), unless the inputs
//!    are already sorted runs ([`merge_files`]).
//! 6. **Merge** ([`crate::run_store::Merger`]) into the output.
//! 7. **Commit** the output ([`Output::commit`](crate::output)), finish the
//!    runtime and assemble the [`SortStats`].
//!
//! Temporary directories are removed on success, error and interrupt (they
//! are dropped with the store); the output appears only when complete
//! (a file), or is written as produced (standard output, a device, a FIFO).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use emsort_io::Progress;

use crate::output::{Output, Sink};
use crate::pdisk::{Dsm, Srm, StripedStore};
use crate::plain::{Plain, PlainStore};
use crate::plan::{Method, SortPlan};
use crate::run_formation::{Formed, RunFormation};
use crate::run_store::{MergeCtx, Merged, Merger};
use crate::runtime::Runtime;
use crate::source::{open_sources, Input, Opened, Source};
use crate::stats::{Bounds, PhaseStats, PlanRecord, SortStats};
use crate::SortError;

/// Sorts `sources` (read in order, as one input) into `sink` with `plan`.
///
/// Progress goes to `progress` in two phases, `"run formation"` and
/// `"merge"`, in bytes. Setting `cancel` stops the sort between blocks
/// with [`ErrorKind::Interrupted`](emsort_io::ErrorKind::Interrupted);
/// every temporary file is removed and a file output is left untouched.
///
/// ```no_run
/// use std::sync::atomic::AtomicBool;
/// use emsort_sort::{sort, Format, Sink, SortPlan, Source};
/// # fn main() -> Result<(), emsort_sort::SortError> {
/// let plan = SortPlan::builder(Format::Lines).memory(256 << 20).build()?;
/// let sources = vec![Source::Path("a.txt".as_ref()), Source::Path("b.txt".as_ref()), Source::Stdin];
/// sort(&plan, sources, Sink::Stdout, &emsort_io::NoProgress, &AtomicBool::new(false))?;
/// # Ok(()) }
/// ```
pub fn sort<'a>(
    plan: &SortPlan,
    sources: Vec<Source<'_>>,
    sink: Sink<'a>,
    progress: &dyn Progress,
    cancel: &'a AtomicBool,
) -> Result<SortStats, SortError> {
    remove_stale(plan);
    let input = Input::open(plan, sources)?;
    let output = Output::prepare(plan, sink, cancel)?;
    run(plan, Work::Sort(input), output, progress, cancel)
}

/// Sorts the file `input` into `output` (which may be the same file); see
/// [`sort`].
///
/// ```no_run
/// use std::sync::atomic::AtomicBool;
/// use emsort_sort::{sort_file, Format, SortPlan};
/// # fn main() -> Result<(), emsort_sort::SortError> {
/// let plan = SortPlan::builder(Format::U32).memory(256 << 20).build()?;
/// let stats = sort_file(&plan, "in.u32".as_ref(), "out.u32".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
/// println!("{} runs, {:.2} passes, {:.1} s", stats.runs, stats.passes, stats.total_seconds);
/// # Ok(()) }
/// ```
pub fn sort_file(
    plan: &SortPlan,
    input: &Path,
    output: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    sort(plan, vec![Source::Path(input)], Sink::Path(output), progress, cancel)
}

/// Merges the sorted files `inputs` into `output` with `plan`'s format,
/// order, memory, fan-in, streams and temp dirs: the merge phase alone, the
/// files being the runs (GNU `sort -m`; the Python package's Ray sort
/// merges the pieces sorted on many machines here).
///
/// Each input must be a regular file of whole items, sorted in the plan's
/// order; this is not checked (use [`verify::verify`](crate::verify::verify)).
/// More inputs than the fan-in d are merged in several merges
/// ([`merge_policy::schedule`](crate::merge_policy::schedule)) through a
/// temporary directory. The inputs are never modified or removed; the
/// output may name one of them. The statistics are those of [`sort`] with
/// `runs` = the number of inputs, an empty run formation phase and
/// `passes` = bytes merged ÷ input size. Only the plain method is supported.
///
/// ```no_run
/// use std::path::PathBuf;
/// use std::sync::atomic::AtomicBool;
/// use emsort_sort::{merge_files, Format, SortPlan};
/// # fn main() -> Result<(), emsort_sort::SortError> {
/// let plan = SortPlan::builder(Format::U64).memory(64 << 20).build()?;
/// let parts: Vec<PathBuf> = (0..100).map(|i| format!("part-{i}.u64").into()).collect();
/// let stats = merge_files(&plan, &parts, "all.u64".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
/// println!("{} merges in {} level(s)", stats.merges, stats.merge_levels);
/// # Ok(()) }
/// ```
pub fn merge_files(
    plan: &SortPlan,
    inputs: &[PathBuf],
    output: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    merge_into(plan, inputs, Sink::Path(output), progress, cancel)
}

/// [`merge_files`] into any [`Sink`] (`sort -m` to standard output).
pub fn merge_into<'a>(
    plan: &SortPlan,
    inputs: &[PathBuf],
    sink: Sink<'a>,
    progress: &dyn Progress,
    cancel: &'a AtomicBool,
) -> Result<SortStats, SortError> {
    let sources = inputs.iter().map(|p| Source::Path(p)).collect();
    merge_sources(plan, sources, sink, progress, cancel)
}

/// Merges the sorted `sources` into `sink`: [`merge_files`] for any
/// [`Source`]s (GNU `sort -m a -`).
///
/// Regular files are the runs as they are. Standard input, a pipe, a
/// device or a file of unknown size is first read to its end into a file
/// of a temporary directory under the plan's first temp dir (it is
/// *spooled*: the merge reads its runs by path, several times when more
/// inputs than d need several merges); that file is removed once merged,
/// and with its directory on success, error and interrupt. Standard input
/// named twice is read once: the second finds it at its end, empty. Every
/// source is checked, and the output prepared, before anything is read.
/// Progress: the phase `"spool"` for each stream, then `"merge"`.
///
/// ```no_run
/// use std::sync::atomic::AtomicBool;
/// use emsort_sort::{merge_sources, Format, Sink, SortPlan, Source};
/// # fn main() -> Result<(), emsort_sort::SortError> {
/// let plan = SortPlan::builder(Format::Lines).memory(64 << 20).build()?;
/// let sources = vec![Source::Path("a.sorted".as_ref()), Source::Stdin];
/// merge_sources(&plan, sources, Sink::Stdout, &emsort_io::NoProgress, &AtomicBool::new(false))?;
/// # Ok(()) }
/// ```
pub fn merge_sources<'a>(
    plan: &SortPlan,
    sources: Vec<Source<'_>>,
    sink: Sink<'a>,
    progress: &dyn Progress,
    cancel: &'a AtomicBool,
) -> Result<SortStats, SortError> {
    if *plan.method() != Method::Plain {
        return Err(SortError::BadPlan(format!(
            "merging sorted files supports the plain method only, not {}",
            plan.method()
        )));
    }
    remove_stale(plan);
    let inputs = open_sources(plan, sources)?;
    // Items checked as they are read (JSON lines): the sorted files are
    // checked whole before anything is written.
    let codec = crate::codec::for_plan(plan);
    if codec.checks_items() {
        for i in &inputs {
            if let Opened::File(path, _) = i {
                crate::codec::InputEnds::check_file(&*codec, path)?;
            }
        }
    }
    let output = Output::prepare(plan, sink, cancel)?;
    run(plan, Work::Merge(inputs), output, progress, cancel)
}

/// Removes what killed sorts left in the directories this sort uses (a
/// DSM/SRM sort makes nothing in -T, but a killed one of standard input
/// may have left its output spool there).
pub(crate) fn remove_stale(plan: &SortPlan) {
    let disks = plan.method().disks().map_or(&[][..], |d| &d.dirs);
    for dir in plan.temp_dirs().iter().chain(disks) {
        let _ = emsort_io::temp::remove_stale(dir);
    }
}

/// What the pipeline starts from.
pub(crate) enum Work<'i> {
    /// Data to sort.
    Sort(Input<'i>),
    /// Sorted inputs: the runs (streams spooled first).
    Merge(Vec<Opened<'i>>),
}

/// The phases (see the module docs), for every method.
pub(crate) fn run(
    plan: &SortPlan,
    work: Work<'_>,
    output: Output<'_>,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    let name = output.name().to_path_buf();
    run_phases(plan, work, output, progress, cancel).map_err(|e| match e {
        SortError::Io(io) => SortError::Io(crate::output::about_output(io, &name)),
        other => other,
    })
}

fn run_phases(
    plan: &SortPlan,
    work: Work<'_>,
    output: Output<'_>,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    // The plan's threads, which the input size does not change.
    let runtime = Runtime::start(plan)?;
    // A merge's runs: its files, and its streams spooled to the temp dir.
    let (input, given) = match work {
        Work::Sort(mut input) => {
            input.take_headers(plan, output.header());
            (Some(input), None)
        }
        Work::Merge(inputs) => {
            let mut store = PlainStore::of_inputs(plan, inputs, progress, cancel)?;
            store.check_inputs(plan, output.header())?;
            (None, Some(store))
        }
    };
    let given_runs = given.as_ref().map_or(0, PlainStore::run_count) as u64;
    let known = match (&input, &given) {
        (Some(input), _) => input.known_size(),
        (None, given) => Some(given.as_ref().map_or(0, PlainStore::bytes)),
    };
    // Valid as built: the input size moves only the derived numbers.
    let plan = plan.with_input_size(known);
    let derived = plan.derived();
    let (formed, merged, merge_seconds) = match plan.method() {
        Method::Plain => {
            let store = match given {
                Some(store) => store,
                None => PlainStore::new(&plan, "emsort-"),
            };
            phases(&plan, &derived, &runtime, Plain, store, input, &output, progress, cancel)?
        }
        // merge_sources refuses DSM and SRM: only sorts get here.
        Method::Dsm(_) => {
            let store = StripedStore::new(&plan, known, derived.expected_runs)?;
            phases(&plan, &derived, &runtime, Dsm, store, input, &output, progress, cancel)?
        }
        Method::Srm(..) => {
            let store = StripedStore::new(&plan, known, derived.expected_runs)?;
            phases(&plan, &derived, &runtime, Srm, store, input, &output, progress, cancel)?
        }
    };
    output.commit()?;
    let totals = runtime.finish();
    let formation_pass = if formed.is_some() { 1.0 } else { 0.0 };
    let (input_bytes, output_bytes, runs, run_formation) = match &formed {
        Some((f, seconds)) => (
            f.bytes_read,
            // What reached the output (-u drops lines in runs and merges).
            if f.wrote_output { f.bytes_written } else { merged.output_bytes },
            f.runs,
            PhaseStats { seconds: *seconds, bytes_read: f.bytes_read, bytes_written: f.bytes_written },
        ),
        None => (known.unwrap_or(0), merged.output_bytes, given_runs, PhaseStats::default()),
    };
    let passes = if input_bytes == 0 {
        formation_pass
    } else {
        formation_pass + merged.merged_bytes as f64 / input_bytes as f64
    };
    let merge = PhaseStats { seconds: merge_seconds, ..merged.phase };
    let mut moved =
        (run_formation.bytes_read + merge.bytes_read, run_formation.bytes_written + merge.bytes_written);
    // Compressed runs move their stored bytes, not their items'.
    if let Some(c) = &merged.compression {
        moved.0 = (moved.0 + c.stored_read).saturating_sub(c.raw_read);
        moved.1 = (moved.1 + c.stored_written).saturating_sub(c.raw_written);
    }
    let bounds = Bounds::new(totals.seconds, &totals.rusage, plan.threads(), moved, plan.device_cost());
    Ok(SortStats {
        plan: PlanRecord::new(&plan, &derived),
        input_bytes,
        output_bytes,
        runs,
        passes,
        merge_levels: merged.levels,
        merges: merged.merges,
        merge_order: merged.order,
        run_formation,
        merge,
        total_seconds: totals.seconds,
        rusage: totals.rusage,
        cpu_migrations: totals.cpu_migrations,
        parallel_disks: merged.parallel_disks,
        bounds,
        compression: merged.compression,
        runs_io: merged.runs_io,
    })
}

/// Run formation (when there is data to sort: `input`; else the store
/// holds the runs to merge) and the merge, with the method's store and
/// merger.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn phases<M: Merger>(
    plan: &SortPlan,
    derived: &crate::plan::Derived,
    runtime: &Runtime,
    merger: M,
    store: M::Store,
    input: Option<Input<'_>>,
    output: &Output<'_>,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<(Option<(Formed, f64)>, Merged, f64), SortError> {
    let pool = &runtime.pool;
    let formed = match input {
        Some(input) => {
            let t = Instant::now();
            progress.phase_bytes("run formation", input.known_size());
            let formation = RunFormation { plan, derived, pool, progress, cancel, store: &store, output };
            let formed = formation.form(input)?;
            progress.finish_phase();
            Some((formed, t.elapsed().as_secs_f64()))
        }
        None => None,
    };
    let written = formed.as_ref().is_some_and(|(f, _)| f.wrote_output);
    let t = Instant::now();
    let ctx = MergeCtx { plan, pool, progress, cancel };
    let merged = merger.merge(store, output, written, &ctx)?;
    Ok((formed, merged, t.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests;
