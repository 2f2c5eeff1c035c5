//! `emsort calibrate`: this machine's crossover points for the adaptive
//! reader (experiment 4, issue 5 §4).
//!
//! The thesis' guidelines rest on numbers measured on one Windows machine
//! with an NVMe SSD (§4.1.4, §4.2.3, §4.6, §4.7): mmap up to 32 KiB, blocks
//! of 4 MiB, queue depth 32, two to four threads. [`Calibrate`] measures
//! each of them here, on a data file in a scratch directory, every run on
//! a cold cache. Each step runs its candidates in **paired rounds** (every
//! candidate once per round, in a Williams order), at least
//! [`Plan::min_rounds`], at most [`Plan::max_rounds`], stopping earlier
//! once its decision is clear or [`Plan::step_seconds`] have passed, and
//! keeps a value other than the thesis' one only when the paired ratios
//! show it faster beyond their spread ([`decide`]); where they cannot
//! tell, it writes the thesis' value marked `inconclusive` (issue 38: one
//! run per point moved `max_block` and `mmap_max_request` from run to run
//! on a shared machine, and the adaptive reader with them).
//!
//! | step | experiment (each point a cold run)                                              | value ([`Calibration`] key) |
//! |------|---------------------------------------------------------------------------------|-----------------------------|
//! | 1    | random 4 KiB reads of half of a set of [`SET_FILES`] files, through `mmap`, by `madvise` hint | `mmap_advice`: the fastest hint if faster than `normal` by more than [`PLATEAU`] beyond the spread, else `normal` |
//! | 2    | the same reads through the adaptive reader's mapping (that hint), each file prefetched in the background | `prefetch`: `on` unless slower than the same reads through `mmap` alone (run beside it) by more than [`PLATEAU`] beyond the spread |
//! | 3    | random reads of half of the set, request size 4K … 1M, `mmap` (that hint) vs `pread` | `mmap_max_request`: the largest size up to which `mmap`'s median wins at every size, if at every size measured between it and the thesis' 32K the faster technique under it is faster beyond the spread; else 32K |
//! | 4    | the whole file front to back with `pread`, block size 4K … 16M                  | `max_block`: the smallest block within 5 % of the best median, if faster than 4M by more than 5 % beyond the spread; else 4M |
//! | 5    | the whole file front to back with `uring`, blocks of `max_block`, Q = 1 … 64     | `queue_depth`: the same rule against 32 |
//! | 6    | random requests of 256K … 32M, `uring` (`max_block`, `queue_depth`) vs `pread` with the adaptive reader's block | `uring_min_request`: the smallest size from which `uring`'s median wins at every larger size, kept as in step 3 against 8M |
//! | 7    | threads 1 … 2 × cores (and the thesis' 4 and all): the whole file in contiguous slices; random 4 KiB; random 4 MiB | `threads_sequential`, `threads_random_small`, `threads_random_large`: the rule of step 4 against 4, all, 4 |
//! | 8    | the data file in runs of 16 MiB (requests of 256 KiB, 16 MiB skipped after each) among random 4 KiB reads of half of the set, through the adaptive reader: its runs by `pread` (the kernel's readahead), then by the direct read-ahead with as many 2 MiB reads in flight as make `read_ahead_kb` ([`direct_depth`]) | `direct_readahead`: that depth unless slower than `pread` by more than [`PLATEAU`] beyond the spread; else `off` |
//!
//! Steps 2 and 8 keep their technique unless it is shown to cost: there a
//! measurement that cannot tell keeps it on, marked `measured` (the
//! thesis' value, off, would be the one the rounds did not support
//! either; see below why their gain does not show in a calibration). The
//! rules before issue 38 (one run per point, medians alone, no marks)
//! remain as [`Plan::one_run`], to compare.
//!
//! Step 8, too, keeps the direct read-ahead unless it costs. Its gain is
//! the page cache it does not fill: where fresh memory is dear (this VM
//! hands freed memory back to its host, bench/results/2026-11-22d-readers)
//! the mixed trace ran 0.8× `pread`'s time with it, while a calibration
//! run, a few hundred MiB, mostly finds memory that is still cheap
//! (measured 2026-11-22: within a few % either way). The window is not
//! measured: windows of 4, 8 and 16 MiB made the mixed trace take 1.04,
//! 0.92 and 1.4 s (`mmap` 1.35 s), the kernel's own window (8 MiB here)
//! being best, while the calibration runs ranked them by noise.
//!
//! `sequential_run` is not measured (it describes a trace, not the
//! machine) and keeps its built-in value.
//!
//! Random reads cover half the file (in bytes) because the thesis' swapFlag
//! promises that "a larger portion of the file" will be read: that is the
//! only case in which the adaptive reader asks the `mmap`-or-`pread`
//! question (§4.7). On Linux the answer depends on the kernel's readahead
//! (`read_ahead_kb`) more than on the device: a fault of a mapping with the
//! `normal` hint reads up to that window around the page, where `pread`
//! reads just the request.
//!
//! Step 2 keeps the prefetch unless it costs, rather than only when it
//! wins: its gain comes from reading ahead while the application works
//! between requests, which a calibration loop that does nothing but read
//! cannot show. With `read_ahead_kb` = 8192 the loop measured 330 against
//! 324 MiB/s (each fault already reads 8 MiB of the 32 MiB files), while
//! replaying the traces the prefetch made the adaptive reader 10–20 %
//! faster (bench/results/2026-11-22d-readers); at 128 KiB it wins in the
//! loop too.
//!
//! Steps 1 to 3 read a set of [`SET_FILES`] smaller files (together the
//! size of the data file), their requests interleaved, as an application
//! reads its tiles or maps: on one large file `willneed` won (it reads the
//! whole file at once, 332 against 286 MiB/s for `normal`), yet replaying
//! the `im` trace (21 files) with that hint made the adaptive reader 1.26×
//! slower than `mmap`, and with `normal` 0.75× (bench/results/2026-11-22-readers).
//!
//! The [`Outcome`] holds the [`Calibration`] and every measured point
//! ([`Point`]), grouped by step ([`Table`]), so that the values can be
//! shown beside the numbers they rest on ([`format_tables`]).
//! [`write_calibration`] writes the file `Calibration::load` reads,
//! atomically, with the measurement's circumstances as comments.
//!
//! The data file lives in a new directory inside the directory given
//! ([`Calibrate::new`]), removed when the run ends, also after an error or
//! a cancellation (the `cancel` flag is polled between runs and every 256
//! requests).
//!
//! ```no_run
//! use emsort_bench::calibrate::{format_tables, Calibrate};
//! use emsort_io::NoProgress;
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let out = Calibrate::new("/var/tmp".as_ref()).quick(true).run(&NoProgress, &AtomicBool::new(false))?;
//! print!("{}{}", format_tables(&out), out.calibration.guidelines());
//! # Ok(()) }
//! ```

