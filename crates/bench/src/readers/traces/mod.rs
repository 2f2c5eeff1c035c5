//! The trace experiment of experiment 4 (readers) as one campaign (issue 19):
//! `emsort bench readers --traces`.
//!
//! Until now its results (bench/results/2026-11-22c…e-readers) were made by
//! a shell script: `emsort calibrate`, then per trace `emsort gen-trace` and
//! `emsort replay --reps N`. [`TracesCampaign::run`] does the same with the
//! same library code, in steps:
//!
//! 1. **Check**: the cache method is usable (`drop` needs root), the
//!    output directory holds no campaign yet (`raw.csv` or a readers
//!    experiment's `raw-*.csv`).
//! 2. **Record the machine** in `machine.json`: the common facts
//!    ([`Machine`]: CPU, memory, kernel, file system, `read_ahead_kb`,
//!    free page reporting, version, command line, date, cache method), the
//!    device holding the data and the sysfs file its `read_ahead_kb` comes
//!    from, `fault_around_bytes`, the plan; again at the end with each
//!    trace's size.
//! 3. **Calibrate** the adaptive reader ([`Calibrate`], the full plan or
//!    with `quick` the quick one) in the work directory, into
//!    `OUTDIR/calibration` (never the user's configuration), with its
//!    tables in `calibrate.txt`. The replays load that file.
//! 4. **Per trace** (ct, am, im, mixed in that order): [`generate`] its data
//!    files and `trace.csv` into `<trace>/` of a new directory
//!    `.emsort-traces-…` inside the work directory, [`Replay`] it with every
//!    reader for `reps` rounds (each round every reader once, in the order
//!    of [`round_order`](crate::grid::round_order); every run on a cold
//!    cache), a row of `raw.csv` per run, then remove its files (unless
//!    `keep_files`).
//! 5. **Report from the CSV** ([`redraw`]): `summary.csv`, `plots/*.svg`
//!    and `README.md` (the headline per trace and the Chalmers thesis' claims beside
//!    the measurement, [`claims`]) from `raw.csv` and `machine.json` alone,
//!    which is what `--plot-only` runs again.
//!
//! Every path written into the outputs is relative to the current
//! directory ([`relative_path`]).
//!
//! ```no_run
//! use emsort_bench::readers::traces::{format_table, TracesCampaign, TracesPlan};
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::{cache::CacheMethod, NoProgress};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let o = TracesCampaign::new(TracesPlan::quick())
//!     .cache(CacheMethod::Fadvise)
//!     .out_dir("results/traces-quick")
//!     .run(&NoProgress, &AtomicBool::new(false))?;
//! print!("{}", format_table(&o.summary));
//! # Ok(()) }
//! ```

mod plots;
mod record;
mod report;
pub mod rounds;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use emsort_io::cache::CacheMethod;
use emsort_io::{Calibration, Progress, ReaderConfig, ReaderKind};

use crate::calibrate::{file_text, format_tables, Calibrate, Plan as CalibrationPlan};
use crate::campaign::{interrupted, temp_dir_in, write_json, CampaignBuilder, CampaignSettings};
use crate::machine::{
    block_device, fault_around_bytes, is_memory_fs, read_ahead_file, relative_path, Machine,
};
use crate::replay::{generate, Replay, Trace, Workload};
use crate::{Error, Result};

pub use crate::claims::{Claim, Verdict};
pub use plots::describe_plot;
pub use record::{read_raw, summarise, write_summary, RawRow, RawWriter, SummaryRow};
pub use report::{claims, format_table, readme_text, AS_FAST, SIGNIFICANT};

