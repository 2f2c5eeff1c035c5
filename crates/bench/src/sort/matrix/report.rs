//! The matrix's reports, made from the profiles' CSV files: the merged
//! `raw.csv` and `summary.csv` (a first column `profile`), a chart per
//! profile, and the README with issue 38's bars judged per profile.
//!
//! The bars ([`bars`]), on each profile's summary (medians of the
//! repetitions), for emsort with no tuning flag (the grid's `default`
//! point; in the keys experiment emsort always runs so):
//!
//! | bar | value | holds when |
//! |---|---|---|
//! | the bounds, per u32, records, lines input | median / max(2 × I/O bound, CPU bound) | ≤ 1.3 |
//! | GNU sort, `lines` | GNU sort's median / emsort's | ≥ 4 |
//! | GNU sort, csv `-t, -k3,3n` | GNU sort's median / emsort's | ≥ 5 |
//! | DuckDB, csv `-t, -k3,3n` | DuckDB's median / emsort's (same M, threads) | ≥ 2.5 |
//! | the `--io` kinds, per input | emsort's median / the fastest `--io KIND` point's | ≤ 1.05 |
//! | the baseline (with `--baseline`), per input and key sort | emsort's median / the earlier binary's | ≤ 1.05 |
//!
//! A bar whose value is missing (a peer not installed, a profile without
//! the bound) is *not measured*, with the reason; a bar that misses is
//! shown as missing, never left out.

use std::path::{Path, PathBuf};

use emsort_io::format_size;

use super::{device_sentence, ProfileRecord};
use crate::chart::{draw_all, format_seconds, CategoryChart, RangePoint, RangeSeries};
use crate::sort::fio::IoBound;
use crate::sort::keys::KeySort;
use crate::sort::plots::times_chart;
use crate::sort::record::{summary_from_csv, SummaryRow};
use crate::sort::Campaign;
use crate::{CampaignBuilder, Error, Result};

/// emsort with no tuning flag over the binding bound, at most.
pub const BOUND_BAR: f64 = 1.3;
/// GNU sort's time over emsort's on lines, at least.
pub const LINES_GNU_BAR: f64 = 4.0;
/// GNU sort's time over emsort's on csv `-t, -k3,3n`, at least.
pub const K3N_GNU_BAR: f64 = 5.0;
/// DuckDB's time over emsort's on csv `-t, -k3,3n`, at least.
pub const K3N_DUCKDB_BAR: f64 = 2.5;
/// emsort's default over the fastest `--io` kind, at most.
pub const IO_KIND_BAR: f64 = 1.05;
/// emsort over the baseline binary, at most.
pub const BASELINE_BAR: f64 = 1.05;

/// Whether a bar holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The value meets the target.
    Holds,
    /// It does not.
    Misses,
    /// No value: why.
    NotMeasured(String),
}

/// One bar on one profile and input.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The profile.
    pub profile: String,
    /// What is compared (`default / max(bounds)`, `GNU sort / default` …).
    pub bar: String,
    /// The input (`u32`, `lines`, `csv -t, -k3,3n`).
    pub input: String,
    /// The ratio measured.
    pub value: Option<f64>,
    /// The target (`≤ 1.3`, `≥ 4`).
    pub target: String,
    /// Whether it holds.
    pub verdict: Verdict,
    /// The times behind it.
    pub detail: String,
}

/// `5.10 s (4.90–5.60)`: a summary row's median with its range.
fn timed(r: &SummaryRow) -> String {
    format!("{} ({}–{})", format_seconds(r.median_s), format_seconds(r.min_s), format_seconds(r.max_s))
}

/// A bar from a value and its target (`at_most`: the value must not
/// exceed it, else it must reach it).
fn judge(value: Option<f64>, target: f64, at_most: bool, missing: &str) -> Verdict {
    match value.filter(|v| v.is_finite()) {
        None => Verdict::NotMeasured(missing.to_string()),
        Some(v) if (at_most && v <= target) || (!at_most && v >= target) => Verdict::Holds,
        Some(_) => Verdict::Misses,
    }
}

