//! A replay's outputs: an aligned text table, the adaptive reader's
//! choices, a short reading, and a CSV file with a sibling JSON of the
//! machine facts.
//!
//! The CSV (`-o results.csv`) has a row per reader ([`ResultRow`]):
//!
//! | column | meaning |
//! |--------|---------|
//! | `trace` | the trace file |
//! | `reader`, `threads`, `split` | reader kind, threads, how the trace was shared |
//! | `block_size`, `queue_depth` | B and Q asked for |
//! | `seconds`, `mib_s` | wall time of the slowest thread (the median run); bytes read / seconds in MiB/s |
//! | `reps`, `min_seconds`, `max_seconds` | runs of this reader (each on a cold cache), the fastest and slowest |
//! | `rep_seconds` | every run's seconds, round by round, `;`-separated (pair them across readers: [`paired_ratios`]) |
//! | `requests`, `bytes_requested`, `bytes_read`, `short_reads` | totals |
//! | `p50_us`, `p99_us`, `max_us` | request latency, microseconds |
//! | `large_share` | share of the trace's bytes in requests > 32 KiB (0–1) |
//! | `cache`, `verified` | how the page cache was emptied; whether reads were checked |
//! | `mmap_requests` … `uring_bytes` | the adaptive reader's choices (empty for the others) |
//! | `direct_requests`, `direct_bytes` | requests and bytes its direct read-ahead of sequential runs served |
//! | `prefetched_files`, `prefetched_bytes` | files the adaptive reader prefetched in the background, their bytes |
//! | `fallback` | why a technique was replaced, if one was |
//!
//! Beside it, `results.json` holds [`Machine`] facts (CPU, memory, kernel,
//! file system, `read_ahead_kb`, command line, date, cache method), as the
//! campaigns' `machine.json` does. The CSV is written like the campaigns'
//! `raw.csv`: it must not exist yet.

use std::path::{Path, PathBuf};

use emsort_io::format_size;
use serde::{Deserialize, Serialize};

use super::engine::{ReaderResult, ReplayOutcome};
use super::trace::Trace;
use crate::chart::format_seconds;
use crate::csv_log::RawWriter;
use crate::machine::Machine;
use crate::{Error, Result};

/// One reader's replay, one row of the results CSV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The trace file.
    pub trace: String,
    /// Reader kind.
    pub reader: String,
    /// Threads.
    pub threads: usize,
    /// `contiguous` or `round-robin`.
    pub split: String,
    /// Block size B asked for.
    pub block_size: usize,
    /// Queue depth Q asked for.
    pub queue_depth: u32,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Throughput, MiB/s.
    pub mib_s: f64,
    /// Runs (the row is the median one).
    pub reps: usize,
    /// Fastest run, seconds.
    pub min_seconds: f64,
    /// Slowest run, seconds.
    pub max_seconds: f64,
    /// Every run's seconds in the order they ran (round by round), `;`-separated.
    pub rep_seconds: String,
    /// Requests.
    pub requests: u64,
    /// Bytes asked for.
    pub bytes_requested: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Requests cut short by the end of their file.
    pub short_reads: u64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// Largest latency, µs.
    pub max_us: f64,
    /// Share of the trace's bytes in requests > 32 KiB.
    pub large_share: f64,
    /// Cache method.
    pub cache: String,
    /// Reads checked against `pread`.
    pub verified: bool,
    /// Adaptive: requests served by `mmap`.
    pub mmap_requests: Option<u64>,
    /// Adaptive: bytes read through `mmap`.
    pub mmap_bytes: Option<u64>,
    /// Adaptive: requests served by `pread`.
    pub pread_requests: Option<u64>,
    /// Adaptive: bytes read by `pread`.
    pub pread_bytes: Option<u64>,
    /// Adaptive: requests served by io_uring.
    pub uring_requests: Option<u64>,
    /// Adaptive: bytes read by io_uring.
    pub uring_bytes: Option<u64>,
    /// Adaptive: requests served by the direct read-ahead of sequential runs.
    pub direct_requests: Option<u64>,
    /// Adaptive: bytes read by it.
    pub direct_bytes: Option<u64>,
    /// Adaptive: files prefetched in the background.
    pub prefetched_files: Option<u64>,
    /// Adaptive: their sizes, summed.
    pub prefetched_bytes: Option<u64>,
    /// Fallback note, empty when none.
    pub fallback: String,
}

