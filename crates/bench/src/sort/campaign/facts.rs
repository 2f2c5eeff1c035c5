//! `machine.json` of a sort campaign ([`SortMachine`]): the machine's facts
//! every campaign records, and the peers' — GNU sort's, STXXL's and its
//! driver's, uutils sort's, DuckDB's versions, where the CPU bound ran, how
//! the I/O bound was measured, the SIMD level of emsort's runs
//! ([`simd_record`]) — with the runs that failed.
//!
//! The campaign writes it at the start and again at the end when STXXL or
//! the keys experiment had failures; [`super::readme`] quotes it.

use emsort_sort::simd::{self, Level};
use serde::Serialize;

use crate::machine::Machine;
use crate::sort::profile::{ProfileFacts, SIMD_ENV};

/// `machine.json` of a sort campaign: the common facts and the peers'.
#[derive(Debug, Clone, Serialize)]
pub struct SortMachine {
    /// CPU, memory, kernel, file system, command line …
    #[serde(flatten)]
    pub machine: Machine,
    /// First line of `sort --version`, or `not installed`.
    pub gnu_sort_version: String,
    /// `installed` or `not installed` (`stxxl.h` or `stxxl/` in the header
    /// directory, `/usr/include`).
    pub stxxl: String,
    /// STXXL's version from its headers and Debian's package, when installed.
    pub stxxl_version: Option<String>,
    /// The STXXL driver: `built: COMPILE COMMAND`, `not built: WHY` (not
    /// installed, the compiler's error), `not used: …` (no u32 input, or
    /// turned off).
    pub stxxl_driver: String,
    /// Failed STXXL runs (the driver's message, or an output that differs
    /// from emsort's); the campaign went on without those rows.
    pub stxxl_errors: Vec<String>,
    /// First line of the C++ compiler's `--version`, when STXXL is installed.
    pub cxx_version: Option<String>,
    /// How emsort ran: `child process: EXE` or `in-process (sort_file)`.
    pub emsort_runs: String,
    /// uutils sort (keys experiment, `lines`): the first line of `coreutils sort
    /// --version`, `not installed: WHY` or `not used: …`.
    pub uutils_sort_version: String,
    /// DuckDB (keys experiment): `DuckDB VERSION (python: PYTHON)`, `not
    /// installed: WHY` or `not used: …`.
    pub duckdb_version: String,
    /// Polars (keys experiment on `csv-export`, `jsonl`): `Polars VERSION
    /// (python: PYTHON)`, `not installed: WHY` or `not used: …`.
    #[serde(default)]
    pub polars_version: String,
    /// xan (keys experiment on `csv-export`): `xan --version`'s line,
    /// `not installed: WHY` or `not used: …`.
    #[serde(default)]
    pub xan_version: String,
    /// The keys experiment's failed runs and outputs that differ (each
    /// also a row of raw.csv).
    pub keys_problems: Vec<String>,
    /// Whether `/proc/self/clear_refs` can reset the peak RSS between runs.
    pub peak_rss_resettable: bool,
    /// Whether perf events count CPU migrations here.
    pub cpu_migrations_countable: bool,
    /// The CPU bound (tool `cpu-bound`): `tmpfs DIR`, `skipped: WHY` (the
    /// directory is not tmpfs, or holds too little) or `not used: turned
    /// off`.
    pub cpu_bound: String,
    /// How the I/O bound (tool `io-bound`) was measured.
    #[serde(default)]
    pub io_bound: String,
    /// The SIMD level of emsort's runs: `avx512 (detected)`, or `avx2
    /// (forced by EMSORT_SIMD; the CPU has avx512)`.
    #[serde(default)]
    pub simd: String,
    /// The machine profile, when the campaign is one of a matrix
    /// ([`crate::sort::matrix`]): its file system, mount options, device facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileFacts>,
}

/// What `machine.json` says of the SIMD level of emsort's runs: the
/// level forced, or the one this process would use (the CPU's, or lower
/// when `EMSORT_SIMD` is set in the campaign's own environment, which the
/// runs inherit).
pub(crate) fn simd_record(forced: Option<Level>) -> String {
    let cpu = simd::detected();
    match forced {
        Some(l) if l.min(cpu) < cpu => format!("{} (forced by {SIMD_ENV}; the CPU has {cpu})", l.min(cpu)),
        Some(_) => format!("{cpu} (the CPU's highest)"),
        None if simd::level() < cpu => {
            format!("{} ({SIMD_ENV} in the environment; the CPU has {cpu})", simd::level())
        }
        None => format!("{cpu} (detected)"),
    }
}
