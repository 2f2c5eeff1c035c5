//! The reader campaign's plots, drawn from its raw CSVs alone.
//!
//! One or more log-log charts per experiment in `plots/`:
//!
//! | file | x | y | series |
//! |---|---|---|---|
//! | `blocksize_throughput` | B | MiB/s | reader × pattern |
//! | `blocksize_latency` | B | p50 / p99 of one block | reader × pattern |
//! | `queue-depth_seq`, `queue-depth_rand` | Q | MiB/s | `uring` and `fio` (× request size) |
//! | `mmap_latency`, `mmap_pagein`, `mmap_faults` | request size | p50; bytes paged in per read; faults per read | madvise hint |
//! | `sequential_file`, `sequential_total` | file size; bytes read | MiB/s | reader |
//! | `random_request`, `random_request_latency`, `random_file`, `random_total` | request size; file size; bytes read | MiB/s or p50 | reader |
//! | `memory` | bytes read | MiB/s | reader × limit |
//! | `threads_<pattern>_<R>` | threads | MiB/s | reader |

use std::path::{Path, PathBuf};

use emsort_io::format_size;

use super::record::{read_all_raw, summarise, SummaryRow};
use crate::chart::{draw_all, Chart, Legend, Series, Ticks};
use crate::Result;

/// Redraws every plot of the campaign in `dir` from its raw CSVs; returns
/// the SVG files drawn.
pub fn plots_from_csv(dir: &Path) -> Result<Vec<PathBuf>> {
    let rows = summarise(&read_all_raw(dir)?);
    draw_all(&dir.join("plots"), charts(&rows))
}

type Pick = fn(&SummaryRow) -> f64;

/// A chart of `rows` passing `keep`: x and y picked, series by `label`.
#[allow(clippy::too_many_arguments)]
fn chart(
    rows: &[SummaryRow],
    title: &str,
    x_label: &str,
    y_label: &str,
    ticks: (Ticks, Ticks),
    keep: &dyn Fn(&SummaryRow) -> bool,
    xy: (Pick, Pick),
    label: &dyn Fn(&SummaryRow) -> String,
) -> Chart {
    // Throughput is a median of repetitions: its bars span their range.
    let spread = y_label == "MiB/s";
    let mut series: Vec<Series> = Vec::new();
    for r in rows.iter().filter(|r| keep(r)) {
        let l = label(r);
        let (x, y) = (xy.0(r), xy.1(r));
        let s = match series.iter().position(|s| s.label == l) {
            Some(i) => &mut series[i],
            None => {
                series.push(Series::new(l, Vec::new()));
                series.last_mut().expect("pushed")
            }
        };
        s.points.push((x, y));
        if spread {
            s.ranges.push((x, r.min_mib_s, r.max_mib_s));
        }
    }
    Chart {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: y_label.to_string(),
        x_ticks: ticks.0,
        y_ticks: ticks.1,
        series,
        lines: true,
        diagonal: false,
        legend: Legend::UpperLeft,
    }
}

fn mib(r: &SummaryRow) -> f64 {
    r.median_mib_s
}
fn p50(r: &SummaryRow) -> f64 {
    r.p50_us / 1e6
}
fn p99(r: &SummaryRow) -> f64 {
    r.p99_us / 1e6
}
fn req(r: &SummaryRow) -> f64 {
    r.request_bytes as f64
}