pub mod decide;
pub mod measure;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::reader::calibration::{Key, Origin};
use emsort_io::{
    format_size, AccessHint, AtomicFile, Calibration, Madvise, Progress, ReaderConfig, ReaderKind,
};

use crate::grid::round_order;
use crate::stats::median;
use crate::{Error, Result};
use decide::Verdict;
use measure::{config, run, run_scattered, DataFile, Pattern};

/// Files of the set that steps 1 to 3 read (see the [module docs](self)).
pub const SET_FILES: usize = 8;

/// Request size of step 8's sequential reads (the size of an animation's
/// frame in the thesis' `am` workload, a few hundred KiB).
pub const SEQUENTIAL_REQUEST: usize = 256 << 10;

/// Reads in flight of the direct read-ahead: as many chunks as make the
/// kernel's readahead window (`read_ahead_kb`), 2 … 16; 4 when unknown.
pub fn direct_depth(read_ahead_kb: Option<u64>) -> u32 {
    let chunk_kb = (emsort_io::reader::DIRECT_CHUNK >> 10) as u64;
    read_ahead_kb.map_or(4, |kb| (kb / chunk_kb).clamp(2, 16) as u32)
}

/// Length of step 8's runs, and of the stretch skipped after each.
pub const SEQUENTIAL_RUN: u64 = 16 << 20;

/// A value is on the plateau when its throughput is within this share of
/// the best one measured.
pub const PLATEAU: f64 = 0.05;

/// The sizes and rounds of a calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Size of the data file.
    pub file_size: u64,
    /// Rounds every step runs at least (each candidate once per round).
    pub min_rounds: usize,
    /// Rounds a step runs at most; it stops earlier once its decision is
    /// clear ([`decide`]) or `step_seconds` have passed.
    pub max_rounds: usize,
    /// Seconds after which a step starts no new round (once it has run
    /// `min_rounds`).
    pub step_seconds: f64,
    /// The stable rules of issue 38 (paired verdicts; the thesis' value
    /// where they cannot tell). `false`: the rules before it, each value
    /// from the medians alone ([`Plan::one_run`]), kept to compare.
    pub stable: bool,
    /// `madvise` hints compared (step 1).
    pub advice: Vec<Madvise>,
    /// Request sizes, mmap against pread (step 3).
    pub mmap_sizes: Vec<usize>,
    /// Block sizes of sequential pread (step 4).
    pub blocks: Vec<usize>,
    /// Queue depths of sequential uring (step 5).
    pub depths: Vec<u32>,
    /// Request sizes, uring against pread (step 6).
    pub uring_sizes: Vec<usize>,
    /// Thread counts (step 7).
    pub threads: Vec<usize>,
    /// Request size of the large random reads with threads (step 7).
    pub large_random: usize,
}

impl Plan {
    /// The full calibration: a 256 MiB file, 5 to 15 paired rounds per
    /// step, at most 40 s each; a quarter of an hour at most.
    pub fn full() -> Plan {
        let cores = cores();
        let threads: Vec<usize> =
            std::iter::successors(Some(1usize), |t| Some(t * 2)).take_while(|&t| t <= 2 * cores).collect();
        Plan {
            file_size: 256 << 20,
            min_rounds: 5,
            max_rounds: 15,
            step_seconds: 40.0,
            stable: true,
            advice: Madvise::ALL.to_vec(),
            mmap_sizes: (12..=20).map(|s| 1usize << s).collect(),
            blocks: vec![4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20],
            depths: vec![1, 2, 4, 8, 16, 32, 64],
            uring_sizes: vec![256 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20],
            threads: with_default_threads(threads),
            large_random: 4 << 20,
        }
    }

    /// A quick calibration on a 16 MiB file, few points, 5 to 11 paired
    /// rounds per step, no new round after 3 s: about a minute (51–82 s
    /// on a shared 2-vCPU machine). Its values are rough; where the rounds
    /// cannot tell, the thesis' values.
    pub fn quick() -> Plan {
        Plan {
            file_size: 16 << 20,
            min_rounds: 5,
            max_rounds: 11,
            step_seconds: 3.0,
            stable: true,
            advice: vec![Madvise::Normal, Madvise::Random],
            mmap_sizes: vec![4 << 10, 32 << 10, 256 << 10],
            blocks: vec![16 << 10, 256 << 10, 4 << 20],
            depths: vec![1, 8, 32],
            uring_sizes: vec![1 << 20, 4 << 20, 8 << 20],
            threads: with_default_threads(vec![1, 2]),
            large_random: 1 << 20,
        }
    }

    /// The rules before issue 38, to compare: `rounds` runs per point
    /// (the old `--reps`; step 8 three times as many), every value from
    /// the medians alone, no fallback, no marks.
    pub fn one_run(self, rounds: usize) -> Plan {
        let rounds = rounds.max(1);
        Plan { min_rounds: rounds, max_rounds: rounds, stable: false, ..self }
    }
}

impl Plan {
    /// How the plan repeats, in words: `5 … 11 paired rounds per step
    /// (fewer once the decision is clear; at most 3 s per step)`, or
    /// `1 run per point (the rules before issue 38)`.
    pub fn rounds_text(&self) -> String {
        if self.stable {
            format!(
                "{} … {} paired rounds per step (fewer once the decision is clear; no new round after {} s)",
                self.min_rounds, self.max_rounds, self.step_seconds
            )
        } else {
            format!(
                "{} run{} per point, the medians alone (the rules before issue 38)",
                self.min_rounds,
                if self.min_rounds == 1 { "" } else { "s" }
            )
        }
    }
}

/// Available cores (2 when unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// `threads` with the thesis' counts added (4, and all cores), sorted.
fn with_default_threads(mut threads: Vec<usize>) -> Vec<usize> {
    let d = Calibration::default();
    for n in [d.threads_sequential as usize, d.threads_random_large as usize, cores()] {
        if !threads.contains(&n) {
            threads.push(n);
        }
    }
    threads.sort_unstable();
    threads
}

/// One measured point: a reader configuration at one value of a parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// What was run (`mmap normal`, `pread`, `uring B=1M` …).
    pub series: String,
    /// The parameter's value (bytes, a queue depth, threads; 0 for hints).
    pub param: u64,
    /// The parameter as shown (`4K`, `32`, `random` …).
    pub label: String,
    /// Bytes each run read.
    pub bytes: u64,
    /// Its time in each round, seconds (round order).
    pub runs: Vec<f64>,
}

impl Point {
    /// The median run's time, seconds.
    pub fn seconds(&self) -> f64 {
        median(&self.runs).unwrap_or(f64::NAN)
    }

    /// Throughput of the median run, MiB/s.
    pub fn mib_s(&self) -> f64 {
        self.bytes as f64 / self.seconds() / (1u64 << 20) as f64
    }
}

