//! An SRM-versus-DSM campaign (experiment 3): the points, the runs,
//! and where results go.
//!
//! [`Campaign::run`] proceeds in numbered steps:
//!
//! 1. **Check** that the campaign can run: an `emsort` binary to run the
//!    sorts, the cache method is usable (`drop` needs root), the output
//!    directory holds no earlier `raw.csv`, no M exceeds half of the memory
//!    available, and the work directory's file system holds four copies of
//!    the largest input (input, runs, the runs of a merge pass, output).
//! 2. **Record the machine** (`machine.json`: the common facts with
//!    `read_ahead_kb`, how the sorts ran, the disk directories).
//! 3. **Run, data set by data set** (format, N): the input is generated
//!    once ([`emsort_sort::gen`], seed 42) and, when verifying,
//!    fingerprinted. Then, for each repetition, every point on that input
//!    in turn (so methods alternate): the page cache is emptied, `emsort
//!    sort --method M --disks WORK/disk0,…,disk{D-1} -f F -S M --block-size
//!    B [--emulate-disk E] --seed S --stats FILE -q INPUT -o OUT` runs as a
//!    child process (`plain` gets `-T WORK/disk0` instead of disks), its
//!    output is synced, verified (in order, same multiset as the input) and
//!    removed, and a row goes to `raw.csv`, flushed. The seed of repetition
//!    r is the campaign's seed + r − 1 (the same for every method). A
//!    failed sort or check stops the campaign with an error; a file left in
//!    a disk directory is a warning (and is removed).
//! 4. **Clean up** the inputs, outputs and disk directories, also on error.
//! 5. **Report from the CSV**: `summary.csv`, `table.md` and the plots are
//!    made by reading `raw.csv` back ([`reports_from_csv`]).
//!
//! ```text
//!  (format, N) ──► generate ──► fingerprint
//!     for rep: for point: drop cache ─► emsort sort --method … (child) ─► verify ─► raw.csv
//!  raw.csv ──► summary.csv ──► table.md, merge-time-vs-n.svg, d-sweep.svg
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::{format_size, NoProgress, Progress};
use emsort_sort::gen::{generate, GenSpec};
use emsort_sort::verify::{fingerprint_file, verify};
use emsort_sort::{Fingerprint, Format, MethodKind};
use serde::Serialize;
use serde_json::Value;

use super::params::{parse_params, read_params, Grid};
use super::plots::plots;
use super::record::{join_numbers, summary_from_csv, RawRow, RawWriter, SummaryRow};
use super::table::table_markdown;
use super::{FULL_PARAMS, QUICK_PARAMS};
use crate::campaign::{
    check_memory_m, formats_element, interrupted, memory_fs_warning, temp_dir_in, write_json,
    CampaignBuilder, CampaignSettings,
};
use crate::grid::{merge_repeats, product, rounds};
use crate::machine::Machine;
use crate::sort::peers;
use crate::{Error, Result};

/// One sort of one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Data format (fixed-size).
    pub format: Format,
    /// Records N.
    pub items: u64,
    /// Memory M.
    pub memory: u64,
    /// Striping block B (`--block-size`).
    pub block: u64,
    /// Disks D.
    pub disks: usize,
    /// `plain`, `dsm` or `srm`.
    pub method: MethodKind,
    /// The emulated disk (`BANDWIDTH,LATENCY`), or `None`.
    pub emulate: Option<String>,
    /// Repetitions.
    pub reps: u32,
}