/// The traces, scales, rounds and seed of a trace campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct TracesPlan {
    /// The traces with their `gen-trace` scales, in the order they run.
    pub traces: Vec<(Workload, f64)>,
    /// Rounds: runs of every reader on every trace.
    pub reps: usize,
    /// Seed of the traces.
    pub seed: u64,
    /// The quick calibration ([`CalibrationPlan::quick`]) instead of the full one.
    pub quick: bool,
    /// Calibrate-then-replay rounds ([`rounds`]): 0 for the campaign of
    /// the module docs (one calibration, `reps` rounds of replays); N for
    /// N rounds of a new calibration each, then `reps` replays of every
    /// reader.
    pub rounds: usize,
    /// With `rounds`: also calibrate by the rules before issue 38 in each
    /// round and replay the adaptive reader with that calibration too.
    pub compare_one_run: bool,
}

impl TracesPlan {
    /// The scales of the recorded campaigns (2026-11-22c…e-readers:
    /// `replay.sh`'s `ct 1`, `am 1`, `im 0.5`, `mixed 1`), 5 rounds, seed
    /// 42 (gen-trace's), the full calibration.
    pub fn recorded() -> TracesPlan {
        TracesPlan {
            traces: vec![
                (Workload::Ct, 1.0),
                (Workload::Am, 1.0),
                (Workload::Im, 0.5),
                (Workload::Mixed, 1.0),
            ],
            reps: 5,
            seed: 42,
            quick: false,
            rounds: 0,
            compare_one_run: false,
        }
    }

    /// Every trace at scale 0.01, one round, the quick calibration: a run
    /// of seconds that checks the experiment, not the readers.
    pub fn quick() -> TracesPlan {
        TracesPlan { reps: 1, quick: true, ..TracesPlan::recorded() }.scale(0.01)
    }

    /// Only the traces of `workloads`, in their order.
    pub fn only(mut self, workloads: &[Workload]) -> TracesPlan {
        self.traces.retain(|t| workloads.contains(&t.0));
        self.traces.sort_by_key(|t| workloads.iter().position(|w| *w == t.0));
        self
    }

    /// Every trace at `scale`.
    pub fn scale(mut self, scale: f64) -> TracesPlan {
        for t in &mut self.traces {
            t.1 = scale;
        }
        self
    }
}

/// A trace campaign; see the module docs. Its settings (cache method,
/// output and work directories, command line, version) are set with the
/// methods of [`CampaignBuilder`]. The data go into a new directory
/// `.emsort-traces-…` inside the work directory (default: the output
/// directory, or a disk's temporary directory if that is in memory),
/// removed at the end unless `keep_files`.
#[derive(Debug, Clone)]
pub struct TracesCampaign {
    plan: TracesPlan,
    settings: CampaignSettings,
    keep_files: bool,
}

/// What a finished trace campaign produced.
#[derive(Debug, Clone)]
pub struct TracesOutcome {
    /// The output directory.
    pub out_dir: PathBuf,
    /// `raw.csv`.
    pub raw_csv: PathBuf,
    /// The calibration the adaptive reader used.
    pub calibration: PathBuf,
    /// What [`redraw`] wrote from the CSV.
    pub report: Redrawn,
    /// The summary rows (empty for a rounds campaign).
    pub summary: Vec<SummaryRow>,
    /// A rounds campaign's report ([`rounds::redraw`]).
    pub rounds: Option<rounds::RoundsReport>,
    /// Things the user should know.
    pub warnings: Vec<String>,
    /// Replays run (traces × readers × rounds).
    pub runs: u64,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// One trace as generated, for `machine.json`.
#[derive(Debug, Clone, Serialize)]
struct TraceFacts {
    trace: &'static str,
    scale: f64,
    seed: u64,
    requests: usize,
    bytes: u64,
    large_share: f64,
    files: usize,
    file_bytes: u64,
}

/// `machine.json`: the common facts and the campaign's own.
#[derive(Serialize)]
struct Facts<'a> {
    #[serde(flatten)]
    machine: &'a Machine,
    device: Option<String>,
    read_ahead_kb_file: Option<String>,
    fault_around_bytes: String,
    experiment: &'static str,
    quick: bool,
    readers: Vec<&'static str>,
    reps: usize,
    seed: u64,
    block_size: usize,
    queue_depth: u32,
    calibration: String,
    calibration_plan: &'static str,
    rounds: usize,
    compare_one_run: bool,
    simd: &'static str,
    mount_options: String,
    traces: Vec<TraceFacts>,
}

