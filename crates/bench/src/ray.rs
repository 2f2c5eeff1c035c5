//! The distributed sort on Ray, reported: `bench/ray/bench_ray.py` runs
//! the campaign (it needs Ray and the Python package) and writes `raw.csv`
//! and `machine.json`; [`reports_from_csv`] (`emsort bench ray
//! --plot-only DIR`, which the script calls at its end) makes
//! `summary.csv`, `plots/ray_time.svg` and the `README.md` from them, with
//! the published Exoshuffle results beside this machine's.
//!
//! `raw.csv` has a row per run: `dataset, format, bytes, items, engine,
//! partitions, memory_per_task, rep, wall_s, mb_s, mb_s_per_node, nodes,
//! sample_s, map_s, merge_s, map_tasks, external_merges, spilled_mib,
//! verified`. The engines: `single` (the `emsort` binary with the Ray
//! tasks' memory), `single-inmem` (the same with all the input in memory),
//! `ray-pP` (`emsort.ray.sort` with P partitions) and `io-bound` (the input
//! read and written twice with `O_DIRECT`: the two passes a sort larger
//! than memory needs at the disk's speed).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::chart::{draw_all, CategoryChart, Legend, RangePoint, RangeSeries, Ticks};
use crate::claims::{Claim, Verdict};
use crate::csv_log::{read_rows, write_rows};
use crate::machine::relative_path;
use crate::stats::Stats;
use crate::{Error, Result};

/// The engine whose runs are the I/O bound.
pub const IO_BOUND: &str = "io-bound";

/// Exoshuffle-CloudSort (the 2022 CloudSort record, arXiv:2301.03734):
/// 100 TB on 40 `i4i.4xlarge` workers of 16 vCPUs in 5378 s.
const CLOUDSORT_BYTES: f64 = 100e12;
const CLOUDSORT_NODES: f64 = 40.0;
const CLOUDSORT_VCPUS_PER_NODE: f64 = 16.0;
const CLOUDSORT_SECONDS: f64 = 5378.0;
/// Exoshuffle (arXiv:2203.05072): a 100 TB sort on 100 nodes at 82 % of
/// the theoretical (disk-bound) performance.
const EXOSHUFFLE_OF_THEORETICAL: f64 = 0.82;

/// One run, as the script writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct RawRow {
    /// `FORMAT:SIZE` as given (`u32:2G`).
    pub dataset: String,
    /// Input bytes.
    pub bytes: u64,
    /// `single`, `single-inmem`, `ray-pP` or `io-bound`.
    pub engine: String,
    /// Seconds until the output is on disk.
    pub wall_s: f64,
    /// Nodes of the cluster (1 here).
    pub nodes: u32,
    /// Ray's phases (empty for the others).
    #[serde(default)]
    pub sample_s: Option<f64>,
    #[serde(default)]
    #[allow(missing_docs)]
    pub map_s: Option<f64>,
    #[serde(default)]
    #[allow(missing_docs)]
    pub merge_s: Option<f64>,
    /// Map tasks and merge tasks that merged externally (Ray).
    #[serde(default)]
    pub map_tasks: Option<u64>,
    #[serde(default)]
    #[allow(missing_docs)]
    pub external_merges: Option<u64>,
    /// MiB Ray spilled from its object store during the run.
    #[serde(default)]
    pub spilled_mib: Option<f64>,
    /// `True`, `False`, or empty (not checked in this repetition).
    #[serde(default)]
    pub verified: String,
}