/// One step of the calibration: its points and the value it gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// What was measured.
    pub title: String,
    /// The points, in the order measured.
    pub points: Vec<Point>,
    /// The value(s) it gave and why, e.g. `max_block = 4M: inconclusive,
    /// the thesis' value; the plateau's smallest is 256K; 256K against 4M:
    /// unclear (0.97× (0.90–1.04, 11 rounds))`.
    pub decision: String,
    /// Rounds run (every point once per round).
    pub rounds: usize,
}

/// What [`Calibrate::run`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The values (its `source` is `None`).
    pub calibration: Calibration,
    /// Every step's points and decision, in order.
    pub tables: Vec<Table>,
    /// How the cache was emptied before each run.
    pub cache: CacheMethod,
    /// The plan measured.
    pub plan: Plan,
    /// `read_ahead_kb` of the device holding the data file, when found.
    pub read_ahead_kb: Option<u64>,
    /// Wall time of the whole calibration, seconds.
    pub seconds: f64,
}

/// A calibration run (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Calibrate {
    dir: PathBuf,
    plan: Plan,
    cache: CacheMethod,
}

impl Calibrate {
    /// A full calibration with its data file in a new directory inside
    /// `dir` (which must exist), on the best cache method available.
    pub fn new(dir: &Path) -> Calibrate {
        Calibrate { dir: dir.to_path_buf(), plan: Plan::full(), cache: CacheMethod::best_available() }
    }

    /// The quick plan ([`Plan::quick`]) instead of the full one.
    pub fn quick(mut self, quick: bool) -> Calibrate {
        self.plan = if quick { Plan::quick() } else { Plan::full() };
        self
    }

    /// Any plan.
    pub fn plan(mut self, plan: Plan) -> Calibrate {
        self.plan = plan;
        self
    }

    /// How to empty the cache before each run (`none` makes the numbers
    /// meaningless, but is allowed for tests).
    pub fn cache(mut self, m: CacheMethod) -> Calibrate {
        self.cache = m;
        self
    }

    /// The plan to be measured.
    pub fn planned(&self) -> &Plan {
        &self.plan
    }

