//! Plots of a stream campaign, drawn from its `raw.csv`.
//!
//! [`plots_from_csv`] reads `DIR/raw.csv`, summarises it (median of the
//! repetitions) and writes SVG files into `DIR/plots/`:
//!
//! | file                          | chart |
//! |-------------------------------|-------|
//! | `time_vs_n_{kind}_{op}.svg`   | time vs N, a line per k, at the kind's reference B |
//! | `time_vs_k_{kind}_{op}.svg`   | time vs k, a line per N, at the reference B |
//! | `time_vs_b_{kind}_{op}.svg`   | time vs B, a line per N, at the smallest k (kinds that use B) |
//! | `all_kinds_{op}.svg`          | time vs N of every kind, k = 1 (or the smallest k), each at its reference B |
//! | `calls_vs_predicted_{op}.svg` | data system calls counted vs the cost formula's I/Os, a point per point, with y = x |
//!
//! All axes are logarithmic. The *reference B* of a kind and op is the
//! requested B measured at the most (k, N) settings; ties go to the one
//! closest to 1 MiB. A chart is drawn only when its data have at least two
//! distinct x values; otherwise it is skipped silently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use emsort_io::format_size;

use super::point::format_count;
use super::record::{read_raw, summarise, SummaryRow};
use crate::chart::{draw_all, Chart, Legend, Series, Ticks};
use crate::Result;

/// Reads `dir/raw.csv` and draws every plot into `dir/plots/`; returns the
/// files drawn.
pub fn plots_from_csv(dir: &Path) -> Result<Vec<PathBuf>> {
    let rows = summarise(&read_raw(&dir.join("raw.csv"))?);
    draw_all(&dir.join("plots"), charts(&rows))
}

/// The reference B of a kind and op (see the module docs); `None` for kinds
/// that ignore B.
pub fn reference_b(rows: &[&SummaryRow]) -> Option<u64> {
    let mut settings: BTreeMap<u64, Vec<(u32, u64)>> = BTreeMap::new();
    for r in rows {
        if let Some(b) = r.b_requested {
            settings.entry(b).or_default().push((r.k, r.n));
        }
    }
    let distance = |b: u64| ((b as f64).log2() - 20.0).abs();
    settings
        .into_iter()
        .map(|(b, mut s)| {
            s.sort_unstable();
            s.dedup();
            (b, s.len())
        })
        .max_by(|a, b| a.1.cmp(&b.1).then(distance(b.0).total_cmp(&distance(a.0))))
        .map(|(b, _)| b)
}

fn b_note(b: Option<u64>) -> String {
    b.map(|b| format!(", B = {}", format_size(b))).unwrap_or_default()
}

/// Rows grouped by (kind, op) in summary order.
fn by_kind_op(rows: &[SummaryRow]) -> Vec<((String, String), Vec<&SummaryRow>)> {
    let mut out: Vec<((String, String), Vec<&SummaryRow>)> = Vec::new();
    for r in rows {
        let key = (r.kind.clone(), r.op.clone());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => out.push((key, vec![r])),
        }
    }
    out
}

/// One series per distinct value of `group`, points (x, median seconds)
/// with the repetitions' min and max.
fn series_by<G: Ord + Copy>(
    rows: &[&SummaryRow],
    group: impl Fn(&SummaryRow) -> G,
    label: impl Fn(G) -> String,
    x: impl Fn(&SummaryRow) -> f64,
) -> Vec<Series> {
    let mut m: BTreeMap<G, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in rows {
        m.entry(group(r)).or_default().push((x(r), r.median_s, r.min_s, r.max_s));
    }
    m.into_iter().map(|(g, points)| Series::spread(label(g), points)).collect()
}

fn time_chart(title: String, x_label: &str, x_ticks: Ticks, series: Vec<Series>, legend: Legend) -> Chart {
    Chart {
        title,
        x_label: x_label.to_string(),
        y_label: "median time per run".to_string(),
        x_ticks,
        y_ticks: Ticks::Seconds,
        series,
        lines: true,
        diagonal: false,
        legend,
    }
}

