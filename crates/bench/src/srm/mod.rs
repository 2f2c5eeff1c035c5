//! Experiment 3: SRM (simple randomized mergesort) against DSM
//! (disk-striped mergesort) on D disks, after Barve & Vitter's experiments.
//!
//! A campaign is a grid over formats, numbers of records N, memory M,
//! striping block B, disks D, methods and an optional emulated disk
//! ([`Grid`], from a parameter file, [`parse_params`]). Each input is
//! generated once (seeded) and every method sorts it with the same M, so
//! both merge the same U runs. Every sort is a child process `emsort sort
//! --method M --disks DIR,… -S M --block-size B --stats FILE`
//! ([`Campaign::sorter_exe`]) on a cold cache; its statistics give U, the
//! passes, the merge order R and (SRM) the parallel reads, ν and flushes of
//! each pass, the merge time and the streaming rate.
//!
//! - [`Campaign`] / [`Point`]: the points, where the work files go, how
//!   the cache is emptied; [`Campaign::run`] measures and writes the
//!   outputs ([`Outcome`]).
//! - [`RawRow`] / [`SummaryRow`] ([`summarise`], [`summary_from_csv`]):
//!   `raw.csv` and `summary.csv`.
//! - [`sections`], [`table_markdown`], [`format_table`]: the paper's
//!   tables (`table.md`, the terminal summary).
//! - [`plots`]: `merge-time-vs-n.svg` (and `-emulated`), `d-sweep.svg`.
//! - [`reports_from_csv`]: summary, table and plots again from `raw.csv`.
//!
//! Outputs in the output directory: `raw.csv`, `summary.csv`, `table.md`,
//! `machine.json` and the SVG plots.
//!
//! ```no_run
//! use emsort_bench::srm::{format_table, Campaign};
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::{cache::CacheMethod, NoProgress};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let outcome = Campaign::quick()
//!     .cache(CacheMethod::Fadvise)
//!     .sorter_exe("target/release/emsort")
//!     .out_dir("results/srm-quick")
//!     .run(&NoProgress, &AtomicBool::new(false))?;
//! print!("{}", format_table(&outcome.summary));
//! # Ok(()) }
//! ```

mod campaign;
mod params;
mod plots;
mod record;
mod table;

pub use campaign::{reports_from_csv, Campaign, Outcome, Point, SrmMachine};
pub use params::{
    parse_disks, parse_emulate, parse_methods, parse_params, read_params, Grid, MAX_DISKS, METHODS,
};
pub use plots::plots;
pub use record::{
    join_numbers, read_raw, split_numbers, summarise, summary_from_csv, write_summary, RawRow, RawWriter,
    SummaryRow,
};
pub use table::{claims, format_table, sections, table_markdown, MethodCells, Section, TableRow};

/// The full campaign's parameter file (`bench/params/srm-full.csv`).
pub const FULL_PARAMS: &str = include_str!("../../../../bench/params/srm-full.csv");

/// The `--quick` campaign's parameter file (`bench/params/srm-quick.csv`):
/// a few thousand records, finishes in seconds.
pub const QUICK_PARAMS: &str = include_str!("../../../../bench/params/srm-quick.csv");
