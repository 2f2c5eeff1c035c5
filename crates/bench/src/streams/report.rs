//! A compact text report of a stream campaign: a table like fio's summary
//! and a one-paragraph reading of it.
//!
//! [`headline`] picks, per kind and op, the point at the largest N measured
//! with the smallest k and the kind's reference B (see
//! [`reference_b`](super::reference_b)); [`format_table`] lays those rows
//! out; [`reading`] says which kind was fastest and how much slower a
//! system call per element was than an own buffer. Every number comes from
//! the summary rows given.

use emsort_io::format_size;

use super::plots::reference_b;
use super::point::format_count;
use super::record::SummaryRow;
use crate::chart::format_seconds;

/// One line of the headline table.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadlineRow {
    /// Stream kind.
    pub kind: String,
    /// `read` or `write`.
    pub op: String,
    /// Streams.
    pub k: u32,
    /// Elements per stream.
    pub n: u64,
    /// Requested B, `None` for kinds that ignore it.
    pub b_requested: Option<u64>,
    /// Block size really used.
    pub b_effective: u64,
    /// Median time, seconds.
    pub median_s: f64,
    /// Median throughput, MiB/s.
    pub median_mib_s: f64,
    /// Data system calls counted.
    pub syscalls_data: u64,
    /// I/Os predicted by the cost formula.
    pub predicted_ios: u64,
}

impl HeadlineRow {
    fn from_summary(r: &SummaryRow) -> HeadlineRow {
        HeadlineRow {
            kind: r.kind.clone(),
            op: r.op.clone(),
            k: r.k,
            n: r.n,
            b_requested: r.b_requested,
            b_effective: r.b_effective,
            median_s: r.median_s,
            median_mib_s: r.median_mib_s,
            syscalls_data: r.syscalls_data,
            predicted_ios: r.predicted_ios,
        }
    }

    fn b_text(&self) -> String {
        match self.b_requested {
            Some(b) => format_size(b),
            None if self.kind == "stdio" => format!("({})", format_size(self.b_effective)),
            None => "-".to_string(),
        }
    }
}

/// The rows of [`SummaryRow`]s of one kind and op at the smallest k and
/// the reference B.
fn reference_rows<'a>(rows: &'a [SummaryRow], kind: &str, op: &str) -> Vec<&'a SummaryRow> {
    let rs: Vec<&SummaryRow> = rows.iter().filter(|r| r.kind == kind && r.op == op).collect();
    let refb = reference_b(&rs);
    let kmin = rs.iter().map(|r| r.k).min().unwrap_or(1);
    rs.into_iter().filter(|r| r.k == kmin && r.b_requested == refb).collect()
}

/// Per kind and op (summary order), the point at the largest N with the
/// smallest k and the reference B.
pub fn headline(rows: &[SummaryRow]) -> Vec<HeadlineRow> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !seen.contains(&(r.kind.as_str(), r.op.as_str())) {
            seen.push((&r.kind, &r.op));
        }
    }
    seen.into_iter()
        .filter_map(|(kind, op)| {
            reference_rows(rows, kind, op).into_iter().max_by_key(|r| r.n).map(HeadlineRow::from_summary)
        })
        .collect()
}

/// The headline rows as an aligned text table (ends with a newline).
pub fn format_table(rows: &[HeadlineRow]) -> String {
    let mut s = format!(
        "{:<9} {:<5} {:>3} {:>6} {:>7} {:>10} {:>9}  {:>13} {:>10}\n",
        "kind", "op", "k", "N", "B", "median", "MiB/s", "calls counted", "predicted"
    );
    for r in rows {
        s.push_str(&format!(
            "{:<9} {:<5} {:>3} {:>6} {:>7} {:>10} {:>9.1}  {:>13} {:>10}\n",
            r.kind,
            r.op,
            r.k,
            format_count(r.n),
            r.b_text(),
            format_seconds(r.median_s),
            r.median_mib_s,
            r.syscalls_data,
            r.predicted_ios
        ));
    }
    s
}

