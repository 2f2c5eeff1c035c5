//! The sort campaign's CSV files: `raw.csv` (a row per run) and
//! `summary.csv` (a row per point, with the ratios to the I/O bound, the
//! CPU bound and the peers: GNU sort, STXXL, uutils sort, DuckDB, the
//! in-memory sort, an earlier emsort binary; which bound binds).
//!
//! `raw.csv` columns, in order (empty where a column does not apply to the
//! tool):
//!
//! | column | meaning |
//! |---|---|
//! | `tool` | `emsort`, `emsort-stdio` (the same sort from standard input to standard output), `emsort-baseline` (the same sort with another emsort binary, `--baseline`, alternating with `emsort`: first in even repetitions, second in odd ones), `cpu-bound` (emsort with input, runs and output on tmpfs, [`super::cpu_bound`]), `gnu-sort`, `uutils-sort` (uutils coreutils' `sort`: keys experiment, and `lines` with GNU sort's options), `duckdb` (DuckDB's `COPY (SELECT … ORDER BY …)`, keys experiment), `polars` (Polars' streaming `scan_csv` / `scan_ndjson` … `sort` … `sink_*`, keys experiment on `csv-export` and `jsonl`; no memory limit), `xan` (`xan sort --external`, keys experiment on `csv-export`), `stxxl` (STXXL's `stxxl::sorter` on u32, through `bench/stxxl/stxxl_sort.cpp`), `in-memory` (read all, sort on all cores: numbers with emsort's radix sort, records and lines with `par_sort`; write), `io-bound` (read once + write once with O_DIRECT, 8 MiB blocks; once per input and repetition, in the keys experiment too, where its `keys` is empty: it does not depend on them) |
//! | `format`, `bytes`, `items` | the input: format, size N in bytes, items (lines for `lines`) |
//! | `memory`, `fan_in`, `block_size`, `policy`, `io` | emsort's M, d, B, merge policy and stream kind; GNU sort: M (its `-S`); STXXL: M, its block size and I/O implementation (`syscall`) |
//! | `threads` | threads used (emsort `--parallel`, GNU sort `--parallel`, STXXL's OpenMP threads, the in-memory pool) |
//! | `rep` | repetition, from 1 |
//! | `seconds` | wall time measured by the harness, including an `fsync` of the output (for `io-bound`: the read plus the write, one pass) |
//! | `run_formation_s`, `merge_s` | emsort's phases (`SortStats`); STXXL's as its driver times them; `io-bound`: the read and the write |
//! | `runs`, `passes`, `merge_order` | emsort's U, passes over the data (run formation = 1), most runs in one merge |
//! | `bytes_read`, `bytes_written` | bytes emsort read and wrote (both phases) |
//! | `predicted_passes` | passes the plan predicts (`SortPlan::derived`) |
//! | `predicted_blocks` | the cost model: ⌈2 · N · predicted_passes / B⌉ block transfers |
//! | `blocks_moved` | ⌈(bytes_read + bytes_written) / B⌉, what emsort really moved |
//! | `peak_rss_bytes` | peak resident memory of the run (child processes — emsort run from its binary, GNU sort, STXXL: the child's `VmHWM`, read every 4 ms while it runs; in-process tools: `VmHWM` reset before the run) |
//! | `rss_before_bytes` | in-process tools only: resident memory just before the run (the harness's own, after `malloc_trim`), which `peak_rss_bytes` includes |
//! | `voluntary_cs`, `involuntary_cs`, `minor_faults`, `major_faults` | `wait4`'s rusage of a child process; `getrusage` deltas of an in-process run |
//! | `cpu_migrations` | perf software event `cpu-migrations` (inherited by threads and children; emsort: the count in its own statistics), empty where perf events are not allowed |
//! | `cache` | how the page cache was emptied before the run |
//! | `note` | the tool's version (GNU sort) or what else the reader should know |
//! | `experiment` | `sort` (the grid of formats: every row's output was verified, else the campaign stopped) or `keys` (sorts of the data sets `csv`, `csv-export`, `jsonl`, `words` by key, [`super::keys`]; `format` names the data set) |
//! | `keys` | keys experiment: the key options (`-t, -k3,3n`, `-u`, `--csv --header -k amount:n`, `--jsonl -k .ts:n`, …; DuckDB, Polars and xan ran the equivalent query), after `LC_ALL=LOCALE ` when the row sets a locale |
//! | `verified` | keys experiment: `reference` (GNU sort's output, or emsort's without GNU sort: on `csv-export` and `jsonl` checked alone, in order by `emsort sort -c` and with all the input's records, its `note` says so), `identical` (byte for byte the reference), `rows` (DuckDB, Polars, xan: as many records as the reference), `unchecked` (nothing to compare with), `MISMATCH` (a different output, or a reference that failed its check), `FAILED` (the tool failed: its time is not counted) |
//! | `error` | keys experiment: why a run failed or mismatched |
//! | `user_s`, `system_s` | CPU seconds in user mode and in the kernel (`wait4`'s rusage of a child process, all its threads; `getrusage` deltas of an in-process run) |
//!
//! `summary.csv` has a row per point (tool, experiment, format, N, keys,
//! M, d, policy, stream kind, threads): the repetitions' min / median /
//! max seconds, medians of the counts, and the columns of [`SummaryRow`]
//! that set it beside the others on the same input: `io_bound_s` (2 × the
//! `io-bound` median of the input, whatever the keys) and
//! `ratio_to_io_bound`, `cpu_bound_s` (same keys, M and threads) and
//! `ratio_to_cpu_bound`, `bound` / `ratio_to_bound` (the larger of the
//! two), the peers' medians and emsort's speedups over them, and
//! `baseline_s` / `ratio_to_baseline` (emsort over `emsort-baseline` at
//! the same setting: below 1 is faster than the earlier binary).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::stats::Stats;
use crate::Result;