impl CampaignBuilder for TracesCampaign {
    const NAME: &'static str = "readers-traces";

    fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut CampaignSettings {
        &mut self.settings
    }
}

/// The calibration file in the output directory.
pub const CALIBRATION_FILE: &str = "calibration";

impl TracesCampaign {
    /// A campaign of `plan` with the best cache method available.
    pub fn new(plan: TracesPlan) -> TracesCampaign {
        TracesCampaign { plan, settings: CampaignSettings::new(Self::NAME), keep_files: false }
    }

    /// Keep the traces' data files (in the work directory) at the end.
    pub fn keep_files(mut self, yes: bool) -> TracesCampaign {
        self.keep_files = yes;
        self
    }

    /// The plan.
    pub fn plan(&self) -> &TracesPlan {
        &self.plan
    }

    /// Runs the campaign (see the module docs); `cancel` stops it between
    /// runs with an `Interrupted` error, the data files removed.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<TracesOutcome> {
        let started = Instant::now();
        if self.plan.traces.is_empty() || self.plan.reps == 0 {
            return Err(Error::Campaign("a trace campaign needs a trace and a round".into()));
        }
        self.settings.check_cache()?;
        if self.settings.cache == CacheMethod::None {
            return Err(Error::Campaign(
                "the trace campaign reads on a cold cache: use drop or fadvise, not none".into(),
            ));
        }
        let raw_csv = self.settings.fresh_raw_csv("plots and README")?;
        let out = &self.settings.out_dir;
        if has_readers_raw(out)? {
            return Err(Error::Campaign(format!(
                "{} holds a readers campaign (raw-*.csv): choose another output directory",
                out.display()
            )));
        }
        // A new directory of our own (so that removing the traces' files
        // touches nothing of the user's), inside the work directory given,
        // else inside the output directory (on a disk if that is in memory).
        let temp = match self.settings.create_work_dir()? {
            Some(d) => temp_dir_in(&d, ".emsort-traces-")?,
            None if is_memory_fs(&crate::machine::fs_type(out).0) => {
                crate::scratch::disk_tempdir(".emsort-traces-")?
            }
            None => temp_dir_in(out, ".emsort-traces-")?,
        };
        let work = temp.path().to_path_buf();
        let mut machine = self.settings.machine(&work);
        machine.element = "bytes (trace replay)".into();
        machine.work_dir = relative_path(&work);
        let mut warnings = Vec::new();
        if is_memory_fs(&machine.fs_type) {
            warnings.push(format!(
                "the work directory {} is on {}: the times say nothing about a disk (use --dir on a disk)",
                machine.work_dir, machine.fs_type
            ));
        }
        let mut facts = Facts {
            machine: &machine,
            device: block_device(&work),
            read_ahead_kb_file: read_ahead_file(&work),
            fault_around_bytes: fault_around_bytes(),
            experiment: "traces",
            quick: self.plan.quick,
            readers: ReaderKind::ALL.iter().map(|k| k.name()).collect(),
            reps: self.plan.reps,
            seed: self.plan.seed,
            block_size: ReaderConfig::default().block_size,
            queue_depth: ReaderConfig::default().queue_depth,
            calibration: if self.plan.rounds > 0 {
                rounds::CALIBRATIONS_CSV.into()
            } else {
                CALIBRATION_FILE.into()
            },
            calibration_plan: if self.plan.quick { "quick" } else { "full" },
            rounds: self.plan.rounds,
            compare_one_run: self.plan.compare_one_run,
            simd: emsort_sort::simd::detected().name(),
            mount_options: crate::machine::mount_options(&work),
            traces: Vec::new(),
        };
        let machine_json = out.join("machine.json");
        write_json(&machine_json, &facts)?;