/// The error of `tool`'s runs beside `r` (same experiment, input, keys,
/// M and threads) when every one of them failed: why a bar has no value.
fn peer_failure(rows: &[SummaryRow], r: &SummaryRow, tool: &str) -> Option<String> {
    let p = rows.iter().find(|p| {
        p.tool == tool
            && (&p.experiment, &p.format, p.bytes, &p.keys, p.memory, p.threads)
                == (&r.experiment, &r.format, r.bytes, &r.keys, r.memory, r.threads)
    })?;
    if p.median_s.is_finite() || p.failed == 0 {
        return None;
    }
    let mut e = p.error.replace('|', "/");
    if e.len() > 160 {
        let mut cut = 160;
        while !e.is_char_boundary(cut) {
            cut -= 1;
        }
        e.truncate(cut);
        e.push('…');
    }
    Some(e)
}

/// Every bar of one profile's summary (see the module docs).
pub fn bars(profile: &str, rows: &[SummaryRow]) -> Vec<Bar> {
    let mut out = Vec::new();
    let settings = |r: &SummaryRow| (r.memory, r.threads);
    let mut all_settings: Vec<_> = rows.iter().filter(|r| r.tool == "emsort").map(settings).collect();
    all_settings.sort_unstable();
    all_settings.dedup();
    let suffix = |r: &SummaryRow| {
        if all_settings.len() > 1 {
            format!(" M={} t={}", format_size(r.memory.unwrap_or(0)), r.threads)
        } else {
            String::new()
        }
    };
    let mut bar = |bar: &str,
                   input: String,
                   value: Option<f64>,
                   target: f64,
                   at_most: bool,
                   missing: &str,
                   detail: String| {
        out.push(Bar {
            profile: profile.to_string(),
            bar: bar.to_string(),
            input,
            value: value.filter(|v| v.is_finite()),
            target: format!("{} {target}", if at_most { "≤" } else { "≥" }),
            verdict: judge(value, target, at_most, missing),
            detail,
        });
    };
    // The grid: emsort with no tuning flag, per input.
    for d in
        rows.iter().filter(|r| r.tool == "emsort" && r.experiment == "sort" && r.io == super::super::DEFAULT)
    {
        let input = format!("{}{}", d.format, suffix(d));
        let failed = !d.median_s.is_finite();
        let bounds = format!(
            "default {}; 2 × I/O bound {}, CPU bound {}{}",
            timed(d),
            d.io_bound_s.map(format_seconds).unwrap_or_else(|| "—".into()),
            d.cpu_bound_s.map(format_seconds).unwrap_or_else(|| "—".into()),
            if d.bound.is_empty() { String::new() } else { format!(": {} binds", d.bound) }
        );
        let why = if failed { "every run failed" } else { "no I/O or CPU bound measured" };
        bar(
            "default / max(2 × I/O, CPU bound)",
            input.clone(),
            d.ratio_to_bound,
            BOUND_BAR,
            true,
            why,
            bounds,
        );
        if d.format == "lines" {
            let detail = format!(
                "GNU sort {}, default {}",
                d.gnu_sort_s.map(format_seconds).unwrap_or_else(|| "—".into()),
                timed(d)
            );
            let why = match peer_failure(rows, d, "gnu-sort") {
                _ if failed => "every run failed".to_string(),
                Some(e) => format!("GNU sort failed: {e}"),
                None => "GNU sort did not run".to_string(),
            };
            let why = why.as_str();
            bar(
                "GNU sort / default",
                input.clone(),
                d.speedup_vs_gnu_sort,
                LINES_GNU_BAR,
                false,
                why,
                detail,
            );
        }
        let kinds: Vec<&SummaryRow> = rows
            .iter()
            .filter(|r| {
                r.tool == "emsort"
                    && r.experiment == "sort"
                    && r.io != super::super::DEFAULT
                    && (&r.format, r.bytes, r.memory, r.threads) == (&d.format, d.bytes, d.memory, d.threads)
                    && r.median_s.is_finite()
            })
            .collect();
        let best = kinds.iter().min_by(|a, b| a.median_s.total_cmp(&b.median_s));
        let (value, detail) = match best {
            Some(b) => (
                Some(d.median_s / b.median_s),
                format!("default {}; fastest kind --io {} {}", timed(d), b.io, timed(b)),
            ),
            None => (None, String::new()),
        };
        let why = if failed { "every run failed" } else { "no --io kind in the grid" };
        bar("default / fastest --io kind", input.clone(), value, IO_KIND_BAR, true, why, detail);
        if let Some(b) = d.baseline_s {
            let detail = format!("default {}; baseline {}", timed(d), format_seconds(b));
            bar("default / baseline", input, d.ratio_to_baseline, BASELINE_BAR, true, "", detail);
        }
    }
    // The keys experiment: emsort as a user runs it (its rows with an
    // `--io` kind say the kind in `io`).
    for k in rows.iter().filter(|r| r.tool == "emsort" && r.experiment == "keys" && r.io.is_empty()) {
        let input = format!("csv {}{}", k.keys, suffix(k));
        let failed = !k.median_s.is_finite();
        if k.keys == KeySort::K3n.label() {
            let detail = |peer: &str, t: Option<f64>| {
                format!("{peer} {}, emsort {}", t.map(format_seconds).unwrap_or_else(|| "—".into()), timed(k))
            };
            let why = |tool: &str, peer: &str| {
                if failed {
                    return "every run failed".to_string();
                }
                match peer_failure(rows, k, tool) {
                    Some(e) => format!("{peer} failed: {e}"),
                    None => format!("{peer} did not run"),
                }
            };
            let (g, dd) = (detail("GNU sort", k.gnu_sort_s), detail("DuckDB", k.duckdb_s));
            bar(
                "GNU sort / default",
                input.clone(),
                k.speedup_vs_gnu_sort,
                K3N_GNU_BAR,
                false,
                &why("gnu-sort", "GNU sort"),
                g,
            );
            bar(
                "DuckDB / default",
                input.clone(),
                k.speedup_vs_duckdb,
                K3N_DUCKDB_BAR,
                false,
                &why("duckdb", "DuckDB"),
                dd,
            );
        }
        let kinds = rows.iter().filter(|r| {
            r.tool == "emsort"
                && r.experiment == "keys"
                && !r.io.is_empty()
                && (&r.keys, r.bytes, r.memory, r.threads) == (&k.keys, k.bytes, k.memory, k.threads)
                && r.median_s.is_finite()
        });
        if let Some(b) = kinds.min_by(|a, b| a.median_s.total_cmp(&b.median_s)) {
            let detail = format!("default {}; fastest kind --io {} {}", timed(k), b.io, timed(b));
            let why = if failed { "every run failed" } else { "" };
            bar(
                "default / fastest --io kind",
                input.clone(),
                Some(k.median_s / b.median_s),
                IO_KIND_BAR,
                true,
                why,
                detail,
            );
        }
        if let Some(b) = k.baseline_s {
            let detail = format!("emsort {}; baseline {}", timed(k), format_seconds(b));
            bar("default / baseline", input, k.ratio_to_baseline, BASELINE_BAR, true, "", detail);
        }
    }
    out
}