impl Point {
    /// The input's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.items * self.format.item_size().unwrap_or(1) as u64
    }

    /// `srm rec:104:0:8 N=1e6 M=15M B=256K D=6` (and ` emulated 60M,1ms`).
    pub fn label(&self) -> String {
        let mut s = format!(
            "{} {} N={} M={} B={} D={}",
            self.method,
            self.format,
            crate::streams::format_count(self.items),
            format_size(self.memory),
            format_size(self.block),
            self.disks
        );
        if let Some(e) = &self.emulate {
            s.push_str(&format!(" emulated {e}"));
        }
        s
    }

    /// The arguments of `emsort` for this point: `sort --method … -q INPUT
    /// -o OUTPUT`, the disks being the first D of `disk_dirs`.
    pub fn sort_args(
        &self,
        disk_dirs: &[PathBuf],
        seed: u64,
        stats: &Path,
        input: &Path,
        output: &Path,
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> =
            ["sort", "--method", self.method.name(), "--format", &self.format.to_string()]
                .into_iter()
                .map(OsString::from)
                .collect();
        a.extend([
            "-S".into(),
            crate::sort_size_arg(self.memory).into(),
            "--block-size".into(),
            self.block.to_string().into(),
        ]);
        if self.method == MethodKind::Plain {
            a.extend(["-T".into(), disk_dirs[0].clone().into_os_string()]);
        } else {
            let mut list = OsString::new();
            for (i, d) in disk_dirs[..self.disks].iter().enumerate() {
                if i > 0 {
                    list.push(",");
                }
                list.push(d);
            }
            a.extend(["--disks".into(), list]);
            if let Some(e) = &self.emulate {
                a.extend(["--emulate-disk".into(), e.into()]);
            }
        }
        a.extend(["--seed".into(), seed.to_string().into(), "--stats".into(), stats.as_os_str().to_owned()]);
        a.extend(["-q".into(), input.as_os_str().to_owned(), "-o".into(), output.as_os_str().to_owned()]);
        a
    }
}

/// An SRM campaign; see the module docs for what [`run`](Campaign::run) does.
/// Its settings (cache method, output directory …) are set with the methods
/// of [`CampaignBuilder`]; the inputs, disk directories and outputs go in a
/// temporary directory made inside the work directory and removed at the
/// end (default: inside the output directory).
#[derive(Debug, Clone)]
pub struct Campaign {
    points: Vec<Point>,
    settings: CampaignSettings,
    sorter_exe: Option<PathBuf>,
    verify: bool,
    seed: u64,
}

/// What a finished campaign produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The output directory.
    pub out_dir: PathBuf,
    /// `raw.csv`: a row per run.
    pub raw_csv: PathBuf,
    /// `summary.csv`: a row per point.
    pub summary_csv: PathBuf,
    /// `table.md`: the paper's tables.
    pub table_md: PathBuf,
    /// `README.md`: the command, the files, the tables and Barve &
    /// Vitter's conclusions beside them.
    pub readme: PathBuf,
    /// `machine.json`.
    pub machine_json: PathBuf,
    /// The SVG plots drawn.
    pub plots: Vec<PathBuf>,
    /// The summary rows.
    pub summary: Vec<SummaryRow>,
    /// Things the user should know (a work dir in memory, files left behind).
    pub warnings: Vec<String>,
    /// Sorts run.
    pub runs: u64,
    /// Sorts whose output was verified.
    pub verified: u64,
    /// Wall time of the whole campaign, seconds.
    pub seconds: f64,
}

/// `machine.json` of an SRM campaign: the common facts and the campaign's.
#[derive(Debug, Clone, Serialize)]
pub struct SrmMachine {
    /// CPU, memory, kernel, file system, `read_ahead_kb`, command line …
    #[serde(flatten)]
    pub machine: Machine,
    /// How the sorts ran: `child process: EXE`.
    pub emsort_runs: String,
    /// The disk directories (all on the work directory's device).
    pub disk_dirs: Vec<String>,
    /// The seed of the first repetition (repetition r: seed + r − 1).
    pub seed: u64,
    /// Whether every output was verified.
    pub verify: bool,
    /// The input generator: emsort's, uniform, seed 42.
    pub input: String,
}

impl CampaignBuilder for Campaign {
    const NAME: &'static str = "srm";

    fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut CampaignSettings {
        &mut self.settings
    }
}

