//! Plots of a sort campaign, drawn from its `raw.csv`.
//!
//! [`plots_from_csv`] reads `DIR/raw.csv`, summarises it (medians of the
//! repetitions) and writes SVG files into `DIR/plots/` (`{f}` = format,
//! `{n}` = input size):
//!
//! | file | chart |
//! |---|---|
//! | `time_vs_m_{f}_{n}.svg` | emsort's time vs M, a line per d; GNU sort and STXXL vs M; the I/O bound and the in-memory sort as flat lines; the CPU bound (emsort on tmpfs) vs M beside the I/O bound, flat when measured at one M only |
//! | `time_vs_d_{f}_{n}.svg` | emsort's time vs d, a line per M |
//! | `phases_vs_m_{f}_{n}.svg` | run formation, merge and total time vs M, at the largest d |
//! | `peers_{f}.svg` | time vs N: emsort's best point, GNU sort's best, STXXL's best, the in-memory sort, the I/O bound, the CPU bound's best |
//! | `threads_{f}_{n}.svg` | context switches, CPU migrations and minor faults (+1, for the log axis) vs threads, emsort and GNU sort |
//! | `time_vs_threads_{f}_{n}.svg` | emsort's, GNU sort's and STXXL's time vs threads |
//! | `tools_M{m}_t{t}.svg` | one (M, threads) whose inputs have no time-vs-M chart (one M each): per input, each tool's median with a bar from its fastest to its slowest repetition (emsort's and the baseline's fastest point, GNU sort, uutils sort, STXXL, DuckDB, the in-memory sort), and the CPU bound and 2 × the I/O bound as marks across the format |
//! | `keys_{data}_{n}_M{m}_t{t}.svg` | the keys experiment on one data set (`csv`, `csv-export`, `jsonl`, `words`) at one (M, threads): per key sort, each tool's median with a bar from its fastest to its slowest repetition (emsort, the baseline, GNU sort, uutils sort, DuckDB, Polars, xan), and the CPU bound and 2 × the I/O bound as marks across the key sort |
//!
//! emsort's charts use one *reference setting* per input: the policy
//! `optimal` (else the first), the stream kind `buffered` (else the first)
//! and the most threads (time charts) — the other settings are in
//! `summary.csv`. All axes are logarithmic; a chart with fewer than two
//! distinct x values is skipped. The keys chart ([`CategoryChart`]) has
//! the key sorts on its x axis and a logarithmic time axis; it is drawn
//! whenever a tool has a time, even for one key sort. [`describe_plot`]
//! says in a line what a file shows (the campaign's README lists the files
//! drawn with it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use emsort_io::format_size;

use super::keys::KeySort;
use super::record::{read_raw, summarise, SummaryRow};
use crate::chart::{draw_all, CategoryChart, Chart, Legend, RangePoint, RangeSeries, Series, Ticks};
use crate::Result;

/// Reads `dir/raw.csv` and draws every plot into `dir/plots/`; returns the
/// files drawn.
pub fn plots_from_csv(dir: &Path) -> Result<Vec<PathBuf>> {
    let (keys, grid): (Vec<SummaryRow>, Vec<SummaryRow>) =
        summarise(&read_raw(&dir.join("raw.csv"))?).into_iter().partition(|r| r.experiment == "keys");
    let mut drawn = draw_all(&dir.join("plots"), charts(&grid))?;
    drawn.extend(draw_all(&dir.join("plots"), tools_charts(&grid))?);
    drawn.extend(draw_all(&dir.join("plots"), keys_charts(&keys))?);
    Ok(drawn)
}

/// What a plot file of [`plots_from_csv`] shows, in a line (by its name).
pub fn describe_plot(file_name: &str) -> &'static str {
    const KINDS: [(&str, &str); 8] = [
        ("time_vs_m_", "emsort's time vs M, a line per d, with GNU sort, STXXL, the I/O and CPU bounds and the in-memory sort"),
        ("time_vs_d_", "emsort's time vs d, a line per M"),
        ("phases_vs_m_", "run formation, merge and total time vs M at the largest d"),
        ("peers_", "time vs N: emsort's best point, its peers' and the bounds"),
        ("threads_", "context switches, CPU migrations and minor faults vs threads, emsort and GNU sort"),
        ("time_vs_threads_", "emsort's, GNU sort's and STXXL's time vs threads"),
        (
            "tools_",
            "per format, each tool's median time with its min – max over the repetitions, the CPU \
             bound and 2 × the I/O bound",
        ),
        (
            "keys_",
            "keys experiment: per key sort, each tool's median time with its min – max over the \
             repetitions, the CPU bound and 2 × the I/O bound",
        ),
    ];
    KINDS.iter().find(|(prefix, _)| file_name.starts_with(prefix)).map(|(_, what)| *what).unwrap_or("a chart")
}