    /// Measures every step and derives the calibration: the steps of the
    /// [module docs](self) in order, each on the values the earlier ones
    /// gave.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<Outcome> {
        let start = Instant::now();
        self.check()?;
        let work = self.scratch_dir()?;
        let (file, set) = self.write_data_files(work.path(), progress, cancel)?;
        progress.phase("calibrate", Some(STEPS));
        let mut m =
            Measurer { file: &file, set: &set, plan: &self.plan, cache: self.cache, progress, cancel };
        let mut cal = Calibration::default();
        let mut tables = vec![
            m.mmap_advice(&mut cal)?,
            m.prefetch(&mut cal)?,
            m.mmap_max_request(&mut cal)?,
            m.max_block(&mut cal)?,
            m.queue_depth(&mut cal)?,
            m.uring_min_request(&mut cal)?,
        ];
        tables.extend(m.threads(&mut cal)?);
        tables.push(m.direct_readahead(&mut cal)?);
        progress.finish_phase();
        let read_ahead_kb = emsort_io::cache::read_ahead_kb(&file.path);
        drop(work);
        Ok(Outcome {
            calibration: cal,
            tables,
            cache: self.cache,
            plan: self.plan.clone(),
            read_ahead_kb,
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// Refuses a cache method this process cannot use and a directory that
    /// is not one.
    fn check(&self) -> Result<()> {
        if self.cache == CacheMethod::Drop && !emsort_io::cache::can_drop_caches() {
            return Err(Error::Campaign(
                "cache method 'drop' needs write access to /proc/sys/vm/drop_caches (root); use fadvise"
                    .into(),
            ));
        }
        match std::fs::metadata(&self.dir) {
            Ok(md) if md.is_dir() => Ok(()),
            Ok(_) => Err(Error::Campaign(format!("{}: not a directory", self.dir.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(Error::Campaign(format!("{}: no such directory", self.dir.display())))
            }
            Err(e) => Err(Error::io("stat", &self.dir, e)),
        }
    }

    /// The new directory the data files live in (removed when dropped),
    /// with room for them checked.
    fn scratch_dir(&self) -> Result<tempfile::TempDir> {
        let work = tempfile::Builder::new()
            .prefix("emsort-calibrate-")
            .tempdir_in(&self.dir)
            .map_err(|e| Error::io("create directory in", &self.dir, e))?;
        crate::scratch::check_space(
            work.path(),
            2 * self.plan.file_size,
            format!("the calibration's data files in {}", work.path().display()),
        )?;
        Ok(work)
    }

    /// Writes the data file and the set of [`SET_FILES`] smaller files
    /// (together its size) into `work`, in phase `"write the data files"`.
    fn write_data_files(
        &self,
        work: &Path,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<(DataFile, Vec<DataFile>)> {
        let p = &self.plan;
        progress.phase("write the data files", None);
        let file = DataFile::create(&work.join("data.bin"), p.file_size, cancel)?;
        let part = (p.file_size / SET_FILES as u64 / measure::PAGE).max(1) * measure::PAGE;
        let set = (0..SET_FILES)
            .map(|i| DataFile::create(&work.join(format!("set-{i}.bin")), part, cancel))
            .collect::<Result<Vec<_>>>()?;
        progress.finish_phase();
        Ok((file, set))
    }
}

impl Plan {
    /// The request sizes of step 6 that fit twice into the data file.
    fn uring_sizes_measured(&self) -> Vec<usize> {
        self.uring_sizes.iter().copied().filter(|&s| s as u64 <= self.file_size / 2).collect()
    }
}

/// Steps of the calibration, each a table but step 7 three (the length of
/// phase `"calibrate"`).
const STEPS: u64 = 10;

/// Runs the steps' rounds and reports progress; its step methods measure
/// one step of the calibration each, set its value (and origin) in the
/// [`Calibration`] they are given and return its [`Table`].
struct Measurer<'a> {
    file: &'a DataFile,
    /// The set of smaller files of steps 1 to 3.
    set: &'a [DataFile],
    plan: &'a Plan,
    cache: CacheMethod,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
}

/// What one run of a candidate reads.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// A pattern over the data file, with this many threads.
    File(Pattern, usize),
    /// `total` bytes of random reads of `request` bytes over the set
    /// ([`run_scattered`], seeded).
    Set { request: usize, total: u64, seed: u64 },
    /// Step 8's sequential runs among random reads of the set ([`measure::run_mixed`]).
    Mixed,
}

/// A candidate of a step: its names and what it runs.
struct Arm {
    series: String,
    param: u64,
    label: String,
    cfg: ReaderConfig,
    work: Work,
}

impl Arm {
    fn new(series: &str, param: u64, label: &str, cfg: ReaderConfig, work: Work) -> Arm {
        Arm { series: series.to_string(), param, label: label.to_string(), cfg, work }
    }
}

/// The shape of step 8's runs: request, run, skip.
const RUNS: (usize, u64, u64) = (SEQUENTIAL_REQUEST, SEQUENTIAL_RUN, SEQUENTIAL_RUN);

/// Running rounds.
impl Measurer<'_> {
    /// A step's table, its points and decision to come.
    fn table(&self, title: &str) -> Table {
        Table { title: title.to_string(), points: Vec::new(), decision: String::new(), rounds: 0 }
    }

    /// Half of the set's bytes: what the random reads of steps 1 to 3 cover.
    fn set_half(&self) -> u64 {
        self.set.iter().map(|f| f.size).sum::<u64>() / 2
    }

    /// Bytes one run of `work` reads.
    fn bytes(&self, work: Work) -> u64 {
        match work {
            Work::File(p, _) => p.bytes(self.file.size),
            Work::Set { request, total, seed } => Pattern::Scattered { request, total, seed }.bytes(0),
            Work::Mixed => {
                let runs = Pattern::Runs { request: RUNS.0, run: RUNS.1, skip: RUNS.2 }.bytes(self.file.size);
                runs + self.set_half() / 4096 * 4096
            }
        }
    }

    /// One cold run of `arm`, seconds.
    fn once(&self, arm: &Arm) -> Result<f64> {
        match arm.work {
            Work::File(pattern, threads) => {
                run(self.file, &arm.cfg, pattern, threads, self.cache, self.cancel)
            }
            Work::Set { request, total, seed } => {
                run_scattered(self.set, &arm.cfg, request, total, seed, self.cache, self.cancel)
            }
            Work::Mixed => {
                measure::run_mixed(self.file, self.set, &arm.cfg, RUNS, 11, self.cache, self.cancel)
            }
        }
    }

    /// The plan's rounds for `arms` ([`Measurer::rounds_within`]).
    fn rounds(&mut self, step: &str, arms: &[Arm], settled: &dyn Fn(&[Point]) -> bool) -> Result<Vec<Point>> {
        let p = self.plan;
        self.rounds_within(step, arms, (p.min_rounds, p.max_rounds), settled)
    }

    /// Runs `arms` in rounds, each round every arm once in the order of
    /// [`round_order`] (a Williams design: a drift of the machine, or what
    /// a run leaves behind for the next, touches every arm alike), at
    /// least `min` rounds and at most `max`; from `min` on it stops once
    /// `settled` says the step's decision is clear, or once the plan's
    /// `step_seconds` have passed. A point per arm, its runs in round order.
    fn rounds_within(
        &mut self,
        step: &str,
        arms: &[Arm],
        (min, max): (usize, usize),
        settled: &dyn Fn(&[Point]) -> bool,
    ) -> Result<Vec<Point>> {
        let (min, max) = (min.max(1), max.max(min).max(1));
        let start = Instant::now();
        let mut points: Vec<Point> = arms
            .iter()
            .map(|a| Point {
                series: a.series.clone(),
                param: a.param,
                label: a.label.clone(),
                bytes: self.bytes(a.work),
                runs: Vec::with_capacity(min),
            })
            .collect();
        for round in 0..max {
            self.progress.message(&format!("{step}, round {}", round + 1));
            for k in round_order(arms.len(), round) {
                let t = self.once(&arms[k])?;
                points[k].runs.push(t);
            }
            let n = round + 1;
            if n >= min && (settled(&points) || start.elapsed().as_secs_f64() >= self.plan.step_seconds) {
                break;
            }
        }
        self.progress.advance(1);
        Ok(points)
    }
}

/// The runs of every point, by index.
fn times(points: &[Point]) -> Vec<&[f64]> {
    points.iter().map(|p| p.runs.as_slice()).collect()
}

/// The index of the fastest median.
fn fastest(points: &[Point]) -> usize {
    (0..points.len()).min_by(|&a, &b| points[a].seconds().total_cmp(&points[b].seconds())).expect("points")
}

/// `key = value: measured; why` or `key = value: inconclusive, the
/// thesis' value; why`.
fn stable_text(key: Key, cal: &Calibration, why: &str) -> String {
    let value = cal.value_text(key);
    match cal.origins.get(key) {
        Origin::Inconclusive => format!("{key} = {value}: inconclusive, the thesis' value; {why}"),
        _ => format!("{key} = {value}: measured; {why}"),
    }
}

/// The steps, in the order [`Calibrate::run`] takes them.
impl Measurer<'_> {
    /// Step 1: the madvise hint for random mmap reads (`mmap_advice`).
    fn mmap_advice(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let mut t = self.table(&format!(
            "random 4K reads of half of {SET_FILES} files of {} through mmap, by madvise hint",
            format_size(self.set[0].size)
        ));
        let work = Work::Set { request: 4096, total: self.set_half(), seed: 1 };
        let arms: Vec<Arm> = p
            .advice
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                Arm::new(&format!("mmap {a}"), i as u64, a.name(), config(ReaderKind::Mmap, 1, 1, a), work)
            })
            .collect();
        let normal = p.advice.iter().position(|&a| a == Madvise::Normal);
        let label = |i: usize| p.advice[i].name().to_string();
        let decide = |pts: &[Point]| {
            normal.map(|n| decide::against_default(&times(pts), n, fastest(pts), PLATEAU, &label))
        };
        let pts = self.rounds("mmap_advice", &arms, &|pts| decide(pts).is_none_or(|d| d.settled))?;
        let best = fastest(&pts);
        match (p.stable, normal) {
            (true, Some(_)) => {
                let d = decide(&pts).expect("normal measured");
                cal.mmap_advice = p.advice[d.index];
                cal.origins.set(Key::MmapAdvice, d.origin);
                t.decision = stable_text(Key::MmapAdvice, cal, &d.why);
            }
            // The kernel's default unless a hint is clearly faster: in
            // three calibrations within an hour, `willneed` and then
            // `sequential` came out ahead of `normal` by 0–16 % with
            // overlapping runs, and both made the adaptive reader slower
            // than `normal` on the replayed traces (1.26×, 1.62×).
            (false, Some(n)) if !clearly_faster(&pts[best], &pts[n]) => {
                cal.mmap_advice = Madvise::Normal;
                t.decision = if n == best {
                    format!("mmap_advice = normal: the fastest hint ({:.1} MiB/s)", pts[n].mib_s())
                } else {
                    format!(
                        "mmap_advice = normal: the default; {} ({:.1} MiB/s against {:.1}) is not clearly faster (more than {:.0} % and in every run)",
                        pts[best].label,
                        pts[best].mib_s(),
                        pts[n].mib_s(),
                        PLATEAU * 100.0,
                    )
                };
            }
            _ => {
                cal.mmap_advice = p.advice[best];
                if p.stable {
                    cal.origins.set(Key::MmapAdvice, Origin::Measured);
                }
                t.decision = format!(
                    "mmap_advice = {}: the fastest hint ({:.1} MiB/s)",
                    p.advice[best],
                    pts[best].mib_s()
                );
            }
        }
        t.rounds = pts[0].runs.len();
        t.points = pts;
        Ok(t)
    }

    /// Step 2: the same reads with the whole file prefetched in the
    /// background (`prefetch`).
    fn prefetch(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let mut t = self.table(&format!(
            "the same reads through the adaptive reader's mapping ({}), without and with a background prefetch",
            cal.mmap_advice
        ));
        // Measured again beside the prefetch, not taken from step 1: the
        // disk drifts between steps.
        let work = Work::Set { request: 4096, total: self.set_half(), seed: 1 };
        let probe = Calibration {
            mmap_max_request: 4096,
            random_run: 0,
            mmap_advice: cal.mmap_advice,
            prefetch: true,
            ..Calibration::default()
        };
        let arms = [
            Arm::new(
                &format!("mmap {}", cal.mmap_advice),
                0,
                "off",
                config(ReaderKind::Mmap, 1, 1, cal.mmap_advice),
                work,
            ),
            Arm::new(
                "mmap+prefetch",
                1,
                "on",
                ReaderConfig::new(ReaderKind::Adaptive).access(AccessHint::Random).calibration(probe),
                work,
            ),
        ];
        let verdict = |pts: &[Point]| decide::Paired::new(&pts[1].runs, &pts[0].runs);
        let pts = self.rounds("prefetch", &arms, &|pts| verdict(pts).verdict(PLATEAU).is_clear())?;
        let (w, with) = (&pts[0], &pts[1]);
        if p.stable {
            // On unless it costs (see the module docs): off only when
            // clearly slower.
            let paired = verdict(&pts);
            let v = paired.verdict(PLATEAU);
            cal.prefetch = v != Verdict::Slower;
            cal.origins.set(Key::Prefetch, Origin::Measured);
            let why =
                format!("kept unless it costs; with it {} the time without: {}", paired.describe(), v.name());
            t.decision = stable_text(Key::Prefetch, cal, &why);
        } else {
            cal.prefetch = with.mib_s() * (1.0 + PLATEAU) >= w.mib_s();
            t.decision = format!(
                "prefetch = {}: {:.1} MiB/s with it against {:.1} without{}",
                if cal.prefetch { "on" } else { "off" },
                with.mib_s(),
                w.mib_s(),
                if cal.prefetch { "" } else { " (slower by more than 5 %)" },
            );
        }
        t.rounds = pts[0].runs.len();
        t.points = pts;
        Ok(t)
    }

    /// Step 3: mmap against pread for random reads, by request size
    /// (`mmap_max_request`).
    fn mmap_max_request(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let set_half = self.set_half();
        let mut t = self.table(&format!(
            "random reads of half of the {SET_FILES} files, by request size: mmap ({}) vs pread (block = request)",
            cal.mmap_advice
        ));
        let mut arms = Vec::new();
        for &s in &p.mmap_sizes {
            let work = Work::Set { request: s, total: set_half, seed: 2 + s as u64 };
            let advice = cal.mmap_advice;
            arms.push(Arm::new(
                &format!("mmap {advice}"),
                s as u64,
                &sz(s),
                config(ReaderKind::Mmap, 1, 1, advice),
                work,
            ));
            arms.push(Arm::new(
                "pread",
                s as u64,
                &sz(s),
                config(ReaderKind::Pread, s, 1, Madvise::Normal),
                work,
            ));
        }
        let sizes = p.mmap_sizes.clone();
        let default = Calibration::default().mmap_max_request;
        let le = |t: usize, s: usize| s <= t;
        // The largest size up to which mmap's median wins at every size (0: none).
        let measured = |pts: &[Point]| {
            let wins =
                sizes.iter().enumerate().map(|(i, &s)| (s, pts[2 * i].seconds() < pts[2 * i + 1].seconds()));
            wins.take_while(|w| w.1).last().map_or(0, |w| w.0)
        };
        let verdicts = |pts: &[Point]| -> Vec<Verdict> {
            (0..sizes.len())
                .map(|i| decide::Paired::new(&pts[2 * i].runs, &pts[2 * i + 1].runs).verdict(0.0))
                .collect()
        };
        let decide = |pts: &[Point]| decide::crossover(&sizes, &verdicts(pts), measured(pts), default, &le);
        let pts = self.rounds("mmap_max_request", &arms, &|pts| decide(pts).2)?;
        let upto = measured(&pts);
        if p.stable {
            let (value, origin, _) = decide(&pts);
            cal.mmap_max_request = value;
            cal.origins.set(Key::MmapMaxRequest, origin);
            let per_size: Vec<String> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let pr = decide::Paired::new(&pts[2 * i].runs, &pts[2 * i + 1].runs);
                    format!("{} {}", sz(s), pr.verdict(0.0).name())
                })
                .collect();
            let found = if upto == 0 { "off".to_string() } else { sz(upto) };
            let why = format!("the medians say {found}; mmap against pread by size: {}", per_size.join(", "));
            t.decision = stable_text(Key::MmapMaxRequest, cal, &why);
        } else {
            cal.mmap_max_request = upto;
            t.decision = match upto {
                0 => "mmap_max_request = off: pread wins already at the smallest size".into(),
                s if s == *p.mmap_sizes.last().expect("sizes") => {
                    format!(
                        "mmap_max_request = {}: mmap wins at every size measured (up to {})",
                        sz(s),
                        sz(s)
                    )
                }
                s => format!(
                    "mmap_max_request = {}: the largest size up to which mmap wins at every size",
                    sz(s)
                ),
            };
        }
        t.rounds = pts[0].runs.len();
        t.points = pts;
        Ok(t)
    }

    /// A choice among `pts` by the plateau rule (the smallest parameter
    /// within [`PLATEAU`] of the best), against the thesis' value at
    /// `default` (an index) with the stable rules; the index kept, its
    /// origin (`None` with the rules before issue 38) and why.
    fn plateau_choice(&self, pts: &[Point], default: Option<usize>) -> (usize, Option<Origin>, String) {
        let (v, why) = plateau(pts);
        let best = pts.iter().position(|p| p.param == v).expect("a point's parameter");
        match (self.plan.stable, default) {
            (true, Some(d)) => {
                let k = decide::against_default(&times(pts), d, best, PLATEAU, &|i| pts[i].label.clone());
                (k.index, Some(k.origin), format!("the plateau's smallest is {}; {}", pts[best].label, k.why))
            }
            (true, None) => (best, Some(Origin::Measured), why),
            (false, _) => (best, None, why),
        }
    }

    /// Whether a plateau choice is settled (for the rounds' early stop).
    fn plateau_settled(pts: &[Point], default: Option<usize>) -> bool {
        let (v, _) = plateau(pts);
        let best = pts.iter().position(|p| p.param == v).expect("a point's parameter");
        default.is_none_or(|d| {
            decide::against_default(&times(pts), d, best, PLATEAU, &|_| String::new()).settled
        })
    }

    /// Step 4: the block size of sequential pread (`max_block`).
    fn max_block(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let mut t = self.table("the whole file front to back with pread, by block size");
        let arms: Vec<Arm> = p
            .blocks
            .iter()
            .map(|&b| {
                let cfg = config(ReaderKind::Pread, b, 1, Madvise::Normal);
                Arm::new("pread", b as u64, &sz(b), cfg, Work::File(Pattern::Sequential { request: b }, 1))
            })
            .collect();
        let default = p.blocks.iter().position(|&b| b == Calibration::default().max_block);
        let pts = self.rounds("max_block", &arms, &|pts| Self::plateau_settled(pts, default))?;
        let (i, origin, why) = self.plateau_choice(&pts, default);
        cal.max_block = p.blocks[i];
        t.decision = match origin {
            Some(o) => {
                cal.origins.set(Key::MaxBlock, o);
                stable_text(Key::MaxBlock, cal, &why)
            }
            None => format!("max_block = {}: {why}", sz(cal.max_block)),
        };
        t.rounds = pts[0].runs.len();
        t.points = pts;
        Ok(t)
    }

    /// Step 5: the queue depth of sequential uring, in blocks of
    /// `max_block` (`queue_depth`).
    fn queue_depth(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let chunk = (cal.max_block * 16).clamp(1 << 20, 64 << 20);
        let mut t = self.table(&format!(
            "the whole file front to back with uring, requests of {}, blocks of {}, by queue depth",
            sz(chunk),
            sz(cal.max_block)
        ));
        let arms: Vec<Arm> = p
            .depths
            .iter()
            .map(|&q| {
                let cfg = config(ReaderKind::Uring, cal.max_block, q, Madvise::Normal);
                Arm::new(
                    "uring",
                    q as u64,
                    &q.to_string(),
                    cfg,
                    Work::File(Pattern::Sequential { request: chunk }, 1),
                )
            })
            .collect();
        let default = p.depths.iter().position(|&q| q == Calibration::default().queue_depth);
        let pts = self.rounds("queue_depth", &arms, &|pts| Self::plateau_settled(pts, default))?;
        let (i, origin, why) = self.plateau_choice(&pts, default);
        cal.queue_depth = p.depths[i];
        t.decision = match origin {
            Some(o) => {
                cal.origins.set(Key::QueueDepth, o);
                stable_text(Key::QueueDepth, cal, &why)
            }
            None => format!("queue_depth = {}: {why}", cal.queue_depth),
        };
        t.rounds = pts[0].runs.len();
        t.points = pts;
        Ok(t)
    }

    /// Step 6: uring against pread for large random requests
    /// (`uring_min_request`).
    fn uring_min_request(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let half = p.file_size / 2;
        let mut t = self.table(&format!(
            "random requests, by size: uring (blocks of {}, Q = {}) vs pread (the adaptive reader's block)",
            sz(cal.max_block),
            cal.queue_depth
        ));
        let sizes = p.uring_sizes_measured();
        let mut arms = Vec::new();
        for &s in &sizes {
            let total = half.max(4 * s as u64);
            let work = Work::File(Pattern::Random { request: s, total, seed: 100 + s as u64 }, 1);
            let uring = config(ReaderKind::Uring, cal.max_block, cal.queue_depth, Madvise::Normal);
            arms.push(Arm::new("uring", s as u64, &sz(s), uring, work));
            let pread = config(ReaderKind::Pread, cal.pread_block(s), 1, Madvise::Normal);
            arms.push(Arm::new("pread", s as u64, &sz(s), pread, work));
        }
        let default = Calibration::default().uring_min_request;
        let ge = |t: usize, s: usize| s >= t;
        // The smallest size from which uring's median wins at every larger size (MAX: none).
        let measured = |pts: &[Point]| {
            let wins: Vec<(usize, bool)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| (s, pts[2 * i].seconds() < pts[2 * i + 1].seconds()))
                .collect();
            wins.iter().rev().take_while(|w| w.1).last().map_or(usize::MAX, |w| w.0)
        };
        let verdicts = |pts: &[Point]| -> Vec<Verdict> {
            (0..sizes.len())
                .map(|i| decide::Paired::new(&pts[2 * i].runs, &pts[2 * i + 1].runs).verdict(0.0))
                .collect()
        };
        let decide = |pts: &[Point]| decide::crossover(&sizes, &verdicts(pts), measured(pts), default, &ge);
        let pts = if sizes.is_empty() {
            Vec::new()
        } else {
            self.rounds("uring_min_request", &arms, &|pts| decide(pts).2)?
        };
        let from = if pts.is_empty() { usize::MAX } else { measured(&pts) };
        if p.stable {
            let (value, origin) = if pts.is_empty() {
                (default, Origin::Inconclusive)
            } else {
                let (v, o, _) = decide(&pts);
                (v, o)
            };
            cal.uring_min_request = value;
            cal.origins.set(Key::UringMinRequest, origin);
            let per_size: Vec<String> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let pr = decide::Paired::new(&pts[2 * i].runs, &pts[2 * i + 1].runs);
                    format!("{} {}", sz(s), pr.verdict(0.0).name())
                })
                .collect();
            let found = if from == usize::MAX { "off".to_string() } else { sz(from) };
            let why =
                format!("the medians say {found}; uring against pread by size: {}", per_size.join(", "));
            t.decision = stable_text(Key::UringMinRequest, cal, &why);
        } else {
            cal.uring_min_request = from;
            t.decision = if from == usize::MAX {
                "uring_min_request = off: pread wins at the largest size measured".into()
            } else {
                format!("uring_min_request = {}: uring wins from this size on", sz(from))
            };
        }
        t.rounds = pts.first().map_or(0, |p| p.runs.len());
        t.points = pts;
        Ok(t)
    }

    /// Step 7: threads for sequential, small random and large random reads
    /// (`threads_sequential`, `threads_random_small`,
    /// `threads_random_large`), a table each.
    fn threads(&mut self, cal: &mut Calibration) -> Result<Vec<Table>> {
        let p = self.plan;
        let half = p.file_size / 2;
        let seq_block = cal.max_block;
        let d = Calibration::default();
        // The thesis' counts: 4, all (measured as the cores), 4.
        let cases: [(Key, Pattern, usize, usize); 3] = [
            (
                Key::ThreadsSequential,
                Pattern::Sequential { request: seq_block },
                seq_block,
                d.threads_sequential as usize,
            ),
            (
                Key::ThreadsRandomSmall,
                Pattern::Random { request: 4096, total: p.file_size / 8, seed: 7 },
                4096,
                cores(),
            ),
            (
                Key::ThreadsRandomLarge,
                Pattern::Random { request: p.large_random, total: half, seed: 8 },
                p.large_random,
                d.threads_random_large as usize,
            ),
        ];
        let mut tables = Vec::with_capacity(cases.len());
        for (key, pat, block, thesis) in cases {
            let what = match pat {
                Pattern::Sequential { .. } => "the whole file in contiguous slices".to_string(),
                Pattern::Runs { .. } => unreachable!("threads are measured on whole files"),
                Pattern::Random { request, total, .. } | Pattern::Scattered { request, total, .. } => {
                    format!("random {} reads, {} in all", sz(request), sz(total as usize))
                }
            };
            let mut t = self.table(&format!("{what}, pread (block {}), by threads", sz(block)));
            let arms: Vec<Arm> = p
                .threads
                .iter()
                .map(|&n| {
                    let cfg = config(ReaderKind::Pread, block, 1, Madvise::Normal);
                    Arm::new("pread", n as u64, &n.to_string(), cfg, Work::File(pat, n))
                })
                .collect();
            let default = p.threads.iter().position(|&n| n == thesis);
            let pts = self.rounds(key.name(), &arms, &|pts| Self::plateau_settled(pts, default))?;
            let (i, origin, why) = self.plateau_choice(&pts, default);
            // The thesis' value as it is written: `all` for small random reads.
            let n = if origin.is_some() && Some(i) == default {
                match key {
                    Key::ThreadsSequential => d.threads_sequential,
                    Key::ThreadsRandomSmall => d.threads_random_small,
                    _ => d.threads_random_large,
                }
            } else {
                p.threads[i] as u32
            };
            match key {
                Key::ThreadsSequential => cal.threads_sequential = n,
                Key::ThreadsRandomSmall => cal.threads_random_small = n,
                _ => cal.threads_random_large = n,
            }
            t.decision = match origin {
                Some(o) => {
                    cal.origins.set(key, o);
                    stable_text(key, cal, &why)
                }
                None => format!("{key} = {n}: {why}"),
            };
            t.rounds = pts[0].runs.len();
            t.points = pts;
            tables.push(t);
        }
        Ok(tables)
    }

    /// Step 8: sequential runs among random reads by the kernel's
    /// readahead or the direct read-ahead (`direct_readahead`).
    fn direct_readahead(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let mut t = self.table(&format!(
            "the data file in runs of {} (requests of {}, {} skipped after each) among random 4K reads of half of the {SET_FILES} files, through the adaptive reader: its runs by pread, or by the direct read-ahead with reads of {} in flight",
            sz(SEQUENTIAL_RUN as usize),
            sz(SEQUENTIAL_REQUEST),
            sz(SEQUENTIAL_RUN as usize),
            sz(emsort_io::reader::DIRECT_CHUNK)
        ));
        let adaptive = |direct: u32| {
            let c = Calibration { direct_readahead: direct, ..cal.clone() };
            ReaderConfig::new(ReaderKind::Adaptive).calibration(c)
        };
        let d = direct_depth(emsort_io::cache::read_ahead_kb(&self.file.path));
        let arms = [
            Arm::new("pread", 0, "off", adaptive(0), Work::Mixed),
            Arm::new("direct", d as u64, &d.to_string(), adaptive(d), Work::Mixed),
        ];
        let paired = |pts: &[Point]| decide::Paired::new(&pts[1].runs, &pts[0].runs);
        // The rules before issue 38 ran 3 × reps paired rounds here.
        let within =
            if p.stable { (p.min_rounds, p.max_rounds) } else { (3 * p.min_rounds, 3 * p.max_rounds) };
        let pts = self.rounds_within("direct_readahead", &arms, within, &|pts| {
            paired(pts).verdict(PLATEAU).is_clear()
        })?;
        let (kernel, direct) = (&pts[0], &pts[1]);
        let pr = paired(&pts);
        let ratio = pr.median();
        if p.stable {
            // On unless it costs (see the module docs): off only when
            // clearly slower.
            let v = pr.verdict(PLATEAU);
            cal.direct_readahead = if v == Verdict::Slower { 0 } else { d };
            cal.origins.set(Key::DirectReadahead, Origin::Measured);
            let why = format!(
                "kept unless it costs; {d} reads of {} in flight (as far ahead as read_ahead_kb) took {} the time of pread: {}",
                sz(emsort_io::reader::DIRECT_CHUNK),
                pr.describe(),
                v.name()
            );
            t.decision = stable_text(Key::DirectReadahead, cal, &why);
        } else {
            let on = ratio <= 1.0 + PLATEAU;
            cal.direct_readahead = if on { d } else { 0 };
            t.decision = format!(
                "direct_readahead = {}: with {d} reads of {} in flight (as far ahead as read_ahead_kb) {:.2}× the time of pread (median of {} paired rounds; {:.1} against {:.1} MiB/s){}",
                if on { d.to_string() } else { "off".into() },
                sz(emsort_io::reader::DIRECT_CHUNK),
                ratio,
                pr.ratios().len(),
                direct.mib_s(),
                kernel.mib_s(),
                if on { "" } else { " (slower by more than 5 %)" },
            );
        }
        t.rounds = pts[0].runs.len();
        t.points = pts;
        Ok(t)
    }
}