impl Campaign {
    /// A campaign of every point of `grids`; a point listed twice runs once
    /// with the larger reps. Fails when there is no point.
    pub fn new(grids: &[Grid]) -> Result<Campaign> {
        let mut points = Vec::new();
        for g in grids {
            let lens = [
                g.formats.len(),
                g.items.len(),
                g.memories.len(),
                g.blocks.len(),
                g.disks.len(),
                g.methods.len(),
            ];
            points.extend(product(lens).map(|[f, n, m, b, d, method]| {
                let method = g.methods[method];
                // `plain` has no disks: one point whatever D is.
                let (disks, emulate) =
                    if method == MethodKind::Plain { (1, None) } else { (g.disks[d], g.emulate.clone()) };
                Point {
                    format: g.formats[f],
                    items: g.items[n],
                    memory: g.memories[m],
                    block: g.blocks[b],
                    disks,
                    method,
                    emulate,
                    reps: g.reps,
                }
            }));
        }
        let points = merge_repeats(
            points,
            |p| {
                let m = super::params::METHODS.iter().position(|x| *x == p.method).unwrap_or(9);
                (p.format.to_string(), p.items, p.memory, p.block, p.disks, p.emulate.clone(), m)
            },
            |p| &mut p.reps,
        );
        if points.is_empty() {
            return Err(Error::Campaign("the campaign has no point to measure".into()));
        }
        Ok(Campaign {
            points,
            settings: CampaignSettings::new(Self::NAME),
            sorter_exe: None,
            verify: true,
            seed: emsort_sort::SortPlan::DEFAULT_SEED,
        })
    }

    /// The campaign a parameter file describes (see [`parse_params`]).
    pub fn from_params_file(path: &Path) -> Result<Campaign> {
        Campaign::new(&read_params(path)?)
    }

    /// The full campaign ([`FULL_PARAMS`]).
    pub fn full() -> Campaign {
        let grids = parse_params(FULL_PARAMS, Path::new("<built-in srm-full.csv>"))
            .expect("the built-in full parameter file parses (checked by a test)");
        Campaign::new(&grids).expect("the built-in full campaign is valid")
    }

    /// The quick campaign ([`QUICK_PARAMS`]).
    pub fn quick() -> Campaign {
        let grids = parse_params(QUICK_PARAMS, Path::new("<built-in srm-quick.csv>"))
            .expect("the built-in quick parameter file parses (checked by a test)");
        Campaign::new(&grids).expect("the built-in quick campaign is valid")
    }

    /// The `emsort` binary that runs every sort (required).
    pub fn sorter_exe(mut self, exe: impl Into<PathBuf>) -> Campaign {
        self.sorter_exe = Some(exe.into());
        self
    }

    /// Whether to verify every output (default: yes).
    pub fn verify(mut self, yes: bool) -> Campaign {
        self.verify = yes;
        self
    }

    /// The sort's `--seed` of the first repetition (default
    /// [`SortPlan::DEFAULT_SEED`](emsort_sort::SortPlan::DEFAULT_SEED);
    /// repetition r uses seed + r − 1).
    pub fn seed(mut self, seed: u64) -> Campaign {
        self.seed = seed;
        self
    }

    /// Sets every point's repetitions.
    pub fn reps(mut self, reps: u32) -> Campaign {
        for p in &mut self.points {
            p.reps = reps.max(1);
        }
        self
    }

    /// The points, in the order they run within a repetition of a data set.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Total sorts.
    pub fn runs(&self) -> u64 {
        self.points.iter().map(|p| u64::from(p.reps)).sum()
    }

    /// The distinct inputs (format, N), in run order.
    fn data_sets(&self) -> Vec<(Format, u64)> {
        let mut v: Vec<(Format, u64)> = Vec::new();
        for p in &self.points {
            if !v.contains(&(p.format, p.items)) {
                v.push((p.format, p.items));
            }
        }
        v.sort_by_key(|&(f, n)| (n, f.to_string()));
        v
    }