        let mut runs = 0;
        let result = if self.plan.rounds > 0 {
            self.measure_rounds(&work, &raw_csv, &mut facts.traces, progress, cancel).map(|n| runs = n)
        } else {
            self.measure(&work, &raw_csv, &mut facts.traces, &mut runs, progress, cancel)
        };
        if self.keep_files {
            let _ = temp.keep();
        }
        write_json(&machine_json, &facts)?;
        result?;
        if self.plan.rounds > 0 {
            let report = rounds::redraw(out)?;
            return Ok(TracesOutcome {
                out_dir: out.clone(),
                raw_csv,
                calibration: out.join(rounds::CALIBRATIONS_CSV),
                report: Redrawn {
                    summary: Vec::new(),
                    plots: report.plots.clone(),
                    readme: report.readme.clone(),
                },
                summary: Vec::new(),
                rounds: Some(report),
                warnings,
                runs,
                seconds: started.elapsed().as_secs_f64(),
            });
        }
        let report = redraw(out)?;
        Ok(TracesOutcome {
            out_dir: out.clone(),
            raw_csv,
            calibration: out.join(CALIBRATION_FILE),
            summary: report.summary.clone(),
            report,
            rounds: None,
            warnings,
            runs,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Steps 3 and 4: calibrate, then generate and replay each trace.
    fn measure(
        &self,
        work: &Path,
        raw_csv: &Path,
        traces: &mut Vec<TraceFacts>,
        runs: &mut u64,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<()> {
        let out = &self.settings.out_dir;
        let cache = self.settings.cache;
        let cal_plan = if self.plan.quick { CalibrationPlan::quick() } else { CalibrationPlan::full() };
        let cal = Calibrate::new(work).plan(cal_plan).cache(cache).run(progress, cancel)?;
        let cal_path = out.join(CALIBRATION_FILE);
        crate::calibrate::write_calibration(&cal_path, &cal, &self.settings.command_line)?;
        let tables = format!("{}\n{}", format_tables(&cal), file_text(&cal, &self.settings.command_line));
        let txt = out.join("calibrate.txt");
        std::fs::write(&txt, tables).map_err(|e| Error::io("write", &txt, e))?;
        let calibration = Calibration::load(&cal_path)?;
        let config = ReaderConfig::new(ReaderKind::Adaptive).calibration(calibration);

        let mut writer = RawWriter::create(raw_csv)?;
        for &(workload, scale) in &self.plan.traces {
            if cancel.load(Ordering::Relaxed) {
                return Err(interrupted(work));
            }
            let dir = work.join(workload.name());
            let replayed = generate(&dir, workload, scale, self.plan.seed, progress, cancel).and_then(|g| {
                traces.push(TraceFacts {
                    trace: workload.name(),
                    scale,
                    seed: self.plan.seed,
                    requests: g.requests,
                    bytes: g.bytes,
                    large_share: g.large_share,
                    files: g.files,
                    file_bytes: g.file_bytes,
                });
                let trace = Trace::read(&g.trace_path)?;
                Replay::new(&ReaderKind::ALL)
                    .config(config.clone())
                    .cache(cache)
                    .reps(self.plan.reps)
                    .run(&trace, progress, cancel)
            });
            let cleaned = if self.keep_files || !dir.exists() {
                Ok(())
            } else {
                std::fs::remove_dir_all(&dir).map_err(|e| Error::io("remove", &dir, e))
            };
            let outcome = replayed?;
            cleaned?;
            for run in &outcome.runs {
                writer.write(&RawRow::new(workload, scale, self.plan.seed, run))?;
                *runs += 1;
            }
        }
        Ok(())
    }
}

impl TracesCampaign {
    /// The rounds campaign ([`rounds`]) instead of steps 3 and 4.
    fn measure_rounds(
        &self,
        work: &Path,
        raw_csv: &Path,
        traces: &mut Vec<TraceFacts>,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<u64> {
        let setup = rounds::Setup {
            work,
            out: &self.settings.out_dir,
            traces: &self.plan.traces,
            seed: self.plan.seed,
            rounds: self.plan.rounds,
            reps: self.plan.reps,
            calibration: if self.plan.quick { CalibrationPlan::quick() } else { CalibrationPlan::full() },
            compare_one_run: self.plan.compare_one_run,
            cache: self.settings.cache,
            command_line: &self.settings.command_line,
            keep_files: self.keep_files,
        };
        let seed = self.plan.seed;
        let generated = |workload: Workload, scale: f64, g: &crate::replay::GenSummary| {
            traces.push(TraceFacts {
                trace: workload.name(),
                scale,
                seed,
                requests: g.requests,
                bytes: g.bytes,
                large_share: g.large_share,
                files: g.files,
                file_bytes: g.file_bytes,
            })
        };
        rounds::measure(&setup, raw_csv, generated, progress, cancel)
    }
}

/// Whether `dir` holds a raw CSV of the readers campaign's experiments.
fn has_readers_raw(dir: &Path) -> Result<bool> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("read directory", dir, e))?;
    Ok(entries.filter_map(|e| e.ok()).any(|e| {
        let n = e.file_name();
        let n = n.to_string_lossy();
        n.starts_with("raw-") && n.ends_with(".csv")
    }))
}

/// What [`redraw`] wrote.
#[derive(Debug, Clone)]
pub struct Redrawn {
    /// The summary rows (`summary.csv`).
    pub summary: Vec<SummaryRow>,
    /// The SVG files drawn.
    pub plots: Vec<PathBuf>,
    /// `README.md`.
    pub readme: PathBuf,
}

/// Step 5, and all of `--plot-only`: reads `dir/raw.csv` (and, when
/// there, `dir/machine.json` for the command and the machine and
/// `dir/calibration` for the adaptive reader's values), writes
/// `summary.csv`, `plots/*.svg` and `README.md`. The same files give the
/// same bytes.
pub fn redraw(dir: &Path) -> Result<Redrawn> {
    let raw = dir.join("raw.csv");
    if !raw.is_file() {
        return Err(Error::Campaign(format!("{}: no such file (not a trace campaign)", raw.display())));
    }
    let summary = summarise(&read_raw(&raw)?);
    write_summary(&dir.join("summary.csv"), &summary)?;
    let plots = plots::draw(dir, &summary)?;
    let machine = crate::machine::read_facts(dir)?;
    let cal_path = dir.join(CALIBRATION_FILE);
    let calibration = match std::fs::read_to_string(&cal_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io("read", &cal_path, e)),
    };
    let readme = dir.join("README.md");
    std::fs::write(&readme, readme_text(&summary, &machine, calibration.as_deref(), &plots))
        .map_err(|e| Error::io("write", &readme, e))?;
    Ok(Redrawn { summary, plots, readme })
}

/// The campaign in `dir`, as `--plot-only` finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignKind {
    /// `raw.csv`: the trace campaign ([`redraw`]).
    Traces,
    /// `raw.csv` beside `calibrations.csv`: calibrate-then-replay rounds
    /// ([`rounds::redraw`]).
    Rounds,
    /// `raw-<experiment>.csv`: the readers' experiments
    /// ([`summary_from_csv`](super::summary_from_csv) and
    /// [`plots_from_csv`](super::plots_from_csv)).
    Experiments,
}