/// One (data set, engine): the medians of its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    #[allow(missing_docs)]
    pub dataset: String,
    #[allow(missing_docs)]
    pub engine: String,
    /// Runs.
    pub reps: usize,
    #[allow(missing_docs)]
    pub bytes: u64,
    /// Median, fastest and slowest run, seconds.
    pub wall_median_s: f64,
    #[allow(missing_docs)]
    pub wall_min_s: f64,
    #[allow(missing_docs)]
    pub wall_max_s: f64,
    /// Bytes / 10^6 / median.
    pub mb_s: f64,
    #[allow(missing_docs)]
    pub mb_s_per_node: f64,
    /// Median over `single`'s median on the same data.
    pub overhead_vs_single: Option<f64>,
    /// Median over `single-inmem`'s.
    pub overhead_vs_inmem: Option<f64>,
    /// Median over the I/O bound's median.
    pub ratio_to_io_bound: Option<f64>,
    /// Medians of Ray's phases.
    pub sample_s: Option<f64>,
    #[allow(missing_docs)]
    pub map_s: Option<f64>,
    #[allow(missing_docs)]
    pub merge_s: Option<f64>,
    #[allow(missing_docs)]
    pub map_tasks: Option<u64>,
    #[allow(missing_docs)]
    pub external_merges: Option<u64>,
    #[allow(missing_docs)]
    pub spilled_mib: Option<f64>,
    /// Every checked run was right, and at least one was checked (the I/O
    /// bound's copies are not sorts: never checked, `true`).
    pub verified: bool,
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The summary of `rows`: a row per (data set, engine) in the order they
/// first appear.
pub fn summarize(rows: &[RawRow]) -> Vec<SummaryRow> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.dataset.as_str(), r.engine.as_str())) {
            keys.push((r.dataset.as_str(), r.engine.as_str()));
        }
    }
    let runs = |ds: &str, eng: &str| -> Vec<&RawRow> {
        rows.iter().filter(|r| r.dataset == ds && r.engine == eng).collect()
    };
    let median_of = |ds: &str, eng: &str| -> Option<f64> {
        Stats::of(&runs(ds, eng).iter().map(|r| r.wall_s).collect::<Vec<_>>()).map(|s| s.median)
    };
    let phase = |g: &[&RawRow], f: &dyn Fn(&RawRow) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = g.iter().filter_map(|r| f(r)).collect();
        Stats::of(&v).map(|s| round(s.median, 2))
    };
    keys.iter()
        .filter_map(|&(ds, eng)| {
            let g = runs(ds, eng);
            let s = Stats::of(&g.iter().map(|r| r.wall_s).collect::<Vec<_>>())?;
            let first = g[0];
            let ratio = |to: &str| median_of(ds, to).filter(|m| *m > 0.0).map(|m| round(s.median / m, 2));
            let mb_s = first.bytes as f64 / 1e6 / s.median;
            let checked: Vec<&str> =
                g.iter().map(|r| r.verified.as_str()).filter(|v| !v.is_empty()).collect();
            Some(SummaryRow {
                dataset: ds.to_string(),
                engine: eng.to_string(),
                reps: g.len(),
                bytes: first.bytes,
                wall_median_s: round(s.median, 2),
                wall_min_s: round(s.min, 2),
                wall_max_s: round(s.max, 2),
                mb_s: round(mb_s, 1),
                mb_s_per_node: round(mb_s / f64::from(first.nodes.max(1)), 1),
                overhead_vs_single: ratio("single"),
                overhead_vs_inmem: ratio("single-inmem"),
                ratio_to_io_bound: if eng == IO_BOUND { None } else { ratio(IO_BOUND) },
                sample_s: phase(&g, &|r| r.sample_s),
                map_s: phase(&g, &|r| r.map_s),
                merge_s: phase(&g, &|r| r.merge_s),
                map_tasks: first.map_tasks,
                external_merges: first.external_merges,
                spilled_mib: phase(&g, &|r| r.spilled_mib),
                verified: eng == IO_BOUND
                    || (!checked.is_empty() && checked.iter().all(|v| v.eq_ignore_ascii_case("true"))),
            })
        })
        .collect()
}

/// The Ray engine with the lowest median on `dataset`.
fn best_ray<'a>(summary: &'a [SummaryRow], dataset: &str) -> Option<&'a SummaryRow> {
    summary
        .iter()
        .filter(|r| r.dataset == dataset && r.engine.starts_with("ray-"))
        .min_by(|a, b| a.wall_median_s.total_cmp(&b.wall_median_s))
}