    /// Runs the campaign (see the module docs), one unit of progress per
    /// sort in phase `"srm bench"`. Setting `cancel` stops it within a run
    /// with an [`Interrupted`](emsort_io::ErrorKind::Interrupted) error; the
    /// work files are removed and `raw.csv` keeps the finished runs.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<Outcome> {
        let started = Instant::now();
        // 1. Checks.
        let exe = self.sorter_exe.clone().ok_or_else(|| {
            Error::Campaign("the SRM campaign runs `emsort sort` as a child process: give the binary".into())
        })?;
        self.settings.check_cache()?;
        let raw_csv = self.settings.fresh_raw_csv("table and plots")?;
        let out = &self.settings.out_dir;
        check_memory_m(self.points.iter().map(|p| p.memory).max())?;
        let base = self.settings.create_work_dir()?.unwrap_or_else(|| out.clone());
        let temp = temp_dir_in(&base, ".emsort-srm-work-")?;
        let work = std::path::absolute(temp.path()).map_err(|e| Error::io("resolve", temp.path(), e))?;
        let largest = self.points.iter().map(Point::bytes).max().unwrap_or(0);
        crate::scratch::check_space(
            &work,
            4 * largest,
            format!("a sort of {} in {}", format_size(largest), work.display()),
        )?;
        let max_d = self.points.iter().map(|p| p.disks).max().unwrap_or(1);
        let disk_dirs: Vec<PathBuf> = (0..max_d).map(|i| work.join(format!("disk{i}"))).collect();
        for d in &disk_dirs {
            std::fs::create_dir_all(d).map_err(|e| Error::io("create directory", d, e))?;
        }

        // 2. The machine.
        let mut machine = self.settings.machine(&work);
        machine.element = formats_element(self.points.iter().map(|p| p.format));
        let mut warnings: Vec<String> = memory_fs_warning(&work, &machine.fs_type).into_iter().collect();
        let facts = SrmMachine {
            machine,
            emsort_runs: format!("child process: {}", crate::machine::relative(&exe)),
            disk_dirs: disk_dirs.iter().map(|d| crate::machine::relative_path(d)).collect(),
            seed: self.seed,
            verify: self.verify,
            input: "emsort's generator (emsort_sort::gen), uniform, seed 42".into(),
        };
        let machine_json = out.join("machine.json");
        write_json(&machine_json, &facts)?;

        // 3. The runs; 4. clean up whatever happened.
        let mut writer = RawWriter::create(&raw_csv)?;
        let mut ctx = RunCtx {
            exe: &exe,
            work: &work,
            disk_dirs: &disk_dirs,
            writer: &mut writer,
            progress,
            cancel,
            warnings: &mut warnings,
            runs: 0,
            verified: 0,
        };
        progress.phase("srm bench", Some(self.runs()));
        let result = self.run_all(&mut ctx);
        let (runs, verified) = (ctx.runs, ctx.verified);
        drop(writer);
        drop(temp);
        result?;

