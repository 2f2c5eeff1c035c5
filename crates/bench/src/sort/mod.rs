//! Experiment 2: the external merge sort against its cost model and its
//! peers.
//!
//! A campaign is a grid over formats, input sizes N, memory M, fan-in d,
//! merge policy, stream kind and threads ([`Grid`], from the command line
//! or a parameter file, [`parse_params`]). Each input is generated once
//! (seeded) and every emsort point runs on it `reps` times on a cold cache,
//! as a child process `emsort sort … --stats FILE` when the campaign knows
//! the binary ([`Campaign::sorter_exe`]; in the harness's process
//! otherwise), its output verified. On the same input, in the same run, the
//! peers run: the I/O lower bound (read once + write once with O_DIRECT,
//! 8 MiB blocks, doubled for two passes), an in-memory sort where N fits,
//! GNU sort (`LC_ALL=C`, `-S` = M, `--parallel`, `-T`) on text, and STXXL
//! (`stxxl::sorter` through a small C++ driver compiled at the start, when
//! Debian's `libstxxl-dev` is installed) on u32, their outputs compared
//! byte for byte with emsort's ([`peers`]). A failing STXXL is recorded in
//! `machine.json` and the campaign goes on. Beside the I/O bound, the CPU
//! bound ([`cpu_bound`]): the same emsort sort with its input, runs and
//! output on tmpfs (`/dev/shm`), at each (M, threads); the summary says
//! which of the two binds.
//!
//! - [`Campaign`]: the points, the cache method, the output directory, the
//!   emsort binary, the STXXL build; [`Campaign::run`] measures and writes
//!   the outputs.
//! - [`RawRow`] / [`SummaryRow`]: the rows of `raw.csv` and `summary.csv`
//!   ([`summarise`] adds the ratios to the I/O bound and the peers).
//! - [`predicted_blocks`]: the cost model, ⌈2 · N · passes / B⌉ block
//!   transfers.
//! - [`plots_from_csv`]: the SVG plots, drawn from `raw.csv` alone.
//! - [`headline`], [`format_table`], [`threads_reading`]: the terminal
//!   table and the threads comparison (fewest against most threads: context
//!   switches, CPU migrations, page faults), after a course report that
//!   found a merge sort forking a process per partition lose to a plain one
//!   on those counts.
//!
//! The keys experiment ([`keys`]): data sets ([`DataSet`]: typed CSV
//! lines, a quoted CSV export with a header, JSON lines, words in a
//! locale) sorted by key (`-t, -k3,3n`, `--csv --header -k amount:n`,
//! `--jsonl -k .ts:n`, `LC_ALL=en_US.UTF-8` whole lines, …) by emsort,
//! GNU sort, uutils sort, DuckDB, Polars and xan as each can read the
//! input (and an earlier emsort binary with a baseline), beside the CPU
//! bound and the I/O bound, outputs checked, failures recorded as rows;
//! the README gets a table per key sort with its bar (issue 17's on
//! `csv`, issue 41's on the others) and the bound that binds
//! ([`keys_table`]), `plots/` a chart of the times per key sort.
//!
//! Outputs in the output directory: `raw.csv`, `summary.csv`,
//! `machine.json`, `README.md` and `plots/*.svg`.
//!
//! ```no_run
//! use emsort_bench::sort::{format_table, headline, Campaign};
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::{cache::CacheMethod, NoProgress};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let outcome = Campaign::quick()
//!     .cache(CacheMethod::Fadvise)
//!     .sorter_exe("target/release/emsort")
//!     .out_dir("results/sort-quick")
//!     .run(&NoProgress, &AtomicBool::new(false))?;
//! print!("{}", format_table(&headline(&outcome.summary)));
//! # Ok(()) }
//! ```

mod campaign;
pub mod cpu_bound;
pub mod data_set;
pub mod fio;
pub mod key_sort;
pub mod keys;
pub mod matrix;
mod params;
pub mod peers;
mod plots;
pub mod profile;
mod record;
mod report;

pub use campaign::{predicted_blocks, Campaign, Outcome, Point, SortMachine, QUICK_PARAMS};
pub use cpu_bound::{CpuBoundDir, DEFAULT_CPU_BOUND_DIR};
pub use keys::{
    emsort_order, keys_table, parse_keys, Binary, DataSet, KeySort, KeysPeers, KeysPoint, PythonPeer,
    UutilsSort, Xan, DUCKDB_SCRIPT, POLARS_SCRIPT,
};
pub use params::{
    grid_keys, or_default, parse_fan_ins, parse_formats, parse_inputs, parse_io, parse_params,
    parse_policies, parse_sizes, parse_threads, read_params, Grid, DEFAULT, MAX_FAN_IN,
};
pub use peers::{StxxlBuild, StxxlDriver};
pub use plots::{describe_plot, plots_from_csv};
pub use profile::SIMD_ENV;
pub use record::{
    read_raw, summarise, summary_from_csv, write_summary, RawRow, RawWriter, SummaryRow, FAILED, MISMATCH,
    TOOLS,
};
pub use report::{bounds_table, claims, format_table, headline, threads_reading, HeadlineRow};