/// The tools a campaign runs.
pub const TOOLS: [&str; 12] = [
    "emsort",
    "emsort-baseline",
    "emsort-stdio",
    "gnu-sort",
    "uutils-sort",
    "duckdb",
    "polars",
    "xan",
    "stxxl",
    "in-memory",
    "cpu-bound",
    "io-bound",
];

/// `verified` of a run whose tool failed (its time is left out of the summary).
pub const FAILED: &str = "FAILED";
/// `verified` of a run whose output differs from the reference.
pub const MISMATCH: &str = "MISMATCH";

/// One run, one row of `raw.csv` (see the module docs for the columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RawRow {
    pub tool: String,
    pub format: String,
    pub bytes: u64,
    pub items: u64,
    pub memory: Option<u64>,
    pub fan_in: Option<usize>,
    pub block_size: Option<u64>,
    pub policy: String,
    pub io: String,
    pub threads: usize,
    pub rep: u32,
    pub seconds: f64,
    pub run_formation_s: Option<f64>,
    pub merge_s: Option<f64>,
    pub runs: Option<u64>,
    pub passes: Option<f64>,
    pub merge_order: Option<usize>,
    pub bytes_read: Option<u64>,
    pub bytes_written: Option<u64>,
    pub predicted_passes: Option<f64>,
    pub predicted_blocks: Option<u64>,
    pub blocks_moved: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub rss_before_bytes: Option<u64>,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub cpu_migrations: Option<u64>,
    pub cache: String,
    pub note: String,
    #[serde(default = "sort_experiment")]
    pub experiment: String,
    #[serde(default)]
    pub keys: String,
    #[serde(default)]
    pub verified: String,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub user_s: Option<f64>,
    #[serde(default)]
    pub system_s: Option<f64>,
}

fn sort_experiment() -> String {
    "sort".into()
}

impl RawRow {
    /// A row of `tool` on an input, every measurement empty or zero.
    pub fn new(tool: &str, format: &str, bytes: u64, items: u64, threads: usize, rep: u32) -> RawRow {
        RawRow {
            tool: tool.into(),
            format: format.into(),
            bytes,
            items,
            memory: None,
            fan_in: None,
            block_size: None,
            policy: String::new(),
            io: String::new(),
            threads,
            rep,
            seconds: 0.0,
            run_formation_s: None,
            merge_s: None,
            runs: None,
            passes: None,
            merge_order: None,
            bytes_read: None,
            bytes_written: None,
            predicted_passes: None,
            predicted_blocks: None,
            blocks_moved: None,
            peak_rss_bytes: None,
            rss_before_bytes: None,
            voluntary_cs: 0,
            involuntary_cs: 0,
            minor_faults: 0,
            major_faults: 0,
            cpu_migrations: None,
            cache: String::new(),
            note: String::new(),
            experiment: sort_experiment(),
            keys: String::new(),
            verified: String::new(),
            error: String::new(),
            user_s: None,
            system_s: None,
        }
    }

    /// Whether the tool failed (no time to count).
    pub fn failed(&self) -> bool {
        self.verified == FAILED
    }