        // 5. Reports from the CSV, and the README with them.
        let (summary, plots) = reports_from_csv(out)?;
        let readme = out.join("README.md");
        std::fs::write(&readme, self.readme_text(&summary, &plots))
            .map_err(|e| Error::io("write", &readme, e))?;
        Ok(Outcome {
            out_dir: out.clone(),
            raw_csv,
            summary_csv: out.join("summary.csv"),
            table_md: out.join("table.md"),
            readme,
            machine_json,
            plots,
            summary,
            warnings,
            runs,
            verified,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// `README.md`: the command and the files, then `table.md`'s tables
    /// and the paper's conclusions beside them.
    fn readme_text(&self, summary: &[SummaryRow], plots: &[PathBuf]) -> String {
        let table = table_markdown(summary);
        // table.md's own title gives way to the README's.
        let body = table.split_once('\n').map_or("", |(_, rest)| rest).trim_start();
        let names: Vec<String> = plots
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| format!("`{}`", n.to_string_lossy()))
            .collect();
        format!(
            "# emsort SRM vs DSM campaign (experiment 3: Barve & Vitter's SRM against DSM)\n\n\
             Command: `{cmd}`\n\n\
             ## Files\n\n\
             - `raw.csv`: a row per sort (method, format, N, M, B, D, emulated disk, repetition, \
             seconds per phase, passes, merge orders, parallel reads, ν, flushes).\n\
             - `summary.csv`: a row per point: min/median/max merge time and the medians of the rest.\n\
             - `table.md`: the tables below.\n\
             - `machine.json`: the machine, the command, the disk directories.\n\
             - plots: {plots}.\n\n\
             Redraw `summary.csv`, `table.md` and the plots from `raw.csv` with \
             `emsort bench srm --plot-only DIR`.\n\n{body}",
            cmd = self.settings.command_line,
            plots = if names.is_empty() { "none".to_string() } else { names.join(", ") },
        )
    }

    /// Step 3: every data set, every repetition.
    fn run_all(&self, ctx: &mut RunCtx<'_>) -> Result<()> {
        for (format, items) in self.data_sets() {
            let input = ctx.work.join(format!("data_{}_{items}.in", format.to_string().replace(':', "-")));
            let res = self.run_data_set(ctx, format, items, &input);
            let _ = std::fs::remove_file(&input);
            let _ = std::fs::remove_file(ctx.work.join("sorted.out"));
            res?;
        }
        Ok(())
    }

    fn run_data_set(&self, ctx: &mut RunCtx<'_>, format: Format, items: u64, input: &Path) -> Result<()> {
        if ctx.cancel.load(Ordering::Relaxed) {
            return Err(interrupted(ctx.work));
        }
        ctx.progress.message(&format!("generating {format} N={}", crate::streams::format_count(items)));
        generate(&GenSpec::items(format, items), input, &NoProgress, ctx.cancel)?;
        let fp = if self.verify { Some(fingerprint_file(input, format, ctx.cancel)?) } else { None };
        let points: Vec<&Point> =
            self.points.iter().filter(|p| p.format == format && p.items == items).collect();
        for (rep, round) in rounds(&points, |p| p.reps) {
            for p in round {
                if ctx.cancel.load(Ordering::Relaxed) {
                    return Err(interrupted(ctx.work));
                }
                ctx.progress.message(&format!("{} rep {rep}", p.label()));
                let row = self.run_point(ctx, p, rep, input, fp.as_ref())?;
                ctx.writer.write(&row)?;
                ctx.runs += 1;
                ctx.progress.advance(1);
            }
        }
        Ok(())
    }

    /// One sort: cold cache, the child, fsync, statistics, verification.
    fn run_point(
        &self,
        ctx: &mut RunCtx<'_>,
        p: &Point,
        rep: u32,
        input: &Path,
        fp: Option<&Fingerprint>,
    ) -> Result<RawRow> {
        let out = ctx.work.join("sorted.out");
        let stats_path = ctx.work.join("emsort-stats.json");
        let _ = std::fs::remove_file(&stats_path);
        let seed = self.seed.wrapping_add(u64::from(rep) - 1);
        self.settings.cache.apply(&[input])?;
        let mut cmd = std::process::Command::new(ctx.exe);
        cmd.args(p.sort_args(ctx.disk_dirs, seed, &stats_path, input, &out));
        let c = peers::run_child(cmd, &format!("emsort sort ({})", p.label()), ctx.cancel, ctx.work)?;
        match c.status.code() {
            Some(0) => {}
            Some(130) | Some(143) => return Err(interrupted(ctx.work)),
            Some(2) => {
                return Err(Error::Run {
                    point: p.label(),
                    rep,
                    source: emsort_io::Error::from_io(
                        "emsort sort",
                        &out,
                        std::io::Error::other(peers::tail(&c.stderr)),
                    ),
                })
            }
            _ => {
                return Err(Error::Campaign(format!(
                    "{} (rep {rep}): `{} sort` failed ({}): {}",
                    p.label(),
                    ctx.exe.display(),
                    c.status,
                    peers::tail(&c.stderr)
                )))
            }
        }
        let t = Instant::now();
        peers::sync_file(&out)?;
        let total_s = c.seconds + t.elapsed().as_secs_f64();
        // Whatever a sort leaves in its disk directories is a bug to report
        // (the sort removes its runs); clear it so the next run starts clean.
        for d in &ctx.disk_dirs[..p.disks] {
            let left: Vec<_> = std::fs::read_dir(d).map(|r| r.flatten().collect()).unwrap_or_default();
            if !left.is_empty() {
                ctx.warnings.push(format!(
                    "{} (rep {rep}) left {} file(s) in {}",
                    p.label(),
                    left.len(),
                    d.display()
                ));
                for e in left {
                    let _ = std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
                }
            }
        }
        let text = std::fs::read_to_string(&stats_path).map_err(|e| Error::io("read", &stats_path, e))?;
        let _ = std::fs::remove_file(&stats_path);
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| Error::Campaign(format!("{}: {}: {e}", p.label(), stats_path.display())))?;
        let mut row = RawRow {
            method: p.method.name().to_string(),
            format: p.format.to_string(),
            items: p.items,
            bytes: p.bytes(),
            memory: p.memory,
            block_size: p.block,
            disks: p.disks,
            emulate: p.emulate.clone().unwrap_or_default(),
            rep,
            seed,
            runs: None,
            passes: None,
            merge_orders: String::new(),
            merge_s: None,
            merge_mib_s: None,
            merge_bytes_read: None,
            merge_bytes_written: None,
            parallel_reads: String::new(),
            nu: String::new(),
            flushes: String::new(),
            forecast_in_memory: String::new(),
            run_formation_s: None,
            total_s,
            peak_rss_bytes: c.peak_rss_bytes,
            cache: self.settings.cache.name().into(),
            verified: false,
        };
        fill_from_stats(&mut row, &v, p.method != MethodKind::Plain)
            .map_err(|what| Error::Campaign(format!("{}: the statistics file lacks {what}", p.label())))?;
        if let Some(fp) = fp {
            check_output(&out, p.format, fp, ctx.cancel, &p.label())?;
            row.verified = true;
            ctx.verified += 1;
        }
        std::fs::remove_file(&out).map_err(|e| Error::io("remove", &out, e))?;
        Ok(row)
    }
}

