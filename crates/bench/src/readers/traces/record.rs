//! The trace campaign's CSV files: `raw.csv`, a row per trace × reader ×
//! round, and `summary.csv`, a row per trace × reader.
//!
//! Raw columns, in order:
//!
//! | column | meaning |
//! |---|---|
//! | `trace`, `scale`, `seed` | the workload (`ct`, `am`, `im`, `mixed`), its `gen-trace` scale and seed |
//! | `reader` | `stream`, `mmap`, `pread`, `uring`, `adaptive` |
//! | `round`, `position` | the round (from 1) and the reader's place in that round's order (from 1; a Williams design, [`round_order`](crate::grid::round_order)) |
//! | `seconds` | wall time of the replay (one thread), on a cold cache |
//! | `requests`, `bytes_requested`, `bytes_read`, `short_reads` | the trace's requests and bytes, what the reader returned, requests cut short |
//! | `mib_s` | `bytes_read / seconds` in MiB/s |
//! | `p50_us`, `p99_us`, `max_us` | request latency, microseconds |
//! | `block_size`, `queue_depth` | B and Q of `pread` and `uring` (the adaptive reader takes its own from the calibration) |
//! | `cache` | how the page cache was emptied before the run |
//! | `mmap_requests` … `prefetched_bytes` | the adaptive reader's choices (empty for the others), as `emsort replay -o` writes them |
//! | `fallback` | why a technique was replaced, if one was |
//!
//! `summary.csv`: per trace and reader the rounds, the median, fastest
//! and slowest time, the median MiB/s, the best fixed reader of the trace
//! (the fixed reader — all but `adaptive` — of least median time), the
//! reader's median time over the best fixed reader's (`ratio_to_best_fixed`)
//! and over `mmap`'s (`ratio_to_mmap`), and the same ratio paired round
//! by round: the median of the per-round ratios (`paired_to_best_fixed`),
//! their range and the rounds in which the reader was faster; for the
//! adaptive reader the shares of its bytes (over all rounds) that `mmap`,
//! `pread`, io_uring and its direct read-ahead served (`mmap_share` …
//! `direct_share`).

use std::collections::BTreeMap;
use std::path::Path;

use emsort_io::ReaderKind;
use serde::{Deserialize, Serialize};

use crate::replay::workload::Workload;
use crate::replay::{ReaderResult, RoundRun};
use crate::stats::Stats;
use crate::Result;

/// One run, one row of `raw.csv` (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RawRow {
    pub trace: String,
    pub scale: f64,
    pub seed: u64,
    pub reader: String,
    pub round: usize,
    pub position: usize,
    pub seconds: f64,
    pub requests: u64,
    pub bytes_requested: u64,
    pub bytes_read: u64,
    pub short_reads: u64,
    pub mib_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub block_size: usize,
    pub queue_depth: u32,
    pub cache: String,
    pub mmap_requests: Option<u64>,
    pub mmap_bytes: Option<u64>,
    pub pread_requests: Option<u64>,
    pub pread_bytes: Option<u64>,
    pub uring_requests: Option<u64>,
    pub uring_bytes: Option<u64>,
    pub direct_requests: Option<u64>,
    pub direct_bytes: Option<u64>,
    pub prefetched_files: Option<u64>,
    pub prefetched_bytes: Option<u64>,
    pub fallback: String,
}

impl RawRow {
    /// The row of one run of `trace` (at `scale`, `seed`).
    pub fn new(trace: Workload, scale: f64, seed: u64, run: &RoundRun) -> RawRow {
        let r: &ReaderResult = &run.result;
        let c = r.choices;
        RawRow {
            trace: trace.name().to_string(),
            scale,
            seed,
            reader: r.reader.name().to_string(),
            round: run.round + 1,
            position: run.position + 1,
            seconds: r.seconds,
            requests: r.requests,
            bytes_requested: r.bytes_requested,
            bytes_read: r.bytes_read,
            short_reads: r.short_reads,
            mib_s: r.mib_per_s(),
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            max_us: r.max_us,
            block_size: r.block_size,
            queue_depth: r.queue_depth,
            cache: r.cache.name().to_string(),
            mmap_requests: c.map(|c| c.mmap_requests),
            mmap_bytes: c.map(|c| c.mmap_bytes),
            pread_requests: c.map(|c| c.pread_requests),
            pread_bytes: c.map(|c| c.pread_bytes),
            uring_requests: c.map(|c| c.uring_requests),
            uring_bytes: c.map(|c| c.uring_bytes),
            direct_requests: c.map(|c| c.direct_requests),
            direct_bytes: c.map(|c| c.direct_bytes),
            prefetched_files: c.map(|c| c.prefetched_files),
            prefetched_bytes: c.map(|c| c.prefetched_bytes),
            fallback: r.fallback.clone().unwrap_or_default(),
        }
    }
}

/// Writes `raw.csv` a row at a time, flushing after each.
pub type RawWriter = crate::csv_log::RawWriter<RawRow>;

/// Reads every row of a `raw.csv`.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>> {
    crate::csv_log::read_rows(path)
}

