//! The SRM campaign's CSV files: `raw.csv` (a row per run) and
//! `summary.csv` (a row per point: medians of the repetitions).
//!
//! `raw.csv` columns, in order:
//!
//! | column | meaning |
//! |---|---|
//! | `method` | `plain`, `dsm` or `srm` |
//! | `format`, `items`, `bytes` | the input: format, records N, size in bytes |
//! | `memory`, `block_size`, `disks`, `emulate` | M, the striping block B, D, and the emulated disk (`BANDWIDTH,LATENCY`; empty: the disks as they are) |
//! | `rep`, `seed` | repetition (from 1) and the sort's `--seed` (SRM's random start disks) |
//! | `runs` | U, the runs formed (the same for every method at one M) |
//! | `passes` | merge passes |
//! | `merge_orders` | merge order R of each pass, `;`-separated |
//! | `merge_s` | seconds of the merge phase (all passes) |
//! | `merge_mib_s` | the streaming rate: (bytes read + written while merging) / merge time, MiB/s |
//! | `merge_bytes_read`, `merge_bytes_written` | bytes the merge read and wrote |
//! | `parallel_reads` | parallel read operations of each pass, `;`-separated |
//! | `nu` | SRM's I/O overhead ν of each pass: parallel reads / (N / (D·B)), `;`-separated |
//! | `flushes` | SRM's flushed prefetched blocks of each pass, `;`-separated |
//! | `forecast_in_memory` | whether the forecasting data stayed in memory (SRM) |
//! | `run_formation_s` | seconds of run formation |
//! | `total_s` | wall time of the child `emsort sort`, plus an `fsync` of the output |
//! | `peak_rss_bytes` | the child's peak resident memory (`VmHWM`) |
//! | `cache` | how the page cache was emptied before the run |
//! | `verified` | whether the output was checked (in order, same multiset as the input) |

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::stats::Stats;
use crate::Result;

/// One run, one row of `raw.csv` (see the module docs for the columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RawRow {
    pub method: String,
    pub format: String,
    pub items: u64,
    pub bytes: u64,
    pub memory: u64,
    pub block_size: u64,
    pub disks: usize,
    pub emulate: String,
    pub rep: u32,
    pub seed: u64,
    pub runs: Option<u64>,
    pub passes: Option<u64>,
    pub merge_orders: String,
    pub merge_s: Option<f64>,
    pub merge_mib_s: Option<f64>,
    pub merge_bytes_read: Option<u64>,
    pub merge_bytes_written: Option<u64>,
    pub parallel_reads: String,
    pub nu: String,
    pub flushes: String,
    pub forecast_in_memory: String,
    pub run_formation_s: Option<f64>,
    pub total_s: f64,
    pub peak_rss_bytes: Option<u64>,
    pub cache: String,
    pub verified: bool,
}

/// Writes `raw.csv` a row at a time.
pub type RawWriter = crate::csv_log::RawWriter<RawRow>;

/// Reads every row of a `raw.csv`.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>> {
    crate::csv_log::read_rows(path)
}

/// One point, one row of `summary.csv`: the medians of its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// `plain`, `dsm` or `srm`.
    pub method: String,
    /// The format.
    pub format: String,
    /// Records N.
    pub items: u64,
    /// Input size in bytes.
    pub bytes: u64,
    /// Memory M.
    pub memory: u64,
    /// Striping block B.
    pub block_size: u64,
    /// Disks D.
    pub disks: usize,
    /// The emulated disk, empty for the disks as they are.
    pub emulate: String,
    /// Repetitions summarised.
    pub reps: usize,
    /// Runs U (the first repetition's; the same in every one).
    pub runs: Option<u64>,
    /// Merge passes (the first repetition's).
    pub passes: Option<u64>,
    /// Merge order of each pass, `;`-separated (the first repetition's).
    pub merge_orders: String,
    /// Fastest merge, seconds.
    pub merge_s_min: Option<f64>,
    /// Median merge time, seconds.
    pub merge_s: Option<f64>,
    /// Slowest merge, seconds.
    pub merge_s_max: Option<f64>,
    /// Median streaming rate of the merge, MiB/s.
    pub merge_mib_s: Option<f64>,
    /// Median parallel reads of each pass, `;`-separated.
    pub parallel_reads: String,
    /// Median ν of each pass, `;`-separated.
    pub nu: String,
    /// Median flushes of each pass, `;`-separated.
    pub flushes: String,
    /// Median run formation time, seconds.
    pub run_formation_s: Option<f64>,
    /// Median total time, seconds.
    pub total_s: f64,
    /// Largest peak RSS over the repetitions.
    pub peak_rss_bytes: Option<u64>,
}