struct RunCtx<'a> {
    exe: &'a Path,
    work: &'a Path,
    disk_dirs: &'a [PathBuf],
    writer: &'a mut RawWriter,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
    warnings: &'a mut Vec<String>,
    runs: u64,
    verified: u64,
}

/// A JSON array of numbers (or nulls) as a `;`-separated column; `null`
/// or a missing value is empty.
fn per_pass(v: Option<&Value>) -> String {
    match v {
        Some(Value::Array(xs)) => {
            let nums: Vec<String> =
                xs.iter().map(|x| x.as_f64().map(|f| join_numbers(&[f])).unwrap_or_default()).collect();
            nums.join(";")
        }
        Some(x) if x.is_number() => join_numbers(&[x.as_f64().unwrap_or(f64::NAN)]),
        _ => String::new(),
    }
}

/// Fills the counts and times of `row` from `emsort sort --stats` JSON:
/// from `parallel_disks` for DSM and SRM (`pdisk`), from the plain sort's
/// fields otherwise. The error names the missing key.
pub(crate) fn fill_from_stats(row: &mut RawRow, v: &Value, pdisk: bool) -> std::result::Result<(), String> {
    let u = |x: &Value, ptr: &str| x.pointer(ptr).and_then(Value::as_u64).ok_or_else(|| ptr.to_string());
    let f = |x: &Value, ptr: &str| x.pointer(ptr).and_then(Value::as_f64).ok_or_else(|| ptr.to_string());
    row.run_formation_s = Some(f(v, "/run_formation/seconds")?);
    if pdisk {
        let pd = v.get("parallel_disks").filter(|x| x.is_object()).ok_or("/parallel_disks")?;
        let g = |ptr: &str| format!("/parallel_disks{ptr}");
        row.runs = Some(u(pd, "/runs").map_err(|p| g(&p))?);
        row.passes = Some(
            pd.get("passes")
                .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.round() as u64)))
                .ok_or(g("/passes"))?,
        );
        row.merge_orders = per_pass(pd.get("merge_orders"));
        row.parallel_reads = per_pass(pd.get("parallel_reads"));
        row.nu = per_pass(pd.get("nu"));
        row.flushes = per_pass(pd.get("flushes"));
        row.merge_s = Some(f(pd, "/merge_seconds").map_err(|p| g(&p))?);
        row.merge_bytes_read = pd.get("merge_bytes_read").and_then(Value::as_u64);
        row.merge_bytes_written = pd.get("merge_bytes_written").and_then(Value::as_u64);
        row.merge_mib_s = pd.get("merge_rate").and_then(Value::as_f64).map(|r| r / (1u64 << 20) as f64);
        row.forecast_in_memory = match pd.get("forecast_in_memory") {
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
    } else {
        row.runs = Some(u(v, "/runs")?);
        row.passes = Some(u(v, "/merge_levels")?);
        row.merge_orders = per_pass(v.get("merge_order"));
        row.merge_s = Some(f(v, "/merge/seconds")?);
        row.merge_bytes_read = Some(u(v, "/merge/bytes_read")?);
        row.merge_bytes_written = Some(u(v, "/merge/bytes_written")?);
    }
    if row.merge_mib_s.is_none() {
        if let (Some(r), Some(w), Some(s)) = (row.merge_bytes_read, row.merge_bytes_written, row.merge_s) {
            row.merge_mib_s = (s > 0.0).then(|| (r + w) as f64 / s / (1u64 << 20) as f64);
        }
    }
    Ok(())
}