    /// The point this run belongs to (everything but the repetition).
    fn key(&self) -> PointKey {
        PointKey {
            experiment: self.experiment.clone(),
            format: self.format.clone(),
            bytes: self.bytes,
            keys: self.keys.clone(),
            tool_rank: TOOLS.iter().position(|t| *t == self.tool).unwrap_or(TOOLS.len()),
            tool: self.tool.clone(),
            memory: self.memory,
            // A key sort runs with emsort's own fan-in, which its plan may
            // choose differently from run to run (63 or 64 as its streams
            // need): the outcome, not the point.
            fan_in: if self.experiment == "keys" { None } else { self.fan_in },
            policy: self.policy.clone(),
            io: self.io.clone(),
            threads: self.threads,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PointKey {
    experiment: String,
    format: String,
    bytes: u64,
    keys: String,
    tool_rank: usize,
    tool: String,
    memory: Option<u64>,
    fan_in: Option<usize>,
    policy: String,
    io: String,
    threads: usize,
}

/// Writes `raw.csv` a row at a time, flushing after each.
pub type RawWriter = crate::csv_log::RawWriter<RawRow>;

/// Reads every row of a `raw.csv`.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>> {
    crate::csv_log::read_rows(path)
}

/// One point, one row of `summary.csv`: the repetitions' min / median /
/// max time, medians of the counts, and the ratios to the I/O bound and
/// the peers on the same input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Tool.
    pub tool: String,
    /// `sort` or `keys`.
    pub experiment: String,
    /// The key options (keys experiment).
    pub keys: String,
    /// Format.
    pub format: String,
    /// Input size N in bytes.
    pub bytes: u64,
    /// M (emsort, GNU sort).
    pub memory: Option<u64>,
    /// d (emsort).
    pub fan_in: Option<usize>,
    /// B (emsort).
    pub block_size: Option<u64>,
    /// Merge policy (emsort).
    pub policy: String,
    /// Stream kind (emsort).
    pub io: String,
    /// Threads.
    pub threads: usize,
    /// Repetitions (runs that did not fail).
    pub reps: usize,
    /// Runs that failed (keys experiment; not in the times).
    pub failed: usize,
    /// Runs whose output differed from the reference (keys experiment).
    pub mismatched: usize,
    /// The check of the runs that did not fail (`identical`, `reference`,
    /// `rows`, `unchecked`; `MISMATCH` when any mismatched), empty for the
    /// sort experiment.
    pub verified: String,
    /// The first failed or mismatched run's message.
    pub error: String,
    /// Fastest run, seconds (NaN when every run failed).
    pub min_s: f64,
    /// Median run, seconds.
    pub median_s: f64,
    /// Slowest run, seconds.
    pub max_s: f64,
    /// Median run formation (emsort) or read (io-bound) seconds.
    pub run_formation_s: Option<f64>,
    /// Median merge (emsort) or write (io-bound) seconds.
    pub merge_s: Option<f64>,
    /// Runs U (of the first repetition).
    pub runs: Option<u64>,
    /// Passes (of the first repetition).
    pub passes: Option<f64>,
    /// The cost model's block transfers.
    pub predicted_blocks: Option<u64>,
    /// Median peak RSS.
    pub peak_rss_bytes: Option<u64>,
    /// Median voluntary context switches.
    pub voluntary_cs: u64,
    /// Median involuntary context switches.
    pub involuntary_cs: u64,
    /// Median minor page faults.
    pub minor_faults: u64,
    /// Median major page faults.
    pub major_faults: u64,
    /// Median CPU migrations.
    pub cpu_migrations: Option<u64>,
    /// Median user CPU seconds (child processes: all threads).
    pub user_s: Option<f64>,
    /// Median system CPU seconds.
    pub system_s: Option<f64>,
    /// The I/O lower bound of this input: 2 × the median `io-bound` time
    /// (two passes).
    pub io_bound_s: Option<f64>,
    /// median_s / io_bound_s.
    pub ratio_to_io_bound: Option<f64>,
    /// The CPU bound: the median `cpu-bound` time on this input (and keys)
    /// with the same M and threads.
    pub cpu_bound_s: Option<f64>,
    /// median_s / cpu_bound_s.
    pub ratio_to_cpu_bound: Option<f64>,
    /// The bound that binds: `io-bound` or `cpu-bound`, the larger of
    /// io_bound_s and cpu_bound_s (the one measured when only one is).
    pub bound: String,
    /// median_s / the binding bound's time.
    pub ratio_to_bound: Option<f64>,
    /// GNU sort's median on this input with the same M and threads.
    pub gnu_sort_s: Option<f64>,
    /// gnu_sort_s / median_s: how many times faster than GNU sort.
    pub speedup_vs_gnu_sort: Option<f64>,
    /// The in-memory sort's median on this input.
    pub in_memory_s: Option<f64>,
    /// median_s / in_memory_s.
    pub ratio_to_in_memory: Option<f64>,
    /// STXXL's median on this input with the same M and threads (u32).
    pub stxxl_s: Option<f64>,
    /// stxxl_s / median_s: how many times faster than STXXL.
    pub speedup_vs_stxxl: Option<f64>,
    /// uutils sort's median with the same keys, M and threads (keys
    /// experiment, `lines`).
    pub uutils_sort_s: Option<f64>,
    /// uutils_sort_s / median_s.
    pub speedup_vs_uutils_sort: Option<f64>,
    /// DuckDB's median with the same keys, M and threads (keys experiment).
    pub duckdb_s: Option<f64>,
    /// duckdb_s / median_s.
    pub speedup_vs_duckdb: Option<f64>,
    /// emsort only: the median of `emsort-baseline` (another emsort
    /// binary, `--baseline`) at the same setting (keys, M, d, policy,
    /// stream kind, threads).
    #[serde(default)]
    pub baseline_s: Option<f64>,
    /// median_s / baseline_s: below 1, this emsort is faster than the
    /// baseline.
    #[serde(default)]
    pub ratio_to_baseline: Option<f64>,
}

fn med_f(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = v.flatten().collect();
    Stats::of(&v).map(|s| s.median)
}

fn med_u(v: impl Iterator<Item = u64>) -> u64 {
    let v: Vec<f64> = v.map(|x| x as f64).collect();
    Stats::of(&v).map(|s| s.median.round() as u64).unwrap_or(0)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() && b.is_finite() => Some(a / b),
        _ => None,
    }
}

