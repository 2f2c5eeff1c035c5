//! A reader campaign: the experiments chosen, how to run them, where results go.
//!
//! [`Campaign::run`] proceeds in steps:
//!
//! 1. **Check**: the cache method is usable (`drop` needs root), the output
//!    directory holds no earlier raw CSV, the data files fit on the work
//!    directory's file system.
//! 2. **Record the machine** in `machine.json` (the common facts, plus the
//!    device, `fault_around_bytes`, the cgroup facts, the memory limit
//!    method and fio's version or why fio is left out); again at the end
//!    with what the memory experiment did.
//! 3. **Run the experiments** in order; each writes `raw-<name>.csv` a row
//!    at a time. A data file `readers-<size>.bin` (seeded random bytes,
//!    synced) is written when first needed. Before every run the page
//!    cache is emptied (`drop`: the whole machine; `fadvise`: the file).
//!    fio runs beside `uring` in the queue-depth experiment; the memory
//!    experiment runs its reads in a child process under the limit
//!    ([`memlimit`](super::memlimit)), then without it.
//! 4. **Clean up** the data files (unless `keep_files`), also on error.
//! 5. **Report from the CSVs**: `summary.csv` and the plots are made by
//!    reading the raw CSVs back.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

use emsort_io::cache::{self, CacheMethod};
use emsort_io::{format_size, Progress};

use super::fio::{find_fio, run_fio};
use super::grid::{file_sizes, points};
use super::measure::{measure, Measured};
use super::memlimit::{measure_in_child, Limit, LimitMethod};
use super::plan::{Experiment, Plan};
use super::plots::plots_from_csv;
use super::point::{Api, Point};
use super::record::{raw_path, summary_from_csv, RawRow, RawWriter, SummaryRow};
use crate::campaign::{interrupted, temp_dir_in, write_json, CampaignBuilder, CampaignSettings};
use crate::machine::{block_device, cgroup_facts, fault_around_bytes, is_memory_fs, Machine};
use crate::{Error, Result};

/// A reader campaign (experiment 4); see the module docs. Its
/// settings (cache method, output directory …) are set with the methods of
/// [`CampaignBuilder`]; the work directory, which must exist, holds the
/// data files (default: a temporary directory inside the output directory,
/// or on a disk if that is in memory).
#[derive(Debug, Clone)]
pub struct Campaign {
    plan: Plan,
    experiments: Vec<Experiment>,
    settings: CampaignSettings,
    keep_files: bool,
    worker_exe: Option<PathBuf>,
    limit_method: LimitMethod,
}

/// What a finished campaign produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The output directory.
    pub out_dir: PathBuf,
    /// The raw CSVs, one per experiment run.
    pub raw_csvs: Vec<PathBuf>,
    /// `summary.csv`.
    pub summary_csv: PathBuf,
    /// `machine.json`.
    pub machine_json: PathBuf,
    /// `README.md`: the command, the files, the best points, io_uring
    /// beside fio and the thesis' findings beside this run's.
    pub readme: PathBuf,
    /// The SVG plots drawn.
    pub plots: Vec<PathBuf>,
    /// The summary rows.
    pub summary: Vec<SummaryRow>,
    /// How the memory experiment limited memory (or why it did not).
    pub memory_limit: String,
    /// fio's version, or why it was left out.
    pub fio: String,
    /// Things the user should know.
    pub warnings: Vec<String>,
    /// Runs done.
    pub runs: u64,
    /// Wall time of the campaign, seconds.
    pub seconds: f64,
}

/// `machine.json`: the common facts and the readers' own.
#[derive(Serialize)]
struct Facts<'a> {
    #[serde(flatten)]
    machine: &'a Machine,
    device: Option<String>,
    fault_around_bytes: String,
    cgroup_v2: String,
    cgroup_v1_memory: String,
    memory_limit_method: String,
    memory_limit_bytes: u64,
    memory_limit: String,
    fio: String,
    experiments: Vec<&'static str>,
    reps: u32,
    seed: u64,
}

impl CampaignBuilder for Campaign {
    const NAME: &'static str = "readers";

    fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut CampaignSettings {
        &mut self.settings
    }
}

impl Campaign {
    /// A campaign of `experiments` over `plan`, with the best cache method
    /// available and the memory limit method `auto`.
    pub fn new(plan: Plan, experiments: &[Experiment]) -> Result<Campaign> {
        if experiments.is_empty() {
            return Err(Error::Campaign("no experiment to run".into()));
        }
        Ok(Campaign {
            plan,
            experiments: experiments.to_vec(),
            settings: CampaignSettings::new(Self::NAME),
            keep_files: false,
            worker_exe: None,
            limit_method: LimitMethod::Auto,
        })
    }

