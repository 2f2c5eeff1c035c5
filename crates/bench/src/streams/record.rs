//! The campaign's CSV files: `raw.csv` (a row per run) and `summary.csv`
//! (a row per point).
//!
//! `raw.csv` columns, in order:
//!
//! | column           | meaning |
//! |------------------|---------|
//! | `kind`, `op`     | stream kind, `read` or `write` |
//! | `k`, `n`         | streams, elements per stream |
//! | `b_requested`    | B asked for in bytes (N·4 for `file`); empty for `syscall` / `stdio` |
//! | `b_effective`    | the block size the stream really used (element size for `syscall`, libc's `BUFSIZ` for `stdio`, the mmap window for `mmap`) |
//! | `rep`            | repetition, from 1 |
//! | `seconds`        | wall time of the run |
//! | `bytes`          | bytes moved (k·N·4) |
//! | `syscalls_data`  | data-moving calls counted by the streams (read, write, mmap, munmap, truncate, io_uring_enter) |
//! | `syscalls_total` | every call counted (adds open, close, fsync, fadvise, lseek …) |
//! | `predicted_ios`  | the cost formula ([`predicted_ios`](super::predicted_ios)); for `mmap` map + unmap, 2·⌈k·N·4/W⌉ |
//! | `cache`          | how the page cache was emptied before the run |
//! | `fallback`       | why the stream fell back from its technique, if it did |
//!
//! `summary.csv` has per point: `min_s`, `median_s`, `max_s`,
//! `median_mib_s` (bytes / median time, MiB/s), `ns_per_element` (median
//! time / (k·N)), the median counted calls and the prediction.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::point::kind_rank;
use crate::stats::Stats;
use crate::Result;

/// One run, one row of `raw.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawRow {
    /// Stream kind.
    pub kind: String,
    /// `read` or `write`.
    pub op: String,
    /// Streams open at once.
    pub k: u32,
    /// Elements per stream.
    pub n: u64,
    /// Requested B in bytes; `None` for kinds that ignore B.
    pub b_requested: Option<u64>,
    /// Block size the stream really used.
    pub b_effective: u64,
    /// Repetition, from 1.
    pub rep: u32,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Data-moving system calls counted by the streams.
    pub syscalls_data: u64,
    /// All system calls counted by the streams.
    pub syscalls_total: u64,
    /// I/Os the cost formula predicts.
    pub predicted_ios: u64,
    /// Cache method (`drop`, `fadvise`, `none`).
    pub cache: String,
    /// Fallback note, empty when the stream used its technique.
    pub fallback: String,
}

/// Writes `raw.csv` a row at a time, flushing after each.
pub type RawWriter = crate::csv_log::RawWriter<RawRow>;

/// Reads every row of a `raw.csv`.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>> {
    crate::csv_log::read_rows(path)
}

/// One point, one row of `summary.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Stream kind.
    pub kind: String,
    /// `read` or `write`.
    pub op: String,
    /// Streams open at once.
    pub k: u32,
    /// Elements per stream.
    pub n: u64,
    /// Requested B in bytes; `None` for kinds that ignore B.
    pub b_requested: Option<u64>,
    /// Block size the stream really used (of the first run).
    pub b_effective: u64,
    /// Number of runs.
    pub reps: u32,
    /// Fastest run, seconds.
    pub min_s: f64,
    /// Median run, seconds.
    pub median_s: f64,
    /// Slowest run, seconds.
    pub max_s: f64,
    /// Bytes moved / median time, in MiB/s.
    pub median_mib_s: f64,
    /// Median time / (k·N), in nanoseconds.
    pub ns_per_element: f64,
    /// Median data-moving calls counted.
    pub syscalls_data: u64,
    /// Median of all calls counted.
    pub syscalls_total: u64,
    /// I/Os the cost formula predicts.
    pub predicted_ios: u64,
    /// Cache method.
    pub cache: String,
    /// Fallback note of the first run that had one.
    pub fallback: String,
}

