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
use crate::claims::{faster, Claim, Timing, Verdict};

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

/// `syscall` and `buffered` (at its reference B) of `op` at their
/// largest common (k, N), k the smallest.
fn syscall_and_buffered<'a>(rows: &'a [SummaryRow], op: &str) -> Option<(&'a SummaryRow, &'a SummaryRow)> {
    let sys = reference_rows(rows, "syscall", op);
    let buf = reference_rows(rows, "buffered", op);
    sys.iter()
        .filter_map(|s| buf.iter().find(|b| b.n == s.n && b.k == s.k).map(|b| (*s, *b)))
        .max_by_key(|(s, _)| s.n)
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
        if let Some((s, b)) = syscall_and_buffered(rows, op) {
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

/// The README's part made from the summary: the headline table, its
/// reading and the published conclusions beside this run's numbers.
pub fn results_markdown(rows: &[SummaryRow]) -> String {
    let mut s = format!("## Results\n\n```\n{}```\n\n{}\n", format_table(&headline(rows)), reading(rows));
    let c = claims(rows);
    if !c.is_empty() {
        s.push_str(
            "\n## Beside the published conclusions\n\n\
             The conclusions of the INFO-H-417 reports (two student reports for ULB's Database Systems \
             Architecture course, 2018, Java: Heinrich, Kambayatughar & Thanasi, \"Algorithms in \
             Secondary Memory\"; Denisov, Dolot & Masli, \"External Memory Algorithms\"). \"About \
             100×\" holds from 25× on; B matters little when the fastest and slowest B ≥ 4K are within \
             1.5× (or their runs overlap). A comparison whose runs' ranges overlap is *within the \
             noise*: this run cannot tell; a claim judged from one repetition says *one run: no \
             verdict*.\n\n",
        );
        s.push_str(&crate::claims::table(&c));
    }
    s
}

/// A point's timing for [`crate::claims`].
fn timing(r: &SummaryRow) -> Timing {
    (r.median_s, r.min_s, r.max_s)
}

/// The rows of `kind` and `op` at the smallest k and the N of its widest
/// B sweep (the largest such N) that `other` was measured at too (same k,
/// N), one per B.
fn at_common_n<'a>(rows: &'a [SummaryRow], kind: &str, other: &str, op: &str) -> Vec<&'a SummaryRow> {
    let on = |kind: &str| -> Vec<&'a SummaryRow> {
        rows.iter().filter(|r| r.kind == kind && r.op == op).collect()
    };
    let (mine, theirs) = (on(kind), on(other));
    let kmin = mine.iter().map(|r| r.k).min().unwrap_or(1);
    let mine: Vec<&SummaryRow> = mine
        .into_iter()
        .filter(|r| r.k == kmin && theirs.iter().any(|t| t.k == kmin && t.n == r.n))
        .collect();
    let n = widest_sweep(&mine);
    mine.into_iter().filter(|r| Some(r.n) == n).collect()
}

/// The fewest repetitions among the points a claim is judged from (see
/// [`Verdict::from_reps`]).
fn reps(rows: &[&SummaryRow]) -> usize {
    rows.iter().map(|r| r.reps as usize).min().unwrap_or(0)
}

/// The N with the most rows among `rows` (the largest of equals).
fn widest_sweep(rows: &[&SummaryRow]) -> Option<u64> {
    let count = |n: u64| rows.iter().filter(|r| r.n == n).count();
    rows.iter().map(|r| r.n).max_by_key(|&n| (count(n), n))
}