    /// Keep the data files at the end.
    pub fn keep_files(mut self, yes: bool) -> Campaign {
        self.keep_files = yes;
        self
    }

    /// The `emsort` binary whose hidden `bench readers-worker` runs the
    /// memory experiment's reads (without it they run in this process and
    /// the limited series is left out).
    pub fn worker_exe(mut self, exe: impl Into<PathBuf>) -> Campaign {
        self.worker_exe = Some(exe.into());
        self
    }

    /// How the memory experiment limits memory.
    pub fn limit_method(mut self, m: LimitMethod) -> Campaign {
        self.limit_method = m;
        self
    }

    /// Every point of the chosen experiments.
    pub fn points(&self) -> Vec<Point> {
        self.experiments.iter().flat_map(|&e| points(&self.plan, e)).collect()
    }

    /// Runs the campaign (see the module docs); `cancel` stops it between
    /// runs with an `Interrupted` error, the data files removed.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<Outcome> {
        let started = Instant::now();
        if self.settings.cache == CacheMethod::Drop && !cache::can_drop_caches() {
            return Err(Error::Campaign(
                "cache method 'drop' needs write access to /proc/sys/vm/drop_caches (root); use 'fadvise'"
                    .into(),
            ));
        }
        let out = &self.settings.out_dir;
        std::fs::create_dir_all(out).map_err(|e| Error::io("create directory", out, e))?;
        for e in &self.experiments {
            if raw_path(out, e.name()).exists() {
                return Err(Error::Campaign(format!(
                    "{} already holds a reader campaign's {}: choose another output directory",
                    out.display(),
                    raw_path(out, e.name())
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                )));
            }
        }
        let mut temp = None;
        let work = match &self.settings.work_dir {
            Some(d) => {
                if !d.is_dir() {
                    return Err(Error::Campaign(format!(
                        "the work directory {} does not exist",
                        d.display()
                    )));
                }
                d.clone()
            }
            None => {
                let t = if is_memory_fs(&crate::machine::fs_type(out).0) {
                    crate::scratch::disk_tempdir(".emsort-readers-")?
                } else {
                    temp_dir_in(out, ".emsort-readers-")?
                };
                let p = t.path().to_path_buf();
                temp = Some(t);
                p
            }
        };
        let mut sizes: Vec<u64> = self.experiments.iter().flat_map(|&e| file_sizes(&self.plan, e)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        crate::scratch::check_space(
            &work,
            sizes.iter().sum(),
            format!("the reader campaign's data files in {}", work.display()),
        )?;

        let fio = if self.experiments.contains(&Experiment::QueueDepth) && self.plan.qd_fio {
            find_fio()
        } else {
            Err("fio not asked for (queue-depth experiment or queue-depth.fio off)".to_string())
        };
        let mut warnings = Vec::new();
        if let Err(why) = &fio {
            if self.plan.qd_fio && self.experiments.contains(&Experiment::QueueDepth) {
                warnings.push(format!("fio left out: {why}"));
            }
        }
        let fio_note = match &fio {
            Ok((exe, v)) => format!("{v} ({exe})"),
            Err(why) => format!("left out: {why}"),
        };
        let mut machine = self.settings.machine(&work);
        machine.work_dir = crate::machine::relative_path(&work);
        if is_memory_fs(&machine.fs_type) {
            warnings.push(format!(
                "the work directory {} is on {}: the times say nothing about a disk (use --dir on a disk)",
                work.display(),
                machine.fs_type
            ));
        }
        let mut memory_note = if self.experiments.contains(&Experiment::Memory) {
            format!("{} (not started yet)", self.limit_method)
        } else {
            "memory experiment not run".to_string()
        };
        let machine_json = out.join("machine.json");
        let device = block_device(&work);
        self.write_facts(&machine_json, &machine, device.clone(), &fio_note, &memory_note)?;

        let mut ctx = Ctx {
            work: &work,
            progress,
            cancel,
            warnings: &mut warnings,
            runs: 0,
            memory_note: &mut memory_note,
            fio: fio.ok().map(|f| f.0),
        };
        let mut raw_csvs = Vec::new();
        let mut result = Ok(());
        for &e in &self.experiments {
            let path = raw_path(out, e.name());
            raw_csvs.push(path.clone());
            result = self.run_experiment(e, &path, &mut ctx);
            if result.is_err() {
                break;
            }
        }
        let runs = ctx.runs;
        let cleaned = if self.keep_files {
            Ok(())
        } else {
            sizes
                .iter()
                .map(|&s| data_path(&work, s))
                .filter(|p| p.exists())
                .try_for_each(|p| std::fs::remove_file(&p).map_err(|e| Error::io("remove", &p, e)))
        };
        if let Some(t) = temp {
            if self.keep_files {
                let _ = t.keep();
            }
        }
        self.write_facts(&machine_json, &machine, device.clone(), &fio_note, &memory_note)?;
        result?;
        cleaned?;

        let summary = summary_from_csv(out)?;
        let plots = plots_from_csv(out)?;
        let readme = out.join("README.md");
        let text = self.readme_text(&summary, &raw_csvs, &plots);
        std::fs::write(&readme, text).map_err(|e| Error::io("write", &readme, e))?;
        Ok(Outcome {
            out_dir: out.clone(),
            raw_csvs,
            summary_csv: out.join("summary.csv"),
            machine_json,
            readme,
            plots,
            summary,
            memory_limit: memory_note,
            fio: fio_note,
            warnings,
            runs,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// `README.md` (see [`Outcome::readme`]), made from the summary.
    fn readme_text(&self, summary: &[SummaryRow], raw: &[PathBuf], plots: &[PathBuf]) -> String {
        let name =
            |p: &PathBuf| p.file_name().map(|n| format!("`{}`", n.to_string_lossy())).unwrap_or_default();
        let raws: Vec<String> = raw.iter().map(name).collect();
        let svgs: Vec<String> = plots.iter().map(name).collect();
        let fio = super::report::format_fio(summary);
        let claims = crate::claims::table(&super::report::claims(summary));
        let mut s = format!(
            "# emsort readers campaign (experiment 4: the readers)\n\n\
             Command: `{cmd}`\n\n\
             Page cache emptied before every run with `{cache}`.\n\n\
             ## Files\n\n\
             - {raws}: a row per run of each experiment (reader, pattern, sizes, threads, seconds, \
             latency percentiles, page faults).\n\
             - `summary.csv`: a row per point: median, min and max MiB/s, latencies, faults, fio beside \
             io_uring.\n\
             - `machine.json`: the machine, the device and its `read_ahead_kb`, how memory was limited, \
             fio's version.\n\
             - `plots/`: {svgs} (throughput with the runs' min – max).\n\n\
             Redraw `summary.csv` and the plots from the raw CSVs with \
             `emsort bench readers --plot-only DIR`.\n\n\
             ## Best point per experiment and reader\n\n```\n{table}```\n",
            cmd = self.settings.command_line,
            cache = self.settings.cache,
            raws = raws.join(", "),
            svgs = if svgs.is_empty() { "none".to_string() } else { svgs.join(", ") },
            table = super::report::format_table(summary),
        );
        if !fio.is_empty() {
            s.push_str(&format!("\n## io_uring beside fio\n\n```\n{fio}```\n"));
        }
        if !claims.is_empty() {
            s.push_str(&format!(
                "\n## Beside the Chalmers thesis (Bäckemo & Olsson, \"Minimizing read bottlenecks in I/O \
                 bound systems\", 2022, chapter 4)\n\nThe thesis measured on Windows and NVMe; a \
                 comparison whose runs' ranges overlap is *within the noise*, and a claim judged from one \
                 repetition says *one run: no verdict*.\n\n{claims}"
            ));
        }
        s
    }

    fn write_facts(
        &self,
        path: &Path,
        m: &Machine,
        device: Option<String>,
        fio: &str,
        memory: &str,
    ) -> Result<()> {
        let (v2, v1) = cgroup_facts();
        let facts = Facts {
            machine: m,
            device,
            fault_around_bytes: fault_around_bytes(),
            cgroup_v2: v2,
            cgroup_v1_memory: format!("{v1} (never used: it holds the machine's own sandboxing)"),
            memory_limit_method: self.limit_method.name().to_string(),
            memory_limit_bytes: self.plan.mem_limit,
            memory_limit: memory.to_string(),
            fio: fio.to_string(),
            experiments: self.experiments.iter().map(|e| e.name()).collect(),
            reps: self.plan.reps,
            seed: self.plan.seed,
        };
        write_json(path, &facts)
    }

    fn run_experiment(&self, e: Experiment, raw: &Path, ctx: &mut Ctx<'_>) -> Result<()> {
        let pts = points(&self.plan, e);
        let mut writer = RawWriter::create(raw)?;
        for f in file_sizes(&self.plan, e) {
            ensure_file(ctx.work, f, self.plan.seed, ctx.progress)?;
        }
        let total: u64 = pts.iter().map(|p| u64::from(p.reps)).sum();
        ctx.progress.phase(e.name(), Some(total));
        let mut limit: Option<Limit> = None;
        let mut limit_tried = false;
        let mut limit_label = String::from("none");
        for p in &pts {
            if p.api == Api::Fio && ctx.fio.is_none() {
                ctx.progress.advance(u64::from(p.reps));
                continue;
            }
            if e == Experiment::Memory && p.limited && limit.is_none() {
                if limit_tried {
                    ctx.progress.advance(u64::from(p.reps));
                    continue;
                }
                limit_tried = true;
                match self.start_limit(ctx) {
                    Some(l) => {
                        limit_label = format!("{}:{}", l.method, self.plan.mem_limit);
                        limit = Some(l);
                    }
                    None => {
                        ctx.progress.advance(u64::from(p.reps));
                        continue;
                    }
                }
            }
            if e == Experiment::Memory && !p.limited {
                if let Some(l) = limit.take() {
                    l.stop()?;
                }
                limit_label = "none".into();
            }
            let file = data_path(ctx.work, p.file_bytes);
            for rep in 1..=p.reps {
                if ctx.cancel.load(Ordering::Relaxed) {
                    return Err(interrupted(ctx.work));
                }
                ctx.progress.message(&format!("{} rep {rep}/{}", p.label(), p.reps));
                self.settings.cache.apply(&[file.as_path()])?;
                let m = self.measure_one(e, p, &file, limit.as_ref(), ctx)?;
                let label = if e == Experiment::Memory { limit_label.as_str() } else { "" };
                writer.write(&RawRow::new(p, rep, &m, label, self.settings.cache.name()))?;
                ctx.runs += 1;
                ctx.progress.advance(1);
            }
        }
        if let Some(l) = limit.take() {
            l.stop()?;
        }
        ctx.progress.finish_phase();
        Ok(())
    }

    /// The memory limit for the limited series, or `None` (noted) when
    /// there is none.
    fn start_limit(&self, ctx: &mut Ctx<'_>) -> Option<Limit> {
        let note = |ctx: &mut Ctx<'_>, s: String| {
            ctx.warnings.push(format!("memory experiment: {s}"));
            *ctx.memory_note = s;
        };
        if self.limit_method == LimitMethod::None {
            note(ctx, "no memory limit (--memory-limit none): the limited series is left out".into());
            return None;
        }
        let Some(exe) = &self.worker_exe else {
            note(ctx, "no emsort binary to run the reads in a child: the limited series is left out".into());
            return None;
        };
        match Limit::start(self.limit_method, self.plan.mem_limit, exe) {
            Ok(l) if l.method == LimitMethod::None => {
                note(ctx, l.note.clone());
                None
            }
            Ok(l) => {
                *ctx.memory_note = format!("{}: {}", l.method, l.note);
                Some(l)
            }
            Err(e) => {
                note(ctx, format!("no memory limit ({e}): the limited series is left out"));
                None
            }
        }
    }

    fn measure_one(
        &self,
        e: Experiment,
        p: &Point,
        file: &Path,
        limit: Option<&Limit>,
        ctx: &Ctx<'_>,
    ) -> Result<Measured> {
        if p.api == Api::Fio {
            let exe = ctx.fio.as_deref().expect("fio found");
            return run_fio(exe, p, file);
        }
        if e == Experiment::Memory {
            if let Some(exe) = &self.worker_exe {
                return measure_in_child(exe, p, file, self.plan.seed, limit.and_then(Limit::cgroup));
            }
        }
        measure(p, file, self.plan.seed, ctx.cancel)
    }
}

/// What the experiments share while running.
struct Ctx<'a> {
    work: &'a Path,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
    warnings: &'a mut Vec<String>,
    runs: u64,
    memory_note: &'a mut String,
    fio: Option<String>,
}

/// The data file of `size` bytes in `work`.
pub fn data_path(work: &Path, size: u64) -> PathBuf {
    work.join(format!("readers-{}.bin", format_size(size)))
}

/// Writes `readers-<size>.bin` (seeded random bytes, synced) unless a file
/// of that size is there.
fn ensure_file(work: &Path, size: u64, seed: u64, progress: &dyn Progress) -> Result<()> {
    let path = data_path(work, size);
    if std::fs::metadata(&path).map(|m| m.len() == size).unwrap_or(false) {
        return Ok(());
    }
    progress.phase_bytes(&format!("write {}", format_size(size)), Some(size));
    let mut f = std::fs::File::create(&path).map_err(|e| Error::io("create", &path, e))?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ size);
    let mut buf = vec![0u8; (8usize << 20).min(size as usize)];
    let mut left = size;
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        rng.fill_bytes(&mut buf[..n]);
        f.write_all(&buf[..n]).map_err(|e| Error::io("write", &path, e))?;
        left -= n as u64;
        progress.advance(n as u64);
    }
    f.sync_all().map_err(|e| Error::io("fsync", &path, e))?;
    progress.finish_phase();
    Ok(())
}