/// The bars as a Markdown table (one profile's, or all with a profile
/// column when `with_profile`).
pub fn bars_table(bars: &[Bar], with_profile: bool) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    if with_profile {
        s.push_str("| profile | bar | input | value | target | verdict | times (median, min–max) |\n|---|---|---|---|---|---|---|\n");
    } else {
        s.push_str("| bar | input | value | target | verdict | times (median, min–max) |\n|---|---|---|---|---|---|\n");
    }
    for b in bars {
        let verdict = match &b.verdict {
            Verdict::Holds => "holds".to_string(),
            Verdict::Misses => "**MISSES**".to_string(),
            Verdict::NotMeasured(why) => format!("not measured: {why}"),
        };
        let value = b.value.map(|v| format!("{v:.2}")).unwrap_or_else(|| "—".into());
        if with_profile {
            s.push_str(&format!("| {} ", b.profile));
        }
        s.push_str(&format!(
            "| {} | {} | {value} | {} | {verdict} | {} |\n",
            b.bar, b.input, b.target, b.detail
        ));
    }
    s
}

/// Counts: (holds, misses, not measured).
fn counts(bars: &[Bar]) -> (usize, usize, usize) {
    let holds = bars.iter().filter(|b| b.verdict == Verdict::Holds).count();
    let misses = bars.iter().filter(|b| b.verdict == Verdict::Misses).count();
    (holds, misses, bars.len() - holds - misses)
}