fn chart(
    title: String,
    x_label: &str,
    x_ticks: Ticks,
    y_label: &str,
    y_ticks: Ticks,
    series: Vec<Series>,
) -> Chart {
    Chart {
        title,
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_ticks,
        y_ticks,
        series: series.into_iter().filter(|s| !s.points.is_empty()).collect(),
        lines: true,
        diagonal: false,
        legend: Legend::UpperRight,
    }
}

fn stem(format: &str, bytes: Option<u64>) -> String {
    let f = format.replace(':', "-");
    match bytes {
        Some(b) => format!("{f}_{}", format_size(b)),
        None => f,
    }
}

/// The reference policy and stream kind of emsort's rows on one input.
pub(crate) fn reference<'a>(em: &[&'a SummaryRow]) -> (String, String) {
    let pick = |vals: Vec<&'a str>, want: &str| -> String {
        if vals.contains(&want) {
            want.to_string()
        } else {
            vals.first().map(|s| s.to_string()).unwrap_or_default()
        }
    };
    (
        pick(em.iter().map(|r| r.policy.as_str()).collect(), "optimal"),
        pick(em.iter().map(|r| r.io.as_str()).collect(), "buffered"),
    )
}

/// A point at `x` of `r`'s median time, with its runs' min and max.
fn spread(x: f64, r: &SummaryRow) -> (f64, f64, f64, f64) {
    (x, r.median_s, r.min_s, r.max_s)
}

fn flat(label: String, y: Option<f64>, xs: &[f64]) -> Series {
    let points = match (y, xs.iter().copied().reduce(f64::min), xs.iter().copied().reduce(f64::max)) {
        (Some(y), Some(a), Some(b)) if a < b => vec![(a, y), (b, y)],
        _ => Vec::new(),
    };
    Series::new(label, points)
}