fn datasets(summary: &[SummaryRow]) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for r in summary {
        if !v.contains(&r.dataset.as_str()) {
            v.push(&r.dataset);
        }
    }
    v
}

/// Exoshuffle's published results beside this campaign's best Ray run on
/// each data set: the share of the disk-bound time reached, and the rate
/// per vCPU. `vcpus` is the machine's (`machine.json`'s `nproc`).
pub fn claims(summary: &[SummaryRow], vcpus: u32) -> Vec<Claim> {
    let mut out = Vec::new();
    let bound = |ds: &str| summary.iter().find(|r| r.dataset == ds && r.engine == IO_BOUND);
    let theoretical = datasets(summary)
        .into_iter()
        .filter_map(|ds| Some((ds, best_ray(summary, ds)?, bound(ds)?)))
        .collect::<Vec<_>>();
    if !theoretical.is_empty() {
        // The share of the I/O bound reached, from the runs' ranges: holds
        // when even the slowest Ray run against the fastest copy reaches
        // 82 %, differs when even the fastest against the slowest does not.
        let lo = |r: &SummaryRow, b: &SummaryRow| b.wall_min_s / r.wall_max_s;
        let hi = |r: &SummaryRow, b: &SummaryRow| b.wall_max_s / r.wall_min_s;
        // Every data set must reach it; one that clearly does not decides.
        let verdict = if theoretical.iter().all(|(_, r, b)| lo(r, b) >= EXOSHUFFLE_OF_THEORETICAL) {
            Verdict::Holds
        } else if theoretical.iter().any(|(_, r, b)| hi(r, b) < EXOSHUFFLE_OF_THEORETICAL) {
            Verdict::Differs
        } else {
            Verdict::Noise
        };
        let measured: Vec<String> = theoretical
            .iter()
            .map(|(ds, r, b)| {
                format!(
                    "{ds}: {} at {:.0} % of the I/O bound's speed ({:.2} s against {:.2} s; runs {:.0}–{:.0} %)",
                    r.engine,
                    100.0 * b.wall_median_s / r.wall_median_s,
                    r.wall_median_s,
                    b.wall_median_s,
                    100.0 * lo(r, b),
                    100.0 * hi(r, b).min(9.99),
                )
            })
            .collect();
        let reps = theoretical.iter().map(|(_, r, b)| r.reps.min(b.reps)).min().unwrap_or(0);
        out.push(Claim {
            claim: format!(
                "Exoshuffle sorts 100 TB on 100 nodes at {:.0} % of the speed the disks allow (its theoretical \
                 bound; arXiv:2203.05072)",
                100.0 * EXOSHUFFLE_OF_THEORETICAL
            ),
            measurement: measured.join("; "),
            verdict: verdict.from_reps(reps),
        });
    }
    let per_vcpu = CLOUDSORT_BYTES / 1e6 / CLOUDSORT_SECONDS / CLOUDSORT_NODES / CLOUDSORT_VCPUS_PER_NODE;
    let rates: Vec<(&str, &SummaryRow)> =
        datasets(summary).into_iter().filter_map(|ds| Some((ds, best_ray(summary, ds)?))).collect();
    if !rates.is_empty() && vcpus > 0 {
        let v = f64::from(vcpus);
        let measured: Vec<String> = rates
            .iter()
            .map(|(ds, r)| {
                format!(
                    "{ds}: {} {:.0} MB/s per vCPU ({:.0} MB/s on {vcpus})",
                    r.engine,
                    r.mb_s_per_node / v,
                    r.mb_s_per_node
                )
            })
            .collect();
        let verdict = if rates.iter().all(|(_, r)| r.bytes as f64 / 1e6 / r.wall_max_s / v >= per_vcpu) {
            Verdict::Holds
        } else if rates.iter().any(|(_, r)| r.bytes as f64 / 1e6 / r.wall_min_s / v < per_vcpu) {
            Verdict::Differs
        } else {
            Verdict::Noise
        };
        let reps = rates.iter().map(|(_, r)| r.reps).min().unwrap_or(0);
        out.push(Claim {
            claim: format!(
                "Exoshuffle-CloudSort sorts {:.0} MB/s per vCPU: 100 TB on 40 i4i.4xlarge (16 vCPUs) in \
                 5378 s, input and output on S3 (CloudSort 2022, arXiv:2301.03734)",
                per_vcpu
            ),
            measurement: measured.join("; "),
            verdict: verdict.from_reps(reps),
        });
    }
    out
}

