//! Plots of an SRM campaign, drawn from its `summary.csv` rows (medians of
//! the repetitions), into the output directory:
//!
//! | file | chart |
//! |---|---|
//! | `merge-time-vs-n.svg` | merge time vs N, a line per method × M, the disks as they are (the paper's Figure 2) |
//! | `merge-time-vs-n-emulated.svg` | the same on emulated disks |
//! | `d-sweep.svg` | merge time vs D, a line per method (× M, N and disks when the campaign swept D more than once) |
//!
//! The N charts use the D measured at the most values of N. Both axes are
//! logarithmic; a chart with fewer than two distinct x values is skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use emsort_io::format_size;

use super::record::SummaryRow;
use crate::chart::{draw_all, Chart, Legend, Series, Ticks};
use crate::streams::format_count;
use crate::Result;

fn chart(title: String, x_label: &str, x_ticks: Ticks, series: Vec<Series>) -> Chart {
    Chart {
        title,
        x_label: x_label.into(),
        y_label: "merge time (median)".into(),
        x_ticks,
        y_ticks: Ticks::Seconds,
        series: series.into_iter().filter(|s| !s.points.is_empty()).collect(),
        lines: true,
        diagonal: false,
        legend: Legend::UpperLeft,
    }
}

/// Merge time vs N for the rows on real (`emulated` false) or emulated disks.
fn time_vs_n(rows: &[&SummaryRow], emulated: bool) -> Option<Chart> {
    let rows: Vec<&SummaryRow> = rows.iter().copied().filter(|r| r.emulate.is_empty() != emulated).collect();
    // The D with the most distinct N.
    let mut ns: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for r in &rows {
        let v = ns.entry(r.disks).or_default();
        if !v.contains(&r.items) {
            v.push(r.items);
        }
    }
    let (&d, _) = ns.iter().max_by_key(|(d, v)| (v.len(), **d))?;
    let rows: Vec<&SummaryRow> = rows.into_iter().filter(|r| r.disks == d).collect();
    let distinct = |f: &dyn Fn(&SummaryRow) -> String| {
        let mut v: Vec<String> = rows.iter().map(|r| f(r)).collect();
        v.sort();
        v.dedup();
        v.len() > 1
    };
    let (many_b, many_e, many_f) = (
        distinct(&|r| r.block_size.to_string()),
        distinct(&|r| r.emulate.clone()),
        distinct(&|r| r.format.clone()),
    );
    let mut series: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in &rows {
        let Some(t) = spread(r) else { continue };
        let mut label = format!("{} M={}", r.method.to_uppercase(), format_size(r.memory));
        if many_b {
            label.push_str(&format!(" B={}", format_size(r.block_size)));
        }
        if many_e {
            label.push_str(&format!(" {}", r.emulate));
        }
        if many_f {
            label.push_str(&format!(" {}", r.format));
        }
        series.entry(label).or_default().push((r.items as f64, t.0, t.1, t.2));
    }
    let what = if emulated {
        let e: Vec<&str> = rows.iter().map(|r| r.emulate.as_str()).collect();
        if many_e {
            "emulated disks".to_string()
        } else {
            format!("emulated disks of {} each", e.first().copied().unwrap_or(""))
        }
    } else {
        "disks as they are".to_string()
    };
    Some(chart(
        format!("SRM vs DSM: merge time vs N (D = {d}, {what})"),
        "N (records)",
        Ticks::Count,
        series.into_iter().map(|(label, points)| Series::spread(label, points)).collect(),
    ))
}

/// A point of [`Series::spread`]: (x, median, min, max).
type Spread = (f64, f64, f64, f64);

/// A row's median merge time with its repetitions' min and max (the
/// median where a bound is missing).
fn spread(r: &SummaryRow) -> Option<(f64, f64, f64)> {
    let t = r.merge_s?;
    Some((t, r.merge_s_min.unwrap_or(t), r.merge_s_max.unwrap_or(t)))
}