/// Every chart of the module docs, with its file stem.
fn charts(rows: &[SummaryRow]) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    let mut inputs: Vec<(String, u64)> = Vec::new();
    for r in rows {
        if !inputs.contains(&(r.format.clone(), r.bytes)) {
            inputs.push((r.format.clone(), r.bytes));
        }
    }
    for (format, bytes) in &inputs {
        let on: Vec<&SummaryRow> = rows.iter().filter(|r| &r.format == format && r.bytes == *bytes).collect();
        let em_all: Vec<&SummaryRow> = on.iter().copied().filter(|r| r.tool == "emsort").collect();
        if em_all.is_empty() {
            continue;
        }
        let (policy, io) = reference(&em_all);
        let at_ref: Vec<&SummaryRow> =
            em_all.iter().copied().filter(|r| r.policy == policy && r.io == io).collect();
        let tmax = at_ref.iter().map(|r| r.threads).max().unwrap_or(1);
        let em: Vec<&SummaryRow> = at_ref.iter().copied().filter(|r| r.threads == tmax).collect();
        let name = format!("{format} N = {}", format_size(*bytes));
        let setting = format!("{policy}, {io}, {tmax} thread(s)");
        let xs_m: Vec<f64> = em.iter().filter_map(|r| r.memory).map(|m| m as f64).collect();
        let io_bound = on.iter().find_map(|r| r.io_bound_s);
        let in_mem = on.iter().find(|r| r.tool == "in-memory").map(|r| r.median_s);

        // Time vs M, a line per d, with the peers.
        let mut per_d: BTreeMap<usize, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
        for r in &em {
            if let (Some(d), Some(m)) = (r.fan_in, r.memory) {
                per_d.entry(d).or_default().push(spread(m as f64, r));
            }
        }
        let mut series: Vec<Series> =
            per_d.into_iter().map(|(d, points)| Series::spread(format!("emsort d = {d}"), points)).collect();
        let vs_m = |tool: &str| -> Vec<(f64, f64, f64, f64)> {
            on.iter()
                .filter(|r| r.tool == tool && r.threads == tmax)
                .filter_map(|r| r.memory.map(|m| spread(m as f64, r)))
                .collect()
        };
        series.push(Series::spread(format!("GNU sort, {tmax} thread(s)"), vs_m("gnu-sort")));
        series.push(Series::spread(format!("STXXL, {tmax} thread(s)"), vs_m("stxxl")));
        series.push(flat("I/O bound (2 passes)".into(), io_bound, &xs_m));
        // The CPU bound is measured at each M of the grid: a line over M,
        // or flat across the chart when there is one M only.
        let cpu = vs_m("cpu-bound");
        let cpu_label = format!("CPU bound (tmpfs), {tmax} thread(s)");
        series.push(match cpu.as_slice() {
            [(_, y, _, _)] => flat(cpu_label, Some(*y), &xs_m),
            _ => Series::spread(cpu_label, cpu),
        });
        series.push(flat("in-memory sort".into(), in_mem, &xs_m));
        out.push((
            format!("time_vs_m_{}", stem(format, Some(*bytes))),
            chart(
                format!("{name}: time vs M ({setting})"),
                "M (memory)",
                Ticks::Bytes,
                "median time",
                Ticks::Seconds,
                series,
            ),
        ));

        // Time vs d, a line per M.
        let mut per_m: BTreeMap<u64, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
        for r in &em {
            if let (Some(d), Some(m)) = (r.fan_in, r.memory) {
                per_m.entry(m).or_default().push(spread(d as f64, r));
            }
        }
        let series = per_m
            .into_iter()
            .map(|(m, points)| Series::spread(format!("M = {}", format_size(m)), points))
            .collect();
        out.push((
            format!("time_vs_d_{}", stem(format, Some(*bytes))),
            chart(
                format!("{name}: time vs d ({setting})"),
                "d (fan-in)",
                Ticks::Plain,
                "median time",
                Ticks::Seconds,
                series,
            ),
        ));

        // Phases vs M at the largest d.
        if let Some(dmax) = em.iter().filter_map(|r| r.fan_in).max() {
            let at_d: Vec<&&SummaryRow> = em.iter().filter(|r| r.fan_in == Some(dmax)).collect();
            let pts = |f: fn(&SummaryRow) -> Option<f64>| -> Vec<(f64, f64)> {
                at_d.iter().filter_map(|r| Some((r.memory? as f64, f(r)?))).filter(|p| p.1 > 0.0).collect()
            };
            let series = vec![
                Series::new("run formation", pts(|r| r.run_formation_s)),
                Series::new("merge", pts(|r| r.merge_s)),
                Series::spread(
                    "total (with fsync)",
                    at_d.iter().filter_map(|r| Some(spread(r.memory? as f64, r))).collect::<Vec<_>>(),
                ),
            ];
            out.push((
                format!("phases_vs_m_{}", stem(format, Some(*bytes))),
                chart(
                    format!("{name}: time per phase vs M (d = {dmax}, {setting})"),
                    "M (memory)",
                    Ticks::Bytes,
                    "median time",
                    Ticks::Seconds,
                    series,
                ),
            ));
        }

        // Threads: counts and time, at one (M, d) measured with several thread counts.
        let mut by_md: BTreeMap<(u64, usize), Vec<&SummaryRow>> = BTreeMap::new();
        for r in &at_ref {
            if let (Some(m), Some(d)) = (r.memory, r.fan_in) {
                by_md.entry((m, d)).or_default().push(r);
            }
        }
        if let Some(((m, d), ts)) = by_md.into_iter().find(|(_, v)| v.len() >= 2) {
            let gnu: Vec<&&SummaryRow> =
                on.iter().filter(|r| r.tool == "gnu-sort" && r.memory == Some(m)).collect();
            let count = |v: &[&SummaryRow], f: fn(&SummaryRow) -> Option<u64>| -> Vec<(f64, f64)> {
                v.iter().filter_map(|r| Some((r.threads as f64, f(r)? as f64 + 1.0))).collect()
            };
            let gnu_rows: Vec<&SummaryRow> = gnu.iter().map(|r| **r).collect();
            let series = vec![
                Series::new("emsort voluntary cs", count(&ts, |r| Some(r.voluntary_cs))),
                Series::new("emsort involuntary cs", count(&ts, |r| Some(r.involuntary_cs))),
                Series::new("emsort CPU migrations", count(&ts, |r| r.cpu_migrations)),
                Series::new("emsort minor faults", count(&ts, |r| Some(r.minor_faults))),
                Series::new("GNU sort voluntary cs", count(&gnu_rows, |r| Some(r.voluntary_cs))),
                Series::new("GNU sort involuntary cs", count(&gnu_rows, |r| Some(r.involuntary_cs))),
                Series::new("GNU sort CPU migrations", count(&gnu_rows, |r| r.cpu_migrations)),
                Series::new("GNU sort minor faults", count(&gnu_rows, |r| Some(r.minor_faults))),
            ];
            let title = format!(
                "{name}: context switches, migrations, faults vs threads (M = {}, d = {d})",
                format_size(m)
            );
            let mut c = chart(
                title,
                "threads (--parallel)",
                Ticks::Plain,
                "count + 1 (per run, median)",
                Ticks::Count,
                series,
            );
            c.legend = Legend::UpperLeft;
            out.push((format!("threads_{}", stem(format, Some(*bytes))), c));
            let series = vec![
                Series::spread("emsort", ts.iter().map(|r| spread(r.threads as f64, r))),
                Series::spread("GNU sort", gnu_rows.iter().map(|r| spread(r.threads as f64, r))),
                Series::spread(
                    "STXXL",
                    on.iter()
                        .filter(|r| r.tool == "stxxl" && r.memory == Some(m))
                        .map(|r| spread(r.threads as f64, r)),
                ),
            ];
            out.push((
                format!("time_vs_threads_{}", stem(format, Some(*bytes))),
                chart(
                    format!("{name}: time vs threads (M = {}, d = {d})", format_size(m)),
                    "threads (--parallel)",
                    Ticks::Plain,
                    "median time",
                    Ticks::Seconds,
                    series,
                ),
            ));
        }
    }

    // Peers per format, vs N.
    let mut formats: Vec<&str> = Vec::new();
    for r in rows {
        if !formats.contains(&r.format.as_str()) {
            formats.push(&r.format);
        }
    }
    for f in formats {
        // The point with the smallest median at each N, with its runs'
        // spread (the I/O bound's doubled: two passes).
        let best = |tool: &str| -> Vec<(f64, f64, f64, f64)> {
            let mut m: BTreeMap<u64, (f64, f64, f64, f64)> = BTreeMap::new();
            for r in rows.iter().filter(|r| r.format == f && r.tool == tool) {
                let k = if tool == "io-bound" { 2.0 } else { 1.0 };
                let p = (r.bytes as f64, k * r.median_s, k * r.min_s, k * r.max_s);
                let e = m.entry(r.bytes).or_insert(p);
                if p.1 < e.1 {
                    *e = p;
                }
            }
            m.into_values().collect()
        };
        let series = vec![
            Series::spread("emsort (best point)", best("emsort")),
            Series::spread("GNU sort (best point)", best("gnu-sort")),
            Series::spread("STXXL (best point)", best("stxxl")),
            Series::spread("in-memory sort", best("in-memory")),
            Series::spread("I/O bound (2 passes)", best("io-bound")),
            Series::spread("CPU bound (tmpfs, best point)", best("cpu-bound")),
        ];
        let mut c = chart(
            format!("{f}: emsort and its peers vs N"),
            "N (input bytes)",
            Ticks::Bytes,
            "median time",
            Ticks::Seconds,
            series,
        );
        c.legend = Legend::UpperLeft;
        out.push((format!("peers_{}", stem(f, None)), c));
    }
    out
}

