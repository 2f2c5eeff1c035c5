//! Calibrate-then-replay rounds (issue 38, point 5): `emsort bench readers
//! --traces --rounds N`.
//!
//! The issue saw the adaptive reader take 0.73×, 1.15× and 1.57× the best
//! fixed reader's time on the mixed trace in three runs of `emsort
//! calibrate --quick` followed by a replay: each calibration moved the
//! thresholds, and the reader with them. This experiment repeats that N
//! times in one run, so that the spread shows, and with `compare_one_run`
//! puts the calibration's rules before the issue beside the stable ones in
//! the same rounds:
//!
//! 1. The traces are generated once (into the work directory).
//! 2. Per round: calibrate with the stable rules (`paired`) and, when
//!    comparing, with the rules before (`one-run`, [`Plan::one_run`](crate::calibrate::Plan::one_run)), the
//!    two in alternating order; each written to a file in the work
//!    directory and loaded back with [`Calibration::load`], as the user's
//!    adaptive reader loads it. Then per trace `reps` replays of every
//!    variant — the fixed readers (`stream`, `mmap`, `pread` B = 4M,
//!    `uring` B = 4M Q = 32) and the adaptive reader with each round's
//!    calibration — each rep in a Williams order, every run on a cold cache.
//! 3. From the CSV alone ([`redraw`]): per round and calibration the
//!    adaptive reader's median time over the best fixed reader's (the
//!    fixed reader of least median time in that round), `rounds.csv`;
//!    per calibration its median and range over the rounds, `summary.csv`;
//!    per calibration and key how often the value changed from one round
//!    to the next and how often it was inconclusive, `stability.csv`; the
//!    plot `plots/rounds_ratio.svg`; `README.md`.
//!
//! Files: `raw.csv` (a row per run), `calibrations.csv` (a row per round ×
//! calibration × key: the value, its origin, the calibration's time),
//! `rounds.csv`, `summary.csv`, `stability.csv`, `machine.json`,
//! `plots/rounds_ratio.svg`, `README.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use emsort_io::cache::CacheMethod;
use emsort_io::reader::calibration::Key;
use emsort_io::{Calibration, Progress, ReaderConfig, ReaderKind};

use crate::calibrate::{write_calibration, Calibrate, Plan as CalibrationPlan};
use crate::campaign::interrupted;
use crate::chart::{draw_all, CategoryChart, Legend, RangePoint, RangeSeries, Ticks};
use crate::grid::round_order;
use crate::replay::{generate, Replay, Trace, Workload};
use crate::stats::{median, Stats};
use crate::{Error, Result};

/// The calibration with the stable rules, as `calibrations.csv` and
/// `raw.csv` name it.
pub const PAIRED: &str = "paired";
/// The calibration with the rules before issue 38.
pub const ONE_RUN: &str = "one-run";
/// A time within this share of the best fixed reader's counts as "as fast"
/// (issue 5 §5's target).
pub const AS_FAST: f64 = 1.05;

/// The file beside `raw.csv` that marks a rounds campaign.
pub const CALIBRATIONS_CSV: &str = "calibrations.csv";

/// One replay: a row of `raw.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RunRow {
    pub trace: String,
    pub scale: f64,
    pub seed: u64,
    /// The calibrate-then-replay round, from 1.
    pub round: usize,
    /// The replay within the round, from 1.
    pub rep: usize,
    /// The variant's place in the rep's order, from 1.
    pub position: usize,
    pub reader: String,
    /// For `adaptive`: the calibration it used (`paired`, `one-run`); empty for the fixed readers.
    pub calibration: String,
    pub seconds: f64,
    pub bytes_read: u64,
    pub mib_s: f64,
    pub mmap_bytes: Option<u64>,
    pub pread_bytes: Option<u64>,
    pub uring_bytes: Option<u64>,
    pub direct_bytes: Option<u64>,
}

