//! The trace campaign's plots, drawn from its `raw.csv` alone.
//!
//! | file | x | y | series |
//! |---|---|---|---|
//! | `plots/traces_time.svg` | trace | time per replay: median (marker), fastest – slowest round (bar) | reader |
//! | `plots/traces_ratio.svg` | trace | median time over the best fixed reader's (marker), the per-round ratios' range (bar), 1 = the best fixed reader (mark) | reader |
//!
//! Both are [`CategoryChart`]s: the traces on x (ct, am, im, mixed), a
//! logarithmic y axis with SI tick labels (`20 ms`, `1 s`), every reader
//! its own colour and marker shape.

use std::path::{Path, PathBuf};

use super::record::SummaryRow;
use crate::chart::{draw_all, CategoryChart, Legend, RangePoint, RangeSeries, Ticks};
use crate::Result;

/// What a plot file of the campaign (`plots/traces_*.svg`) shows, in a line (by its name).
pub fn describe_plot(file_name: &str) -> &'static str {
    if file_name.starts_with("traces_time") {
        "time per replay of each trace by each reader: median of the rounds (marker), fastest – slowest round (bar)"
    } else if file_name.starts_with("traces_ratio") {
        "each reader's median time over the best fixed reader's per trace (marker), the range of the \
         per-round ratios (bar), 1 = the best fixed reader (mark)"
    } else {
        "a chart"
    }
}

/// Draws the charts of `summary` into `dir/plots/`; returns the files drawn.
pub(crate) fn draw(dir: &Path, summary: &[SummaryRow]) -> Result<Vec<PathBuf>> {
    draw_all(&dir.join("plots"), charts(summary))
}

fn charts(rows: &[SummaryRow]) -> Vec<(String, CategoryChart)> {
    let mut traces: Vec<String> = Vec::new();
    for r in rows {
        if !traces.contains(&r.trace) {
            traces.push(r.trace.clone());
        }
    }
    let mut readers: Vec<String> = Vec::new();
    for r in rows {
        if !readers.contains(&r.reader) {
            readers.push(r.reader.clone());
        }
    }
    readers.sort_by_key(|r| super::record::reader_rank(r));
    let at = |t: &str| traces.iter().position(|x| x == t).unwrap_or(0);
    let rounds = rows.iter().map(|r| r.rounds).max().unwrap_or(0);
    let series = |pick: &dyn Fn(&SummaryRow) -> Option<RangePoint>| -> Vec<RangeSeries> {
        readers
            .iter()
            .map(|reader| RangeSeries {
                label: reader.clone(),
                points: rows.iter().filter(|r| &r.reader == reader).filter_map(pick).collect(),
                reference: false,
            })
            .collect()
    };
    let time = series(&|r| {
        Some(RangePoint { category: at(&r.trace), value: r.median_s, range: Some((r.min_s, r.max_s)) })
    });
    let mut ratio = series(&|r| {
        let value = r.ratio_to_best_fixed?;
        let range = r.paired_min.zip(r.paired_max).filter(|_| r.rounds > 1);
        Some(RangePoint { category: at(&r.trace), value, range })
    });
    ratio.push(RangeSeries {
        label: "best fixed reader = 1".into(),
        points: (0..traces.len()).map(|i| RangePoint { category: i, value: 1.0, range: None }).collect(),
        reference: true,
    });
    let title =
        |what: &str| format!("{what} ({rounds} round{}, cold cache)", if rounds == 1 { "" } else { "s" });
    vec![
        (
            "traces_time".to_string(),
            CategoryChart {
                title: title("Trace replays: time per reader"),
                x_label: "trace".into(),
                y_label: "time (marker: median; bar: min – max)".into(),
                y_ticks: Ticks::Seconds,
                categories: traces.clone(),
                series: time,
                legend: Legend::UpperRight,
            },
        ),
        (
            "traces_ratio".to_string(),
            CategoryChart {
                title: title("Time over the best fixed reader's"),
                x_label: "trace".into(),
                y_label: "median time / best fixed reader's (bar: per round)".into(),
                y_ticks: Ticks::Count,
                categories: traces,
                series: ratio,
                legend: Legend::UpperRight,
            },
        ),
    ]
}