/// The inputs of one profile's chart, in order: the grid's formats, then
/// the key sorts; each with its label.
fn chart_inputs(rows: &[SummaryRow]) -> Vec<(String, String, String, Option<u64>, usize)> {
    let rank = |k: &str| KeySort::EVERY.iter().position(|x| x.label() == k).unwrap_or(usize::MAX);
    let mut v: Vec<(String, String, String, Option<u64>, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.tool == "emsort") {
        let key = (r.experiment.clone(), r.format.clone(), r.keys.clone(), r.memory, r.threads);
        if !v.contains(&key) {
            v.push(key);
        }
    }
    v.sort_by_key(|k| (k.0 != "sort", rank(&k.2)));
    v
}

/// The chart of one profile: per input, each tool's median with its min
/// – max (emsort with no tuning flag, each `--io` kind, the baseline, the
/// peers), the CPU bound and 2 × the I/O bound as marks.
fn profile_chart(profile: &str, rows: &[SummaryRow]) -> Option<CategoryChart> {
    let inputs = chart_inputs(rows);
    if inputs.is_empty() {
        return None;
    }
    let many = {
        let mut s: Vec<_> = inputs.iter().map(|i| (i.3, i.4)).collect();
        s.sort_unstable();
        s.dedup();
        s.len() > 1
    };
    let categories: Vec<String> = inputs
        .iter()
        .map(|(e, f, k, m, t)| {
            let name = if e == "keys" { format!("csv {k}") } else { f.clone() };
            if many {
                format!("{name} M={} t={t}", format_size(m.unwrap_or(0)))
            } else {
                name
            }
        })
        .collect();
    let at = |r: &SummaryRow| {
        inputs.iter().position(|(e, f, k, m, t)| {
            (e, f, k, *t) == (&r.experiment, &r.format, &r.keys, r.threads)
                && (r.memory.is_none() || r.memory == *m)
        })
    };
    let is_default =
        |r: &SummaryRow| (r.experiment == "keys" && r.io.is_empty()) || r.io == super::super::DEFAULT;
    // (label, which rows)
    let mut kinds: Vec<String> =
        rows.iter().filter(|r| r.tool == "emsort" && !is_default(r)).map(|r| r.io.clone()).collect();
    kinds.sort();
    kinds.dedup();
    type Pick<'a> = Box<dyn Fn(&SummaryRow) -> bool + 'a>;
    let mut picks: Vec<(String, Pick<'_>)> = vec![(
        "emsort (no tuning flag)".into(),
        Box::new(move |r: &SummaryRow| r.tool == "emsort" && is_default(r)),
    )];
    for k in kinds {
        let label = format!("emsort --io {k}");
        picks
            .push((label, Box::new(move |r: &SummaryRow| r.tool == "emsort" && !is_default(r) && r.io == k)));
    }
    picks.push((
        "emsort-baseline".into(),
        Box::new(move |r: &SummaryRow| r.tool == "emsort-baseline" && is_default(r)),
    ));
    for peer in ["gnu-sort", "uutils-sort", "duckdb", "stxxl"] {
        picks.push((peer.into(), Box::new(move |r: &SummaryRow| r.tool == peer)));
    }
    let mut series: Vec<RangeSeries> = picks
        .iter()
        .map(|(label, pick)| RangeSeries {
            label: label.clone(),
            points: rows
                .iter()
                .filter(|r| pick(r))
                .filter_map(|r| {
                    Some(RangePoint { category: at(r)?, value: r.median_s, range: Some((r.min_s, r.max_s)) })
                })
                .collect(),
            reference: false,
        })
        .collect();
    let mark =
        |label: &str, value: &dyn Fn(&SummaryRow) -> Option<f64>, pick: &dyn Fn(&SummaryRow) -> bool| {
            RangeSeries {
                label: label.into(),
                points: rows
                    .iter()
                    .filter(|r| pick(r))
                    .filter_map(|r| Some(RangePoint { category: at(r)?, value: value(r)?, range: None }))
                    .collect(),
                reference: true,
            }
        };
    series.push(mark("CPU bound (emsort on tmpfs)", &|r| Some(r.median_s), &|r| r.tool == "cpu-bound"));
    series.push(mark("2 × I/O bound", &|r| r.io_bound_s, &|r| r.tool == "emsort" && is_default(r)));
    let reps = rows.iter().map(|r| r.reps).max().unwrap_or(0);
    let n = rows.iter().map(|r| r.bytes).max().unwrap_or(0);
    Some(times_chart(
        format!("profile {profile}: N ≈ {}, each tool per input ({reps} rep(s))", format_size(n)),
        "input",
        categories,
        series,
    ))
}