/// A one-paragraph reading of the results: the fastest kind per op, the
/// time of `syscall` over `buffered` at their largest common N, and how the
/// page cache was handled. Empty when `rows` is empty.
pub fn reading(rows: &[SummaryRow]) -> String {
    let head = headline(rows);
    let mut parts = Vec::new();
    for op in ["read", "write"] {
        let best =
            head.iter().filter(|r| r.op == op).max_by(|a, b| a.median_mib_s.total_cmp(&b.median_mib_s));
        if let Some(b) = best {
            let verb = if op == "read" { "Reading" } else { "Writing" };
            parts.push(format!(
                "{verb}, the fastest kind was {} at {:.1} MiB/s (k = {}, N = {}{}).",
                b.kind,
                b.median_mib_s,
                b.k,
                format_count(b.n),
                b.b_requested.map(|x| format!(", B = {}", format_size(x))).unwrap_or_default()
            ));
        }
    }
    let mut ratios = Vec::new();
    let mut common = None;
    for op in ["read", "write"] {
        let sys = reference_rows(rows, "syscall", op);
        let buf = reference_rows(rows, "buffered", op);
        let pair = sys
            .iter()
            .filter_map(|s| buf.iter().find(|b| b.n == s.n && b.k == s.k).map(|b| (*s, *b)))
            .max_by_key(|(s, _)| s.n);
        if let Some((s, b)) = pair {
            if b.median_s > 0.0 {
                ratios.push(format!("{:.0}x as long to {op}", s.median_s / b.median_s));
                common = Some((s.k, s.n, b.b_requested));
            }
        }
    }
    if let Some((k, n, bb)) = common {
        parts.push(format!(
            "One system call per element (syscall) took {} k = {k} x N = {} elements as an own buffer{} (buffered).",
            ratios.join(" and "),
            format_count(n),
            bb.map(|b| format!(" of {}", format_size(b))).unwrap_or_default()
        ));
    }
    if let (Some(first), Some(lo), Some(hi)) =
        (rows.first(), rows.iter().map(|r| r.reps).min(), rows.iter().map(|r| r.reps).max())
    {
        let runs = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
        let cache = match first.cache.as_str() {
            "drop" => "the page cache was dropped before each run",
            "fadvise" => "each file was evicted from the page cache (fadvise) before each run",
            _ => "the page cache was left warm",
        };
        parts.push(format!(
            "Times are medians of {runs} run(s) per point; {cache}. On a shared machine single runs are noisy (the summary keeps min and max)."
        ));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(kind: &str, op: &str, k: u32, n: u64, b: Option<u64>, secs: f64) -> SummaryRow {
        SummaryRow {
            kind: kind.into(),
            op: op.into(),
            k,
            n,
            b_requested: b,
            b_effective: b.unwrap_or(if kind == "stdio" { 4096 } else { 4 }),
            reps: 2,
            min_s: secs,
            median_s: secs,
            max_s: secs,
            median_mib_s: (u64::from(k) * n * 4) as f64 / secs / 1048576.0,
            ns_per_element: secs * 1e9 / (u64::from(k) * n) as f64,
            syscalls_data: n,
            syscalls_total: n + 2,
            predicted_ios: n,
            cache: "drop".into(),
            fallback: String::new(),
        }
    }

    #[test]
    fn headline_table_and_reading() {
        let rows = vec![
            s("syscall", "read", 1, 1000, None, 0.01),
            s("syscall", "read", 1, 100_000, None, 1.0),
            s("syscall", "read", 4, 100_000, None, 4.0),
            s("stdio", "read", 1, 100_000, None, 0.02),
            s("buffered", "read", 1, 100_000, Some(1 << 20), 0.004),
            s("buffered", "read", 1, 1_000_000, Some(1 << 20), 0.04),
            s("buffered", "read", 1, 1_000_000, Some(4096), 0.05),
        ];
        let h = headline(&rows);
        assert_eq!(h.len(), 3);
        assert_eq!((h[0].kind.as_str(), h[0].k, h[0].n), ("syscall", 1, 100_000));
        assert_eq!((h[2].n, h[2].b_requested), (1_000_000, Some(1 << 20)));
        let t = format_table(&h);
        assert_eq!(t.lines().count(), 4);
        assert!(t.contains("stdio") && t.contains("(4K)") && t.contains("1M"), "{t}");
        let r = reading(&rows);
        assert!(
            r.starts_with("Reading, the fastest kind was buffered at 95.4 MiB/s (k = 1, N = 1e6, B = 1M)."),
            "{r}"
        );
        assert!(
            r.contains("took 250x as long to read k = 1 x N = 1e5 elements as an own buffer of 1M"),
            "{r}"
        );
        assert!(r.contains("medians of 2 run(s)") && r.contains("dropped"), "{r}");
        assert_eq!(reading(&[]), "");
    }
}