/// What `plots/ray_time.svg` shows.
pub fn describe_plot() -> &'static str {
    "time per sort of each engine on each data set: median (marker), fastest – slowest run (bar); \
     the I/O bound (the input read and written twice with O_DIRECT) as a mark across the data set"
}

fn chart(summary: &[SummaryRow]) -> CategoryChart {
    let sets = datasets(summary);
    let at = |ds: &str| sets.iter().position(|d| *d == ds).unwrap_or(0);
    let mut engines: Vec<&str> = Vec::new();
    for r in summary {
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
    }
    // The bound last: a mark across each data set, drawn over the others.
    engines.sort_by_key(|e| *e == IO_BOUND);
    let series = engines
        .iter()
        .map(|&eng| RangeSeries {
            label: if eng == IO_BOUND {
                "I/O bound (2 passes, O_DIRECT)".to_string()
            } else {
                eng.to_string()
            },
            points: summary
                .iter()
                .filter(|r| r.engine == eng)
                .map(|r| RangePoint {
                    category: at(r.dataset.as_str()),
                    value: r.wall_median_s,
                    range: (eng != IO_BOUND).then_some((r.wall_min_s, r.wall_max_s)),
                })
                .collect(),
            reference: eng == IO_BOUND,
        })
        .collect();
    let reps = summary.iter().map(|r| r.reps).max().unwrap_or(0);
    CategoryChart {
        title: format!(
            "Sort on Ray vs emsort on one node ({reps} run{}, cold cache)",
            if reps == 1 { "" } else { "s" }
        ),
        x_label: "data set".into(),
        y_label: "time to sorted output on disk (marker: median; bar: min – max)".into(),
        y_ticks: Ticks::Seconds,
        categories: sets.iter().map(|s| s.to_string()).collect(),
        series,
        legend: Legend::UpperLeft,
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or("—".to_string(), |v| format!("{v}"))
}

/// The summary as the README's Markdown table.
pub fn table_markdown(summary: &[SummaryRow]) -> String {
    let mut s = String::from(
        "| data | engine | median s (min–max) | MB/s per node | ÷ single | ÷ I/O bound | sample / map / merge s \
         | map tasks | external merges | spilled MiB | verified |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in summary {
        let ray = r.engine.starts_with("ray-");
        let phases = if ray {
            format!("{} / {} / {}", opt(r.sample_s), opt(r.map_s), opt(r.merge_s))
        } else {
            "—".into()
        };
        let count = |x: Option<u64>| x.map_or("—".to_string(), |v| v.to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} ({:.2}–{:.2}) | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            r.dataset,
            r.engine,
            r.wall_median_s,
            r.wall_min_s,
            r.wall_max_s,
            r.mb_s_per_node,
            opt(r.overhead_vs_single),
            opt(r.ratio_to_io_bound),
            phases,
            count(r.map_tasks),
            count(r.external_merges),
            if ray { opt(r.spilled_mib) } else { "—".into() },
            if r.engine == IO_BOUND {
                "—"
            } else if r.verified {
                "yes"
            } else {
                "no"
            },
        );
    }
    s
}

/// A fact of `machine.json` as text ("?" when absent).
fn fact(m: &serde_json::Value, key: &str) -> String {
    match m.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => "?".into(),
        Some(v) => v.to_string(),
    }
}

/// The machine's vCPUs (`machine.json`'s `nproc`; 0 when unknown).
fn vcpus_of(machine: &serde_json::Value) -> u32 {
    machine.get("nproc").and_then(|v| v.as_u64()).unwrap_or(0) as u32
}