/// One value of one round's calibration: a row of `calibrations.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct CalibrationRow {
    pub round: usize,
    pub calibration: String,
    /// 1 when this calibration ran first in its round, 2 when second.
    pub order: usize,
    /// Wall time of the whole calibration.
    pub seconds: f64,
    pub key: String,
    pub value: String,
    /// `measured`, `inconclusive` or empty (the rules before issue 38 mark nothing).
    pub origin: String,
}

/// Per trace, round and calibration: a row of `rounds.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RoundRow {
    pub trace: String,
    pub round: usize,
    pub calibration: String,
    pub reps: usize,
    /// The adaptive reader's median time over the round's reps.
    pub adaptive_s: f64,
    /// The fixed reader of least median time in this round.
    pub best_fixed: String,
    pub best_fixed_s: f64,
    pub ratio: f64,
}

/// Per trace and calibration over all rounds: a row of `summary.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct RoundsSummary {
    pub trace: String,
    pub calibration: String,
    pub rounds: usize,
    pub median_ratio: f64,
    pub min_ratio: f64,
    pub max_ratio: f64,
    /// Rounds with a ratio at most [`AS_FAST`].
    pub rounds_as_fast: usize,
    /// Rounds with a ratio below 1.
    pub rounds_faster: usize,
}

/// Per calibration and key over all rounds: a row of `stability.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct StabilityRow {
    pub calibration: String,
    pub key: String,
    pub rounds: usize,
    /// Rounds whose value differs from the previous round's.
    pub changes: usize,
    pub distinct_values: usize,
    /// Rounds in which the value was marked inconclusive (the thesis' value).
    pub inconclusive: usize,
    /// Each value and how many rounds gave it, most frequent first: `4M×7 256K×3`.
    pub values: String,
}

/// What [`measure`] needs of the campaign.
pub(crate) struct Setup<'a> {
    pub work: &'a Path,
    pub out: &'a Path,
    pub traces: &'a [(Workload, f64)],
    pub seed: u64,
    pub rounds: usize,
    pub reps: usize,
    pub calibration: CalibrationPlan,
    pub compare_one_run: bool,
    pub cache: CacheMethod,
    pub command_line: &'a str,
    pub keep_files: bool,
}

/// Steps 1 and 2 of the module docs: writes `raw.csv` (at `raw_csv`) and
/// `calibrations.csv`; returns the traces generated (for
/// `machine.json`) and the replays run.
pub(crate) fn measure(
    s: &Setup<'_>,
    raw_csv: &Path,
    mut generated: impl FnMut(Workload, f64, &crate::replay::GenSummary),
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<u64> {
    let mut traces = Vec::new();
    for &(w, scale) in s.traces {
        let dir = s.work.join(w.name());
        let g = generate(&dir, w, scale, s.seed, progress, cancel)?;
        generated(w, scale, &g);
        traces.push((w, scale, dir, Trace::read(&g.trace_path)?));
    }
    let result = rounds(s, raw_csv, &traces, progress, cancel);
    if !s.keep_files {
        for (_, _, dir, _) in &traces {
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(|e| Error::io("remove", dir, e))?;
            }
        }
    }
    result
}

