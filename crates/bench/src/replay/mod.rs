//! Trace replay (part of experiment 4): the Chalmers thesis' benchmark, read calls replayed
//! with each reader kind.
//!
//! The thesis evaluated its readers by replaying logs of an engine's read
//! calls (§3.4, chapter 5). This module does the same with any trace:
//!
//! - [`Trace`]: a CSV of `file,offset,size` lines ([`trace`] has the
//!   format), with [`Trace::large_share`], the share of bytes in requests
//!   larger than 32 KiB, the number the thesis gives for each workload.
//! - [`Workload`], [`generate`], [`plan`]: synthetic traces and their data
//!   files, mimicking the thesis' three workloads (`ct`, `am`, `im`) and a
//!   genuinely mixed one, scalable and seeded ([`workload`] has the
//!   numbers).
//! - [`Replay`]: the engine: each reader kind on a cold cache, every
//!   request timed, optionally verified against `pread`, on one or more
//!   threads ([`engine`] has the steps); it returns a [`ReplayOutcome`] of
//!   [`ReaderResult`]s.
//! - [`format_table`], [`format_choices`], [`reading`], [`write_results`]:
//!   the text table, the adaptive reader's choices, a one-line reading, and
//!   the results CSV with its JSON of machine facts ([`report`]).
//!
//! The library never prints; `emsort replay` and `emsort gen-trace` do.
//!
//! ```no_run
//! use emsort_bench::replay::{format_table, generate, Replay, Trace, Workload};
//! use emsort_io::{cache::CacheMethod, NoProgress, ReaderKind};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let stop = AtomicBool::new(false);
//! let g = generate("/tmp/tr".as_ref(), Workload::Mixed, 0.01, 42, &NoProgress, &stop)?;
//! let trace = Trace::read(&g.trace_path)?;
//! let out = Replay::new(&ReaderKind::ALL).cache(CacheMethod::Fadvise).run(&trace, &NoProgress, &stop)?;
//! print!("{}", format_table(&out.results));
//! # Ok(()) }
//! ```

pub mod engine;
pub mod report;
pub mod trace;
pub mod workload;

pub use engine::{percentile, Mismatch, ReaderResult, Replay, ReplayOutcome, RoundRun, Split};
pub use report::{
    describe_trace, format_choices, format_table, human_bytes, read_results, reading, sidecar_path,
    write_results, ResultRow,
};
pub use trace::{Request, Trace, HEADER, LARGE_REQUEST, MAX_REQUEST};
pub use workload::{data_rng, generate, plan, DataFile, GenSummary, Workload, MIN_BYTES, PAGE, TRACE_FILE};