/// Writes `dst`: the CSV files `parts` (profile, file) one after the
/// other, a first column `profile` added; every part must have the same
/// header.
fn merge_with_profile(dst: &Path, parts: &[(String, PathBuf)]) -> Result<()> {
    let mut w =
        csv::Writer::from_path(dst).map_err(|e| Error::Campaign(format!("{}: {e}", dst.display())))?;
    let mut header: Option<csv::StringRecord> = None;
    let bad = |p: &Path, e: csv::Error| Error::Campaign(format!("{}: {e}", p.display()));
    for (profile, path) in parts {
        let mut r = csv::Reader::from_path(path).map_err(|e| bad(path, e))?;
        let h = r.headers().map_err(|e| bad(path, e))?.clone();
        match &header {
            None => {
                let mut first = csv::StringRecord::from(vec!["profile"]);
                first.extend(h.iter());
                w.write_record(&first).map_err(|e| bad(dst, e))?;
                header = Some(h);
            }
            Some(known) if *known != h => {
                return Err(Error::Campaign(format!(
                    "{}: its columns differ from the other profiles'",
                    path.display()
                )));
            }
            Some(_) => {}
        }
        for rec in r.records() {
            let rec = rec.map_err(|e| bad(path, e))?;
            let mut row = csv::StringRecord::from(vec![profile.as_str()]);
            row.extend(rec.iter());
            w.write_record(&row).map_err(|e| bad(dst, e))?;
        }
    }
    w.flush().map_err(|e| Error::io("write", dst, e))
}

/// What [`write_reports`] made.
pub(crate) struct Reports {
    pub plots: Vec<PathBuf>,
    pub bars: Vec<Bar>,
}

/// Step 3 of the matrix: every report from the profiles' `raw.csv`.
pub(crate) fn write_reports(
    out: &Path,
    records: &[ProfileRecord],
    campaign: &Campaign,
    io_bound: &IoBound,
) -> Result<Reports> {
    let mut raw_parts = Vec::new();
    let mut summary_parts = Vec::new();
    let mut all_bars = Vec::new();
    let mut charts: Vec<(String, CategoryChart)> = Vec::new();
    let mut per_profile = String::new();
    for r in records {
        let Some(dir) = r.results.as_ref().map(|d| out.join(d)) else { continue };
        // A profile that failed before its first row may leave an empty
        // raw.csv (no header): nothing of it to report or merge.
        if !std::fs::metadata(dir.join("raw.csv")).is_ok_and(|m| m.len() > 0) {
            continue;
        }
        let summary = summary_from_csv(&dir)?;
        raw_parts.push((r.name.clone(), dir.join("raw.csv")));
        summary_parts.push((r.name.clone(), dir.join("summary.csv")));
        let bars = bars(&r.name, &summary);
        let (h, m, n) = counts(&bars);
        per_profile.push_str(&format!(
            "\n### {}\n\n{}{h} hold, {m} miss, {n} not measured. Folder `{}/`.\n\n{}",
            r.name,
            if r.status == "measured" { String::new() } else { format!("Status: {}.\n\n", r.status) },
            r.name,
            bars_table(&bars, false)
        ));
        if let Some(c) = profile_chart(&r.name, &summary) {
            charts.push((format!("matrix_{}", r.name), c));
        }
        all_bars.extend(bars);
    }
    if raw_parts.is_empty() {
        for name in ["raw.csv", "summary.csv"] {
            let p = out.join(name);
            std::fs::write(&p, "profile\n").map_err(|e| Error::io("write", &p, e))?;
        }
    } else {
        merge_with_profile(&out.join("raw.csv"), &raw_parts)?;
        merge_with_profile(&out.join("summary.csv"), &summary_parts)?;
    }
    let plots = draw_all(&out.join("plots"), charts)?;
    let readme = readme(out, records, campaign, io_bound, &all_bars, &per_profile, &plots);
    let path = out.join("README.md");
    std::fs::write(&path, readme).map_err(|e| Error::io("write", &path, e))?;
    Ok(Reports { plots, bars: all_bars })
}

