//! `emsort calibrate`: this machine's crossover points for the adaptive
//! reader (SPEC part 4, issue 5 §4).
//!
//! The thesis' guidelines rest on numbers measured on one Windows machine
//! with an NVMe SSD (§4.1.4, §4.2.3, §4.6, §4.7): mmap up to 32 KiB, blocks
//! of 4 MiB, queue depth 32, two to four threads. [`Calibrate`] measures
//! each of them here, on a data file in a scratch directory, every run on
//! a cold cache, `reps` runs per point, the median kept:
//!
//! | step | experiment (each point a cold run)                                              | value ([`Calibration`] key) |
//! |------|---------------------------------------------------------------------------------|-----------------------------|
//! | 1    | random 4 KiB reads of half of a set of [`SET_FILES`] files, through `mmap`, one run per `madvise` hint | `mmap_advice`: `normal` unless another hint is clearly faster (by more than [`PLATEAU`], every run) |
//! | 2    | the same reads through the adaptive reader's mapping (that hint), each file prefetched in the background | `prefetch`: `on` unless slower than the same reads through `mmap` alone (run again beside it) by more than [`PLATEAU`] |
//! | 3    | random reads of half of the set, request size 4K … 1M, `mmap` (that hint) vs `pread` | `mmap_max_request`: the largest size up to which `mmap` wins at every size (`off` if it loses at 4K) |
//! | 4    | the whole file front to back with `pread`, block size 4K … 16M                  | `max_block`: the smallest block within 5 % of the best throughput |
//! | 5    | the whole file front to back with `uring`, blocks of `max_block`, Q = 1 … 64     | `queue_depth`: the smallest Q within 5 % of the best |
//! | 6    | random requests of 256K … 32M, `uring` (`max_block`, `queue_depth`) vs `pread` with the adaptive reader's block | `uring_min_request`: the smallest size from which `uring` wins at every larger size (`off` if it never does) |
//! | 7    | threads 1 … 2 × cores: the whole file in contiguous slices; random 4 KiB; random 4 MiB | `threads_sequential`, `threads_random_small`, `threads_random_large`: the fewest threads within 5 % of the best |
//! | 8    | the data file in runs of 16 MiB (requests of 256 KiB, 16 MiB skipped after each) among random 4 KiB reads of half of the set, through the adaptive reader: its runs by `pread` (the kernel's readahead), then by the direct read-ahead with as many 2 MiB reads in flight as make `read_ahead_kb` ([`direct_depth`]) | `direct_readahead`: that depth unless slower than `pread` by more than [`PLATEAU`] (median of 3 × reps rounds, paired, the order alternating); else `off` |
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

pub mod measure;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::{
    format_size, AccessHint, AtomicFile, Calibration, Madvise, Progress, ReaderConfig, ReaderKind,
};

use crate::grid::round_order;
use crate::stats::median;
use crate::{Error, Result};
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

/// The sizes and repeats of a calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Size of the data file.
    pub file_size: u64,
    /// Runs per point.
    pub reps: usize,
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
    /// The full calibration: a 256 MiB file, 3 runs per point; a few minutes.
    pub fn full() -> Plan {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut threads: Vec<usize> =
            std::iter::successors(Some(1usize), |t| Some(t * 2)).take_while(|&t| t <= 2 * cores).collect();
        if !threads.contains(&cores) {
            threads.push(cores);
            threads.sort_unstable();
        }
        Plan {
            file_size: 256 << 20,
            reps: 3,
            advice: Madvise::ALL.to_vec(),
            mmap_sizes: (12..=20).map(|s| 1usize << s).collect(),
            blocks: vec![4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20],
            depths: vec![1, 2, 4, 8, 16, 32, 64],
            uring_sizes: vec![256 << 10, 1 << 20, 4 << 20, 16 << 20, 32 << 20],
            threads,
            large_random: 4 << 20,
        }
    }

    /// A quick calibration on a 16 MiB file, one run per point, few points:
    /// seconds. Its values are rough (for tests and a first look).
    pub fn quick() -> Plan {
        Plan {
            file_size: 16 << 20,
            reps: 1,
            advice: vec![Madvise::Normal, Madvise::Random],
            mmap_sizes: vec![4 << 10, 32 << 10, 256 << 10],
            blocks: vec![16 << 10, 256 << 10, 4 << 20],
            depths: vec![1, 8, 32],
            uring_sizes: vec![1 << 20, 4 << 20],
            threads: vec![1, 2],
            large_random: 1 << 20,
        }
    }
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
    /// Every run's time, seconds.
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
    /// The value(s) it gave and why, e.g. `max_block = 64K: the smallest
    /// block within 5 % of the best (1.0 GiB/s at 4M)`.
    pub decision: String,
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
        progress.phase("calibrate", Some(self.plan.point_count()));
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

    /// Points measured in all (the length of phase `"calibrate"`).
    fn point_count(&self) -> u64 {
        (self.advice.len()
            + 2
            + 2 * self.mmap_sizes.len()
            + self.blocks.len()
            + self.depths.len()
            + 2 * self.uring_sizes_measured().len()
            + 3 * self.threads.len()
            + 2) as u64
    }
}

