//! Experiment 1: the six element-stream kinds, read and written.
//!
//! For each kind, read and write: k streams of N `u32` elements each, block
//! size B, each point repeated on a cold cache. Writing creates k files and
//! writes the elements round-robin across the k streams; reading reads the
//! k files round-robin until all are exhausted. Every run records its time,
//! the bytes moved and the system calls the streams counted, beside the
//! INFO-H-417 reports' cost formula ([`predicted_ios`]).
//!
//! - [`Campaign`]: the points (from [`Sweep`]s given on the command line or
//!   a parameter file, [`parse_params`]), the cache method, the output
//!   directory; [`Campaign::run`] measures and writes the outputs.
//! - [`Point`], [`Op`], [`BlockSize`]: one measurement setting.
//! - [`RawRow`] / [`SummaryRow`]: the rows of `raw.csv` and `summary.csv`
//!   ([`summarise`] turns one into the other).
//! - [`plots_from_csv`]: the SVG plots, drawn from `raw.csv` alone.
//! - [`headline`], [`format_table`], [`reading`]: a text summary.
//!
//! Outputs in the output directory: `raw.csv`, `summary.csv`,
//! `machine.json`, `README.md` and `plots/*.svg`.
//!
//! ```no_run
//! use emsort_bench::streams::{parse_params, Campaign, format_table, headline};
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::{cache::CacheMethod, NoProgress};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let sweeps = parse_params(
//!     "kind;ops;N list;k list;B range;reps\nbuffered;read,write;1e3,1e6;1,2,4;4K..1M;3\n",
//!     "inline.csv".as_ref(),
//! )?;
//! let outcome = Campaign::new(&sweeps)?
//!     .cache(CacheMethod::Fadvise)
//!     .out_dir("results/buffered")
//!     .run(&NoProgress, &AtomicBool::new(false))?;
//! print!("{}", format_table(&headline(&outcome.summary)));
//! # Ok(()) }
//! ```

mod campaign;
mod cost;
mod dataset;
mod measure;
mod params;
mod plots;
mod point;
mod record;
mod report;

pub use campaign::{summary_from_csv, Campaign, Outcome, QUICK_PARAMS};
pub use cost::{formula, predicted_ios};
pub use params::{
    parse_blocks, parse_count, parse_counts, parse_kinds, parse_ks, parse_ops, parse_params, read_params,
    MAX_K,
};
pub use plots::{plots_from_csv, reference_b};
pub use point::{format_count, BlockSize, Op, Point, Sweep, ELEMENT_SIZE};
pub use record::{read_raw, summarise, write_summary, RawRow, RawWriter, SummaryRow};
pub use report::{claims, format_table, headline, reading, results_markdown, HeadlineRow};
