//! The campaign's CSV files: `raw-<experiment>.csv` (a row per run, the
//! same columns for every experiment) and `summary.csv` (a row per point of
//! every experiment).
//!
//! Raw columns, in order:
//!
//! | column | meaning |
//! |---|---|
//! | `experiment`, `sweep` | the experiment and the parameter it sweeps (the plot's x axis) |
//! | `reader` | `stream`, `mmap`, `pread`, `uring`, `adaptive`, or `fio` |
//! | `api` | `single` (a `read_bytes` per request), `batch` (`read_batch`, Q in flight), `fio` |
//! | `pattern` | `seq`, `rand` (distinct blocks), `spread` (one read per stretch), `repeat` (with repeats) |
//! | `file_bytes`, `request_bytes`, `block_size`, `queue_depth`, `madvise`, `threads` | the setting |
//! | `limit` | memory experiment: `cgroup2:BYTES`, `balloon:BYTES`, or `none` |
//! | `rep` | repetition, from 1 |
//! | `requests`, `bytes_requested`, `bytes_read` | what was asked for and returned (equal, or the run failed) |
//! | `seconds`, `mib_s` | wall time of the slowest thread, bytes_read / seconds |
//! | `p50_us`, `p99_us`, `max_us` | per-request latency |
//! | `open_ms` | opening the reader (not in `seconds`; `mmap` maps and advises here) |
//! | `minor_faults`, `major_faults` | page faults of the reading threads (`getrusage(RUSAGE_THREAD)`; fio's own counts) |
//! | `resident_bytes` | the file's bytes in the page cache after the run (`mincore`) |
//! | `cache` | how the page cache was emptied before the run |
//!
//! `summary.csv`: per point, the medians over the repetitions of `mib_s`,
//! `p50_us`, `p99_us`, faults per request and bytes paged in per request
//! (`resident_bytes / requests`), the min and max of `mib_s`, and for
//! `uring` in the queue-depth experiment fio's median at the same pattern,
//! request size and depth with the ratio `uring_to_fio`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::measure::Measured;
use super::point::Point;
use crate::stats::median;
use crate::Result;

/// One run, one row of a raw CSV (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RawRow {
    pub experiment: String,
    pub sweep: String,
    pub reader: String,
    pub api: String,
    pub pattern: String,
    pub file_bytes: u64,
    pub request_bytes: u64,
    pub block_size: u64,
    pub queue_depth: u32,
    pub madvise: String,
    pub threads: usize,
    pub limit: String,
    pub rep: u32,
    pub requests: u64,
    pub bytes_requested: u64,
    pub bytes_read: u64,
    pub seconds: f64,
    pub mib_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub open_ms: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub resident_bytes: Option<u64>,
    pub cache: String,
}

impl RawRow {
    /// The row of `point`'s repetition `rep`.
    pub fn new(p: &Point, rep: u32, m: &Measured, limit: &str, cache: &str) -> RawRow {
        RawRow {
            experiment: p.experiment.clone(),
            sweep: p.sweep.clone(),
            reader: p.reader.clone(),
            api: p.api.name().to_string(),
            pattern: p.pattern.name().to_string(),
            file_bytes: p.file_bytes,
            request_bytes: p.request_bytes,
            block_size: p.block_size,
            queue_depth: p.queue_depth,
            madvise: p.madvise.clone(),
            threads: p.threads,
            limit: limit.to_string(),
            rep,
            requests: m.requests,
            bytes_requested: m.bytes_requested,
            bytes_read: m.bytes_read,
            seconds: m.seconds,
            mib_s: m.mib_per_s(),
            p50_us: m.p50_us,
            p99_us: m.p99_us,
            max_us: m.max_us,
            open_ms: m.open_seconds * 1e3,
            minor_faults: m.minor_faults,
            major_faults: m.major_faults,
            resident_bytes: m.resident_bytes,
            cache: cache.to_string(),
        }
    }