/// Groups runs by point and computes their statistics; rows come out in
/// the documentation's kind order, then write before read, k, N, B.
pub fn summarise(rows: &[RawRow]) -> Vec<SummaryRow> {
    type Key = (usize, String, u8, String, u32, u64, Option<u64>);
    let mut groups: BTreeMap<Key, Vec<&RawRow>> = BTreeMap::new();
    for r in rows {
        let rank = r.kind.parse().map(kind_rank).unwrap_or(usize::MAX);
        let op_rank = if r.op == "write" { 0 } else { 1 };
        let key = (rank, r.kind.clone(), op_rank, r.op.clone(), r.k, r.n, r.b_requested);
        groups.entry(key).or_default().push(r);
    }
    groups
        .into_values()
        .filter_map(|runs| {
            let first = runs[0];
            let secs: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
            let t = Stats::of(&secs)?;
            let med = |f: fn(&RawRow) -> u64| {
                let v: Vec<f64> = runs.iter().map(|r| f(r) as f64).collect();
                Stats::of(&v).map(|s| s.median.round() as u64).unwrap_or(0)
            };
            let elements = u64::from(first.k) * first.n;
            Some(SummaryRow {
                kind: first.kind.clone(),
                op: first.op.clone(),
                k: first.k,
                n: first.n,
                b_requested: first.b_requested,
                b_effective: first.b_effective,
                reps: runs.len() as u32,
                min_s: t.min,
                median_s: t.median,
                max_s: t.max,
                median_mib_s: if t.median > 0.0 {
                    first.bytes as f64 / t.median / (1u64 << 20) as f64
                } else {
                    f64::INFINITY
                },
                ns_per_element: t.median * 1e9 / elements.max(1) as f64,
                syscalls_data: med(|r| r.syscalls_data),
                syscalls_total: med(|r| r.syscalls_total),
                predicted_ios: first.predicted_ios,
                cache: first.cache.clone(),
                fallback: runs
                    .iter()
                    .map(|r| r.fallback.as_str())
                    .find(|f| !f.is_empty())
                    .unwrap_or("")
                    .to_string(),
            })
        })
        .collect()
}

/// Writes `summary.csv` (replacing it).
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<()> {
    crate::csv_log::write_rows(path, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn row(kind: &str, op: &str, k: u32, n: u64, b: Option<u64>, rep: u32, s: f64) -> RawRow {
        RawRow {
            kind: kind.into(),
            op: op.into(),
            k,
            n,
            b_requested: b,
            b_effective: b.unwrap_or(4),
            rep,
            seconds: s,
            bytes: u64::from(k) * n * 4,
            syscalls_data: 10 + u64::from(rep),
            syscalls_total: 20,
            predicted_ios: 10,
            cache: "none".into(),
            fallback: String::new(),
        }
    }

    #[test]
    fn summary_groups_runs_and_orders_points() {
        let rows = vec![
            row("buffered", "read", 1, 1 << 20, Some(4096), 1, 0.4),
            row("buffered", "read", 1, 1 << 20, Some(4096), 2, 0.2),
            row("syscall", "read", 1, 1000, None, 1, 0.3),
            row("buffered", "write", 1, 1 << 20, Some(4096), 1, 1.0),
            row("buffered", "read", 1, 1 << 20, Some(4096), 3, 0.3),
            row("buffered", "read", 1, 1 << 20, Some(4096), 4, 0.1),
        ];
        let s = summarise(&rows);
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].kind.as_str(), s[0].op.as_str()), ("syscall", "read"));
        assert_eq!(s[1].op, "write");
        let r = &s[2];
        assert_eq!(r.reps, 4);
        assert_eq!((r.min_s, r.max_s), (0.1, 0.4));
        assert!((r.median_s - 0.25).abs() < 1e-12);
        assert!((r.median_mib_s - 16.0).abs() < 1e-9, "{}", r.median_mib_s); // 4 MiB / 0.25 s
        assert!((r.ns_per_element - 0.25e9 / (1 << 20) as f64).abs() < 1e-9);
        assert_eq!(r.syscalls_data, 13); // median of 11,12,13,14 = 12.5, rounded
    }

    #[test]
    fn raw_csv_round_trips_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("raw.csv");
        let mut w = RawWriter::create(&p).unwrap();
        let a = row("stdio", "write", 2, 1000, None, 1, 0.5);
        let mut b = row("mmap", "read", 1, 1000, Some(4096), 1, 0.25);
        b.fallback = "no O_DIRECT; here".into();
        w.write(&a).unwrap();
        w.write(&b).unwrap();
        // Flushed: readable before the writer is dropped.
        assert_eq!(read_raw(&p).unwrap(), vec![a, b]);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("kind,op,k,n,b_requested,b_effective,rep,seconds,bytes,syscalls_data,syscalls_total,predicted_ios,cache,fallback\n"));
        assert!(text.contains("stdio,write,2,1000,,4,"));
        assert!(RawWriter::create(&p).is_err());
        let sp = dir.path().join("summary.csv");
        write_summary(&sp, &summarise(&read_raw(&p).unwrap())).unwrap();
        assert_eq!(std::fs::read_to_string(&sp).unwrap().lines().count(), 3);
    }
}