/// Runs points and reports progress; its step methods measure one step of
/// the calibration each, set its value in the [`Calibration`] they are
/// given and return its [`Table`].
struct Measurer<'a> {
    file: &'a DataFile,
    /// The set of smaller files of steps 1 to 3.
    set: &'a [DataFile],
    plan: &'a Plan,
    cache: CacheMethod,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
}

/// The steps, in the order [`Calibrate::run`] takes them.
impl Measurer<'_> {
    /// Half of the set's bytes: what the random reads of steps 1 to 3 cover.
    fn set_half(&self) -> u64 {
        self.set.iter().map(|f| f.size).sum::<u64>() / 2
    }

    /// Step 1: the madvise hint for random mmap reads (`mmap_advice`).
    fn mmap_advice(&mut self, cal: &mut Calibration) -> Result<Table> {
        let p = self.plan;
        let set_half = self.set_half();
        let mut t = self.table(&format!(
            "random 4K reads of half of {SET_FILES} files of {} through mmap, by madvise hint",
            format_size(self.set[0].size)
        ));
        for (i, &a) in p.advice.iter().enumerate() {
            let pt = self.point(
                &format!("mmap {a}"),
                i as u64,
                a.name(),
                ReaderKind::Mmap,
                (0, 1, a),
                Pattern::Scattered { request: 4096, total: set_half, seed: 1 },
                1,
            )?;
            t.points.push(pt);
        }
        let best = t.points.iter().zip(&p.advice).min_by(|a, b| a.0.seconds().total_cmp(&b.0.seconds()));
        let normal = t.points.iter().zip(&p.advice).find(|(_, &a)| a == Madvise::Normal);
        match (best, normal) {
            // The kernel's default unless a hint is clearly faster: in
            // three calibrations within an hour, `willneed` and then
            // `sequential` came out ahead of `normal` by 0–16 % with
            // overlapping runs, and both made the adaptive reader slower
            // than `normal` on the replayed traces (1.26×, 1.62×).
            (Some((b, _)), Some((n, _))) if !clearly_faster(b, n) => {
                cal.mmap_advice = Madvise::Normal;
                t.decision = if n.param == b.param && n.series == b.series {
                    format!("mmap_advice = normal: the fastest hint ({:.1} MiB/s)", n.mib_s())
                } else {
                    format!(
                        "mmap_advice = normal: the default; {} ({:.1} MiB/s against {:.1}) is not clearly faster (more than {:.0} % and in every run)",
                        b.label,
                        b.mib_s(),
                        n.mib_s(),
                        PLATEAU * 100.0,
                    )
                };
            }
            (Some((pt, &a)), _) => {
                cal.mmap_advice = a;
                t.decision = format!("mmap_advice = {a}: the fastest hint ({:.1} MiB/s)", pt.mib_s());
            }
            (None, _) => {}
        }
        Ok(t)
    }

    /// Step 2: the same reads with the whole file prefetched in the
    /// background (`prefetch`).
    fn prefetch(&mut self, cal: &mut Calibration) -> Result<Table> {
        let mut t = self.table(&format!(
            "the same reads through the adaptive reader's mapping ({}), without and with a background prefetch",
            cal.mmap_advice
        ));
        // Measured again beside the prefetch, not taken from step 1: the
        // disk drifts between steps.
        let pat = Pattern::Scattered { request: 4096, total: self.set_half(), seed: 1 };
        let w = self.point(
            &format!("mmap {}", cal.mmap_advice),
            0,
            "off",
            ReaderKind::Mmap,
            (0, 1, cal.mmap_advice),
            pat,
            1,
        )?;
        let probe = Calibration {
            mmap_max_request: 4096,
            random_run: 0,
            mmap_advice: cal.mmap_advice,
            prefetch: true,
            ..Calibration::default()
        };
        let cfg = ReaderConfig::new(ReaderKind::Adaptive).access(AccessHint::Random).calibration(probe);
        let with = self.point_with("mmap+prefetch", 1, "on", &cfg, pat, 1)?;
        // On unless it costs: see the module docs.
        cal.prefetch = with.mib_s() * (1.0 + PLATEAU) >= w.mib_s();
        t.decision = format!(
            "prefetch = {}: {:.1} MiB/s with it against {:.1} without{}",
            if cal.prefetch { "on" } else { "off" },
            with.mib_s(),
            w.mib_s(),
            if cal.prefetch { "" } else { " (slower by more than 5 %)" },
        );
        t.points.push(w);
        t.points.push(with);
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
        let mut wins = Vec::new();
        for &s in &p.mmap_sizes {
            let pat = Pattern::Scattered { request: s, total: set_half, seed: 2 + s as u64 };
            let a = self.point(
                &format!("mmap {}", cal.mmap_advice),
                s as u64,
                &sz(s),
                ReaderKind::Mmap,
                (0, 1, cal.mmap_advice),
                pat,
                1,
            )?;
            let b =
                self.point("pread", s as u64, &sz(s), ReaderKind::Pread, (s, 1, Madvise::Normal), pat, 1)?;
            wins.push((s, a.seconds() < b.seconds()));
            t.points.push(a);
            t.points.push(b);
        }
        let upto = wins.iter().take_while(|w| w.1).last().map(|w| w.0);
        cal.mmap_max_request = upto.unwrap_or(0);
        t.decision = match upto {
            Some(s) if s == *p.mmap_sizes.last().expect("sizes") => {
                format!("mmap_max_request = {}: mmap wins at every size measured (up to {})", sz(s), sz(s))
            }
            Some(s) => {
                format!("mmap_max_request = {}: the largest size up to which mmap wins at every size", sz(s))
            }
            None => "mmap_max_request = off: pread wins already at the smallest size".into(),
        };
        Ok(t)
    }

    /// Step 4: the block size of sequential pread (`max_block`).
    fn max_block(&mut self, cal: &mut Calibration) -> Result<Table> {
        let mut t = self.table("the whole file front to back with pread, by block size");
        for &b in &self.plan.blocks {
            let pt = self.point(
                "pread",
                b as u64,
                &sz(b),
                ReaderKind::Pread,
                (b, 1, Madvise::Normal),
                Pattern::Sequential { request: b },
                1,
            )?;
            t.points.push(pt);
        }
        let (b, why) = plateau(&t.points);
        cal.max_block = b as usize;
        t.decision = format!("max_block = {}: {why}", sz(b as usize));
        Ok(t)
    }

    /// Step 5: the queue depth of sequential uring, in blocks of
    /// `max_block` (`queue_depth`).
    fn queue_depth(&mut self, cal: &mut Calibration) -> Result<Table> {
        let chunk = (cal.max_block * 16).clamp(1 << 20, 64 << 20);
        let mut t = self.table(&format!(
            "the whole file front to back with uring, requests of {}, blocks of {}, by queue depth",
            sz(chunk),
            sz(cal.max_block)
        ));
        for &q in &self.plan.depths {
            let pt = self.point(
                "uring",
                q as u64,
                &q.to_string(),
                ReaderKind::Uring,
                (cal.max_block, q, Madvise::Normal),
                Pattern::Sequential { request: chunk },
                1,
            )?;
            t.points.push(pt);
        }
        let (q, why) = plateau(&t.points);
        cal.queue_depth = q as u32;
        t.decision = format!("queue_depth = {q}: {why}");
        Ok(t)
    }

    /// Step 6: uring against pread for large random requests
    /// (`uring_min_request`).
    fn uring_min_request(&mut self, cal: &mut Calibration) -> Result<Table> {
        let half = self.plan.file_size / 2;
        let mut t = self.table(&format!(
            "random requests, by size: uring (blocks of {}, Q = {}) vs pread (the adaptive reader's block)",
            sz(cal.max_block),
            cal.queue_depth
        ));
        let mut wins = Vec::new();
        for s in self.plan.uring_sizes_measured() {
            let total = half.max(4 * s as u64);
            let pat = Pattern::Random { request: s, total, seed: 100 + s as u64 };
            let a = self.point(
                "uring",
                s as u64,
                &sz(s),
                ReaderKind::Uring,
                (cal.max_block, cal.queue_depth, Madvise::Normal),
                pat,
                1,
            )?;
            let block = cal.pread_block(s);
            let b = self.point(
                "pread",
                s as u64,
                &sz(s),
                ReaderKind::Pread,
                (block, 1, Madvise::Normal),
                pat,
                1,
            )?;
            wins.push((s, a.seconds() < b.seconds()));
            t.points.push(a);
            t.points.push(b);
        }
        let from = wins.iter().rev().take_while(|w| w.1).last().map(|w| w.0);
        cal.uring_min_request = from.unwrap_or(usize::MAX);
        t.decision = match from {
            Some(s) => format!("uring_min_request = {}: uring wins from this size on", sz(s)),
            None => "uring_min_request = off: pread wins at the largest size measured".into(),
        };
        Ok(t)
    }

    /// Step 7: threads for sequential, small random and large random reads
    /// (`threads_sequential`, `threads_random_small`,
    /// `threads_random_large`), a table each.
    fn threads(&mut self, cal: &mut Calibration) -> Result<Vec<Table>> {
        let p = self.plan;
        let half = p.file_size / 2;
        let seq_block = cal.max_block;
        let cases: [(&str, Pattern, usize); 3] = [
            ("threads_sequential", Pattern::Sequential { request: seq_block }, seq_block),
            (
                "threads_random_small",
                Pattern::Random { request: 4096, total: p.file_size / 8, seed: 7 },
                4096,
            ),
            (
                "threads_random_large",
                Pattern::Random { request: p.large_random, total: half, seed: 8 },
                p.large_random,
            ),
        ];
        let mut tables = Vec::with_capacity(cases.len());
        for (key, pat, block) in cases {
            let what = match pat {
                Pattern::Sequential { .. } => "the whole file in contiguous slices".to_string(),
                Pattern::Runs { .. } => unreachable!("threads are measured on whole files"),
                Pattern::Random { request, total, .. } | Pattern::Scattered { request, total, .. } => {
                    format!("random {} reads, {} in all", sz(request), sz(total as usize))
                }
            };
            let mut t = self.table(&format!("{what}, pread (block {}), by threads", sz(block)));
            for &n in &p.threads {
                let pt = self.point(
                    "pread",
                    n as u64,
                    &n.to_string(),
                    ReaderKind::Pread,
                    (block, 1, Madvise::Normal),
                    pat,
                    n,
                )?;
                t.points.push(pt);
            }
            let (n, why) = plateau(&t.points);
            let n = n as u32;
            match key {
                "threads_sequential" => cal.threads_sequential = n,
                "threads_random_small" => cal.threads_random_small = n,
                _ => cal.threads_random_large = n,
            }
            t.decision = format!("{key} = {n}: {why}");
            tables.push(t);
        }
        Ok(tables)
    }

    /// Step 8: sequential runs among random reads by the kernel's
    /// readahead or the direct read-ahead (`direct_readahead`).
    fn direct_readahead(&mut self, cal: &mut Calibration) -> Result<Table> {
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
        let (off, on) = (adaptive(0), adaptive(d));
        let [kernel, direct] =
            self.mixed_pair(("pread", 0, "off", &off), ("direct", d as u64, &d.to_string(), &on))?;
        // Paired by round: the ratio of the two times in each round.
        let ratios: Vec<f64> = direct.runs.iter().zip(&kernel.runs).map(|(x, y)| x / y).collect();
        let ratio = median(&ratios).unwrap_or(f64::NAN);
        // On unless it costs: see the module docs.
        let on = ratio <= 1.0 + PLATEAU;
        cal.direct_readahead = if on { d } else { 0 };
        t.decision = format!(
            "direct_readahead = {}: with {d} reads of {} in flight (as far ahead as read_ahead_kb) {:.2}× the time of pread (median of {} paired rounds; {:.1} against {:.1} MiB/s){}",
            if on { d.to_string() } else { "off".into() },
            sz(emsort_io::reader::DIRECT_CHUNK),
            ratio,
            ratios.len(),
            direct.mib_s(),
            kernel.mib_s(),
            if on { "" } else { " (slower by more than 5 %)" },
        );
        t.points.push(kernel);
        t.points.push(direct);
        Ok(t)
    }
}