/// Verifies a sorted output against the input's fingerprint.
fn check_output(out: &Path, format: Format, fp: &Fingerprint, cancel: &AtomicBool, who: &str) -> Result<()> {
    let r = verify(out, format, false, None, cancel)?;
    if let Some(d) = r.disorder {
        return Err(Error::Campaign(format!(
            "{who}: the output is not sorted (item {} at byte {})",
            d.index, d.offset
        )));
    }
    if r.fingerprint != *fp {
        return Err(Error::Campaign(format!(
            "{who}: the output does not hold the input's items ({} items, input {})",
            r.fingerprint.count, fp.count
        )));
    }
    Ok(())
}

/// Reads `dir/raw.csv` and writes `summary.csv`, `table.md` and the plots
/// into `dir`; returns the summary rows and the plots drawn.
pub fn reports_from_csv(dir: &Path) -> Result<(Vec<SummaryRow>, Vec<PathBuf>)> {
    let summary = summary_from_csv(dir)?;
    let table = dir.join("table.md");
    std::fs::write(&table, table_markdown(&summary)).map_err(|e| Error::io("write", &table, e))?;
    let drawn = plots(dir, &summary)?;
    Ok((summary, drawn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use emsort_io::cache::CacheMethod;

    #[test]
    fn built_in_campaigns() {
        let q = Campaign::quick();
        assert!(q.points().iter().all(|p| p.items <= 40_000), "quick stays tiny");
        assert!(
            q.points().iter().any(|p| p.method == MethodKind::Dsm)
                && q.points().iter().any(|p| p.method == MethodKind::Srm)
        );
        assert!(q.runs() <= 20, "{}", q.runs());
        let f = Campaign::full();
        assert!(f.points().iter().any(|p| p.items == 10_000_000 && p.memory == 15 << 20 && p.disks == 6));
        assert!(f.points().iter().any(|p| p.emulate.is_some()));
        let ds: Vec<usize> = {
            let mut v: Vec<usize> = f.points().iter().map(|p| p.disks).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        assert_eq!(ds, [1, 2, 3, 4, 6, 8]);
        assert!(f.points().iter().all(|p| p.block == 256 << 10 && p.format.to_string() == "rec:104:0:8"));
    }

    #[test]
    fn duplicates_run_once_and_plain_has_one_point() {
        let text = "h\nu64;1e4;1M;16K;2,3;plain,srm;;1\nu64;1e4;1M;16K;3;srm;;3\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap()).unwrap();
        let labels: Vec<String> = c.points().iter().map(|p| format!("{} {}", p.label(), p.reps)).collect();
        assert_eq!(
            labels,
            [
                "plain u64 N=1e4 M=1M B=16K D=1 1",
                "srm u64 N=1e4 M=1M B=16K D=2 1",
                "srm u64 N=1e4 M=1M B=16K D=3 3"
            ]
        );
    }

    #[test]
    fn sort_arguments() {
        let p = Point {
            format: Format::U64,
            items: 100,
            memory: 1 << 20,
            block: 16 << 10,
            disks: 2,
            method: MethodKind::Srm,
            emulate: Some("60M,1ms".into()),
            reps: 1,
        };
        let dirs = [PathBuf::from("/w/disk0"), PathBuf::from("/w/disk1"), PathBuf::from("/w/disk2")];
        let a = p.sort_args(&dirs, 7, Path::new("/w/s.json"), Path::new("/w/in"), Path::new("/w/out"));
        let a: Vec<String> = a.iter().map(|x| x.to_string_lossy().into_owned()).collect();
        assert_eq!(
            a.join(" "),
            "sort --method srm --format u64 -S 1024K --block-size 16384 --disks /w/disk0,/w/disk1 \
             --emulate-disk 60M,1ms --seed 7 --stats /w/s.json -q /w/in -o /w/out"
        );
        let plain = Point { method: MethodKind::Plain, emulate: None, ..p };
        let a = plain.sort_args(&dirs, 1, Path::new("s"), Path::new("i"), Path::new("o"));
        let a: Vec<String> = a.iter().map(|x| x.to_string_lossy().into_owned()).collect();
        assert!(a.join(" ").contains("-T /w/disk0 --seed 1"), "{a:?}");
    }

    #[test]
    fn statistics_fill_the_row() {
        let mut row = crate::srm::record::tests::row("srm", 1000, 1 << 20, 3, 1, 1.0);
        let v: Value = serde_json::from_str(
            r#"{"run_formation":{"seconds":0.5},"runs":9,"merge_levels":1,"merge_order":9,
                "merge":{"seconds":0.7,"bytes_read":10,"bytes_written":10},
                "parallel_disks":{"method":"srm","disks":3,"runs":9,"passes":2,"merge_orders":[3,3],
                "parallel_reads":[40,41],"nu":[1.0125,1.05],"flushes":[0,2],"merge_seconds":0.6,
                "merge_bytes_read":2097152,"merge_bytes_written":2097152,"merge_rate":6990506.67,
                "forecast_in_memory":true,"emulated_disk":null}}"#,
        )
        .unwrap();
        fill_from_stats(&mut row, &v, true).unwrap();
        assert_eq!((row.runs, row.passes, row.merge_s), (Some(9), Some(2), Some(0.6)));
        assert_eq!(row.merge_orders, "3;3");
        assert_eq!(row.nu, "1.0125;1.05");
        assert_eq!(row.flushes, "0;2");
        assert_eq!(row.forecast_in_memory, "true");
        assert!((row.merge_mib_s.unwrap() - 6.6667).abs() < 1e-3);
        fill_from_stats(&mut row, &v, false).unwrap();
        assert_eq!(
            (row.runs, row.passes, row.merge_s, row.merge_orders.as_str()),
            (Some(9), Some(1), Some(0.7), "9")
        );
        let bare: Value = serde_json::from_str(r#"{"run_formation":{"seconds":0.5}}"#).unwrap();
        assert_eq!(fill_from_stats(&mut row, &bare, true).unwrap_err(), "/parallel_disks");
    }

    #[test]
    fn a_missing_binary_or_a_failing_sort_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "h\nu64;1000;256K;16K;2;srm;;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(tmp.path().join("o"));
        let e = c.clone().run(&NoProgress, &AtomicBool::new(false)).unwrap_err();
        assert!(e.to_string().contains("give the binary"), "{e}");
        let e = c.sorter_exe("false").run(&NoProgress, &AtomicBool::new(false)).unwrap_err();
        assert!(e.to_string().contains("`false sort` failed"), "{e}");
        let left: Vec<_> =
            std::fs::read_dir(tmp.path().join("o")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".emsort-srm-work")), "{left:?}");
    }
}