/// The campaign's README, from its summary and `machine.json`.
pub fn readme(dir: &Path, summary: &[SummaryRow], machine: &serde_json::Value, plots: &[PathBuf]) -> String {
    let vcpus = vcpus_of(machine);
    let command = match machine.get("command").and_then(|v| v.as_str()) {
        Some(c) => c.to_string(),
        None => "python3 bench/ray/bench_ray.py (see machine.json's args)".into(),
    };
    let mut s = String::new();
    let _ = writeln!(s, "# emsort.ray on a local Ray cluster against single-node `emsort sort`\n");
    let _ = writeln!(
        s,
        "Made on {} on {} vCPUs ({}), {} RAM, kernel {}, Python {}, Ray {}, numpy {}, emsort commit `{}`, \
         `read_ahead_kb` {}, by:\n\n```sh\n{command}\n```\n\nRedraw (summary, plot and this README from \
         `raw.csv` and `machine.json`): `emsort bench ray --plot-only {}`.\n",
        fact(machine, "date_utc"),
        vcpus,
        fact(machine, "cpu"),
        fact(machine, "mem_total"),
        fact(machine, "kernel"),
        fact(machine, "python"),
        fact(machine, "ray"),
        fact(machine, "numpy"),
        fact(machine, "emsort_commit").chars().take(12).collect::<String>(),
        fact(machine, "read_ahead_kb"),
        relative_path(dir),
    );
    s.push_str(
        "## Method\n\n\
         Each data set is generated by `emsort gen` (seeded). Every repetition runs each engine once, on a \
         cold page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`), in an order that rotates from one \
         repetition to the next, each timed until a final `sync()` returns (its output is on disk):\n\n\
         - `single`: the `emsort` binary, `emsort sort -S (CPUs × memory_per_task) --parallel CPUs` — the \
         memory the Ray job's tasks use at once;\n\
         - `single-inmem`: the same with `-S` = the input's size + 5 % (one sort in memory: what the Ray job \
         really has, its object store being RAM);\n\
         - `ray-pP`: `emsort.ray.sort(input, outdir, partitions=P, memory_per_task=…)` on a local cluster \
         started once (`ray.init(num_cpus=CPUs)`; start-up and a warm-up sort are not timed): sample the \
         keys, range-partition, sort each partition with emsort in the workers, concatenate;\n\
         - `io-bound`: the input copied twice with `O_DIRECT` (read it, write a copy; read the copy, write a \
         second one): the disk traffic of a sort larger than memory (one run-formation pass, one merge \
         pass), at the disk's sequential speed, with no sorting at all.\n\n\
         Every output of the first repetition is verified: for Ray each part in order, the parts in order \
         across their edges and counted, then their concatenation against the input (order and multiset, \
         `emsort verify --input`); for `single`, `emsort verify --input`.\n\n## Results\n\n",
    );
    s.push_str(&table_markdown(summary));
    for p in plots {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let _ = writeln!(s, "\n![{}](plots/{name})\n\n`plots/{name}`: {}.", describe_plot(), describe_plot());
    }
    s.push_str(
        "\n## Beside the published Exoshuffle results\n\n\
         Exoshuffle (Luan et al., SIGCOMM 2023, arXiv:2203.05072) builds the shuffle of a distributed sort \
         as application code on Ray, the structure `emsort.ray` follows; Exoshuffle-CloudSort \
         (arXiv:2301.03734) set the 2022 CloudSort record with it. Their clusters read from and write to \
         S3 or many NVMe disks and shuffle over a network; this campaign runs on one node, where a \
         distributed sort can gain nothing and what it costs over `single` is the price of the structure \
         itself. So the rates are set side by side per vCPU, and the shares of the disk-bound time, not the \
         absolute times.\n\n",
    );
    let claims = claims(summary, vcpus);
    if claims.is_empty() {
        s.push_str("No Ray run (or no I/O bound) to set beside them.\n");
    } else {
        s.push_str(&crate::claims::table(&claims).replace("| published claim |", "| published result |"));
    }
    s.push_str(
        "\n## Files\n\n\
         - `raw.csv`: a row per run (dataset, format, bytes, items, engine, partitions, memory_per_task, rep, \
         wall_s, mb_s, mb_s_per_node, nodes, Ray's sample / map / merge seconds, map_tasks, external_merges, \
         spilled_mib, verified).\n\
         - `summary.csv`: a row per (data set, engine): median, min and max seconds, MB/s, the ratios to \
         `single`, `single-inmem` and the I/O bound, Ray's phases.\n\
         - `machine.json`: CPU, memory, kernel, versions, commit, `read_ahead_kb`, Ray's start-up and object \
         store, the script's arguments and method.\n\
         - `plots/`: the chart above.\n",
    );
    s
}