/// The INFO-H-417 reports' conclusions on streams (see [`crate::claims`])
/// judged from the summary; a claim whose points were not measured is left
/// out. Their "~100×" counts as borne out from 25× on (their Java streams
/// paid more per call than `read(2)` does).
pub fn claims(rows: &[SummaryRow]) -> Vec<Claim> {
    let mut out = Vec::new();
    // 1. A system call per element against an own buffer.
    for op in ["read", "write"] {
        if let Some((s, b)) = syscall_and_buffered(rows, op) {
            let ratio = s.median_s / b.median_s;
            out.push(Claim {
                claim: format!(
                    "INFO-H-417 reports: one system call per element is about 100× slower than an own buffer ({op})"
                ),
                measurement: format!(
                    "{ratio:.0}×: syscall {} against buffered {} (B = {}, k = {}, N = {})",
                    format_seconds(s.median_s),
                    format_seconds(b.median_s),
                    b.b_requested.map(format_size).unwrap_or_default(),
                    s.k,
                    format_count(s.n)
                ),
                verdict: Verdict::of(ratio >= 25.0).from_reps(reps(&[s, b])),
            });
        }
    }
    // 2, 3. mmap reads with the smallest and the largest windows against an
    // own buffer of the same size (mmap's windows are whole pages: a
    // requested B of 4 maps 4 KiB, so sizes are the effective ones).
    let mmap = at_common_n(rows, "mmap", "buffered", "read");
    let buffered = at_common_n(rows, "buffered", "mmap", "read");
    let same_b = |m: &SummaryRow| buffered.iter().copied().find(|b| b.b_effective == m.b_effective);
    let paired: Vec<&SummaryRow> = mmap.iter().copied().filter(|m| same_b(m).is_some()).collect();
    // Of windows mapped alike, the one asked for as such.
    let smallest = paired.iter().copied().min_by_key(|m| (m.b_effective, std::cmp::Reverse(m.b_requested)));
    let largest = paired.iter().copied().max_by_key(|m| (m.b_effective, m.b_requested));
    let vs = |m: &SummaryRow, b: &SummaryRow| {
        format!(
            "mmap {} against buffered {} (window and buffer {}, N = {}; runs {}–{} and {}–{})",
            format_seconds(m.median_s),
            format_seconds(b.median_s),
            format_size(m.b_effective),
            format_count(m.n),
            format_seconds(m.min_s),
            format_seconds(m.max_s),
            format_seconds(b.min_s),
            format_seconds(b.max_s)
        )
    };
    if let Some((m, l)) = smallest.zip(largest).filter(|(m, l)| m.b_effective < l.b_effective) {
        let b = same_b(m).expect("paired");
        out.push(Claim {
            claim: "INFO-H-417 (Heinrich et al.): reading through mmap with tiny windows is slower than with an own buffer as small"
                .into(),
            measurement: vs(m, b),
            verdict: faster(timing(b), timing(m)).from_reps(reps(&[m, b])),
        });
        let b = same_b(l).expect("paired");
        out.push(Claim {
            claim: "INFO-H-417 (Heinrich et al.): with large windows mmap reads faster than an own buffer as large".into(),
            measurement: vs(l, b),
            verdict: faster(timing(l), timing(b)).from_reps(reps(&[l, b])),
        });
    }
    // 4. Beyond a few KiB, B matters little for buffered streams.
    for op in ["read", "write"] {
        let on: Vec<&SummaryRow> = rows.iter().filter(|r| r.kind == "buffered" && r.op == op).collect();
        let kmin = on.iter().map(|r| r.k).min().unwrap_or(1);
        let on: Vec<&SummaryRow> =
            on.into_iter().filter(|r| r.k == kmin && r.b_requested.is_some_and(|b| b >= 4096)).collect();
        let nmax = widest_sweep(&on).unwrap_or(0);
        let big: Vec<&SummaryRow> = on.into_iter().filter(|r| r.n == nmax).collect();
        let fastest = big.iter().min_by(|a, b| a.median_s.total_cmp(&b.median_s));
        let slowest = big.iter().max_by(|a, b| a.median_s.total_cmp(&b.median_s));
        if let Some((f, s)) = fastest.zip(slowest).filter(|_| big.len() >= 2) {
            let ratio = s.median_s / f.median_s;
            out.push(Claim {
                claim: format!(
                    "INFO-H-417 reports: beyond a few KiB the block size B matters little to a buffered stream ({op})"
                ),
                measurement: format!(
                    "B ≥ 4K: {} (B = {}) to {} (B = {}), {ratio:.2}× (k = {kmin}, N = {})",
                    format_seconds(f.median_s),
                    f.b_requested.map(format_size).unwrap_or_default(),
                    format_seconds(s.median_s),
                    s.b_requested.map(format_size).unwrap_or_default(),
                    format_count(nmax)
                ),
                // Within 1.5×, or the slowest B's runs reach the fastest's.
                verdict: Verdict::of(ratio <= 1.5 || s.min_s <= f.max_s).from_reps(reps(&big)),
            });
        }
    }
    out
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

    /// Each conclusion is judged from the points it names; mmap's windows
    /// against buffers of the same B, with the runs' spread.
    #[test]
    fn published_conclusions_are_judged_from_the_summary() {
        let spread = |mut r: SummaryRow, lo: f64, hi: f64| {
            (r.min_s, r.max_s) = (lo, hi);
            r
        };
        let rows = vec![
            s("syscall", "read", 1, 100_000, None, 1.0),
            s("buffered", "read", 1, 100_000, Some(1 << 20), 0.02),
            s("buffered", "read", 1, 1_000_000, Some(4096), 0.05),
            spread(s("buffered", "read", 1, 1_000_000, Some(1 << 20), 0.04), 0.03, 0.05),
            s("mmap", "read", 1, 1_000_000, Some(4096), 0.09),
            spread(s("mmap", "read", 1, 1_000_000, Some(1 << 20), 0.035), 0.02, 0.06),
            s("syscall", "write", 1, 100_000, None, 1.0),
            s("buffered", "write", 1, 100_000, Some(1 << 20), 0.1),
        ];
        let c = claims(&rows);
        let got: Vec<(&str, Verdict)> = c.iter().map(|c| (c.measurement.as_str(), c.verdict)).collect();
        assert_eq!(got.len(), 5, "{c:#?}");
        // 50x holds; 10x does not.
        assert!(
            got[0].0.starts_with("50×: syscall 1 s against buffered 20 ms") && got[0].1 == Verdict::Holds
        );
        assert!(got[1].0.starts_with("10×") && got[1].1 == Verdict::Differs, "{c:#?}");
        // Tiny windows: buffered (50 ms) beats mmap (90 ms), no overlap.
        assert!(
            got[2].0.starts_with("mmap 90 ms against buffered 50 ms (window and buffer 4K, N = 1e6")
                && got[2].1 == Verdict::Holds
        );
        // Large windows: 35 ms against 40 ms, but the runs overlap.
        assert_eq!(got[3].1, Verdict::Noise, "{c:#?}");
        // B from 4K to 1M: 1.25x.
        assert!(got[4].0.contains("1.25×") && got[4].1 == Verdict::Holds, "{c:#?}");
        let md = results_markdown(&rows);
        assert!(
            md.contains("## Beside the published conclusions") && md.contains("| within the noise |"),
            "{md}"
        );
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