fn charts(rows: &[SummaryRow]) -> Vec<(String, Chart)> {
    let tp = (Ticks::Bytes, Ticks::Count);
    let lat = (Ticks::Bytes, Ticks::Seconds);
    let exp =
        |e: &'static str, sweep: &'static str| move |r: &SummaryRow| r.experiment == e && r.sweep == sweep;
    let mut v = vec![
        (
            "blocksize_throughput".to_string(),
            chart(
                rows,
                "Block size: pread and uring (Q = 1), one block per request",
                "block size B (bytes)",
                "MiB/s",
                tp,
                &exp("blocksize", "block"),
                (|r| r.block_size as f64, mib),
                &|r| format!("{} {}", r.reader, r.pattern),
            ),
        ),
        (
            "blocksize_latency".to_string(),
            chart(
                rows,
                "Block size: latency of one block (p50 solid, p99)",
                "block size B (bytes)",
                "latency",
                lat,
                &exp("blocksize", "block"),
                (|r| r.block_size as f64, p50),
                &|r| format!("{} {} p50", r.reader, r.pattern),
            ),
        ),
        (
            "mmap_latency".to_string(),
            chart(
                rows,
                "mmap: one random read on a cold cache (p50)",
                "request size (bytes)",
                "latency",
                lat,
                &exp("mmap", "request"),
                (req, p50),
                &|r| format!("madvise {}", r.madvise),
            ),
        ),
        (
            "mmap_pagein".to_string(),
            chart(
                rows,
                "mmap: bytes paged in per read (mincore)",
                "request size (bytes)",
                "bytes in the page cache per read",
                (Ticks::Bytes, Ticks::Bytes),
                &exp("mmap", "request"),
                (req, |r| r.paged_in_per_request.unwrap_or(0.0)),
                &|r| format!("madvise {}", r.madvise),
            ),
        ),
        (
            "mmap_faults".to_string(),
            chart(
                rows,
                "mmap: page faults per read",
                "request size (bytes)",
                "faults per read",
                tp,
                &exp("mmap", "request"),
                (req, |r| r.faults_per_request),
                &|r| format!("madvise {}", r.madvise),
            ),
        ),
        (
            "sequential_file".to_string(),
            chart(
                rows,
                "Sequential: whole file read",
                "file size (bytes)",
                "MiB/s",
                tp,
                &exp("sequential", "file"),
                (|r| r.file_bytes as f64, mib),
                &|r| r.reader.clone(),
            ),
        ),
        (
            "sequential_total".to_string(),
            chart(
                rows,
                "Sequential: first bytes of the largest file",
                "bytes read",
                "MiB/s",
                tp,
                &exp("sequential", "total"),
                (|r| r.bytes_requested as f64, mib),
                &|r| r.reader.clone(),
            ),
        ),
        (
            "random_request".to_string(),
            chart(
                rows,
                "Random: throughput against request size",
                "request size (bytes)",
                "MiB/s",
                tp,
                &exp("random", "request"),
                (req, mib),
                &|r| r.reader.clone(),
            ),
        ),
        (
            "random_request_latency".to_string(),
            chart(
                rows,
                "Random: request latency (p99)",
                "request size (bytes)",
                "latency",
                lat,
                &exp("random", "request"),
                (req, p99),
                &|r| r.reader.clone(),
            ),
        ),
        (
            "random_file".to_string(),
            chart(
                rows,
                "Random: throughput against file size",
                "file size (bytes)",
                "MiB/s",
                tp,
                &exp("random", "file"),
                (|r| r.file_bytes as f64, mib),
                &|r| r.reader.clone(),
            ),
        ),
        (
            "random_total".to_string(),
            chart(
                rows,
                "Random: throughput against bytes read",
                "bytes read",
                "MiB/s",
                tp,
                &exp("random", "total"),
                (|r| r.bytes_requested as f64, mib),
                &|r| r.reader.clone(),
            ),
        ),
        (
            "memory".to_string(),
            chart(
                rows,
                "Random reads (with repeats) of a file larger than the memory left",
                "bytes read",
                "MiB/s",
                tp,
                &exp("memory", "total"),
                (|r| r.bytes_requested as f64, mib),
                &|r| format!("{} {}", r.reader, r.limit.split(':').next().unwrap_or("")),
            ),
        ),
    ];
    // Queue depth: sequential, and random per request size.
    for (name, pattern) in [("queue-depth_seq", "seq"), ("queue-depth_rand", "rand")] {
        let keep = move |r: &SummaryRow| r.experiment == "queue-depth" && r.pattern == pattern;
        let c = chart(
            rows,
            &format!("Queue depth: io_uring batch vs fio ({pattern})"),
            "queue depth Q",
            "MiB/s",
            (Ticks::Plain, Ticks::Count),
            &keep,
            (|r| f64::from(r.queue_depth), mib),
            &|r| format!("{} R={}", r.reader, format_size(r.request_bytes)),
        );
        v.push((name.to_string(), c));
    }
    // Latency p99 beside p50 on the block-size chart.
    if let Some((_, c)) = v.iter_mut().find(|(n, _)| n == "blocksize_latency") {
        let more =
            chart(rows, "", "", "", lat, &exp("blocksize", "block"), (|r| r.block_size as f64, p99), &|r| {
                format!("{} {} p99", r.reader, r.pattern)
            });
        c.series.extend(more.series);
    }
    // Threads: one chart per pattern and request size.
    let mut kinds: Vec<(String, u64)> = rows
        .iter()
        .filter(|r| r.experiment == "threads")
        .map(|r| (r.pattern.clone(), if r.pattern == "seq" { 0 } else { r.request_bytes }))
        .collect();
    kinds.sort();
    kinds.dedup();
    for (pattern, size) in kinds {
        let what = if size == 0 { "seq".to_string() } else { format!("rand_{}", format_size(size)) };
        let pat = pattern.clone();
        let keep = move |r: &SummaryRow| {
            r.experiment == "threads" && r.pattern == pat && (size == 0 || r.request_bytes == size)
        };
        let c = chart(
            rows,
            &format!("Threads sharing one file: {what}"),
            "threads",
            "MiB/s",
            (Ticks::Plain, Ticks::Count),
            &keep,
            (|r| r.threads as f64, mib),
            &|r| r.reader.clone(),
        );
        v.push((format!("threads_{what}"), c));
    }
    v
}