/// What [`reports_from_csv`] made.
#[derive(Debug, Clone)]
pub struct Reports {
    /// The summary (`summary.csv`).
    pub summary: Vec<SummaryRow>,
    /// The plots drawn.
    pub plots: Vec<PathBuf>,
    /// Exoshuffle's published results beside the summary ([`claims`]).
    pub claims: Vec<Claim>,
}

/// `summary.csv`, `plots/` and `README.md` again from `dir/raw.csv` and
/// `dir/machine.json`.
pub fn reports_from_csv(dir: &Path) -> Result<Reports> {
    let raw: Vec<RawRow> = read_rows(&dir.join("raw.csv"))?;
    let summary = summarize(&raw);
    write_rows(&dir.join("summary.csv"), &summary)?;
    let plots = draw_all(&dir.join("plots"), [("ray_time".to_string(), chart(&summary))])?;
    let machine = crate::machine::read_facts(dir)?;
    let readme_path = dir.join("README.md");
    std::fs::write(&readme_path, readme(dir, &summary, &machine, &plots))
        .map_err(|e| Error::io("write", &readme_path, e))?;
    let claims = claims(&summary, vcpus_of(&machine));
    Ok(Reports { summary, plots, claims })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ds: &str, engine: &str, wall: f64, verified: &str) -> RawRow {
        RawRow {
            dataset: ds.into(),
            bytes: 2_000_000_000,
            engine: engine.into(),
            wall_s: wall,
            nodes: 1,
            sample_s: engine.starts_with("ray").then_some(0.3),
            map_s: engine.starts_with("ray").then_some(5.0),
            merge_s: engine.starts_with("ray").then_some(4.0),
            map_tasks: engine.starts_with("ray").then_some(4),
            external_merges: engine.starts_with("ray").then_some(0),
            spilled_mib: engine.starts_with("ray").then_some(0.0),
            verified: verified.into(),
        }
    }

    #[test]
    fn summary_takes_medians_and_ratios_per_data_set() {
        let raw = vec![
            row("u32:2G", "single", 10.0, "True"),
            row("u32:2G", "single", 12.0, ""),
            row("u32:2G", "single", 11.0, ""),
            row("u32:2G", "ray-p8", 13.0, "True"),
            row("u32:2G", "ray-p8", 14.0, ""),
            row("u32:2G", "ray-p8", 15.0, ""),
            row("u32:2G", IO_BOUND, 5.0, ""),
            row("u32:2G", IO_BOUND, 6.0, ""),
            row("u32:2G", IO_BOUND, 5.5, ""),
            row("u32:4G", "ray-p8", 30.0, "False"),
        ];
        let s = summarize(&raw);
        assert_eq!(s.len(), 4);
        let ray = &s[1];
        assert_eq!((ray.engine.as_str(), ray.reps, ray.wall_median_s), ("ray-p8", 3, 14.0));
        assert_eq!((ray.wall_min_s, ray.wall_max_s), (13.0, 15.0));
        assert_eq!(ray.overhead_vs_single, Some(round(14.0 / 11.0, 2)));
        assert_eq!(ray.ratio_to_io_bound, Some(round(14.0 / 5.5, 2)));
        assert_eq!(ray.mb_s, round(2000.0 / 14.0, 1));
        assert!(ray.verified && s[0].verified && s[2].verified);
        assert_eq!(s[2].ratio_to_io_bound, None, "the bound is not measured against itself");
        assert!(!s[3].verified, "a failed check shows");
        assert_eq!(s[3].overhead_vs_single, None, "no single run on that data set");
    }

    #[test]
    fn the_published_results_are_judged_with_the_spread() {
        // Ray at 14 s (13–15), the bound 5.5 s (5–6): 39 % of the bound, well
        // below 82 %; 143 MB/s on 2 vCPUs = 71 per vCPU, above CloudSort's 29.
        let raw = vec![
            row("u32:2G", "ray-p8", 13.0, "True"),
            row("u32:2G", "ray-p8", 14.0, ""),
            row("u32:2G", "ray-p8", 15.0, ""),
            row("u32:2G", IO_BOUND, 5.0, ""),
            row("u32:2G", IO_BOUND, 6.0, ""),
            row("u32:2G", IO_BOUND, 5.5, ""),
        ];
        let c = claims(&summarize(&raw), 2);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].verdict, Verdict::Differs, "{:?}", c[0]);
        assert!(c[0].measurement.contains("39 % of the I/O bound's speed"), "{}", c[0].measurement);
        assert_eq!(c[1].verdict, Verdict::Holds, "{:?}", c[1]);
        assert!(c[1].claim.contains("29 MB/s per vCPU"), "{}", c[1].claim);
        // Ray as fast as the copy: holds (from two runs each; from one, no verdict).
        let mut fast = vec![row("u32:2G", "ray-p4", 6.0, "True"), row("u32:2G", IO_BOUND, 5.5, "")];
        assert_eq!(claims(&summarize(&fast), 2)[0].verdict, Verdict::OneRun);
        fast.extend([row("u32:2G", "ray-p4", 6.0, ""), row("u32:2G", IO_BOUND, 5.5, "")]);
        assert_eq!(claims(&summarize(&fast), 2)[0].verdict, Verdict::Holds);
        // No bound measured (an old campaign): only the rate is set beside.
        let old = vec![row("u32:2G", "ray-p4", 6.0, "True")];
        assert_eq!(claims(&summarize(&old), 2).len(), 1);
    }

    #[test]
    fn reports_are_made_from_the_csv_alone_and_again_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let raw = "dataset,format,bytes,items,engine,partitions,memory_per_task,rep,wall_s,mb_s,mb_s_per_node,\
                   nodes,sample_s,map_s,merge_s,map_tasks,external_merges,spilled_mib,verified\n\
                   u32:256M,u32,268435456,67108864,single,1,134217728,1,2.5,107.4,107.4,1,,,,,,,True\n\
                   u32:256M,u32,268435456,67108864,ray-p4,4,67108864,1,4.0,67.1,67.1,1,0.2,2.0,1.5,4,0,0.0,True\n\
                   u32:256M,u32,268435456,67108864,io-bound,,,1,1.0,268.4,268.4,1,,,,,,,\n";
        std::fs::write(dir.path().join("raw.csv"), raw).unwrap();
        std::fs::write(
            dir.path().join("machine.json"),
            r#"{"nproc": 2, "command": "python3 bench/ray/bench_ray.py --quick"}"#,
        )
        .unwrap();
        let r = reports_from_csv(dir.path()).unwrap();
        assert_eq!(r.summary.len(), 3);
        assert_eq!(r.plots.len(), 1);
        assert_eq!(r.claims.len(), 2);
        let files = ["summary.csv", "README.md", "plots/ray_time.svg"];
        let first: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(dir.path().join(f)).unwrap()).collect();
        let readme = String::from_utf8(first[1].clone()).unwrap();
        assert!(readme.contains("python3 bench/ray/bench_ray.py --quick"), "{readme}");
        assert!(readme.contains("| u32:256M | ray-p4 | 4.00 (4.00–4.00) | 67 | 1.6 | 4 |"), "{readme}");
        assert!(readme.contains("25 % of the I/O bound's speed"), "{readme}");
        reports_from_csv(dir.path()).unwrap();
        for (f, before) in files.iter().zip(&first) {
            assert_eq!(&std::fs::read(dir.path().join(f)).unwrap(), before, "{f} differs when redrawn");
        }
    }
}