/// Whether `a` is clearly faster than `b`: its median throughput more than
/// [`PLATEAU`] higher, and every one of its runs faster than every run of
/// `b` (their ranges do not overlap).
fn clearly_faster(a: &Point, b: &Point) -> bool {
    let slowest_a = a.runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let fastest_b = b.runs.iter().copied().fold(f64::INFINITY, f64::min);
    a.mib_s() > b.mib_s() * (1.0 + PLATEAU) && slowest_a < fastest_b
}

/// The smallest parameter whose throughput is within [`PLATEAU`] of the
/// best, and why (points of a single series, in increasing parameter order).
fn plateau(points: &[Point]) -> (u64, String) {
    let best = points.iter().max_by(|a, b| a.mib_s().total_cmp(&b.mib_s())).expect("points measured");
    let first = points
        .iter()
        .find(|p| p.mib_s() >= best.mib_s() * (1.0 - PLATEAU))
        .expect("the best is within the plateau");
    let why = if first.param == best.param {
        format!("the best throughput ({:.1} MiB/s)", best.mib_s())
    } else {
        format!(
            "the smallest within {:.0} % of the best ({:.1} MiB/s here, {:.1} MiB/s at {})",
            PLATEAU * 100.0,
            first.mib_s(),
            best.mib_s(),
            best.label
        )
    };
    (first.param, why)
}

