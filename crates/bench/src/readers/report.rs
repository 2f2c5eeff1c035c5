//! A short fio-like text summary of a reader campaign: per experiment and
//! series, its best point; and `uring` at its best queue depth beside fio.

use emsort_io::format_size;

use super::record::SummaryRow;
use crate::chart::format_seconds;

fn lat(us: f64) -> String {
    format_seconds(us / 1e6)
}

/// One line per (experiment, pattern, reader): the point with the highest
/// median throughput (for `mmap`, the lowest median latency per hint).
pub fn format_table(rows: &[SummaryRow]) -> String {
    let mut s = format!(
        "{:<12} {:<9} {:<8} {:<34} {:>9} {:>9} {:>9}\n",
        "experiment", "reader", "pattern", "best point", "MiB/s", "p50", "p99"
    );
    let mut groups: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let g = (r.experiment.clone(), r.reader.clone(), group_pattern(r));
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (exp, reader, pattern) in groups {
        let members =
            rows.iter().filter(|r| r.experiment == exp && r.reader == reader && group_pattern(r) == pattern);
        let best = if exp == "mmap" {
            members.min_by(|a, b| a.p50_us.total_cmp(&b.p50_us))
        } else {
            members.max_by(|a, b| a.median_mib_s.total_cmp(&b.median_mib_s))
        };
        let Some(b) = best else { continue };
        s.push_str(&format!(
            "{:<12} {:<9} {:<8} {:<34} {:>9.1} {:>9} {:>9}\n",
            exp,
            reader,
            pattern,
            describe(b),
            b.median_mib_s,
            lat(b.p50_us),
            lat(b.p99_us)
        ));
    }
    s
}

/// The pattern column: the mmap hint for mmap, the limit for memory.
fn group_pattern(r: &SummaryRow) -> String {
    match r.experiment.as_str() {
        "mmap" => r.madvise.clone(),
        "memory" => r.limit.split(':').next().unwrap_or("").to_string(),
        "threads" if r.pattern == "rand" => format!("rand {}", format_size(r.request_bytes)),
        "queue-depth" if r.pattern == "rand" => format!("rand {}", format_size(r.request_bytes)),
        _ => r.pattern.clone(),
    }
}

/// What distinguishes a point within its experiment.
fn describe(r: &SummaryRow) -> String {
    let size = format_size;
    match (r.experiment.as_str(), r.sweep.as_str()) {
        ("blocksize", _) => format!("B={}", size(r.block_size)),
        ("queue-depth", _) => format!("R={} Q={}", size(r.request_bytes), r.queue_depth),
        ("mmap", _) => format!("R={}", size(r.request_bytes)),
        ("threads", _) => format!("T={} R={}", r.threads, size(r.request_bytes)),
        (_, "file") => format!("F={} R={}", size(r.file_bytes), size(r.request_bytes)),
        (_, "total") => format!("read {} of F={}", size(r.bytes_requested), size(r.file_bytes)),
        _ => format!("R={} F={}", size(r.request_bytes), size(r.file_bytes)),
    }
}

/// `uring` at its best queue depth against fio at the same depth, per
/// pattern and request size (issue 5 §5 asks for ≥ 90 %).
pub fn format_fio(rows: &[SummaryRow]) -> String {
    let mut keys: Vec<(String, u64)> = rows
        .iter()
        .filter(|r| r.experiment == "queue-depth" && r.reader == "uring")
        .map(|r| (r.pattern.clone(), r.request_bytes))
        .collect();
    keys.dedup();
    let mut s = String::new();
    for (pattern, size) in keys {
        let best = rows
            .iter()
            .filter(|r| {
                r.experiment == "queue-depth"
                    && r.reader == "uring"
                    && r.pattern == pattern
                    && r.request_bytes == size
            })
            .max_by(|a, b| a.median_mib_s.total_cmp(&b.median_mib_s));
        let Some(b) = best else { continue };
        if s.is_empty() {
            s.push_str(&format!(
                "{:<8} {:>6} {:>5} {:>12} {:>12} {:>7}\n",
                "pattern", "R", "Q", "uring MiB/s", "fio MiB/s", "ratio"
            ));
        }
        let (fio, ratio) = match (b.fio_mib_s, b.uring_to_fio) {
            (Some(f), Some(x)) => (format!("{f:.1}"), format!("{:.0} %", x * 100.0)),
            _ => ("-".to_string(), "-".to_string()),
        };
        s.push_str(&format!(
            "{:<8} {:>6} {:>5} {:>12.1} {:>12} {:>7}\n",
            pattern,
            format_size(size),
            b.queue_depth,
            b.median_mib_s,
            fio,
            ratio
        ));
    }
    s
}