/// A chart of times per category (median marker, min – max bar).
pub(crate) fn times_chart(
    title: String,
    x_label: &str,
    categories: Vec<String>,
    series: Vec<RangeSeries>,
) -> CategoryChart {
    CategoryChart {
        title,
        x_label: x_label.into(),
        y_label: "time (marker: median; bar: min – max)".into(),
        y_ticks: Ticks::Seconds,
        categories,
        series,
        legend: Legend::UpperRight,
    }
}

/// The tools side by side where the grid has one M per input (a campaign
/// at one setting, such as issue 18's bar: no time-vs-M chart to show its
/// ratios), one chart per (M, threads): the inputs on the x axis, a
/// series per tool with its fastest point's median and min – max, the CPU
/// bound (emsort on tmpfs at that M and threads) and 2 × the I/O bound as
/// reference marks.
fn tools_charts(rows: &[SummaryRow]) -> Vec<(String, CategoryChart)> {
    const TOOLS: [&str; 8] = [
        "emsort",
        "emsort-baseline",
        "emsort-stdio",
        "gnu-sort",
        "uutils-sort",
        "stxxl",
        "duckdb",
        "in-memory",
    ];
    // The inputs emsort ran at one M only.
    let one_m = |format: &str, bytes: u64| {
        let mut ms = rows.iter().filter(|r| r.tool == "emsort" && r.format == format && r.bytes == bytes);
        let first = ms.next().and_then(|r| r.memory);
        ms.all(|r| r.memory == first)
    };
    /// An input: (format, N).
    type Input = (String, u64);
    // Groups of (M, threads); their inputs in the summary's order.
    let mut groups: Vec<(u64, usize, Vec<Input>)> = Vec::new();
    for r in rows.iter().filter(|r| r.tool == "emsort" && one_m(&r.format, r.bytes)) {
        let Some(m) = r.memory else { continue };
        let input = (r.format.clone(), r.bytes);
        match groups.iter_mut().find(|g| (g.0, g.1) == (m, r.threads)) {
            Some(g) if !g.2.contains(&input) => g.2.push(input),
            Some(_) => {}
            None => groups.push((m, r.threads, vec![input])),
        }
    }
    let mut out = Vec::new();
    for (memory, threads, inputs) in groups {
        // A tool's fastest row on an input at this M (or none: the
        // in-memory sort) and threads.
        let best = |tool: &str, (format, bytes): &Input| -> Option<&SummaryRow> {
            rows.iter()
                .filter(|r| {
                    r.tool == tool && &r.format == format && r.bytes == *bytes && r.threads == threads
                })
                .filter(|r| r.memory.is_none_or(|m| m == memory))
                .min_by(|a, b| a.median_s.total_cmp(&b.median_s))
        };
        // N in the title when the inputs share it (records of 100 bytes
        // stop short of 1 GiB: such an input names its own), else per input.
        let mut sizes: Vec<u64> = inputs.iter().map(|i| i.1).collect();
        sizes.sort_unstable();
        let common = sizes.iter().max_by_key(|&&n| sizes.iter().filter(|&&m| m == n).count()).copied();
        let categories: Vec<String> = inputs
            .iter()
            .map(|(f, n)| if Some(*n) == common { f.clone() } else { format!("{f} (N = {n} B)") })
            .collect();
        let marks =
            |tool: &str, value: &dyn Fn(&SummaryRow) -> Option<f64>, range: bool| -> Vec<RangePoint> {
                inputs
                    .iter()
                    .enumerate()
                    .filter_map(|(category, input)| {
                        let r = best(tool, input)?;
                        Some(RangePoint {
                            category,
                            value: value(r)?,
                            range: range.then_some((r.min_s, r.max_s)),
                        })
                    })
                    .collect()
            };
        let mut series: Vec<RangeSeries> = TOOLS
            .iter()
            .map(|&tool| RangeSeries {
                label: tool.to_string(),
                points: marks(tool, &|r| Some(r.median_s), true),
                reference: false,
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        series.push(RangeSeries {
            label: "CPU bound (emsort on tmpfs)".into(),
            points: marks("cpu-bound", &|r| Some(r.median_s), false),
            reference: true,
        });
        series.push(RangeSeries {
            label: "2 × I/O bound".into(),
            points: marks("emsort", &|r| r.io_bound_s, false),
            reference: true,
        });
        let reps = rows.iter().filter(|r| r.memory == Some(memory)).map(|r| r.reps).max().unwrap_or(0);
        let n = common.map(|n| format!("N = {}, ", format_size(n))).unwrap_or_default();
        out.push((
            format!("tools_M{}_t{threads}", format_size(memory)),
            times_chart(
                format!(
                    "{n}M = {}, {threads} thread(s): time per format ({reps} rep(s))",
                    format_size(memory)
                ),
                "format",
                categories,
                series,
            ),
        ));
    }
    out
}

/// The keys experiment's charts, one per (data set, N, M, threads): the key sorts
/// on the x axis (in [`KeySort::EVERY`]'s order), a series per tool with
/// its median and min – max, the CPU bound (emsort on tmpfs, same keys, M
/// and threads) and 2 × the I/O bound of the input as reference marks.
fn keys_charts(rows: &[SummaryRow]) -> Vec<(String, CategoryChart)> {
    let rank = |label: &str| {
        // After a locale's `LC_ALL=… ` prefix.
        let label =
            if label.starts_with("LC_ALL=") { label.split_once(' ').map_or("", |x| x.1) } else { label };
        KeySort::EVERY.iter().position(|k| k.label() == label).unwrap_or(usize::MAX)
    };
    let mut groups: Vec<(&str, u64, u64, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.experiment == "keys") {
        let g = (r.format.as_str(), r.bytes, r.memory.unwrap_or(0), r.threads);
        if r.memory.is_some() && !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut out = Vec::new();
    for (data, bytes, memory, threads) in groups {
        let on: Vec<&SummaryRow> = rows
            .iter()
            .filter(|r| {
                r.experiment == "keys"
                    && r.format == data
                    && r.bytes == bytes
                    && r.memory == Some(memory)
                    && r.threads == threads
            })
            .collect();
        let mut categories: Vec<String> = Vec::new();
        for r in &on {
            if !categories.contains(&r.keys) {
                categories.push(r.keys.clone());
            }
        }
        categories.sort_by_key(|k| rank(k));
        let at = |keys: &str| categories.iter().position(|k| k == keys).unwrap_or(0);
        // A series per tool, and per --io kind of emsort's runs with one.
        let ident = |r: &SummaryRow| match r.tool.as_str() {
            "emsort" => (r.tool.clone(), r.io.clone()),
            _ => (r.tool.clone(), String::new()),
        };
        let mut tools: Vec<(String, String)> = Vec::new();
        for r in &on {
            if r.tool != "cpu-bound" && !tools.contains(&ident(r)) {
                tools.push(ident(r));
            }
        }
        let reps = on.iter().map(|r| r.reps).max().unwrap_or(0);
        let mut series: Vec<RangeSeries> = tools
            .iter()
            .map(|t| RangeSeries {
                label: if t.1.is_empty() { t.0.clone() } else { format!("{} --io {}", t.0, t.1) },
                points: on
                    .iter()
                    .filter(|r| ident(r) == *t)
                    .map(|r| RangePoint {
                        category: at(&r.keys),
                        value: r.median_s,
                        range: Some((r.min_s, r.max_s)),
                    })
                    .collect(),
                reference: false,
            })
            .collect();
        let mark = |label: &str, f: &dyn Fn(&SummaryRow) -> Option<f64>, tool: &str| RangeSeries {
            label: label.into(),
            points: on
                .iter()
                .filter(|r| r.tool == tool && (tool != "emsort" || r.io.is_empty()))
                .filter_map(|r| Some(RangePoint { category: at(&r.keys), value: f(r)?, range: None }))
                .collect(),
            reference: true,
        };
        series.push(mark("CPU bound (emsort on tmpfs)", &|r| Some(r.median_s), "cpu-bound"));
        series.push(mark("2 × I/O bound", &|r| r.io_bound_s, "emsort"));
        let name = format!("keys_{data}_{}_M{}_t{threads}", format_size(bytes), format_size(memory));
        out.push((
            name,
            times_chart(
                format!(
                    "{data} N = {}, M = {}, {threads} thread(s): time per key sort ({reps} rep(s))",
                    format_size(bytes),
                    format_size(memory)
                ),
                "key sort",
                categories,
                series,
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::record::{RawRow, RawWriter};
    use super::*;

    #[test]
    fn draws_the_charts_the_data_allow() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RawWriter::create(&dir.path().join("raw.csv")).unwrap();
        for (m, d, t, s) in [
            (1u64 << 20, 2usize, 2usize, 2.0),
            (4 << 20, 2, 2, 1.0),
            (1 << 20, 8, 2, 1.5),
            (4 << 20, 8, 2, 0.8),
            (1 << 20, 2, 1, 3.0),
        ] {
            let mut r = RawRow::new("emsort", "lines", 8 << 20, 100, t, 1);
            (r.memory, r.fan_in, r.seconds) = (Some(m), Some(d), s);
            (r.policy, r.io) = ("optimal".into(), "buffered".into());
            (r.run_formation_s, r.merge_s) = (Some(s / 2.0), Some(s / 2.0));
            r.voluntary_cs = 10 * t as u64;
            w.write(&r).unwrap();
        }
        let mut g = RawRow::new("gnu-sort", "lines", 8 << 20, 100, 2, 1);
        (g.memory, g.seconds) = (Some(1 << 20), 5.0);
        w.write(&g).unwrap();
        let mut io = RawRow::new("io-bound", "lines", 8 << 20, 100, 1, 1);
        io.seconds = 0.2;
        w.write(&io).unwrap();
        let mut cpu = RawRow::new("cpu-bound", "lines", 8 << 20, 100, 2, 1);
        (cpu.memory, cpu.seconds) = (Some(1 << 20), 0.7);
        w.write(&cpu).unwrap();
        drop(w);
        let drawn = plots_from_csv(dir.path()).unwrap();
        let names: Vec<String> =
            drawn.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        for n in [
            "time_vs_m_lines_8M.svg",
            "time_vs_d_lines_8M.svg",
            "phases_vs_m_lines_8M.svg",
            "threads_lines_8M.svg",
        ] {
            assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
        }
        // One N only: no peers-vs-N chart.
        assert!(!names.iter().any(|n| n.starts_with("peers_")), "{names:?}");
        // The CPU bound, measured at one M, is drawn flat beside the I/O bound.
        let svg = std::fs::read_to_string(dir.path().join("plots/time_vs_m_lines_8M.svg")).unwrap();
        assert!(svg.contains("CPU bound (tmpfs), 2 thread(s)") && svg.contains("I/O bound"), "{svg}");
        let rows: Vec<SummaryRow> = summarise(&read_raw(&dir.path().join("raw.csv")).unwrap());
        let c = charts(&rows).into_iter().find(|(n, _)| n == "time_vs_m_lines_8M").unwrap().1;
        let s = c.series.iter().find(|s| s.label.starts_with("CPU bound")).unwrap();
        assert_eq!(s.points, vec![((1 << 20) as f64, 0.7), ((4 << 20) as f64, 0.7)]);
        // No keys experiment: no keys chart; two Ms: no tools chart.
        assert!(!names.iter().any(|n| n.starts_with("keys_") || n.starts_with("tools_")), "{names:?}");
    }

    /// A campaign at one M (issue 18's bar): no time-vs-M chart, but the
    /// tools side by side per format, each at its fastest point with its
    /// min – max, and the two bounds as marks.
    #[test]
    fn one_setting_draws_the_tools_per_format_with_the_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RawWriter::create(&dir.path().join("raw.csv")).unwrap();
        for rep in 1..=2u32 {
            let k = f64::from(rep);
            for format in ["u32", "lines"] {
                // emsort at two fan-ins: d = 8 is the faster one.
                for (d, s) in [(4usize, 3.0), (8, 2.0)] {
                    let mut r = RawRow::new("emsort", format, 1 << 30, 100, 2, rep);
                    (r.memory, r.fan_in, r.seconds) = (Some(256 << 20), Some(d), s * k);
                    w.write(&r).unwrap();
                }
                let mut cpu = RawRow::new("cpu-bound", format, 1 << 30, 100, 2, rep);
                (cpu.memory, cpu.seconds) = (Some(256 << 20), 1.5);
                w.write(&cpu).unwrap();
                let mut io = RawRow::new("io-bound", format, 1 << 30, 100, 1, rep);
                io.seconds = 0.5 * k;
                w.write(&io).unwrap();
            }
            let mut gnu = RawRow::new("gnu-sort", "lines", 1 << 30, 100, 2, rep);
            (gnu.memory, gnu.seconds) = (Some(256 << 20), 8.0 * k);
            w.write(&gnu).unwrap();
            let mut mem = RawRow::new("in-memory", "u32", 1 << 30, 100, 2, rep);
            mem.seconds = 4.0;
            w.write(&mem).unwrap();
        }
        drop(w);
        let drawn = plots_from_csv(dir.path()).unwrap();
        let names: Vec<String> =
            drawn.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        // One M: no time-vs-M chart (the two fan-ins give time-vs-d ones).
        assert_eq!(names, ["time_vs_d_lines_1G.svg", "time_vs_d_u32_1G.svg", "tools_M256M_t2.svg"]);
        assert!(describe_plot(&names[2]).starts_with("per format, each tool's median"));
        let rows = summarise(&read_raw(&dir.path().join("raw.csv")).unwrap());
        let charts = tools_charts(&rows);
        let c = &charts[0].1;
        // The formats in the summary's order.
        assert_eq!(c.categories, ["lines", "u32"]);
        let labels: Vec<(&str, bool)> = c.series.iter().map(|s| (s.label.as_str(), s.reference)).collect();
        assert_eq!(
            labels,
            [
                ("emsort", false),
                ("gnu-sort", false),
                ("in-memory", false),
                ("CPU bound (emsort on tmpfs)", true),
                ("2 × I/O bound", true)
            ]
        );
        // emsort's fastest point (d = 8: 2 s and 4 s) on both formats.
        for cat in 0..2 {
            let p = c.series[0].points.iter().find(|p| p.category == cat).unwrap();
            assert_eq!((p.value, p.range), (3.0, Some((2.0, 4.0))));
        }
        assert_eq!(c.series[1].points, [RangePoint { category: 0, value: 12.0, range: Some((8.0, 16.0)) }]);
        assert_eq!(c.series[2].points, [RangePoint { category: 1, value: 4.0, range: Some((4.0, 4.0)) }]);
        assert_eq!(c.series[3].points[0], RangePoint { category: 0, value: 1.5, range: None });
        // 2 × median(0.5, 1.0).
        assert!(c.series[4].points.iter().all(|p| (p.value - 1.5).abs() < 1e-12 && p.range.is_none()));
        let svg = std::fs::read_to_string(&drawn[2]).unwrap();
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for label in [
            "emsort",
            "gnu-sort",
            "in-memory",
            "CPU bound (emsort on tmpfs)",
            "2 × I/O bound",
            "u32",
            "lines",
        ] {
            assert!(texts.contains(&label), "{label} missing");
        }
    }

    /// Inputs of other sizes in one (M, threads) group: the chart's N is
    /// the common one, and an input of another size names its own.
    #[test]
    fn the_tools_chart_names_an_input_of_another_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RawWriter::create(&dir.path().join("raw.csv")).unwrap();
        for (format, bytes) in [("u32", 1u64 << 30), ("lines", 1 << 30), ("rec:100:0:10", (1 << 30) - 24)] {
            let mut r = RawRow::new("emsort", format, bytes, 100, 2, 1);
            (r.memory, r.fan_in, r.seconds) = (Some(256 << 20), Some(8), 2.0);
            w.write(&r).unwrap();
        }
        drop(w);
        let rows = summarise(&read_raw(&dir.path().join("raw.csv")).unwrap());
        let charts = tools_charts(&rows);
        assert_eq!(charts.len(), 1);
        let (name, c) = &charts[0];
        assert_eq!(name, "tools_M256M_t2");
        assert!(c.title.starts_with("N = 1G, M = 256M, 2 thread(s)"), "{}", c.title);
        assert!(c.categories.contains(&"rec:100:0:10 (N = 1073741800 B)".to_string()), "{:?}", c.categories);
        assert!(c.categories.contains(&"u32".to_string()) && c.categories.contains(&"lines".to_string()));
    }

    /// The keys experiment's raw rows: per key sort and rep, each tool
    /// (GNU sort failed once on -u: its time is not counted), and the
    /// input's I/O bound per rep.
    fn keys_raw(dir: &Path) {
        let mut w = RawWriter::create(&dir.join("raw.csv")).unwrap();
        for rep in 1..=2u32 {
            for (keys, base) in [("-t, -k3,3n", 1.0), ("-u", 0.5)] {
                for (tool, factor) in
                    [("emsort", 1.0), ("emsort-baseline", 1.2), ("gnu-sort", 4.0), ("cpu-bound", 0.6)]
                {
                    let mut r = RawRow::new(tool, "csv", 1 << 20, 100, 2, rep);
                    (r.memory, r.experiment, r.keys) = (Some(256 << 10), "keys".into(), keys.into());
                    r.seconds = base * factor * f64::from(rep);
                    if tool == "gnu-sort" && keys == "-u" && rep == 2 {
                        r.verified = super::super::record::FAILED.into();
                    }
                    w.write(&r).unwrap();
                }
            }
            let mut io = RawRow::new("io-bound", "csv", 1 << 20, 100, 1, rep);
            (io.experiment, io.seconds) = ("keys".into(), 0.1 * f64::from(rep));
            w.write(&io).unwrap();
        }
    }

    /// One chart for the keys experiment: the key sorts in their order, a
    /// series per tool with its median and min – max, the CPU bound and
    /// 2 × the I/O bound as marks; drawn as SVG with every series named.
    #[test]
    fn the_keys_chart_has_a_series_per_tool_and_the_bounds() {
        let dir = tempfile::tempdir().unwrap();
        keys_raw(dir.path());
        let drawn = plots_from_csv(dir.path()).unwrap();
        let names: Vec<String> =
            drawn.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["keys_csv_1M_M256K_t2.svg"]);
        assert!(describe_plot(&names[0]).starts_with("keys experiment: per key sort"));
        let rows = summarise(&read_raw(&dir.path().join("raw.csv")).unwrap());
        let charts = keys_charts(&rows);
        assert_eq!(charts.len(), 1);
        let c = &charts[0].1;
        assert_eq!(c.categories, ["-t, -k3,3n", "-u"]);
        let labels: Vec<(&str, bool)> = c.series.iter().map(|s| (s.label.as_str(), s.reference)).collect();
        assert_eq!(
            labels,
            [
                ("emsort", false),
                ("emsort-baseline", false),
                ("gnu-sort", false),
                ("CPU bound (emsort on tmpfs)", true),
                ("2 × I/O bound", true)
            ]
        );
        let point = |series: usize, cat: usize| {
            c.series[series].points.iter().find(|p| p.category == cat).cloned().unwrap()
        };
        // emsort on -t, -k3,3n: 1 s and 2 s, median 1.5 s.
        assert_eq!(point(0, 0), RangePoint { category: 0, value: 1.5, range: Some((1.0, 2.0)) });
        // GNU sort's failed run on -u is not in its range.
        assert_eq!(point(2, 1), RangePoint { category: 1, value: 2.0, range: Some((2.0, 2.0)) });
        let cpu = point(3, 1);
        assert!((cpu.value - 0.45).abs() < 1e-12 && cpu.range.is_none(), "{cpu:?}");
        // 2 × median(0.1, 0.2) on every key sort.
        for cat in 0..2 {
            assert!((point(4, cat).value - 0.3).abs() < 1e-12 && point(4, cat).range.is_none());
        }
        let svg = std::fs::read_to_string(&drawn[0]).unwrap();
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for label in ["emsort", "emsort-baseline", "gnu-sort", "CPU bound (emsort on tmpfs)", "2 × I/O bound"]
        {
            assert!(texts.contains(&label), "legend entry {label} missing");
        }
        for label in ["-t, -k3,3n", "-u", "1 s"] {
            assert!(texts.contains(&label), "axis label {label} missing");
        }
        // A filled marker per point and legend entry: 3 tools × 2 key sorts
        // and 2 marks × 2 key sorts, and 5 in the legend.
        assert_eq!(svg.matches("<polygon").count(), 3 * 2 + 2 * 2 + 5, "{svg}");
        // Redrawn from raw.csv alone.
        std::fs::remove_dir_all(dir.path().join("plots")).unwrap();
        assert_eq!(plots_from_csv(dir.path()).unwrap(), drawn);
    }
}