/// Every chart of the module docs, with its file stem.
fn charts(rows: &[SummaryRow]) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    let groups = by_kind_op(rows);
    for ((kind, op), rs) in &groups {
        let refb = reference_b(rs);
        let at_ref: Vec<&SummaryRow> = rs.iter().copied().filter(|r| r.b_requested == refb).collect();
        out.push((
            format!("time_vs_n_{kind}_{op}"),
            time_chart(
                format!("{kind} {op}: time vs N{}", b_note(refb)),
                "N (elements per stream)",
                Ticks::Count,
                series_by(&at_ref, |r| r.k, |k| format!("k = {k}"), |r| r.n as f64),
                Legend::UpperLeft,
            ),
        ));
        out.push((
            format!("time_vs_k_{kind}_{op}"),
            time_chart(
                format!("{kind} {op}: time vs k{}", b_note(refb)),
                "k (streams open at once)",
                Ticks::Plain,
                series_by(&at_ref, |r| r.n, |n| format!("N = {}", format_count(n)), |r| f64::from(r.k)),
                Legend::UpperLeft,
            ),
        ));
        if refb.is_some() {
            let kmin = rs.iter().map(|r| r.k).min().unwrap_or(1);
            let at_k: Vec<&SummaryRow> = rs.iter().copied().filter(|r| r.k == kmin).collect();
            out.push((
                format!("time_vs_b_{kind}_{op}"),
                time_chart(
                    format!("{kind} {op}: time vs B, k = {kmin}"),
                    "B (requested block size, bytes)",
                    Ticks::Bytes,
                    series_by(
                        &at_k,
                        |r| r.n,
                        |n| format!("N = {}", format_count(n)),
                        |r| r.b_requested.unwrap_or(0) as f64,
                    ),
                    Legend::UpperRight,
                ),
            ));
        }
    }
    for op in ["write", "read"] {
        let of_op: Vec<&((String, String), Vec<&SummaryRow>)> =
            groups.iter().filter(|((_, o), _)| o == op).collect();
        if of_op.is_empty() {
            continue;
        }
        let kmin = of_op.iter().flat_map(|(_, rs)| rs.iter().map(|r| r.k)).min().unwrap_or(1);
        let mut kinds = Vec::new();
        let mut calls = Vec::new();
        for ((kind, _), rs) in &of_op {
            let refb = reference_b(rs);
            let points: Vec<_> = rs
                .iter()
                .filter(|r| r.k == kmin && r.b_requested == refb)
                .map(|r| (r.n as f64, r.median_s, r.min_s, r.max_s))
                .collect();
            let label = match refb {
                Some(b) => format!("{kind} (B = {})", format_size(b)),
                None if kind == "stdio" => {
                    let buf = rs.first().map(|r| r.b_effective).unwrap_or(0);
                    format!("{kind} (BUFSIZ = {})", format_size(buf))
                }
                None => kind.clone(),
            };
            kinds.push(Series::spread(label, points));
            calls.push(Series::new(
                kind.clone(),
                rs.iter().map(|r| (r.predicted_ios as f64, r.syscalls_data as f64)).collect(),
            ));
        }
        out.push((
            format!("all_kinds_{op}"),
            time_chart(
                format!("all kinds, {op}: time vs N, k = {kmin}"),
                "N (elements per stream)",
                Ticks::Count,
                kinds,
                Legend::UpperLeft,
            ),
        ));
        out.push((
            format!("calls_vs_predicted_{op}"),
            Chart {
                title: format!("{op}: system calls counted vs the cost formula"),
                x_label: "predicted I/Os (cost formula)".to_string(),
                y_label: "data system calls counted by the streams".to_string(),
                x_ticks: Ticks::Count,
                y_ticks: Ticks::Count,
                series: calls,
                lines: false,
                diagonal: true,
                legend: Legend::UpperLeft,
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::record::{RawRow, RawWriter};
    use super::*;

    fn summary(kind: &str, k: u32, n: u64, b: Option<u64>) -> SummaryRow {
        SummaryRow {
            kind: kind.into(),
            op: "read".into(),
            k,
            n,
            b_requested: b,
            b_effective: b.unwrap_or(4),
            reps: 1,
            min_s: 1.0,
            median_s: 1.0,
            max_s: 1.0,
            median_mib_s: 1.0,
            ns_per_element: 1.0,
            syscalls_data: 1,
            syscalls_total: 1,
            predicted_ios: 1,
            cache: "none".into(),
            fallback: String::new(),
        }
    }

    #[test]
    fn reference_b_is_the_most_measured_then_nearest_1m() {
        let rows = [
            summary("buffered", 1, 10, Some(4096)),
            summary("buffered", 1, 100, Some(4096)),
            summary("buffered", 1, 10, Some(1 << 20)),
        ];
        let refs: Vec<&SummaryRow> = rows.iter().collect();
        assert_eq!(reference_b(&refs), Some(4096));
        let tie = [summary("mmap", 1, 10, Some(4096)), summary("mmap", 1, 10, Some(4 << 20))];
        assert_eq!(reference_b(&tie.iter().collect::<Vec<_>>()), Some(4 << 20));
        assert_eq!(reference_b(&[&summary("syscall", 1, 10, None)]), None);
    }

    #[test]
    fn draws_only_charts_with_two_x_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RawWriter::create(&dir.path().join("raw.csv")).unwrap();
        let mut add = |kind: &str, k: u32, n: u64, b: Option<u64>, s: f64| {
            let row = RawRow {
                kind: kind.into(),
                op: "write".into(),
                k,
                n,
                b_requested: b,
                b_effective: b.unwrap_or(4),
                rep: 1,
                seconds: s,
                bytes: u64::from(k) * n * 4,
                syscalls_data: n,
                syscalls_total: n + 3,
                predicted_ios: n,
                cache: "none".into(),
                fallback: String::new(),
            };
            w.write(&row).unwrap();
        };
        add("syscall", 1, 1000, None, 0.001);
        add("syscall", 1, 10000, None, 0.01);
        add("buffered", 1, 1000, Some(4096), 0.0001);
        add("buffered", 1, 1000, Some(65536), 0.00008);
        drop(w);
        let drawn = plots_from_csv(dir.path()).unwrap();
        let names: Vec<String> =
            drawn.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert!(names.contains(&"time_vs_n_syscall_write.svg".to_string()), "{names:?}");
        assert!(names.contains(&"time_vs_b_buffered_write.svg".to_string()), "{names:?}");
        assert!(names.contains(&"all_kinds_write.svg".to_string()), "{names:?}");
        assert!(names.contains(&"calls_vs_predicted_write.svg".to_string()), "{names:?}");
        // One k only, one N only for buffered: these are skipped.
        assert!(!names.iter().any(|n| n.starts_with("time_vs_k_")), "{names:?}");
        assert!(!names.contains(&"time_vs_n_buffered_write.svg".to_string()), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("_read")), "{names:?}");
    }
}