fn sz(n: usize) -> String {
    format_size(n as u64)
}

/// The measured tables as text: per step its title, a line per point
/// (parameter, series, median time and throughput, every run), and the
/// value it gave.
pub fn format_tables(out: &Outcome) -> String {
    let mut s = String::new();
    for (i, t) in out.tables.iter().enumerate() {
        let _ = writeln!(s, "{}. {}", i + 1, t.title);
        let _ = writeln!(s, "   {:>8}  {:<12} {:>10} {:>11}  runs (s)", "param", "reader", "median", "MiB/s");
        for p in &t.points {
            let runs: Vec<String> = p.runs.iter().map(|r| format!("{r:.4}")).collect();
            let _ = writeln!(
                s,
                "   {:>8}  {:<12} {:>9.4}s {:>11.1}  {}",
                p.label,
                p.series,
                p.seconds(),
                p.mib_s(),
                runs.join(" ")
            );
        }
        let _ = writeln!(s, "   → {}", t.decision);
    }
    s
}

/// The text of the calibration file: comments saying when, how and on
/// what the values were measured, then [`Calibration`]'s `Display`, then
/// each step's decision as a comment.
pub fn file_text(out: &Outcome, command: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# measured by: {command}");
    let _ = writeln!(
        s,
        "# data file {}, {}, cache emptied by {} before each run, read_ahead_kb {}",
        format_size(out.plan.file_size),
        out.plan.rounds_text(),
        out.cache,
        out.read_ahead_kb.map_or("unknown".into(), |k| k.to_string())
    );
    s.push_str(&out.calibration.to_string());
    if out.plan.stable {
        let names = |o: Origin| {
            let keys = out.calibration.origins.keys(o);
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            }
        };
        let _ = writeln!(s, "# measured: {}", names(Origin::Measured));
        let _ = writeln!(s, "# inconclusive, the thesis' values: {}", names(Origin::Inconclusive));
    }
    let _ = writeln!(s, "# what each value rests on:");
    for t in &out.tables {
        let _ = writeln!(s, "#   {}", t.decision);
    }
    s
}

