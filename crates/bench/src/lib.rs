//! emsort's experiment harness.
//!
//! Each of emsort's experiments is a *campaign*: a list of points, each run
//! `reps` times on a cold cache. A campaign writes its raw measurements to a
//! CSV file row by row as runs finish, then makes every table and plot from
//! that CSV, never from numbers held only in memory, so a crashed or edited
//! campaign can be summarised and redrawn later.
//!
//! - [`streams`]: experiment 1, the six element-stream kinds read and
//!   written with k streams of N elements and block size B
//!   ([`streams::Campaign`], [`streams::plots_from_csv`]).
//! - [`sort`]: experiment 2, the external merge sort over a grid of N, M,
//!   d, policy, stream kind and threads, beside its cost model, an I/O lower
//!   bound and its peers (GNU sort, an in-memory sort)
//!   ([`sort::Campaign`], [`sort::plots_from_csv`]).
//! - [`replay`]: trace replay (part of experiment 4): traces of `file,offset,size`
//!   read calls, synthetic workloads mimicking the Chalmers thesis', and
//!   each reader kind timed on them ([`replay::Replay`], [`replay::generate`]).
//! - [`readers`]: experiment 4, the readers (`stream`, `mmap`,
//!   `pread`, `uring`, `adaptive`) against block size, queue depth (beside
//!   fio), request and file size, memory and threads ([`readers::Campaign`]).
//! - [`ray`]: the distributed sort on Ray (`bench/ray/bench_ray.py` runs
//!   it): summary, plot and README from its `raw.csv`, beside the published
//!   Exoshuffle results ([`ray::reports_from_csv`]).
//! - [`calibrate`]: `emsort calibrate`, this machine's crossover points
//!   for the adaptive reader (mmap vs pread, block size, queue depth, uring
//!   vs pread, threads), measured on a cold cache ([`calibrate::Calibrate`]).
//! - [`campaign`]: what the campaigns share: [`CampaignSettings`] (cache
//!   method, output and work directories, what `machine.json` records) and
//!   the builder methods of [`CampaignBuilder`] (import the trait to call
//!   `cache`, `out_dir`, `work_dir`, `command_line`, `version`).
//! - [`grid`]: how the campaigns expand their parameter lists into points
//!   ([`grid::product`]), merge points listed twice, and order repeated
//!   runs ([`grid::rounds`], [`grid::round_order`]).
//! - [`machine`]: the facts about the machine recorded beside every result
//!   (`machine.json`).
//! - [`stats`]: min / median / max of repeated runs.
//! - [`scratch`]: temporary directories on a disk, not in memory.
//! - [`Error`]: what can go wrong, with the file and line concerned.
//!
//! The library never prints; it reports through the
//! [`Progress`](emsort_io::Progress) the caller supplies.
//!
//! ```no_run
//! use emsort_bench::streams::Campaign;
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::{cache::CacheMethod, NoProgress};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let outcome = Campaign::quick()
//!     .cache(CacheMethod::Fadvise)
//!     .out_dir("results/quick")
//!     .run(&NoProgress, &AtomicBool::new(false))?;
//! println!("{}", outcome.raw_csv.display());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod calibrate;
pub mod campaign;
mod chart;
pub mod claims;
mod csv_log;
mod error;
#[cfg(test)]
mod fuzz;
pub mod grid;
mod list;
pub mod machine;
pub mod ray;
pub mod readers;
pub mod replay;
pub mod scratch;
pub mod sort;
pub mod srm;
pub mod stats;
pub mod streams;

pub use campaign::{CampaignBuilder, CampaignSettings};
pub use error::{Error, Result};

/// `emsort sort -S`'s argument for `bytes`: GNU's units, where a bare
/// number is KiB (`256K`, or `1000b` when not a whole KiB).
pub fn sort_size_arg(bytes: u64) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{}K", bytes / 1024)
    } else {
        format!("{bytes}b")
    }
}