/// Running points.
impl Measurer<'_> {
    /// A step's table, its points and decision to come.
    fn table(&self, title: &str) -> Table {
        Table { title: title.to_string(), points: Vec::new(), decision: String::new() }
    }

    /// `reps` cold runs of one point; `(block, queue depth, hint)` configure the reader.
    #[allow(clippy::too_many_arguments)]
    fn point(
        &mut self,
        series: &str,
        param: u64,
        label: &str,
        kind: ReaderKind,
        (block, q, advice): (usize, u32, Madvise),
        pattern: Pattern,
        threads: usize,
    ) -> Result<Point> {
        self.point_with(series, param, label, &config(kind, block.max(1), q, advice), pattern, threads)
    }

    /// `reps` cold runs of one point with readers configured by `cfg`.
    fn point_with(
        &mut self,
        series: &str,
        param: u64,
        label: &str,
        cfg: &ReaderConfig,
        pattern: Pattern,
        threads: usize,
    ) -> Result<Point> {
        let bytes = pattern.bytes(self.file.size);
        self.progress.message(&format!("{series} at {label}"));
        let mut runs = Vec::with_capacity(self.plan.reps);
        for _ in 0..self.plan.reps {
            runs.push(match pattern {
                Pattern::Scattered { request, total, seed } => {
                    run_scattered(self.set, cfg, request, total, seed, self.cache, self.cancel)?
                }
                _ => run(self.file, cfg, pattern, threads, self.cache, self.cancel)?,
            });
        }
        self.progress.advance(1);
        Ok(Point { series: series.to_string(), param, label: label.to_string(), bytes, runs })
    }

    /// Step 8's mixed workload ([`measure::run_mixed`]), cold, with the
    /// readers of `a` and of `b` in turns (3 × `reps` rounds, the first of
    /// each round alternating: [`round_order`] of two), so that a drift
    /// touches both alike.
    fn mixed_pair(
        &mut self,
        a: (&str, u64, &str, &ReaderConfig),
        b: (&str, u64, &str, &ReaderConfig),
    ) -> Result<[Point; 2]> {
        let shape = (SEQUENTIAL_REQUEST, SEQUENTIAL_RUN, SEQUENTIAL_RUN);
        let runs = Pattern::Runs { request: shape.0, run: shape.1, skip: shape.2 }.bytes(self.file.size);
        let set_half = self.set.iter().map(|f| f.size).sum::<u64>() / 2;
        let bytes = runs + set_half / 4096 * 4096;
        let rounds = 3 * self.plan.reps;
        let mut times = [Vec::with_capacity(rounds), Vec::with_capacity(rounds)];
        self.progress.message(&format!("{} against {}", a.0, b.0));
        for round in 0..rounds {
            for k in round_order(2, round) {
                let cfg = if k == 0 { a.3 } else { b.3 };
                times[k].push(measure::run_mixed(
                    self.file,
                    self.set,
                    cfg,
                    shape,
                    11,
                    self.cache,
                    self.cancel,
                )?);
            }
        }
        self.progress.advance(2);
        let [ta, tb] = times;
        let point = |(series, param, label, _): (&str, u64, &str, &ReaderConfig), runs| Point {
            series: series.to_string(),
            param,
            label: label.to_string(),
            bytes,
            runs,
        };
        Ok([point(a, ta), point(b, tb)])
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
        "# data file {}, {} run(s) per point (median), cache emptied by {} before each run, read_ahead_kb {}",
        format_size(out.plan.file_size),
        out.plan.reps,
        out.cache,
        out.read_ahead_kb.map_or("unknown".into(), |k| k.to_string())
    );
    s.push_str(&out.calibration.to_string());
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
        let out = Calibrate::new(dir.path())
            .plan(plan)
            .cache(CacheMethod::Fadvise)
            .run(&emsort_io::NoProgress, &AtomicBool::new(false))
            .unwrap();
        assert_eq!(out.tables.len(), 10);
        assert!(out.tables.iter().all(|t| !t.points.is_empty() && !t.decision.is_empty()));
        // The scratch directory is gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let path = dir.path().join("sub").join("calibration");
        write_calibration(&path, &out, "emsort calibrate --quick").unwrap();
        let c = Calibration::load(&path).unwrap();
        assert_eq!(Calibration { source: None, ..c }, out.calibration);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# measured by: emsort calibrate --quick\n"), "{text}");
        assert!(format_tables(&out).contains("→ max_block = "));
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