    /// Everything but the repetition and the measurements.
    fn key(&self) -> Key {
        (
            (
                self.experiment.clone(),
                self.sweep.clone(),
                self.reader.clone(),
                self.api.clone(),
                self.pattern.clone(),
                self.file_bytes,
            ),
            (
                self.request_bytes,
                self.block_size,
                self.queue_depth,
                self.madvise.clone(),
                self.threads,
                self.limit.clone(),
                self.bytes_requested,
            ),
        )
    }
}

type Key = ((String, String, String, String, String, u64), (u64, u64, u32, String, usize, String, u64));

/// The raw CSV of `experiment` in `dir`.
pub fn raw_path(dir: &Path, experiment: &str) -> std::path::PathBuf {
    dir.join(format!("raw-{experiment}.csv"))
}

/// Writes a raw CSV a row at a time, flushing after each.
pub type RawWriter = crate::csv_log::RawWriter<RawRow>;

/// Reads every row of a raw CSV.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>> {
    crate::csv_log::read_rows(path)
}

/// Every row of every `raw-*.csv` in `dir`, in file-name order.
pub fn read_all_raw(dir: &Path) -> Result<Vec<RawRow>> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| crate::Error::io("read directory", dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("raw-") && n.ends_with(".csv"))
        })
        .collect();
    // In the order the experiments run.
    let rank = |p: &std::path::PathBuf| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let exp = name.trim_start_matches("raw-").trim_end_matches(".csv");
        (super::plan::Experiment::ALL.iter().position(|e| e.name() == exp).unwrap_or(usize::MAX), p.clone())
    };
    files.sort_by_key(rank);
    let mut rows = Vec::new();
    for f in files {
        rows.extend(read_raw(&f)?);
    }
    Ok(rows)
}

/// One point, one row of `summary.csv` (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct SummaryRow {
    pub experiment: String,
    pub sweep: String,
    pub reader: String,
    pub api: String,
    pub pattern: String,
    pub file_bytes: u64,
    pub request_bytes: u64,
    pub block_size: u64,
    pub queue_depth: u32,
    pub madvise: String,
    pub threads: usize,
    pub limit: String,
    pub bytes_requested: u64,
    pub requests: u64,
    pub reps: usize,
    pub median_mib_s: f64,
    pub min_mib_s: f64,
    pub max_mib_s: f64,
    pub median_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub faults_per_request: f64,
    pub major_faults_per_request: f64,
    pub paged_in_per_request: Option<f64>,
    pub fio_mib_s: Option<f64>,
    pub uring_to_fio: Option<f64>,
}