fn readme(
    out: &Path,
    records: &[ProfileRecord],
    campaign: &Campaign,
    io_bound: &IoBound,
    bars: &[Bar],
    per_profile: &str,
    plots: &[PathBuf],
) -> String {
    let settings = campaign.settings();
    let mut profiles = String::from(
        "| profile | status | file system (mount options; its own options) | SIMD | 1 MiB QD 1 read / write | 1 MiB QD 32 read / write |\n|---|---|---|---|---|---|\n",
    );
    for r in records {
        let (fs, simd, lat, bw) = match &r.facts {
            Some(f) => {
                let fs = match &f.mount {
                    Some(m) => {
                        format!("{} on `{}` ({}; {})", m.fs_type, m.source, m.mount_options, m.super_options)
                    }
                    None => "unknown".into(),
                };
                let (lat, bw) = match &f.device {
                    Some(d) => (
                        format!("{:.2} / {:.2} ms", d.read_latency_qd1_ms, d.write_latency_qd1_ms),
                        format!(
                            "{} / {}",
                            super::rate(d.read_bandwidth_qd32),
                            super::rate(d.write_bandwidth_qd32)
                        ),
                    ),
                    None => ("—".into(), "—".into()),
                };
                (fs, f.simd.clone(), lat, bw)
            }
            None => ("—".into(), "—".into(), "—".into(), "—".into()),
        };
        profiles.push_str(&format!("| `{}` | {} | {fs} | {simd} | {lat} | {bw} |\n", r.name, r.status));
    }
    let descriptions: String = records
        .iter()
        .filter_map(|r| r.facts.as_ref())
        .map(|f| {
            let device = match (&f.device, &f.device_note) {
                (Some(d), _) => device_sentence(d),
                (None, Some(n)) => format!("no device facts: {n}"),
                (None, None) => "no device facts".into(),
            };
            let image = f.image.as_ref().map(|i| format!(" ({i})")).unwrap_or_default();
            format!("- `{}`: {}{image}; {device}.\n", f.name, f.description)
        })
        .collect();
    let (h, m, n) = counts(bars);
    let misses: Vec<String> = bars
        .iter()
        .filter(|b| b.verdict == Verdict::Misses)
        .map(|b| {
            format!(
                "{} {} on {} ({:.2}, target {})",
                b.profile,
                b.bar,
                b.input,
                b.value.unwrap_or(f64::NAN),
                b.target
            )
        })
        .collect();
    let plot_list: String = plots
        .iter()
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let profile = name.trim_start_matches("matrix_").trim_end_matches(".svg");
            format!(
                "  - `{name}`: profile `{profile}`: per input, each tool's median (marker) with its fastest and slowest \
                 repetition (bar), the CPU bound and 2 × the I/O bound as marks across the input\n"
            )
        })
        .collect();
    let cpu =
        records.iter().find_map(|r| r.facts.as_ref()?.cpu_model.clone()).unwrap_or_else(|| "unknown".into());
    format!(
        "# emsort machine-profile matrix (issue 38)\n\n\
         Command: `{cmd}`\n\n\
         One sort campaign — the parameter file's grid, its peers and both bounds — on each machine profile, in one \
         run, on {cpu} ({date}). Page cache emptied before every run with `{cache}`. The I/O bound: {iob}.\n\n\
         ## Profiles\n\n{profiles}\n{descriptions}\n\
         ## Issue 38's bars\n\n\
         Over all profiles: {h} hold, {m} miss, {n} not measured.{missed}\n\n\
         Per profile, from its summary (medians of the repetitions): `default` is emsort with no tuning flag \
         (no `--io`, `--fan-in`, `--policy` or `--block-size`; in the keys experiment emsort always runs so). \
         Bars: default ≤ {bb} × max(2 × I/O bound, CPU bound) on u32, records and lines; GNU sort ≥ {lg} × default \
         on lines; on csv `-t, -k3,3n` GNU sort ≥ {kg} × and DuckDB ≥ {kd} × default (same M and threads); default \
         ≤ {ik} × the fastest `--io` kind of the grid; with `--baseline`, default ≤ {bl} × the earlier binary. A bar \
         without its peer or bound is not measured, with the reason.\n{per_profile}\n\
         ## Files\n\n\
         - `raw.csv`, `summary.csv`: every profile's rows, a first column `profile` (the columns of each profile's \
         own files; its README lists them).\n\
         - `profiles.json`: per profile its status (`measured`, `skipped: WHY`, `failed: WHY`), its folder, runs, \
         seconds and facts: the directory, its mount from `/proc/self/mountinfo` (file system, source, mount \
         options, the file system's own options), the image and loop device, the CPU model, the detected and used \
         SIMD level, the device as fio measured it there (1 MiB O_DIRECT requests: mean latency at queue depth 1, \
         bandwidth at queue depth 32) and how the I/O bound was measured.\n\
         - `PROFILE/`: the profile's own campaign: `raw.csv`, `summary.csv`, `machine.json` (with `profile`: the \
         same facts), `README.md`, `plots/`.\n\
         - `plots/`: {plots}\n\n\
         A profile's own summary and plots are redrawn from its raw.csv with `emsort bench sort --plot-only \
         {dir}/PROFILE`.\n",
        cmd = settings.command_line,
        date = crate::machine::local_datetime(),
        cache = settings.cache,
        iob = io_bound.describe(),
        missed = if misses.is_empty() { String::new() } else { format!(" Misses: {}.", misses.join("; ")) },
        bb = BOUND_BAR,
        lg = LINES_GNU_BAR,
        kg = K3N_GNU_BAR,
        kd = K3N_DUCKDB_BAR,
        ik = IO_KIND_BAR,
        bl = BASELINE_BAR,
        plots = if plot_list.is_empty() { "no chart.".to_string() } else { format!("\n{}", plot_list.trim_end()) },
        dir = crate::machine::relative(out),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::record::{summarise, RawRow};

    fn row(tool: &str, format: &str, io: &str, rep: u32, secs: f64) -> RawRow {
        let mut r = RawRow::new(tool, format, 1 << 20, 10, 2, rep);
        r.memory = Some(1 << 18);
        r.io = io.into();
        r.seconds = secs;
        r
    }

    /// The bars hold, miss or go unmeasured as the medians say.
    #[test]
    fn judges_each_bar() {
        let mut rows = Vec::new();
        for rep in 1..=3 {
            let j = rep as f64 * 0.01;
            rows.push(row("emsort", "lines", "default", rep, 1.0 + j));
            rows.push(row("emsort", "lines", "direct", rep, 0.9 + j));
            rows.push(row("emsort", "lines", "uring", rep, 1.2 + j));
            rows.push(row("gnu-sort", "lines", "", rep, 5.0 + j));
            rows.push(row("io-bound", "lines", "fio", rep, 0.3));
            rows.push(row("cpu-bound", "lines", "buffered", rep, 0.95));
            rows.push(row("emsort", "u32", "default", rep, 2.0));
            let mut k = row("emsort", "csv", "", rep, 1.0);
            k.experiment = "keys".into();
            k.keys = KeySort::K3n.label();
            let mut g = k.clone();
            g.tool = "gnu-sort".into();
            g.seconds = 4.0;
            let mut dd = k.clone();
            dd.tool = "duckdb".into();
            dd.verified = crate::sort::FAILED.into();
            dd.error = "exit status: 1: Out of Memory Error".into();
            // The same sort with --io kinds: buffered 1.0 / 0.98 ≤ 1.05 holds.
            let mut kd = k.clone();
            kd.io = "direct".into();
            kd.seconds = 1.2;
            let mut kb = k.clone();
            kb.io = "buffered".into();
            kb.seconds = 0.98;
            rows.extend([k, g, dd, kd, kb]);
        }
        let bars = bars("root", &summarise(&rows));
        let find = |bar: &str, input: &str| {
            bars.iter().find(|b| b.bar.starts_with(bar) && b.input == input).unwrap()
        };
        // lines: 1.02 / max(0.6, 0.95) = 1.07 ≤ 1.3.
        let b = find("default / max", "lines");
        assert_eq!(b.verdict, Verdict::Holds, "{b:?}");
        assert!((b.value.unwrap() - 1.02 / 0.95).abs() < 1e-9);
        assert_eq!(find("GNU sort", "lines").verdict, Verdict::Holds);
        // 1.02 / 0.92 = 1.11 > 1.05: the default loses to --io direct.
        let b = find("default / fastest", "lines");
        assert_eq!(b.verdict, Verdict::Misses, "{b:?}");
        assert!(b.detail.contains("--io direct"), "{b:?}");
        // u32: no bound, no kind measured.
        assert!(matches!(find("default / max", "u32").verdict, Verdict::NotMeasured(_)));
        assert!(matches!(find("default / fastest", "u32").verdict, Verdict::NotMeasured(_)));
        // csv -k3,3n: GNU 4 × < 5 misses; DuckDB not measured.
        assert_eq!(find("GNU sort", "csv -t, -k3,3n").verdict, Verdict::Misses);
        let b = find("DuckDB", "csv -t, -k3,3n");
        let want = "DuckDB failed: exit status: 1: Out of Memory Error";
        assert!(matches!(b.verdict, Verdict::NotMeasured(ref w) if w == want), "{b:?}");
        let b = find("default / fastest", "csv -t, -k3,3n");
        assert_eq!(b.verdict, Verdict::Holds, "{b:?}");
        assert!(b.detail.contains("--io buffered") && (b.value.unwrap() - 1.0 / 0.98).abs() < 1e-9, "{b:?}");
        // The kinds' rows are no defaults: one GNU bar per key sort, from the default's time.
        assert_eq!(
            bars.iter().filter(|b| b.bar.starts_with("GNU sort") && b.input.starts_with("csv")).count(),
            1
        );
        let table = bars_table(&bars, false);
        assert!(table.contains("**MISSES**") && table.contains("| holds |"), "{table}");
        assert!(profile_chart("root", &summarise(&rows)).is_some());
    }

    #[test]
    fn merges_csv_files_with_a_profile_column() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a.csv"), tmp.path().join("b.csv"));
        std::fs::write(&a, "x,y\n1,2\n").unwrap();
        std::fs::write(&b, "x,y\n3,4\n5,6\n").unwrap();
        let dst = tmp.path().join("all.csv");
        merge_with_profile(&dst, &[("root".into(), a.clone()), ("xfs".into(), b)]).unwrap();
        assert_eq!(std::fs::read_to_string(&dst).unwrap(), "profile,x,y\nroot,1,2\nxfs,3,4\nxfs,5,6\n");
        let c = tmp.path().join("c.csv");
        std::fs::write(&c, "x,z\n1,2\n").unwrap();
        assert!(merge_with_profile(&dst, &[("a".into(), a), ("c".into(), c)]).is_err());
    }
}