/// Groups the runs by point (experiment, format, size, keys, tool, M, d,
/// policy, io, threads), and adds the ratios to the I/O bound and the
/// peers measured on the same input (see [`SummaryRow`]). Failed runs are
/// counted, not timed; a point whose every run failed has NaN times.
pub fn summarise(rows: &[RawRow]) -> Vec<SummaryRow> {
    let mut groups: BTreeMap<PointKey, Vec<&RawRow>> = BTreeMap::new();
    for r in rows {
        groups.entry(r.key()).or_default().push(r);
    }
    let mut out: Vec<SummaryRow> = groups
        .into_values()
        .filter_map(|all| {
            let first = all[0];
            let runs: Vec<&RawRow> = all.iter().copied().filter(|r| !r.failed()).collect();
            let secs: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
            let t = match Stats::of(&secs) {
                Some(t) => (t.min, t.median, t.max),
                None if first.experiment == "keys" => (f64::NAN, f64::NAN, f64::NAN),
                None => return None,
            };
            let first = runs.first().copied().unwrap_or(first);
            let mismatched = runs.iter().filter(|r| r.verified == MISMATCH).count();
            let verified = if mismatched > 0 { MISMATCH.to_string() } else { first.verified.clone() };
            Some(SummaryRow {
                tool: first.tool.clone(),
                experiment: first.experiment.clone(),
                keys: first.keys.clone(),
                format: first.format.clone(),
                bytes: first.bytes,
                memory: first.memory,
                fan_in: first.fan_in,
                block_size: first.block_size,
                policy: first.policy.clone(),
                io: first.io.clone(),
                threads: first.threads,
                reps: runs.len(),
                failed: all.len() - runs.len(),
                mismatched,
                verified,
                error: all.iter().find(|r| !r.error.is_empty()).map(|r| r.error.clone()).unwrap_or_default(),
                min_s: t.0,
                median_s: t.1,
                max_s: t.2,
                run_formation_s: med_f(runs.iter().map(|r| r.run_formation_s)),
                merge_s: med_f(runs.iter().map(|r| r.merge_s)),
                runs: first.runs,
                passes: first.passes,
                predicted_blocks: first.predicted_blocks,
                peak_rss_bytes: med_f(runs.iter().map(|r| r.peak_rss_bytes.map(|x| x as f64)))
                    .map(|x| x.round() as u64),
                voluntary_cs: med_u(runs.iter().map(|r| r.voluntary_cs)),
                involuntary_cs: med_u(runs.iter().map(|r| r.involuntary_cs)),
                minor_faults: med_u(runs.iter().map(|r| r.minor_faults)),
                major_faults: med_u(runs.iter().map(|r| r.major_faults)),
                cpu_migrations: med_f(runs.iter().map(|r| r.cpu_migrations.map(|x| x as f64)))
                    .map(|x| x.round() as u64),
                user_s: med_f(runs.iter().map(|r| r.user_s)),
                system_s: med_f(runs.iter().map(|r| r.system_s)),
                io_bound_s: None,
                ratio_to_io_bound: None,
                cpu_bound_s: None,
                ratio_to_cpu_bound: None,
                bound: String::new(),
                ratio_to_bound: None,
                gnu_sort_s: None,
                speedup_vs_gnu_sort: None,
                in_memory_s: None,
                ratio_to_in_memory: None,
                stxxl_s: None,
                speedup_vs_stxxl: None,
                uutils_sort_s: None,
                speedup_vs_uutils_sort: None,
                duckdb_s: None,
                speedup_vs_duckdb: None,
                baseline_s: None,
                ratio_to_baseline: None,
            })
        })
        .collect();
    // The I/O bound is one per input: the keys do not change it.
    let find = |out: &[SummaryRow], r: &SummaryRow, tool: &str, same_m: bool| -> Option<f64> {
        out.iter()
            .filter(|p| p.tool == tool && p.format == r.format && p.bytes == r.bytes)
            .filter(|p| p.keys == r.keys || tool == "io-bound")
            .filter(|p| !same_m || (p.memory == r.memory && p.threads == r.threads))
            .map(|p| p.median_s)
            .find(|s| s.is_finite())
    };
    let baselines: Vec<Option<f64>> = out
        .iter()
        .map(|r| {
            let same = |p: &&SummaryRow| {
                p.tool == "emsort-baseline"
                    && (&p.experiment, &p.format, p.bytes, &p.keys, p.memory, p.threads)
                        == (&r.experiment, &r.format, r.bytes, &r.keys, r.memory, r.threads)
                    && (p.fan_in, &p.policy, &p.io) == (r.fan_in, &r.policy, &r.io)
            };
            let b = out.iter().filter(same).map(|p| p.median_s).find(|s| s.is_finite());
            b.filter(|_| r.tool == "emsort")
        })
        .collect();
    let cpu_bounds: Vec<Option<f64>> = out
        .iter()
        .map(|r| match r.tool.as_str() {
            "io-bound" | "cpu-bound" | "in-memory" => None,
            _ => find(&out, r, "cpu-bound", true),
        })
        .collect();
    type Peers = (Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>);
    let peers: Vec<Peers> = out
        .iter()
        .map(|r| {
            let io = find(&out, r, "io-bound", false).map(|s| 2.0 * s);
            let gnu = if r.tool == "emsort" { find(&out, r, "gnu-sort", true) } else { None };
            let mem = find(&out, r, "in-memory", false);
            let stxxl = if r.tool == "emsort" { find(&out, r, "stxxl", true) } else { None };
            let uutils = if r.tool == "emsort" { find(&out, r, "uutils-sort", true) } else { None };
            let duckdb = if r.tool == "emsort" { find(&out, r, "duckdb", true) } else { None };
            (io, gnu, mem, stxxl, uutils, duckdb)
        })
        .collect();
    for (((r, (io, gnu, mem, stxxl, uutils, duckdb)), cpu), base) in
        out.iter_mut().zip(peers).zip(cpu_bounds).zip(baselines)
    {
        if r.tool == "io-bound" {
            continue;
        }
        r.baseline_s = base;
        r.ratio_to_baseline = ratio(Some(r.median_s), base);
        r.io_bound_s = io;
        r.ratio_to_io_bound = ratio(Some(r.median_s), io);
        r.cpu_bound_s = cpu;
        r.ratio_to_cpu_bound = ratio(Some(r.median_s), cpu);
        if r.tool != "cpu-bound" && r.tool != "in-memory" {
            let binding = match (io, cpu) {
                (Some(i), Some(c)) if c > i => Some(("cpu-bound", c)),
                (Some(i), _) => Some(("io-bound", i)),
                (None, Some(c)) => Some(("cpu-bound", c)),
                (None, None) => None,
            };
            if let Some((name, t)) = binding {
                r.bound = name.into();
                r.ratio_to_bound = ratio(Some(r.median_s), Some(t));
            }
        }
        r.gnu_sort_s = gnu;
        r.speedup_vs_gnu_sort = ratio(gnu, Some(r.median_s));
        r.stxxl_s = stxxl;
        r.speedup_vs_stxxl = ratio(stxxl, Some(r.median_s));
        r.uutils_sort_s = uutils;
        r.speedup_vs_uutils_sort = ratio(uutils, Some(r.median_s));
        r.duckdb_s = duckdb;
        r.speedup_vs_duckdb = ratio(duckdb, Some(r.median_s));
        if r.tool != "in-memory" {
            r.in_memory_s = mem;
            r.ratio_to_in_memory = ratio(Some(r.median_s), mem);
        }
    }
    out
}