/// One summary row per point, in the order the points first appear.
pub fn summarise(rows: &[RawRow]) -> Vec<SummaryRow> {
    let mut order: Vec<Key> = Vec::new();
    let mut groups: BTreeMap<Key, Vec<&RawRow>> = BTreeMap::new();
    for r in rows {
        let k = r.key();
        if !groups.contains_key(&k) {
            order.push(k.clone());
        }
        groups.entry(k).or_default().push(r);
    }
    let med = |v: Vec<f64>| median(&v).unwrap_or(0.0);
    let mut out: Vec<SummaryRow> = order
        .iter()
        .map(|k| {
            let g = &groups[k];
            let r0 = g[0];
            let mib: Vec<f64> = g.iter().map(|r| r.mib_s).collect();
            let per =
                |f: &dyn Fn(&RawRow) -> f64| med(g.iter().map(|r| f(r) / r.requests.max(1) as f64).collect());
            let paged: Vec<f64> = g
                .iter()
                .filter_map(|r| r.resident_bytes.map(|b| b as f64 / r.requests.max(1) as f64))
                .collect();
            SummaryRow {
                experiment: r0.experiment.clone(),
                sweep: r0.sweep.clone(),
                reader: r0.reader.clone(),
                api: r0.api.clone(),
                pattern: r0.pattern.clone(),
                file_bytes: r0.file_bytes,
                request_bytes: r0.request_bytes,
                block_size: r0.block_size,
                queue_depth: r0.queue_depth,
                madvise: r0.madvise.clone(),
                threads: r0.threads,
                limit: r0.limit.clone(),
                bytes_requested: r0.bytes_requested,
                requests: r0.requests,
                reps: g.len(),
                median_mib_s: med(mib.clone()),
                min_mib_s: mib.iter().copied().fold(f64::INFINITY, f64::min),
                max_mib_s: mib.iter().copied().fold(0.0, f64::max),
                median_s: med(g.iter().map(|r| r.seconds).collect()),
                p50_us: med(g.iter().map(|r| r.p50_us).collect()),
                p99_us: med(g.iter().map(|r| r.p99_us).collect()),
                faults_per_request: per(&|r| (r.minor_faults + r.major_faults) as f64),
                major_faults_per_request: per(&|r| r.major_faults as f64),
                paged_in_per_request: median(&paged),
                fio_mib_s: None,
                uring_to_fio: None,
            }
        })
        .collect();
    // fio beside uring: same experiment, pattern, request size, depth.
    let fio: Vec<(String, String, u64, u32, f64)> = out
        .iter()
        .filter(|s| s.reader == "fio")
        .map(|s| (s.experiment.clone(), s.pattern.clone(), s.request_bytes, s.queue_depth, s.median_mib_s))
        .collect();
    for s in out.iter_mut().filter(|s| s.reader == "uring") {
        if let Some(f) = fio.iter().find(|f| {
            f.0 == s.experiment && f.1 == s.pattern && f.2 == s.request_bytes && f.3 == s.queue_depth
        }) {
            s.fio_mib_s = Some(f.4);
            s.uring_to_fio = (f.4 > 0.0).then(|| s.median_mib_s / f.4);
        }
    }
    out
}

/// Writes `summary.csv`.
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<()> {
    crate::csv_log::write_rows(path, rows)
}

/// Reads every raw CSV of `dir`, writes `dir/summary.csv`, returns its rows.
pub fn summary_from_csv(dir: &Path) -> Result<Vec<SummaryRow>> {
    let rows = summarise(&read_all_raw(dir)?);
    write_summary(&dir.join("summary.csv"), &rows)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::point::{Api, Pattern};

    #[test]
    fn medians_and_the_fio_ratio() {
        let p = Point {
            experiment: "queue-depth".into(),
            sweep: "depth".into(),
            reader: "uring".into(),
            block_size: 4096,
            queue_depth: 8,
            madvise: "normal".into(),
            pattern: Pattern::Rand,
            api: Api::Batch,
            file_bytes: 1 << 20,
            request_bytes: 4096,
            total_bytes: 1 << 20,
            threads: 1,
            limited: false,
            reps: 3,
        };
        let m = |s: f64| Measured {
            seconds: s,
            requests: 256,
            bytes_requested: 1 << 20,
            bytes_read: 1 << 20,
            minor_faults: 512,
            resident_bytes: Some(2 << 20),
            ..Measured::default()
        };
        let mut rows: Vec<RawRow> = [1.0, 0.5, 0.25]
            .iter()
            .enumerate()
            .map(|(i, &s)| RawRow::new(&p, i as u32 + 1, &m(s), "", "drop"))
            .collect();
        let fio = Point { reader: "fio".into(), api: Api::Fio, ..p.clone() };
        rows.push(RawRow::new(&fio, 1, &m(0.5), "", "drop"));
        let s = summarise(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].reps, s[0].median_mib_s, s[0].min_mib_s, s[0].max_mib_s), (3, 2.0, 1.0, 4.0));
        assert_eq!(s[0].faults_per_request, 2.0);
        assert_eq!(s[0].paged_in_per_request, Some(8192.0));
        assert_eq!((s[0].fio_mib_s, s[0].uring_to_fio), (Some(2.0), Some(1.0)));
        assert_eq!(s[1].uring_to_fio, None);
    }
}
