//! Experiment 4: the readers of `emsort_io::reader` measured on a cold
//! cache (issue 5 §2).
//!
//! Seven experiments ([`Experiment`]), each a raw CSV written row by row
//! and plots drawn from it:
//!
//! 1. `blocksize`: `pread` and `uring` (Q = 1) against the block size B,
//!    sequential and random, with the latency of one block;
//! 2. `queue-depth`: `uring`'s batch API against Q, sequential and random ×
//!    request size, with fio (`--ioengine=io_uring`) beside on the same file;
//! 3. `mmap`: single random reads against the request size for each
//!    `madvise` hint, with page faults and the bytes paged in per read
//!    (`mincore`), beside `read_ahead_kb` and `fault_around_bytes`;
//! 4. `sequential`: every reader against the file size and the bytes read;
//! 5. `random`: every reader against the request size, the file size and
//!    the bytes read;
//! 6. `memory`: random reads of a file larger than the memory left to the
//!    reader, in a child process under a cgroup v2 `memory.max` or beside a
//!    locked balloon ([`memlimit`]), and without a limit;
//! 7. `threads`: 1 … 2 × cores threads sharing a file.
//!
//! - [`Plan`] ([`parse_plan`], [`read_plan`]): the lists the points come
//!   from (`bench/params/readers-full.csv`, `readers-quick.csv`);
//!   [`grid`] turns it into [`Point`]s.
//! - [`Campaign`]: runs the experiments ([`measure()`], [`fio`],
//!   [`memlimit`]) and writes the outputs.
//! - [`RawRow`] / [`SummaryRow`] ([`summary_from_csv`]), [`plots_from_csv`],
//!   [`format_table`] / [`format_fio`]: the reports, from the CSVs.
//!
//! Outputs: `raw-<experiment>.csv`, `summary.csv`, `machine.json`,
//! `plots/*.svg`.
//!
//! [`traces`] is the trace experiment (`emsort bench readers --traces`):
//! the thesis' traces generated, the adaptive reader calibrated, every
//! trace replayed by every reader round after round, and a README beside
//! the Chalmers thesis' claims, all from one command.
//!
//! ```no_run
//! use emsort_bench::readers::{format_table, Campaign, Experiment, Plan};
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::{cache::CacheMethod, NoProgress};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let o = Campaign::new(Plan::quick(), &Experiment::ALL)?
//!     .cache(CacheMethod::Fadvise)
//!     .out_dir("results/readers-quick")
//!     .run(&NoProgress, &AtomicBool::new(false))?;
//! print!("{}", format_table(&o.summary));
//! # Ok(()) }
//! ```

mod campaign;
pub mod fio;
pub mod grid;
pub mod measure;
pub mod memlimit;
mod plan;
mod plots;
mod point;
mod record;
mod report;
pub mod traces;

pub use campaign::{data_path, Campaign, Outcome};
pub use measure::{measure, resident_bytes, Measured};
pub use memlimit::{worker_main, LimitMethod};
pub use plan::{
    parse_experiments, parse_plan, parse_readers, parse_sizes, read_plan, Experiment, Plan, ThreadList,
    FULL_PARAMS, QUICK_PARAMS,
};
pub use plots::plots_from_csv;
pub use point::{Api, Pattern, Point};
pub use record::{
    raw_path, read_all_raw, read_raw, summarise, summary_from_csv, write_summary, RawRow, RawWriter,
    SummaryRow,
};
pub use report::{claims, format_fio, format_table};