/// One trace and reader, one row of `summary.csv` (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct SummaryRow {
    pub trace: String,
    pub scale: f64,
    pub reader: String,
    pub rounds: usize,
    pub requests: u64,
    pub bytes_read: u64,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub median_mib_s: f64,
    pub best_fixed: String,
    pub ratio_to_best_fixed: Option<f64>,
    pub ratio_to_mmap: Option<f64>,
    pub paired_to_best_fixed: Option<f64>,
    pub paired_min: Option<f64>,
    pub paired_max: Option<f64>,
    pub rounds_faster: Option<usize>,
    pub mmap_share: Option<f64>,
    pub pread_share: Option<f64>,
    pub uring_share: Option<f64>,
    pub direct_share: Option<f64>,
}

/// The adaptive reader's shares of the bytes it read by `mmap`, `pread`,
/// io_uring and its direct read-ahead, over all its rounds (`None` for the
/// fixed readers, whose rows hold no choices).
fn shares(g: &[&RawRow]) -> [Option<f64>; 4] {
    let sum = |f: fn(&RawRow) -> Option<u64>| -> Option<u64> { g.iter().map(|r| f(r)).sum() };
    let parts =
        [sum(|r| r.mmap_bytes), sum(|r| r.pread_bytes), sum(|r| r.uring_bytes), sum(|r| r.direct_bytes)];
    let total: u64 = parts.iter().flatten().sum();
    parts.map(|p| p.filter(|_| total > 0).map(|b| b as f64 / total as f64))
}

/// The rank of a trace name (the order of [`Workload::ALL`]: ct, am, im,
/// mixed; others after, by name).
pub(crate) fn trace_rank(name: &str) -> (usize, String) {
    (Workload::ALL.iter().position(|w| w.name() == name).unwrap_or(usize::MAX), name.to_string())
}

/// The rank of a reader name (the order of [`ReaderKind::ALL`]).
pub(crate) fn reader_rank(name: &str) -> (usize, String) {
    (ReaderKind::ALL.iter().position(|k| k.name() == name).unwrap_or(usize::MAX), name.to_string())
}

/// Whether a reader is a fixed one (every reader but the adaptive one).
pub(crate) fn is_fixed(reader: &str) -> bool {
    reader != ReaderKind::Adaptive.name()
}

/// A summary row per trace and reader, traces in the order ct, am, im,
/// mixed and readers in [`ReaderKind::ALL`]'s order.
pub fn summarise(rows: &[RawRow]) -> Vec<SummaryRow> {
    type Key = ((usize, String), (usize, String));
    let mut groups: BTreeMap<Key, Vec<&RawRow>> = BTreeMap::new();
    for r in rows {
        groups.entry((trace_rank(&r.trace), reader_rank(&r.reader))).or_default().push(r);
    }
    let mut out: Vec<SummaryRow> = Vec::new();
    let mut traces: Vec<(usize, String)> = groups.keys().map(|k| k.0.clone()).collect();
    traces.dedup();
    for t in traces {
        let of_trace: Vec<(&String, &Vec<&RawRow>)> =
            groups.iter().filter(|(k, _)| k.0 == t).map(|(k, v)| (&k.1 .1, v)).collect();
        let stats: Vec<(&String, Stats)> = of_trace
            .iter()
            .filter_map(|(name, g)| {
                Stats::of(&g.iter().map(|r| r.seconds).collect::<Vec<_>>()).map(|s| (*name, s))
            })
            .collect();
        let best = stats
            .iter()
            .filter(|(name, _)| is_fixed(name))
            .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
            .map(|(name, s)| ((*name).clone(), s.median));
        let mmap = stats.iter().find(|(n, _)| n.as_str() == ReaderKind::Mmap.name()).map(|(_, s)| s.median);
        let by_round = |name: &str| -> BTreeMap<usize, f64> {
            of_trace
                .iter()
                .filter(|(n, _)| n.as_str() == name)
                .flat_map(|(_, g)| g.iter().map(|r| (r.round, r.seconds)))
                .collect()
        };
        let best_rounds = best.as_ref().map(|(n, _)| by_round(n)).unwrap_or_default();
        for (name, g) in &of_trace {
            let Some(s) = stats.iter().find(|(n, _)| n == name).map(|x| x.1) else { continue };
            let ratio = |base: Option<f64>| base.filter(|&b| b > 0.0).map(|b| s.median / b);
            // Per round: this reader's time over the best fixed reader's.
            let per_round: Vec<f64> = by_round(name)
                .iter()
                .filter_map(|(round, &x)| best_rounds.get(round).filter(|&&y| y > 0.0).map(|y| x / y))
                .collect();
            let paired = Stats::of(&per_round);
            let r0 = g[0];
            let [mmap_share, pread_share, uring_share, direct_share] = shares(g);
            out.push(SummaryRow {
                trace: r0.trace.clone(),
                scale: r0.scale,
                reader: r0.reader.clone(),
                rounds: g.len(),
                requests: r0.requests,
                bytes_read: g.iter().map(|r| r.bytes_read).max().unwrap_or(0),
                median_s: s.median,
                min_s: s.min,
                max_s: s.max,
                median_mib_s: crate::stats::median(&g.iter().map(|r| r.mib_s).collect::<Vec<_>>())
                    .unwrap_or(0.0),
                best_fixed: best.as_ref().map(|b| b.0.clone()).unwrap_or_default(),
                ratio_to_best_fixed: ratio(best.as_ref().map(|b| b.1)),
                ratio_to_mmap: ratio(mmap),
                paired_to_best_fixed: paired.map(|p| p.median),
                paired_min: paired.map(|p| p.min),
                paired_max: paired.map(|p| p.max),
                rounds_faster: paired.map(|_| per_round.iter().filter(|&&x| x < 1.0).count()),
                mmap_share,
                pread_share,
                uring_share,
                direct_share,
            });
        }
    }
    out
}