impl SummaryRow {
    /// ν of each pass as numbers (empty when not measured).
    pub fn nu_values(&self) -> Vec<f64> {
        split_numbers(&self.nu)
    }

    /// Merge orders of each pass as numbers.
    pub fn merge_order_values(&self) -> Vec<f64> {
        split_numbers(&self.merge_orders)
    }
}

/// The numbers of a `;`-separated per-pass column (unparsable items are
/// left out).
pub fn split_numbers(s: &str) -> Vec<f64> {
    s.split(';').filter_map(|x| x.trim().parse::<f64>().ok()).collect()
}

/// Joins per-pass numbers with `;`, integers without a fraction and other
/// values with up to 4 decimals.
pub fn join_numbers(xs: &[f64]) -> String {
    xs.iter()
        .map(|&x| {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                let s = format!("{x:.4}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The per-pass median over repetitions of a `;`-separated column; passes
/// missing in some repetitions take the median of those that have them.
fn per_pass_median(cols: &[&str]) -> String {
    let parsed: Vec<Vec<f64>> = cols.iter().map(|c| split_numbers(c)).collect();
    let passes = parsed.iter().map(Vec::len).max().unwrap_or(0);
    let med: Vec<f64> = (0..passes)
        .filter_map(|i| {
            let xs: Vec<f64> = parsed.iter().filter_map(|v| v.get(i).copied()).collect();
            crate::stats::median(&xs)
        })
        .collect();
    join_numbers(&med)
}

/// A point's identity: everything but the repetition and the seed.
type Key = (String, u64, u64, u64, usize, String, usize);

fn key(r: &RawRow) -> Key {
    let m = super::params::METHODS.iter().position(|m| m.name() == r.method).unwrap_or(usize::MAX);
    (r.format.clone(), r.memory, r.items, r.block_size, r.disks, r.emulate.clone(), m)
}

/// One [`SummaryRow`] per point, ordered by format, M, N, B, D, emulation and
/// method.
pub fn summarise(rows: &[RawRow]) -> Vec<SummaryRow> {
    let mut groups: BTreeMap<Key, Vec<&RawRow>> = BTreeMap::new();
    for r in rows {
        groups.entry(key(r)).or_default().push(r);
    }
    groups
        .into_values()
        .map(|g| {
            let first = g[0];
            let merge: Vec<f64> = g.iter().filter_map(|r| r.merge_s).collect();
            let ms = Stats::of(&merge);
            let med = |f: &dyn Fn(&RawRow) -> Option<f64>| {
                crate::stats::median(&g.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            };
            let col =
                |f: &dyn Fn(&RawRow) -> &str| per_pass_median(&g.iter().map(|r| f(r)).collect::<Vec<_>>());
            SummaryRow {
                method: first.method.clone(),
                format: first.format.clone(),
                items: first.items,
                bytes: first.bytes,
                memory: first.memory,
                block_size: first.block_size,
                disks: first.disks,
                emulate: first.emulate.clone(),
                reps: g.len(),
                runs: first.runs,
                passes: first.passes,
                merge_orders: first.merge_orders.clone(),
                merge_s_min: ms.map(|s| s.min),
                merge_s: ms.map(|s| s.median),
                merge_s_max: ms.map(|s| s.max),
                merge_mib_s: med(&|r| r.merge_mib_s),
                parallel_reads: col(&|r| r.parallel_reads.as_str()),
                nu: col(&|r| r.nu.as_str()),
                flushes: col(&|r| r.flushes.as_str()),
                run_formation_s: med(&|r| r.run_formation_s),
                total_s: med(&|r| Some(r.total_s)).unwrap_or(f64::NAN),
                peak_rss_bytes: g.iter().filter_map(|r| r.peak_rss_bytes).max(),
            }
        })
        .collect()
}

/// Writes `summary.csv`.
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<()> {
    crate::csv_log::write_rows(path, rows)
}

/// Reads `dir/raw.csv`, writes `dir/summary.csv` and returns its rows.
pub fn summary_from_csv(dir: &Path) -> Result<Vec<SummaryRow>> {
    let rows = summarise(&read_raw(&dir.join("raw.csv"))?);
    write_summary(&dir.join("summary.csv"), &rows)?;
    Ok(rows)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A raw row of a tiny campaign.
    pub(crate) fn row(method: &str, items: u64, memory: u64, disks: usize, rep: u32, merge_s: f64) -> RawRow {
        let srm = method == "srm";
        RawRow {
            method: method.into(),
            format: "rec:104:0:8".into(),
            items,
            bytes: items * 104,
            memory,
            block_size: 256 << 10,
            disks,
            emulate: String::new(),
            rep,
            seed: u64::from(rep),
            runs: Some(items / 100_000),
            passes: Some(if srm { 1 } else { 2 }),
            merge_orders: if srm { "10".into() } else { "4;3".into() },
            merge_s: Some(merge_s),
            merge_mib_s: Some(2.0 * (items * 104) as f64 / merge_s / 1048576.0),
            merge_bytes_read: Some(items * 104),
            merge_bytes_written: Some(items * 104),
            parallel_reads: if srm { format!("{}", 100 + rep) } else { "80;80".into() },
            nu: if srm { format!("1.0{rep}") } else { String::new() },
            flushes: if srm { "3".into() } else { String::new() },
            forecast_in_memory: if srm { "true".into() } else { String::new() },
            run_formation_s: Some(1.0),
            total_s: merge_s + 1.0,
            peak_rss_bytes: Some(memory + (4 << 20)),
            cache: "none".into(),
            verified: true,
        }
    }

    #[test]
    fn medians_per_point_and_per_pass() {
        let rows = vec![
            row("srm", 1_000_000, 15 << 20, 6, 1, 3.0),
            row("dsm", 1_000_000, 15 << 20, 6, 1, 5.0),
            row("srm", 1_000_000, 15 << 20, 6, 2, 1.0),
            row("srm", 1_000_000, 15 << 20, 6, 3, 2.0),
        ];
        let s = summarise(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].method, "dsm", "dsm before srm");
        let srm = &s[1];
        assert_eq!(
            (srm.reps, srm.merge_s, srm.merge_s_min, srm.merge_s_max),
            (3, Some(2.0), Some(1.0), Some(3.0))
        );
        assert_eq!(srm.nu, "1.02");
        assert_eq!(srm.parallel_reads, "102");
        assert_eq!(s[0].merge_orders, "4;3");
        assert_eq!(s[0].nu, "");
        assert_eq!(srm.nu_values(), [1.02]);
    }

    #[test]
    fn csv_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("raw.csv");
        let mut w = RawWriter::create(&p).unwrap();
        let r = row("srm", 20_000, 1 << 20, 3, 1, 0.5);
        w.write(&r).unwrap();
        drop(w);
        assert_eq!(read_raw(&p).unwrap(), [r]);
        let s = summary_from_csv(d.path()).unwrap();
        assert_eq!(s.len(), 1);
        assert!(d.path().join("summary.csv").exists());
    }

    #[test]
    fn joins_numbers() {
        assert_eq!(join_numbers(&[19.0, 4.0]), "19;4");
        assert_eq!(join_numbers(&[1.0234567, 1.5]), "1.0235;1.5");
        assert_eq!(split_numbers("1.5;;x;2"), [1.5, 2.0]);
    }
}