/// Which readers campaign `dir` holds, or an error saying it holds none.
pub fn campaign_kind(dir: &Path) -> Result<CampaignKind> {
    if dir.join("raw.csv").is_file() && dir.join(rounds::CALIBRATIONS_CSV).is_file() {
        Ok(CampaignKind::Rounds)
    } else if dir.join("raw.csv").is_file() {
        Ok(CampaignKind::Traces)
    } else if dir.is_dir() && has_readers_raw(dir)? {
        Ok(CampaignKind::Experiments)
    } else {
        Err(Error::Campaign(format!(
            "{} holds no readers campaign (neither raw.csv of --traces nor raw-<experiment>.csv)",
            dir.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{ReaderResult, RoundRun, Split};

    fn run(reader: ReaderKind, round: usize, position: usize, seconds: f64) -> RoundRun {
        RoundRun {
            round,
            position,
            result: ReaderResult {
                reader,
                threads: 1,
                split: Split::Contiguous,
                block_size: 4 << 20,
                queue_depth: 32,
                seconds,
                rep_seconds: vec![seconds],
                requests: 8,
                bytes_requested: 1 << 20,
                bytes_read: 1 << 20,
                short_reads: 0,
                p50_us: 10.0,
                p99_us: 20.0,
                max_us: 30.0,
                cache: CacheMethod::Fadvise,
                verified: false,
                choices: (reader == ReaderKind::Adaptive).then(emsort_io::ChoiceCounts::default),
                fallback: None,
            },
        }
    }

    /// `redraw` makes the same summary, plots and README from the same
    /// raw.csv, and tells the campaigns apart.
    #[test]
    fn redraw_is_a_function_of_the_csv() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(redraw(d).unwrap_err().to_string().contains("not a trace campaign"));
        assert!(campaign_kind(d).is_err());
        let mut w = RawWriter::create(&d.join("raw.csv")).unwrap();
        for (t, base) in [(Workload::Ct, 1.0), (Workload::Mixed, 2.0)] {
            for round in 0..3 {
                for (i, &k) in ReaderKind::ALL.iter().enumerate() {
                    let s = base * (1.0 + i as f64 / 10.0) * (1.0 + round as f64 / 100.0);
                    w.write(&RawRow::new(t, 0.5, 7, &run(k, round, i, s))).unwrap();
                }
            }
        }
        drop(w);
        assert_eq!(campaign_kind(d).unwrap(), CampaignKind::Traces);
        let first = redraw(d).unwrap();
        assert_eq!(first.summary.len(), 10);
        let names: Vec<String> =
            first.plots.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["traces_time.svg", "traces_ratio.svg"]);
        let read = |p: &Path| std::fs::read(p).unwrap();
        let before: Vec<Vec<u8>> =
            first.plots.iter().chain([&first.readme, &d.join("summary.csv")]).map(|p| read(p)).collect();
        let again = redraw(d).unwrap();
        let after: Vec<Vec<u8>> =
            again.plots.iter().chain([&again.readme, &d.join("summary.csv")]).map(|p| read(p)).collect();
        assert_eq!(before, after);
        // Without machine.json the README says what it does not know.
        let readme = String::from_utf8(after[2].clone()).unwrap();
        assert!(readme.contains("```sh\nunknown\n```"), "{readme}");
        // stream is the best fixed reader (the least time), adaptive 1.4×.
        let a = first.summary.iter().find(|r| r.trace == "mixed" && r.reader == "adaptive").unwrap();
        assert_eq!(a.best_fixed, "stream");
        assert!((a.ratio_to_best_fixed.unwrap() - 1.4).abs() < 1e-9, "{a:?}");
        assert_eq!(a.rounds, 3);
        // A readers experiment's raw CSV beside it: a campaign of the other kind.
        let e = tempfile::tempdir().unwrap();
        std::fs::write(e.path().join("raw-mmap.csv"), "x\n").unwrap();
        assert_eq!(campaign_kind(e.path()).unwrap(), CampaignKind::Experiments);
    }

    #[test]
    fn plans() {
        let r = TracesPlan::recorded();
        let scales: Vec<(&str, f64)> = r.traces.iter().map(|(w, s)| (w.name(), *s)).collect();
        assert_eq!(scales, [("ct", 1.0), ("am", 1.0), ("im", 0.5), ("mixed", 1.0)]);
        assert_eq!((r.reps, r.seed, r.quick), (5, 42, false));
        let q = TracesPlan::quick();
        assert!(q.traces.iter().all(|t| t.1 == 0.01) && q.reps == 1 && q.quick);
        let e = TracesCampaign::new(TracesPlan { reps: 0, ..q })
            .run(&emsort_io::NoProgress, &AtomicBool::new(false))
            .unwrap_err();
        assert!(e.to_string().contains("needs a trace and a round"), "{e}");
    }
}