impl ResultRow {
    /// The row of `r`, a replay of `trace`.
    pub fn new(trace: &Trace, large_share: f64, r: &ReaderResult) -> ResultRow {
        let c = r.choices;
        let (min_seconds, max_seconds) = r.seconds_range();
        ResultRow {
            trace: trace.path().display().to_string(),
            reader: r.reader.name().to_string(),
            threads: r.threads,
            split: r.split.name().to_string(),
            block_size: r.block_size,
            queue_depth: r.queue_depth,
            seconds: r.seconds,
            mib_s: r.mib_per_s(),
            reps: r.reps(),
            min_seconds,
            max_seconds,
            rep_seconds: r.rep_seconds.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(";"),
            requests: r.requests,
            bytes_requested: r.bytes_requested,
            bytes_read: r.bytes_read,
            short_reads: r.short_reads,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            max_us: r.max_us,
            large_share,
            cache: r.cache.name().to_string(),
            verified: r.verified,
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

/// The JSON written beside the CSV.
#[derive(Debug, Clone, Serialize)]
struct Sidecar {
    machine: Machine,
    trace: String,
    requests: usize,
    bytes: u64,
    large_share: f64,
    files: usize,
    calibration: Option<String>,
}

/// The sibling JSON of a results CSV: `results.csv` → `results.json`.
pub fn sidecar_path(csv: &Path) -> PathBuf {
    csv.with_extension("json")
}

/// Writes the outcome's rows to `csv` (which must not exist) and the
/// machine facts to [`sidecar_path`]`(csv)`. `calibration` names the
/// adaptive reader's calibration file, if one was loaded.
pub fn write_results(
    csv: &Path,
    trace: &Trace,
    out: &ReplayOutcome,
    machine: Machine,
    calibration: Option<&Path>,
) -> Result<()> {
    let mut w = RawWriter::<ResultRow>::create(csv)?;
    for r in &out.results {
        w.write(&ResultRow::new(trace, out.large_share, r))?;
    }
    let side = Sidecar {
        machine,
        trace: trace.path().display().to_string(),
        requests: trace.requests().len(),
        bytes: trace.bytes(),
        large_share: out.large_share,
        files: trace.files().len(),
        calibration: calibration.map(|p| p.display().to_string()),
    };
    let json = sidecar_path(csv);
    let text = serde_json::to_string_pretty(&side).expect("plain data serialises");
    std::fs::write(&json, text + "\n").map_err(|e| Error::io("write", &json, e))
}

/// Reads a results CSV back.
pub fn read_results(csv: &Path) -> Result<Vec<ResultRow>> {
    crate::csv_log::read_rows(csv)
}

/// A one-line description of a trace: requests, bytes, files and the share
/// of bytes in requests > 32 KiB.
pub fn describe_trace(t: &Trace) -> String {
    format!(
        "{} requests, {} over {} files, {:.1} % of bytes in requests > 32 KiB (largest {})",
        t.requests().len(),
        human_bytes(t.bytes()),
        t.files().len(),
        t.large_share() * 100.0,
        human_bytes(t.max_request())
    )
}

/// Bytes in the largest binary unit that keeps a number ≥ 1 (`45.6 MiB`).
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The results as an aligned table (ends with a newline). With several
/// runs per reader, `time` is the median run's and a `runs` column gives
/// the fastest and slowest.
pub fn format_table(results: &[ReaderResult]) -> String {
    let reps = results.iter().any(|r| r.reps() > 1);
    let mut s = format!(
        "{:<9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>9} {:>10} {:>6}",
        "reader", "B", "time", "MiB/s", "p50", "p99", "requests", "bytes", "short"
    );
    if reps {
        s.push_str(&format!(" {:>21}", "runs (min … max)"));
    }
    s.push('\n');
    for r in results {
        let b = if r.reader.uses_block_size() { format_size(r.block_size as u64) } else { "-".into() };
        s.push_str(&format!(
            "{:<9} {:>7} {:>7} {:>10.1} {:>10} {:>10} {:>9} {:>10} {:>6}",
            r.reader.name(),
            b,
            format_seconds(r.seconds),
            r.mib_per_s(),
            format_seconds(r.p50_us / 1e6),
            format_seconds(r.p99_us / 1e6),
            r.requests,
            human_bytes(r.bytes_read),
            r.short_reads
        ));
        if reps {
            let (lo, hi) = r.seconds_range();
            let runs = format!("{} ({} … {})", r.reps(), format_seconds(lo), format_seconds(hi));
            s.push_str(&format!(" {runs:>21}"));
        }
        s.push('\n');
    }
    s
}

/// The adaptive reader's choices, one line (`None` for other readers).
pub fn format_choices(r: &ReaderResult) -> Option<String> {
    let c = r.choices?;
    let part = |name: &str, req: u64, bytes: u64| {
        let pct = if c.bytes() > 0 { bytes as f64 * 100.0 / c.bytes() as f64 } else { 0.0 };
        format!("{name} {req} requests / {} ({pct:.1} % of bytes)", human_bytes(bytes))
    };
    let mut s = format!(
        "adaptive chose: {}, {}, {}",
        part("mmap", c.mmap_requests, c.mmap_bytes),
        part("pread", c.pread_requests, c.pread_bytes),
        part("uring", c.uring_requests, c.uring_bytes)
    );
    if c.direct_requests > 0 {
        s.push_str(&format!(", {}", part("direct read-ahead", c.direct_requests, c.direct_bytes)));
    }
    if c.prefetched_files > 0 {
        s.push_str(&format!(
            "; prefetched {} file{} ({}) in the background",
            c.prefetched_files,
            if c.prefetched_files == 1 { "" } else { "s" },
            human_bytes(c.prefetched_bytes)
        ));
    }
    if let Some(f) = &r.fallback {
        s.push_str(&format!(" (fallback: {f})"));
    }
    Some(s)
}

/// Which reader was fastest, and the adaptive reader's time over the best
/// fixed reader's (when both ran). Empty when nothing ran.
pub fn reading(results: &[ReaderResult]) -> String {
    let Some(best) = results.iter().min_by(|a, b| a.seconds.total_cmp(&b.seconds)) else {
        return String::new();
    };
    let mut s = format!("Fastest: {} in {}.", best.reader, format_seconds(best.seconds));
    let adaptive = results.iter().find(|r| r.choices.is_some());
    let fixed = results.iter().filter(|r| r.choices.is_none()).min_by(|a, b| a.seconds.total_cmp(&b.seconds));
    if let (Some(a), Some(f)) = (adaptive, fixed) {
        if f.seconds > 0.0 {
            s.push_str(&format!(
                " adaptive took {:.2}× the time of the best fixed reader ({}).",
                a.seconds / f.seconds,
                f.reader
            ));
        }
        if let Some(p) = paired_ratios(a, f) {
            s.push_str(&format!(
                " Paired by round (each round runs every reader once, so a drift of the disk touches both): median {:.2}×, {} of {} rounds faster, range {:.2}× … {:.2}×.",
                p.median,
                p.wins,
                p.rounds,
                p.min,
                p.max
            ));
        }
    }
    s
}

/// The adaptive reader's time over a fixed reader's, round by round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Rounds compared.
    pub rounds: usize,
    /// Median of the per-round ratios.
    pub median: f64,
    /// Rounds in which the adaptive reader was faster.
    pub wins: usize,
    /// Smallest ratio.
    pub min: f64,
    /// Largest ratio.
    pub max: f64,
}

/// Ratios `a / f` of the runs of the same round (`--reps` runs the readers
/// in turn, round after round), when both ran at least twice; `None`
/// otherwise. The disk of a shared machine drifts by tens of percent within
/// minutes: a ratio within a round is steadier than a ratio of medians.
pub fn paired_ratios(a: &ReaderResult, f: &ReaderResult) -> Option<Paired> {
    let n = a.rep_seconds.len();
    if n < 2 || f.rep_seconds.len() != n {
        return None;
    }
    let mut r: Vec<f64> =
        a.rep_seconds.iter().zip(&f.rep_seconds).filter(|(_, &y)| y > 0.0).map(|(x, y)| x / y).collect();
    if r.is_empty() {
        return None;
    }
    let wins = r.iter().filter(|&&x| x < 1.0).count();
    r.sort_by(f64::total_cmp);
    let median = if r.len() % 2 == 1 { r[r.len() / 2] } else { (r[r.len() / 2 - 1] + r[r.len() / 2]) / 2.0 };
    Some(Paired { rounds: r.len(), median, wins, min: r[0], max: r[r.len() - 1] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::engine::Split;
    use emsort_io::cache::CacheMethod;
    use emsort_io::{ChoiceCounts, ReaderKind};

    fn result(reader: ReaderKind, seconds: f64) -> ReaderResult {
        ReaderResult {
            reader,
            threads: 1,
            split: Split::Contiguous,
            block_size: 4 << 20,
            queue_depth: 32,
            seconds,
            rep_seconds: vec![seconds],
            requests: 10,
            bytes_requested: 1 << 20,
            bytes_read: 1 << 20,
            short_reads: 0,
            p50_us: 12.5,
            p99_us: 1500.0,
            max_us: 2000.0,
            cache: CacheMethod::None,
            verified: true,
            choices: (reader == ReaderKind::Adaptive).then(|| ChoiceCounts {
                mmap_requests: 8,
                mmap_bytes: 1 << 19,
                pread_requests: 2,
                pread_bytes: 1 << 19,
                prefetched_files: 2,
                prefetched_bytes: 3 << 20,
                ..ChoiceCounts::default()
            }),
            fallback: None,
        }
    }

    #[test]
    fn table_choices_and_reading() {
        let rs = [
            result(ReaderKind::Mmap, 0.5),
            result(ReaderKind::Pread, 0.25),
            result(ReaderKind::Adaptive, 0.3),
        ];
        let t = format_table(&rs);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{t}");
        assert!(lines[1].starts_with("mmap            -"), "{t}");
        assert!(lines[2].contains("   4M  250 ms        4.0"), "{t}");
        assert!(lines[2].contains("12.5 us     1.5 ms"), "{t}");
        assert!(format_choices(&rs[0]).is_none());
        let c = format_choices(&rs[2]).unwrap();
        assert!(
            c.starts_with("adaptive chose: mmap 8 requests / 512.0 KiB (50.0 % of bytes), pread 2"),
            "{c}"
        );
        assert!(c.ends_with("; prefetched 2 files (3.0 MiB) in the background"), "{c}");
        let r = reading(&rs);
        assert_eq!(
            r,
            "Fastest: pread in 250 ms. adaptive took 1.20× the time of the best fixed reader (pread)."
        );
        assert_eq!(reading(&[]), "");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        // Several runs: the fastest and slowest beside the median.
        let mut r = result(ReaderKind::Pread, 0.25);
        r.rep_seconds = vec![0.3, 0.25, 0.2];
        let t = format_table(&[r, result(ReaderKind::Mmap, 0.5)]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].ends_with("runs (min … max)"), "{t}");
        assert!(lines[1].ends_with("3 (200 ms … 300 ms)"), "{t}");
        assert!(lines[2].ends_with("1 (500 ms … 500 ms)"), "{t}");
    }

    #[test]
    fn csv_and_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let t = Trace::parse("a,0,10\n", &dir.path().join("t.csv")).unwrap();
        let out = ReplayOutcome {
            results: vec![result(ReaderKind::Stream, 1.0), result(ReaderKind::Adaptive, 2.0)],
            runs: Vec::new(),
            mismatch: None,
            large_share: 0.25,
            read_ahead_kb: Some(128),
        };
        let csv = dir.path().join("results.csv");
        let m = Machine::collect(dir.path(), CacheMethod::None, "emsort replay t.csv", "0.1.0");
        write_results(&csv, &t, &out, m.clone(), None).unwrap();
        let rows = read_results(&csv).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].reader.as_str(), rows[0].mmap_requests), ("stream", None));
        assert_eq!((rows[1].mmap_requests, rows[1].uring_bytes), (Some(8), Some(0)));
        assert_eq!((rows[1].reps, rows[1].min_seconds, rows[1].max_seconds), (1, 2.0, 2.0));
        assert_eq!(rows[1].large_share, 0.25);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sidecar_path(&csv)).unwrap()).unwrap();
        assert_eq!(json["machine"]["command_line"], "emsort replay t.csv");
        assert_eq!(json["requests"], 1);
        // Like raw.csv, an existing file is not overwritten.
        assert!(write_results(&csv, &t, &out, m, None).is_err());
    }

    #[test]
    fn paired_ratios_pair_runs_of_the_same_round() {
        let mut a = result(ReaderKind::Adaptive, 1.0);
        let mut f = result(ReaderKind::Mmap, 1.0);
        assert_eq!(paired_ratios(&a, &f), None, "one run each: nothing to pair");
        // The disk slows down round by round; adaptive is 10 % faster in each.
        f.rep_seconds = vec![1.0, 2.0, 3.0];
        a.rep_seconds = vec![0.9, 1.8, 2.7];
        let p = paired_ratios(&a, &f).unwrap();
        assert_eq!((p.rounds, p.wins), (3, 3));
        assert!((p.median - 0.9).abs() < 1e-9 && (p.min - 0.9).abs() < 1e-9 && (p.max - 0.9).abs() < 1e-9);
        a.rep_seconds = vec![0.9, 2.2];
        assert_eq!(paired_ratios(&a, &f), None, "unequal run counts");
    }
}