/// Writes [`file_text`] to `path` atomically (beside it, then renamed),
/// creating its directory if needed.
pub fn write_calibration(path: &Path, out: &Outcome, command: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create directory", parent, e))?;
    }
    let f = AtomicFile::create(path)?;
    std::io::Write::write_all(&mut f.file(), file_text(out, command).as_bytes())
        .map_err(|e| Error::io("write", path, e))?;
    f.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(param: u64, secs: f64) -> Point {
        Point { series: "x".into(), param, label: param.to_string(), bytes: 100 << 20, runs: vec![secs] }
    }

    #[test]
    fn a_hint_must_be_clearly_faster_than_normal() {
        let p = |runs: &[f64]| Point {
            series: "mmap".into(),
            param: 0,
            label: "x".into(),
            bytes: 1 << 20,
            runs: runs.to_vec(),
        };
        // The calibration of 15:25: sequential's median 16 % faster, runs overlapping.
        let normal = p(&[0.3860, 0.4934, 0.5619]);
        assert!(!clearly_faster(&p(&[0.4633, 0.4112, 0.4250]), &normal));
        assert!(clearly_faster(&p(&[0.30, 0.31, 0.32]), &normal));
        // Apart, but within the plateau.
        assert!(!clearly_faster(&p(&[0.99]), &p(&[1.0])));
    }

    #[test]
    fn plateau_is_the_first_within_five_percent() {
        let pts = [pt(1, 1.0), pt(2, 0.52), pt(4, 0.5), pt(8, 0.51)];
        let (v, why) = plateau(&pts);
        assert_eq!(v, 2, "{why}");
        assert!(why.contains("within 5 %"), "{why}");
        let (v, why) = plateau(&[pt(1, 0.5), pt(2, 0.9)]);
        assert_eq!(v, 1);
        assert!(why.contains("best throughput"), "{why}");
    }

    #[test]
    fn quick_calibration_writes_a_file_that_loads() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = Plan::quick();
        plan.file_size = 2 << 20;
        (plan.min_rounds, plan.max_rounds) = (3, 3);
        let out = Calibrate::new(dir.path())
            .plan(plan.clone())
            .cache(CacheMethod::Fadvise)
            .run(&emsort_io::NoProgress, &AtomicBool::new(false))
            .unwrap();
        assert_eq!(out.tables.len(), 10);
        assert!(out.tables.iter().all(|t| !t.points.is_empty() && !t.decision.is_empty()));
        // Every point ran once per round, 3 rounds.
        assert!(out.tables.iter().all(|t| t.rounds == 3 && t.points.iter().all(|p| p.runs.len() == 3)));
        // Every measured key is marked; those marked inconclusive hold the thesis' values.
        let c = &out.calibration;
        let d = Calibration::default();
        for k in Key::ALL {
            let o = c.origins.get(k);
            let measured = !matches!(k, Key::SequentialRun | Key::RandomRun);
            assert_eq!(o != Origin::Unmarked, measured, "{k}: {o:?}");
            if o == Origin::Inconclusive {
                assert_eq!(c.value_text(k), d.value_text(k), "{k}");
            }
        }
        // Decisions name their origin.
        assert!(out.tables.iter().all(|t| t.decision.contains(": measured; ")
            || t.decision.contains(": inconclusive, the thesis' value; ")));
        // The scratch directory is gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let path = dir.path().join("sub").join("calibration");
        write_calibration(&path, &out, "emsort calibrate --quick").unwrap();
        let c = Calibration::load(&path).unwrap();
        assert_eq!(Calibration { source: None, ..c }, out.calibration);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# measured by: emsort calibrate --quick\n"), "{text}");
        assert!(
            text.contains("3 … 3 paired rounds per step")
                && text.contains("# inconclusive, the thesis' values: ")
        );
        assert!(format_tables(&out).contains("→ max_block = "));
        // The rules before issue 38: one run per point, no marks.
        let old = Calibrate::new(dir.path())
            .plan(plan.one_run(1))
            .cache(CacheMethod::Fadvise)
            .run(&emsort_io::NoProgress, &AtomicBool::new(false))
            .unwrap();
        assert_eq!(old.calibration.origins, emsort_io::reader::calibration::Origins::default());
        let rounds: Vec<usize> = old.tables.iter().map(|t| t.rounds).collect();
        assert_eq!(rounds, [1, 1, 1, 1, 1, 1, 1, 1, 1, 3], "step 8 ran 3 × reps paired rounds, as before");
        assert!(file_text(&old, "x").contains("1 run per point, the medians alone"));
    }

    #[test]
    fn a_missing_directory_or_a_cancel_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = Calibrate::new(&dir.path().join("nope"))
            .quick(true)
            .run(&emsort_io::NoProgress, &AtomicBool::new(false))
            .unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        let e = Calibrate::new(dir.path())
            .quick(true)
            .cache(CacheMethod::None)
            .run(&emsort_io::NoProgress, &AtomicBool::new(true))
            .unwrap_err();
        assert!(e.to_string().contains("interrupted"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