/// Writes `summary.csv`.
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<()> {
    crate::csv_log::write_rows(path, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: &str, reader: &str, round: usize, seconds: f64) -> RawRow {
        RawRow {
            trace: trace.into(),
            scale: 0.5,
            seed: 42,
            reader: reader.into(),
            round,
            position: 1,
            seconds,
            requests: 10,
            bytes_requested: 1 << 20,
            bytes_read: 1 << 20,
            short_reads: 0,
            mib_s: 1.0 / seconds,
            p50_us: 1.0,
            p99_us: 2.0,
            max_us: 3.0,
            block_size: 4 << 20,
            queue_depth: 32,
            cache: "fadvise".into(),
            mmap_requests: None,
            mmap_bytes: None,
            pread_requests: None,
            pread_bytes: None,
            uring_requests: None,
            uring_bytes: None,
            direct_requests: None,
            direct_bytes: None,
            prefetched_files: None,
            prefetched_bytes: None,
            fallback: String::new(),
        }
    }

    #[test]
    fn medians_the_best_fixed_reader_and_paired_ratios() {
        let mut rows = Vec::new();
        // mixed listed first: the summary still puts ct first.
        for (round, (m, p, a)) in [(1.0, 2.0, 0.5), (2.0, 1.0, 1.5), (3.0, 3.0, 1.0)].into_iter().enumerate()
        {
            rows.push(row("mixed", "adaptive", round + 1, a));
            rows.push(row("mixed", "mmap", round + 1, m));
            rows.push(row("mixed", "pread", round + 1, p));
        }
        rows.push(row("ct", "mmap", 1, 4.0));
        rows.push(row("ct", "adaptive", 1, 2.0));
        let s = summarise(&rows);
        let names: Vec<(&str, &str)> = s.iter().map(|r| (r.trace.as_str(), r.reader.as_str())).collect();
        assert_eq!(
            names,
            [
                ("ct", "mmap"),
                ("ct", "adaptive"),
                ("mixed", "mmap"),
                ("mixed", "pread"),
                ("mixed", "adaptive")
            ]
        );
        // mixed: mmap median 2, pread median 2 (a tie: the first in reader order), adaptive 1.
        let a = &s[4];
        assert_eq!((a.rounds, a.median_s, a.min_s, a.max_s), (3, 1.0, 0.5, 1.5));
        assert_eq!(a.best_fixed, "mmap");
        assert_eq!((a.ratio_to_best_fixed, a.ratio_to_mmap), (Some(0.5), Some(0.5)));
        // Per round over mmap: 0.5, 0.75, 0.333…: median 0.5, faster in all 3 rounds.
        assert_eq!(a.paired_to_best_fixed, Some(0.5));
        assert_eq!(a.rounds_faster, Some(3));
        assert!((a.paired_min.unwrap() - 1.0 / 3.0).abs() < 1e-12 && a.paired_max == Some(0.75));
        assert_eq!(s[2].ratio_to_best_fixed, Some(1.0));
        assert_eq!(s[2].rounds_faster, Some(0));
        // ct: one fixed reader.
        assert_eq!((s[1].best_fixed.as_str(), s[1].ratio_to_best_fixed), ("mmap", Some(0.5)));
        assert_eq!(summarise(&[]), Vec::<SummaryRow>::new());
        // The adaptive reader's shares of bytes, over its rounds.
        let mut a = row("am", "adaptive", 1, 1.0);
        (a.mmap_bytes, a.pread_bytes, a.uring_bytes, a.direct_bytes) = (Some(1), Some(2), Some(0), Some(1));
        let mut b = a.clone();
        (b.round, b.mmap_bytes, b.direct_bytes) = (2, Some(3), Some(1));
        let s = summarise(&[a, b, row("am", "pread", 1, 1.0)]);
        let shares = |r: &SummaryRow| [r.mmap_share, r.pread_share, r.uring_share, r.direct_share];
        assert_eq!(shares(&s[1]), [Some(0.4), Some(0.4), Some(0.0), Some(0.2)]);
        assert_eq!(shares(&s[0]), [None; 4]);
    }
}