/// Writes `summary.csv`.
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<()> {
    crate::csv_log::write_rows(path, rows)
}

/// Reads `dir/raw.csv`, writes `dir/summary.csv`, and returns its rows.
pub fn summary_from_csv(dir: &Path) -> Result<Vec<SummaryRow>> {
    let rows = summarise(&read_raw(&dir.join("raw.csv"))?);
    write_summary(&dir.join("summary.csv"), &rows)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn row(tool: &str, m: Option<u64>, threads: usize, rep: u32, secs: f64) -> RawRow {
        let mut r = RawRow::new(tool, "lines", 1000, 10, threads, rep);
        r.memory = m;
        r.seconds = secs;
        if tool == "emsort" {
            r.fan_in = Some(8);
            r.policy = "optimal".into();
            r.io = "buffered".into();
        }
        r
    }

    #[test]
    fn summary_ratios() {
        let rows = vec![
            row("emsort", Some(100), 2, 1, 1.0),
            row("emsort", Some(100), 2, 2, 3.0),
            row("emsort", Some(100), 2, 3, 2.0),
            row("emsort", Some(200), 2, 1, 1.5),
            row("gnu-sort", Some(100), 2, 1, 8.0),
            row("gnu-sort", Some(200), 1, 1, 9.0),
            row("in-memory", None, 2, 1, 0.5),
            row("io-bound", None, 0, 1, 0.4),
            row("io-bound", None, 0, 2, 0.6),
        ];
        let s = summarise(&rows);
        assert_eq!(s.len(), 6);
        assert!(s.iter().all(|r| r.cpu_bound_s.is_none() && r.ratio_to_cpu_bound.is_none()));
        assert_eq!((s[0].bound.as_str(), s[0].ratio_to_bound), ("io-bound", Some(2.0)));
        let e = &s[0];
        assert_eq!((e.tool.as_str(), e.memory, e.reps), ("emsort", Some(100), 3));
        assert_eq!((e.min_s, e.median_s, e.max_s), (1.0, 2.0, 3.0));
        assert_eq!(e.io_bound_s, Some(1.0)); // 2 × median(0.4, 0.6)
        assert_eq!(e.ratio_to_io_bound, Some(2.0));
        assert_eq!(e.gnu_sort_s, Some(8.0));
        assert_eq!(e.speedup_vs_gnu_sort, Some(4.0));
        assert_eq!(e.ratio_to_in_memory, Some(4.0));
        // M = 200 with 2 threads: GNU sort ran only with 1 thread there.
        assert_eq!(s[1].gnu_sort_s, None);
        assert_eq!(s[1].ratio_to_io_bound, Some(1.5));
        let io = s.iter().find(|r| r.tool == "io-bound").unwrap();
        assert_eq!(io.ratio_to_io_bound, None);
        let gnu = s.iter().find(|r| r.tool == "gnu-sort").unwrap();
        assert_eq!(gnu.ratio_to_io_bound, Some(8.0));
        assert_eq!(gnu.speedup_vs_gnu_sort, None);
        assert_eq!(e.stxxl_s, None);
    }

    /// The CPU bound at the same M and threads; the larger of it and the
    /// I/O bound binds.
    #[test]
    fn cpu_bound_ratio_and_the_binding_bound() {
        let cpu = |m: u64, t: usize, rep: u32, secs: f64| {
            let mut r = row("cpu-bound", Some(m), t, rep, secs);
            (r.user_s, r.system_s) = (Some(secs * 1.5), Some(secs / 4.0));
            r
        };
        let rows = vec![
            row("emsort", Some(100), 2, 1, 3.0),
            row("emsort", Some(200), 2, 1, 1.6),
            row("emsort", Some(300), 2, 1, 9.0),
            row("gnu-sort", Some(100), 2, 1, 12.0),
            cpu(100, 2, 1, 1.0),
            cpu(100, 2, 2, 2.0),
            cpu(100, 2, 3, 1.5),
            cpu(200, 2, 1, 0.5),
            cpu(300, 1, 1, 0.5),
            row("io-bound", None, 0, 1, 0.4),
        ];
        let s = summarise(&rows);
        let get = |tool: &str, m: u64| s.iter().find(|r| r.tool == tool && r.memory == Some(m)).unwrap();
        let e = get("emsort", 100);
        assert_eq!((e.cpu_bound_s, e.ratio_to_cpu_bound), (Some(1.5), Some(2.0)));
        assert_eq!(e.io_bound_s, Some(0.8));
        assert_eq!((e.bound.as_str(), e.ratio_to_bound), ("cpu-bound", Some(2.0)));
        // At M = 200 the CPU bound (0.5 s) is below 2 × the I/O bound (0.8 s).
        let e = get("emsort", 200);
        assert_eq!(e.ratio_to_cpu_bound, Some(3.2));
        assert_eq!((e.bound.as_str(), e.ratio_to_bound), ("io-bound", Some(2.0)));
        // The CPU bound ran with 1 thread only at M = 300.
        let e = get("emsort", 300);
        assert_eq!((e.cpu_bound_s, e.bound.as_str()), (None, "io-bound"));
        assert_eq!(get("gnu-sort", 100).ratio_to_cpu_bound, Some(8.0));
        let c = get("cpu-bound", 100);
        assert_eq!((c.reps, c.median_s, c.cpu_bound_s, c.bound.as_str()), (3, 1.5, None, ""));
        assert_eq!((c.user_s, c.system_s), (Some(2.25), Some(0.375)));
        assert_eq!(c.ratio_to_io_bound, Some(1.875));
        assert_eq!(s.last().unwrap().tool, "io-bound");
    }

    #[test]
    fn stxxl_speedup_at_the_same_m_and_threads() {
        let mk = |tool: &str, m: u64, t: usize, secs: f64| {
            let mut r = row(tool, Some(m), t, 1, secs);
            r.format = "u32".into();
            r
        };
        let rows = vec![
            mk("emsort", 100, 2, 2.0),
            mk("emsort", 200, 2, 1.0),
            mk("stxxl", 100, 2, 9.0),
            mk("stxxl", 200, 1, 5.0),
        ];
        let s = summarise(&rows);
        assert_eq!(
            s.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(),
            ["emsort", "emsort", "stxxl", "stxxl"]
        );
        assert_eq!((s[0].stxxl_s, s[0].speedup_vs_stxxl), (Some(9.0), Some(4.5)));
        assert_eq!(s[1].stxxl_s, None); // STXXL ran with 1 thread only at M = 200
        assert_eq!(s[2].speedup_vs_stxxl, None);
    }

    /// Keys runs: grouped by key options; failed runs counted, not timed;
    /// the peers' speedups at the same keys, M and threads.
    #[test]
    fn keys_rows_group_by_keys_and_leave_failures_out() {
        let mk = |tool: &str, keys: &str, secs: f64, verified: &str| {
            let mut r = row(tool, Some(100), 2, 1, secs);
            (r.format, r.experiment, r.keys, r.verified) =
                ("csv".into(), "keys".into(), keys.into(), verified.into());
            r.fan_in = None;
            r
        };
        // Its plan's fan-in, which may differ from run to run, splits no point.
        let mut other_d = mk("emsort", "-u", 3.0, FAILED);
        other_d.fan_in = Some(63);
        let rows = vec![
            mk("emsort", "-u", 1.0, "identical"),
            other_d,
            mk("gnu-sort", "-u", 5.0, "reference"),
            mk("uutils-sort", "-u", 2.0, MISMATCH),
            mk("duckdb", "-u", 9.0, FAILED),
            mk("emsort", "-t, -k3,3n", 2.0, "identical"),
            mk("gnu-sort", "-t, -k3,3n", 9.0, "reference"),
        ];
        let s = summarise(&rows);
        let get = |tool: &str, keys: &str| s.iter().find(|r| r.tool == tool && r.keys == keys).unwrap();
        let e = get("emsort", "-u");
        assert_eq!((e.reps, e.failed, e.median_s), (1, 1, 1.0));
        assert_eq!((e.speedup_vs_gnu_sort, e.speedup_vs_uutils_sort), (Some(5.0), Some(2.0)));
        assert_eq!(e.speedup_vs_duckdb, None);
        assert!(get("duckdb", "-u").median_s.is_nan());
        assert_eq!(get("uutils-sort", "-u").mismatched, 1);
        assert_eq!(get("uutils-sort", "-u").verified, MISMATCH);
        assert_eq!(get("emsort", "-t, -k3,3n").speedup_vs_gnu_sort, Some(4.5));
    }

    /// The keys experiment's I/O bound (one per input, `keys` empty) is
    /// every key sort's; with the CPU bound at the same keys it names the
    /// bound that binds; the baseline's median gives emsort's ratio to it.
    #[test]
    fn keys_rows_get_the_io_bound_the_binding_bound_and_the_baseline() {
        let mk = |tool: &str, keys: &str, rep: u32, secs: f64| {
            let mut r = row(tool, Some(100), 2, rep, secs);
            (r.format, r.experiment, r.keys, r.fan_in) = ("csv".into(), "keys".into(), keys.into(), None);
            (r.policy, r.io) = (String::new(), String::new());
            r
        };
        let io = |rep: u32, secs: f64| {
            let mut r = mk("io-bound", "", rep, secs);
            (r.memory, r.threads) = (None, 1);
            r
        };
        let rows = vec![
            mk("emsort", "-u", 1, 3.0),
            mk("emsort-baseline", "-u", 1, 4.0),
            mk("emsort", "-u", 2, 2.0),
            mk("emsort-baseline", "-u", 2, 6.0),
            mk("cpu-bound", "-u", 1, 1.0),
            mk("emsort", "-t, -k3,3n", 1, 2.0),
            mk("cpu-bound", "-t, -k3,3n", 1, 1.8),
            mk("gnu-sort", "-t, -k3,3n", 1, 8.0),
            io(1, 0.5),
            io(2, 0.7),
            // The grid's I/O bound of another input is not the csv input's.
            row("io-bound", None, 1, 1, 0.01),
        ];
        let s = summarise(&rows);
        let get = |tool: &str, keys: &str| {
            s.iter().find(|r| r.tool == tool && r.keys == keys && r.experiment == "keys").unwrap()
        };
        // -u: 2 × median(0.5, 0.7) = 1.2 s binds over the CPU bound's 1 s.
        let e = get("emsort", "-u");
        assert_eq!((e.io_bound_s, e.ratio_to_io_bound), (Some(1.2), Some(2.5 / 1.2)));
        assert_eq!((e.bound.as_str(), e.ratio_to_bound), ("io-bound", Some(2.5 / 1.2)));
        assert_eq!((e.baseline_s, e.ratio_to_baseline), (Some(5.0), Some(0.5)));
        // -t, -k3,3n: the CPU bound (1.8 s) binds over 1.2 s; no baseline there.
        let e = get("emsort", "-t, -k3,3n");
        assert_eq!(e.io_bound_s, Some(1.2));
        assert_eq!((e.bound.as_str(), e.ratio_to_bound), ("cpu-bound", Some(2.0 / 1.8)));
        assert_eq!((e.baseline_s, e.ratio_to_baseline), (None, None));
        assert_eq!(get("gnu-sort", "-t, -k3,3n").ratio_to_io_bound, Some(8.0 / 1.2));
        // Only emsort's row carries the ratio to the baseline.
        let b = get("emsort-baseline", "-u");
        assert_eq!((b.median_s, b.ratio_to_baseline, b.bound.as_str()), (5.0, None, "io-bound"));
        let i = get("io-bound", "");
        assert_eq!((i.reps, i.median_s, i.io_bound_s, i.bound.as_str()), (2, 0.6, None, ""));
        // The grid's rows are untouched by the keys experiment's I/O bound.
        let g = s.iter().find(|r| r.experiment == "sort").unwrap();
        assert_eq!((g.tool.as_str(), g.median_s), ("io-bound", 0.01));
    }

    /// In the grid, the baseline at the same M, d, policy, stream kind and
    /// threads.
    #[test]
    fn grid_baseline_at_the_same_setting() {
        let mut rows = vec![row("emsort", Some(100), 2, 1, 2.0), row("emsort", Some(200), 2, 1, 2.0)];
        let mut b = row("emsort", Some(100), 2, 1, 2.5);
        b.tool = "emsort-baseline".into();
        rows.push(b);
        let s = summarise(&rows);
        assert_eq!(
            s.iter().map(|r| (r.tool.as_str(), r.ratio_to_baseline)).collect::<Vec<_>>(),
            [("emsort", Some(0.8)), ("emsort", None), ("emsort-baseline", None)]
        );
    }

    #[test]
    fn csv_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("raw.csv");
        let mut w = RawWriter::create(&p).unwrap();
        let mut r = row("emsort", Some(1 << 20), 1, 1, 0.25);
        r.cpu_migrations = Some(3);
        w.write(&r).unwrap();
        w.write(&row("io-bound", None, 0, 1, 0.1)).unwrap();
        drop(w);
        assert!(RawWriter::create(&p).is_err());
        assert_eq!(read_raw(&p).unwrap(), vec![r, row("io-bound", None, 0, 1, 0.1)]);
        let s = summary_from_csv(d.path()).unwrap();
        assert_eq!(s.len(), 2);
        assert!(d.path().join("summary.csv").exists());
    }
}