/// Merge time vs D, over every (format, M, B, N, emulation) measured at two
/// or more D.
fn d_sweep(rows: &[&SummaryRow]) -> Option<Chart> {
    type Key = (String, u64, u64, u64, String);
    let mut by: BTreeMap<Key, BTreeMap<String, Vec<Spread>>> = BTreeMap::new();
    for r in rows {
        let Some(t) = spread(r) else { continue };
        let k = (r.format.clone(), r.memory, r.block_size, r.items, r.emulate.clone());
        let points = by.entry(k).or_default().entry(r.method.to_uppercase()).or_default();
        points.push((r.disks as f64, t.0, t.1, t.2));
    }
    by.retain(|_, m| m.values().any(|pts| pts.len() >= 2));
    if by.is_empty() {
        return None;
    }
    // What all the sweeps share goes into the title; what differs, into
    // the legend.
    let varies = |f: &dyn Fn(&Key) -> String| {
        let mut v: Vec<String> = by.keys().map(f).collect();
        v.dedup();
        v.len() > 1
    };
    type Part<'a> = (bool, &'a dyn Fn(&Key) -> String);
    let parts: [Part; 5] = [
        (varies(&|k| k.0.clone()), &|k| k.0.clone()),
        (varies(&|k| k.1.to_string()), &|k| format!("M={}", format_size(k.1))),
        (varies(&|k| k.2.to_string()), &|k| format!("B={}", format_size(k.2))),
        (varies(&|k| k.3.to_string()), &|k| format!("N={}", format_count(k.3))),
        (varies(&|k| k.4.clone()), &|k| {
            if k.4.is_empty() {
                "real disks".to_string()
            } else {
                format!("emulated {}", k.4)
            }
        }),
    ];
    let first = by.keys().next().expect("a sweep").clone();
    let shared: Vec<String> = parts.iter().filter(|(v, _)| !v).map(|(_, f)| f(&first)).collect();
    let mut series = Vec::new();
    for (k, methods) in &by {
        let own: Vec<String> = parts.iter().filter(|(v, _)| *v).map(|(_, f)| f(k)).collect();
        for (m, pts) in methods {
            let label = if own.is_empty() { m.clone() } else { format!("{m} {}", own.join(" ")) };
            series.push(Series::spread(label, pts.iter().copied()));
        }
    }
    let mut c = chart(
        format!("SRM vs DSM: merge time vs D ({})", shared.join(", ")),
        "D (disks)",
        Ticks::Plain,
        series,
    );
    c.legend = Legend::UpperRight;
    Some(c)
}

/// Draws the plots of the module docs into `dir`; returns the files drawn.
pub fn plots(dir: &Path, rows: &[SummaryRow]) -> Result<Vec<PathBuf>> {
    let rows: Vec<&SummaryRow> = rows.iter().filter(|r| r.method == "dsm" || r.method == "srm").collect();
    let mut charts = Vec::new();
    if let Some(c) = time_vs_n(&rows, false) {
        charts.push(("merge-time-vs-n".to_string(), c));
    }
    if let Some(c) = time_vs_n(&rows, true) {
        charts.push(("merge-time-vs-n-emulated".to_string(), c));
    }
    if let Some(c) = d_sweep(&rows) {
        charts.push(("d-sweep".to_string(), c));
    }
    draw_all(dir, charts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srm::record::summarise;
    use crate::srm::record::tests::row;

    #[test]
    fn draws_n_and_d_charts() {
        let mut raw = Vec::new();
        for n in [1_000_000, 2_000_000, 4_000_000] {
            for m in ["dsm", "srm"] {
                raw.push(row(m, n, 15 << 20, 6, 1, n as f64 / 1e6));
                let mut e = row(m, n, 15 << 20, 6, 1, n as f64 / 5e5);
                e.emulate = "60M,1ms".into();
                raw.push(e);
            }
        }
        for d in [1, 2] {
            raw.push(row("srm", 4_000_000, 15 << 20, d, 1, 9.0 / d as f64));
        }
        let d = tempfile::tempdir().unwrap();
        let drawn = plots(d.path(), &summarise(&raw)).unwrap();
        let names: Vec<String> =
            drawn.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["merge-time-vs-n.svg", "merge-time-vs-n-emulated.svg", "d-sweep.svg"]);
        let svg = std::fs::read_to_string(d.path().join("merge-time-vs-n.svg")).unwrap();
        assert!(svg.contains("SRM M=15M") && svg.contains("DSM M=15M"), "legend");
        assert!(svg.contains("D = 6"), "title");
        let svg = std::fs::read_to_string(d.path().join("d-sweep.svg")).unwrap();
        assert!(svg.contains("merge time vs D (rec:104:0:8, M=15M, B=256K, N=4e6, real disks)"), "{svg}");
    }
}