fn rounds(
    s: &Setup<'_>,
    raw_csv: &Path,
    traces: &[(Workload, f64, PathBuf, Trace)],
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<u64> {
    let mut raw = crate::csv_log::RawWriter::<RunRow>::create(raw_csv)?;
    let mut cals = crate::csv_log::RawWriter::<CalibrationRow>::create(&s.out.join(CALIBRATIONS_CSV))?;
    let mut rules = vec![(PAIRED, s.calibration.clone())];
    if s.compare_one_run {
        rules.push((ONE_RUN, s.calibration.clone().one_run(1)));
    }
    let fixed = [ReaderKind::Stream, ReaderKind::Mmap, ReaderKind::Pread, ReaderKind::Uring];
    let mut runs = 0;
    for round in 1..=s.rounds {
        if cancel.load(Ordering::Relaxed) {
            return Err(interrupted(s.work));
        }
        // The calibrations, in alternating order.
        let mut loaded: Vec<(&str, Calibration)> = Vec::new();
        let order: Vec<usize> =
            if round % 2 == 1 { (0..rules.len()).collect() } else { (0..rules.len()).rev().collect() };
        for (place, &i) in order.iter().enumerate() {
            let (name, plan) = &rules[i];
            progress.message(&format!("round {round}: calibrate ({name})"));
            let out = Calibrate::new(s.work).plan(plan.clone()).cache(s.cache).run(progress, cancel)?;
            let path = s.work.join(format!("calibration-{round}-{name}"));
            write_calibration(&path, &out, s.command_line)?;
            let c = Calibration::load(&path)?;
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            for k in Key::ALL {
                cals.write(&CalibrationRow {
                    round,
                    calibration: name.to_string(),
                    order: place + 1,
                    seconds: out.seconds,
                    key: k.name().to_string(),
                    value: c.value_text(k),
                    origin: c.origins.get(k).name().to_string(),
                })?;
            }
            loaded.push((name, c));
        }
        loaded.sort_by_key(|(name, _)| rules.iter().position(|r| r.0 == *name));
        // The variants: the fixed readers, then the adaptive reader with each calibration.
        let mut variants: Vec<(ReaderKind, &str, ReaderConfig)> =
            fixed.iter().map(|&k| (k, "", ReaderConfig::default())).collect();
        for (name, c) in &loaded {
            variants.push((ReaderKind::Adaptive, name, ReaderConfig::default().calibration(c.clone())));
        }
        for (w, scale, _, trace) in traces {
            for rep in 0..s.reps {
                let order = round_order(variants.len(), (round - 1) * s.reps + rep);
                for (position, i) in order.into_iter().enumerate() {
                    let (kind, cal, cfg) = &variants[i];
                    let o = Replay::new(&[*kind])
                        .config(cfg.clone())
                        .cache(s.cache)
                        .run(trace, progress, cancel)?;
                    let r = &o.results[0];
                    let c = r.choices;
                    raw.write(&RunRow {
                        trace: w.name().to_string(),
                        scale: *scale,
                        seed: s.seed,
                        round,
                        rep: rep + 1,
                        position: position + 1,
                        reader: kind.name().to_string(),
                        calibration: cal.to_string(),
                        seconds: r.seconds,
                        bytes_read: r.bytes_read,
                        mib_s: r.mib_per_s(),
                        mmap_bytes: c.map(|c| c.mmap_bytes),
                        pread_bytes: c.map(|c| c.pread_bytes),
                        uring_bytes: c.map(|c| c.uring_bytes),
                        direct_bytes: c.map(|c| c.direct_bytes),
                    })?;
                    runs += 1;
                }
            }
        }
    }
    Ok(runs)
}

/// Per trace, round and calibration, the adaptive reader's median time
/// over the best fixed reader's median time in that round.
pub fn round_rows(rows: &[RunRow]) -> Vec<RoundRow> {
    // (trace rank, round) → variant (reader, calibration) → times
    type Variants<'a> = BTreeMap<(&'a str, &'a str), Vec<f64>>;
    let mut by: BTreeMap<((usize, String), usize), Variants<'_>> = BTreeMap::new();
    for r in rows {
        let key = (super::record::trace_rank(&r.trace), r.round);
        by.entry(key).or_default().entry((&r.reader, &r.calibration)).or_default().push(r.seconds);
    }
    let mut out = Vec::new();
    for ((trace, round), variants) in by {
        let best = variants
            .iter()
            .filter(|((reader, _), _)| super::record::is_fixed(reader))
            .filter_map(|((reader, _), t)| median(t).map(|m| (*reader, m)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((best_fixed, best_s)) = best else { continue };
        for ((reader, cal), t) in &variants {
            if super::record::is_fixed(reader) {
                continue;
            }
            let Some(a) = median(t) else { continue };
            out.push(RoundRow {
                trace: trace.1.clone(),
                round,
                calibration: cal.to_string(),
                reps: t.len(),
                adaptive_s: a,
                best_fixed: best_fixed.to_string(),
                best_fixed_s: best_s,
                ratio: a / best_s,
            });
        }
    }
    out.sort_by_key(|r| (rule_rank(&r.calibration), r.round));
    out.sort_by_key(|r| super::record::trace_rank(&r.trace));
    out
}

/// A name's rank: its place in a fixed order, then the name.
type Rank = (usize, String);

/// `paired` first, then `one-run`, then others by name.
fn rule_rank(name: &str) -> Rank {
    ([PAIRED, ONE_RUN].iter().position(|&n| n == name).unwrap_or(2), name.to_string())
}

/// Per trace and calibration: the ratio's median and range over the rounds.
pub fn summarise(rounds: &[RoundRow]) -> Vec<RoundsSummary> {
    let mut by: BTreeMap<(Rank, Rank), Vec<f64>> = BTreeMap::new();
    for r in rounds {
        by.entry((super::record::trace_rank(&r.trace), rule_rank(&r.calibration))).or_default().push(r.ratio);
    }
    by.into_iter()
        .filter_map(|((trace, cal), ratios)| {
            let s = Stats::of(&ratios)?;
            Some(RoundsSummary {
                trace: trace.1,
                calibration: cal.1,
                rounds: s.count,
                median_ratio: s.median,
                min_ratio: s.min,
                max_ratio: s.max,
                rounds_as_fast: ratios.iter().filter(|&&x| x <= AS_FAST).count(),
                rounds_faster: ratios.iter().filter(|&&x| x < 1.0).count(),
            })
        })
        .collect()
}

/// Per calibration and key: how often the value changed between
/// consecutive rounds, how many values it took, how often it was
/// inconclusive.
pub fn stability(cals: &[CalibrationRow]) -> Vec<StabilityRow> {
    let mut by: BTreeMap<(Rank, usize), Vec<(usize, &CalibrationRow)>> = BTreeMap::new();
    for c in cals {
        let k = Key::from_name(&c.key).map_or(usize::MAX, |k| k as usize);
        by.entry((rule_rank(&c.calibration), k)).or_default().push((c.round, c));
    }
    by.into_values()
        .map(|mut v| {
            v.sort_by_key(|x| x.0);
            let values: Vec<&str> = v.iter().map(|x| x.1.value.as_str()).collect();
            let mut counts: Vec<(&str, usize)> = Vec::new();
            for &x in &values {
                match counts.iter_mut().find(|c| c.0 == x) {
                    Some(c) => c.1 += 1,
                    None => counts.push((x, 1)),
                }
            }
            counts.sort_by_key(|c| std::cmp::Reverse(c.1));
            StabilityRow {
                calibration: v[0].1.calibration.clone(),
                key: v[0].1.key.clone(),
                rounds: v.len(),
                changes: values.windows(2).filter(|w| w[0] != w[1]).count(),
                distinct_values: counts.len(),
                inconclusive: v.iter().filter(|x| x.1.origin == "inconclusive").count(),
                values: counts.iter().map(|(x, n)| format!("{x}×{n}")).collect::<Vec<_>>().join(" "),
            }
        })
        .collect()
}

/// What [`redraw`] wrote.
#[derive(Debug, Clone)]
pub struct RoundsReport {
    /// `rounds.csv`.
    pub rounds: Vec<RoundRow>,
    /// `summary.csv`.
    pub summary: Vec<RoundsSummary>,
    /// `stability.csv`.
    pub stability: Vec<StabilityRow>,
    /// The SVG files drawn.
    pub plots: Vec<PathBuf>,
    /// `README.md`.
    pub readme: PathBuf,
}

/// Step 3 of the module docs, and `--plot-only` of a rounds campaign:
/// from `raw.csv`, `calibrations.csv` and `machine.json` in `dir`, writes
/// `rounds.csv`, `summary.csv`, `stability.csv`, `plots/rounds_ratio.svg`
/// and `README.md`. The same files give the same bytes.
pub fn redraw(dir: &Path) -> Result<RoundsReport> {
    let runs: Vec<RunRow> = crate::csv_log::read_rows(&dir.join("raw.csv"))?;
    let cals: Vec<CalibrationRow> = crate::csv_log::read_rows(&dir.join(CALIBRATIONS_CSV))?;
    let rounds = round_rows(&runs);
    let summary = summarise(&rounds);
    let stability = stability(&cals);
    crate::csv_log::write_rows(&dir.join("rounds.csv"), &rounds)?;
    crate::csv_log::write_rows(&dir.join("summary.csv"), &summary)?;
    crate::csv_log::write_rows(&dir.join("stability.csv"), &stability)?;
    let plots = draw_all(&dir.join("plots"), charts(&rounds))?;
    let machine = crate::machine::read_facts(dir)?;
    let readme = dir.join("README.md");
    std::fs::write(&readme, readme_text(&runs, &rounds, &summary, &stability, &machine))
        .map_err(|e| Error::io("write", &readme, e))?;
    Ok(RoundsReport { rounds, summary, stability, plots, readme })
}

fn charts(rounds: &[RoundRow]) -> Vec<(String, CategoryChart)> {
    let mut traces: Vec<&str> = rounds.iter().map(|r| r.trace.as_str()).collect();
    traces.dedup();
    let n = rounds.iter().map(|r| r.round).max().unwrap_or(0);
    let categories: Vec<String> = (1..=n).map(|r| r.to_string()).collect();
    let mut rules: Vec<&str> = rounds.iter().map(|r| r.calibration.as_str()).collect();
    rules.sort_by_key(|r| rule_rank(r));
    rules.dedup();
    let mut series: Vec<RangeSeries> = Vec::new();
    for t in &traces {
        for rule in &rules {
            let label = match (traces.len(), *rule) {
                (1, PAIRED) => "paired rounds, inconclusive → thesis' value (now)".to_string(),
                (1, ONE_RUN) => "one run per point (before)".to_string(),
                (1, r) => r.to_string(),
                (_, r) => format!("{t}: {r}"),
            };
            let points = rounds
                .iter()
                .filter(|r| r.trace == *t && r.calibration == *rule)
                .map(|r| RangePoint { category: r.round - 1, value: r.ratio, range: None })
                .collect();
            series.push(RangeSeries { label, points, reference: false });
        }
    }
    series.push(RangeSeries {
        label: "best fixed reader = 1".into(),
        points: (0..n).map(|i| RangePoint { category: i, value: 1.0, range: None }).collect(),
        reference: true,
    });
    vec![(
        "rounds_ratio".to_string(),
        CategoryChart {
            title: format!("Adaptive reader ÷ best fixed reader, {n} calibrate-then-replay rounds"),
            x_label: "round (a new calibration each)".into(),
            y_label: "adaptive time / best fixed reader's (medians of the round)".into(),
            y_ticks: Ticks::Count,
            categories,
            series,
            legend: Legend::UpperRight,
        },
    )]
}

fn readme_text(
    runs: &[RunRow],
    rounds: &[RoundRow],
    summary: &[RoundsSummary],
    stability: &[StabilityRow],
    machine: &serde_json::Value,
) -> String {
    let fact = |k: &str| super::report::fact(machine, k);
    let mut s = String::new();
    let n = rounds.iter().map(|r| r.round).max().unwrap_or(0);
    let reps = runs.iter().map(|r| r.rep).max().unwrap_or(0);
    let _ = writeln!(s, "# The adaptive reader after {n} calibrations: calibrate-then-replay rounds\n");
    let _ = writeln!(
        s,
        "Written by `emsort bench readers --traces --rounds N` from `raw.csv`, `calibrations.csv` and \
         `machine.json`; `emsort bench readers --plot-only DIR` writes it again (with `rounds.csv`, \
         `summary.csv`, `stability.csv` and `plots/`) from those files alone.\n"
    );
    let _ = writeln!(s, "```sh\n{}\n```\n", fact("command_line"));
    let scales: Vec<String> = {
        let mut v: Vec<String> = runs.iter().map(|r| format!("{} {}", r.trace, r.scale)).collect();
        v.dedup();
        v
    };
    let _ = writeln!(
        s,
        "Each round: a new calibration (`emsort calibrate{}`'s plan) with the stable rules (`paired`: \
         paired rounds, a value other than the thesis' kept only when faster beyond the spread, \
         else the thesis' value marked inconclusive){}, then the trace ({}, `emsort gen-trace`, \
         generated once) replayed {reps} time{} by every fixed reader and by the adaptive reader \
         with each calibration, each time in a Williams order, every run on a cold cache (`{}`). \
         The ratio of a round is the adaptive reader's median time over the best fixed reader's \
         median time in that round.\n",
        if machine.get("quick").and_then(|q| q.as_bool()) == Some(true) { " --quick" } else { "" },
        if rounds.iter().any(|r| r.calibration == ONE_RUN) {
            ", and with the rules before issue 38 (`one-run`: one run per point, medians alone, \
             as `emsort calibrate --one-run`), the two calibrations in alternating order"
        } else {
            ""
        },
        scales.join(", "),
        if reps == 1 { "" } else { "s" },
        fact("cache_method"),
    );
    let _ = writeln!(
        s,
        "Machine: {} ({} cores), SIMD {}, {} RAM; {}; data on {} (`{}`, mount options `{}`) \
         with `read_ahead_kb` {}; emsort {}, {}. **The machine was shared** with other engineers \
         compiling and measuring at the same time: single times mean little, the ratios within a \
         round more.\n",
        fact("cpu_model"),
        fact("cores"),
        fact("simd"),
        machine
            .get("memory_bytes")
            .and_then(|m| m.as_u64())
            .map_or("unknown".into(), |b| format!("{:.0} GiB", b as f64 / (1u64 << 30) as f64)),
        fact("kernel"),
        fact("fs_type"),
        fact("device"),
        fact("mount_options"),
        fact("read_ahead_kb"),
        fact("emsort_version"),
        fact("date"),
    );
    let _ = writeln!(s, "## Headline: adaptive ÷ best fixed reader over the rounds\n");
    let _ = writeln!(
        s,
        "| trace | calibration | rounds | median | min – max | rounds ≤ {AS_FAST}× | rounds < 1× |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---|---:|---:|");
    for r in summary {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.2}× | {:.2}× – {:.2}× | {} | {} |",
            r.trace,
            r.calibration,
            r.rounds,
            r.median_ratio,
            r.min_ratio,
            r.max_ratio,
            r.rounds_as_fast,
            r.rounds_faster
        );
    }
    let _ = writeln!(s, "\n## Per round\n");
    let _ = writeln!(s, "| trace | round | calibration | adaptive | best fixed reader | its time | ratio |");
    let _ = writeln!(s, "|---|---:|---|---:|---|---:|---:|");
    for r in rounds {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.2}× |",
            r.trace,
            r.round,
            r.calibration,
            crate::chart::format_seconds(r.adaptive_s),
            r.best_fixed,
            crate::chart::format_seconds(r.best_fixed_s),
            r.ratio
        );
    }
    let _ = writeln!(s, "\n## How the calibrated values moved\n");
    let _ = writeln!(
        s,
        "Per calibration and key: changes = rounds whose value differs from the round before; \
         inconclusive = rounds in which the stable rules wrote the thesis' value for want of a \
         clear difference.\n"
    );
    let _ = writeln!(s, "| calibration | key | changes | distinct values | inconclusive | values (rounds) |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|");
    for r in stability {
        let _ = writeln!(
            s,
            "| {} | {} | {} of {} | {} | {} | {} |",
            r.calibration,
            r.key,
            r.changes,
            r.rounds.saturating_sub(1),
            r.distinct_values,
            r.inconclusive,
            r.values
        );
    }
    let _ = writeln!(s, "\n## Files\n");
    let _ = writeln!(
        s,
        "- `raw.csv`: a row per replay (trace, round, rep, position, reader, the adaptive reader's \
         calibration, seconds, bytes, MiB/s, the adaptive reader's bytes by technique)\n\
         - `calibrations.csv`: a row per round × calibration × key (value, origin, which ran first, \
         the calibration's wall time)\n\
         - `rounds.csv`: per trace, round and calibration the adaptive reader's and the best fixed \
         reader's median time and their ratio\n\
         - `summary.csv`: per trace and calibration the ratio's median, min, max, and the rounds \
         within {AS_FAST}× and below 1×\n\
         - `stability.csv`: per calibration and key the changes between rounds, the distinct values, \
         the rounds inconclusive\n\
         - `machine.json`: the command line, emsort's version, the machine, the traces\n\
         - `plots/rounds_ratio.svg`: the ratio per round, a marker per calibration, 1 = the best \
         fixed reader"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(round: usize, rep: usize, reader: &str, cal: &str, seconds: f64) -> RunRow {
        RunRow {
            trace: "mixed".into(),
            scale: 1.0,
            seed: 42,
            round,
            rep,
            position: 1,
            reader: reader.into(),
            calibration: cal.into(),
            seconds,
            bytes_read: 100,
            mib_s: 1.0,
            mmap_bytes: None,
            pread_bytes: None,
            uring_bytes: None,
            direct_bytes: None,
        }
    }

    fn cal(round: usize, rule: &str, key: &str, value: &str, origin: &str) -> CalibrationRow {
        CalibrationRow {
            round,
            calibration: rule.into(),
            order: 1,
            seconds: 1.0,
            key: key.into(),
            value: value.into(),
            origin: origin.into(),
        }
    }

    #[test]
    fn ratios_per_round_against_that_rounds_best_fixed_reader() {
        let mut rows = Vec::new();
        // Round 1: mmap 1.0 (median of 0.9, 1.0, 1.1), pread 2.0; adaptive paired 0.8, one-run 1.5.
        for (rep, m) in [0.9, 1.0, 1.1].into_iter().enumerate() {
            rows.push(run(1, rep + 1, "mmap", "", m));
            rows.push(run(1, rep + 1, "pread", "", 2.0));
            rows.push(run(1, rep + 1, "adaptive", PAIRED, 0.8));
            rows.push(run(1, rep + 1, "adaptive", ONE_RUN, 1.5));
        }
        // Round 2: pread is the best fixed reader (1.0), adaptive paired 1.02, one-run 0.9.
        rows.push(run(2, 1, "mmap", "", 3.0));
        rows.push(run(2, 1, "pread", "", 1.0));
        rows.push(run(2, 1, "adaptive", ONE_RUN, 0.9));
        rows.push(run(2, 1, "adaptive", PAIRED, 1.02));
        let r = round_rows(&rows);
        let got: Vec<(usize, &str, &str, f64)> =
            r.iter().map(|r| (r.round, r.calibration.as_str(), r.best_fixed.as_str(), r.ratio)).collect();
        assert_eq!(
            got,
            [
                (1, PAIRED, "mmap", 0.8),
                (2, PAIRED, "pread", 1.02),
                (1, ONE_RUN, "mmap", 1.5),
                (2, ONE_RUN, "pread", 0.9)
            ]
        );
        assert_eq!(r[0].reps, 3);
        let s = summarise(&r);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].calibration.as_str(), s[0].median_ratio, s[0].min_ratio, s[0].max_ratio),
            (PAIRED, 0.91, 0.8, 1.02)
        );
        assert_eq!((s[0].rounds_as_fast, s[0].rounds_faster), (2, 1));
        assert_eq!((s[1].calibration.as_str(), s[1].rounds_as_fast, s[1].rounds_faster), (ONE_RUN, 1, 1));
    }

    /// Two tiny rounds end to end: the rows, the calibrations loaded back,
    /// the reports; the traces' files removed.
    #[test]
    fn two_tiny_rounds_write_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let (work, out) = (dir.path().join("work"), dir.path().join("out"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let mut plan = CalibrationPlan::quick();
        (plan.file_size, plan.min_rounds, plan.max_rounds) = (2 << 20, 3, 3);
        let setup = Setup {
            work: &work,
            out: &out,
            traces: &[(Workload::Mixed, 0.001)],
            seed: 7,
            rounds: 2,
            reps: 2,
            calibration: plan,
            compare_one_run: true,
            cache: CacheMethod::Fadvise,
            command_line: "test",
            keep_files: false,
        };
        let mut generated = 0;
        let n = measure(
            &setup,
            &out.join("raw.csv"),
            |_, _, _| generated += 1,
            &emsort_io::NoProgress,
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!((generated, n), (1, 2 * 2 * 6), "rounds × reps × (4 fixed + 2 adaptive)");
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "no trace or calibration left");
        let cals: Vec<CalibrationRow> = crate::csv_log::read_rows(&out.join(CALIBRATIONS_CSV)).unwrap();
        assert_eq!(cals.len(), 2 * 2 * 12);
        // The stable calibration marks every measured key; the one before marks none.
        assert!(cals.iter().filter(|c| c.calibration == ONE_RUN).all(|c| c.origin.is_empty()));
        assert!(cals
            .iter()
            .filter(|c| c.calibration == PAIRED && !matches!(c.key.as_str(), "sequential_run" | "random_run"))
            .all(|c| c.origin == "measured" || c.origin == "inconclusive"));
        // Round 1 calibrated paired first, round 2 one-run first.
        let first = |round: usize| {
            cals.iter().find(|c| c.round == round && c.order == 1).unwrap().calibration.clone()
        };
        assert_eq!((first(1).as_str(), first(2).as_str()), (PAIRED, ONE_RUN));
        let r = redraw(&out).unwrap();
        assert_eq!(r.rounds.len(), 4);
        assert_eq!(r.summary.len(), 2);
        assert_eq!(r.stability.len(), 24);
        assert_eq!(r.plots.len(), 1);
        let readme = std::fs::read_to_string(&r.readme).unwrap();
        assert!(
            readme.contains("| mixed | paired | 2 |") && readme.contains("| mixed | one-run | 2 |"),
            "{readme}"
        );
        // Again from the same CSV: the same bytes.
        let before = std::fs::read(&r.readme).unwrap();
        redraw(&out).unwrap();
        assert_eq!(std::fs::read(&r.readme).unwrap(), before);
    }

    #[test]
    fn stability_counts_changes_between_consecutive_rounds() {
        let rows = vec![
            cal(2, ONE_RUN, "max_block", "256K", ""),
            cal(1, ONE_RUN, "max_block", "16K", ""),
            cal(3, ONE_RUN, "max_block", "16K", ""),
            cal(1, PAIRED, "max_block", "4M", "inconclusive"),
            cal(2, PAIRED, "max_block", "4M", "inconclusive"),
            cal(3, PAIRED, "max_block", "4M", "measured"),
            cal(1, PAIRED, "mmap_max_request", "32K", "measured"),
        ];
        let s = stability(&rows);
        let got: Vec<(&str, &str, usize, usize, usize, &str)> = s
            .iter()
            .map(|r| {
                (
                    r.calibration.as_str(),
                    r.key.as_str(),
                    r.changes,
                    r.distinct_values,
                    r.inconclusive,
                    r.values.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (PAIRED, "mmap_max_request", 0, 1, 0, "32K×1"),
                (PAIRED, "max_block", 0, 1, 2, "4M×3"),
                (ONE_RUN, "max_block", 2, 2, 0, "16K×2 256K×1"),
            ]
        );
    }
}
