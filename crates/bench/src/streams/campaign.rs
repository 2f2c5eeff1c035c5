//! A stream campaign: the points, how to run them, and where results go.
//!
//! [`Campaign::run`] proceeds in numbered steps:
//!
//! 1. **Check** that the campaign can run: the cache method is usable
//!    (`drop` needs root), the output directory holds no earlier
//!    `raw.csv`, the largest data set fits on the work directory's file
//!    system (`statvfs`), and no point asks for more buffer memory than half
//!    of what is available.
//! 2. **Record the machine** in `machine.json` before the first run.
//! 3. **Run the points** data set by data set (points are sorted by N, then
//!    k, so the k files of one (k, N) serve all kinds and B before they are
//!    removed). Before each repetition the page cache is emptied (`drop`:
//!    the whole machine; `fadvise`: the point's k files). Each run appends
//!    a row to `raw.csv` and flushes it. A read checks the sum of what it
//!    read against the data set's; a wrong sum stops the campaign.
//! 4. **Clean up** the data files (unless `keep_files`), also on error.
//! 5. **Report from the CSV**: `summary.csv` and the plots are made by
//!    reading `raw.csv` back ([`summary_from_csv`], [`plots_from_csv`]).
//!
//! ```text
//!   points ──► for each (N, k): for each kind, write then read, each B
//!                 │  empty cache ─► timed run ─► sum check ─► raw.csv row
//!                 ▼
//!              remove k{k}_n{N}_*.bin
//!   raw.csv ──► summary.csv, plots/*.svg
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::{format_size, ErrorKind, Progress, StreamKind};

use super::cost::{formula, predicted_ios};
use super::dataset::{self, DataSets, HEADROOM};
use super::measure::{self, Measure};
use super::params::{check_blocks, parse_params, read_params};
use super::plots::plots_from_csv;
use super::point::{format_count, Op, Point, Sweep, ELEMENT_SIZE};
use super::record::{read_raw, summarise, write_summary, RawRow, RawWriter, SummaryRow};
use crate::campaign::{interrupted, memory_fs_warning, write_json, CampaignBuilder, CampaignSettings};
use crate::grid::merge_repeats;
use crate::machine::meminfo;
use crate::{Error, Result};

/// The parameter file of the `--quick` campaign (every kind, read and
/// write, N up to 1e6, k = 1 and 4, a few B; well under a minute).
pub const QUICK_PARAMS: &str = include_str!("../../params/quick.csv");

/// A stream campaign (experiment 1); see the module docs for what
/// [`run`](Campaign::run) does. Its settings (cache method, output
/// directory …) are set with the methods of [`CampaignBuilder`]; the work
/// directory holds the data files (default: a temporary directory inside
/// the output directory, so on its file system, removed at the end).
#[derive(Debug, Clone)]
pub struct Campaign {
    points: Vec<Point>,
    settings: CampaignSettings,
    keep_files: bool,
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
    /// `machine.json`.
    pub machine_json: PathBuf,
    /// `README.md`: what the files hold and the cost formulas.
    pub readme: PathBuf,
    /// The SVG plots drawn.
    pub plots: Vec<PathBuf>,
    /// The summary rows (as in `summary.csv`).
    pub summary: Vec<SummaryRow>,
    /// Where the data files were written.
    pub work_dir: PathBuf,
    /// Whether the data files (and a temporary work directory) were kept.
    pub files_kept: bool,
    /// Things the user should know: fallbacks, skipped kinds, a work
    /// directory in memory.
    pub warnings: Vec<String>,
    /// Runs done.
    pub runs: u64,
    /// Wall time of the whole campaign, seconds.
    pub seconds: f64,
}

impl CampaignBuilder for Campaign {
    const NAME: &'static str = "streams";

    fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut CampaignSettings {
        &mut self.settings
    }
}

impl Campaign {
    /// A campaign of every point of `sweeps`; a point listed twice runs
    /// once with the larger reps. Fails when there is no point or a kind
    /// that uses B has none.
    pub fn new(sweeps: &[Sweep]) -> Result<Campaign> {
        for s in sweeps {
            check_blocks(s.kind, &s.blocks).map_err(Error::Campaign)?;
        }
        // In the order of (N, k), then kind, op and B: a data set's points together.
        let points = merge_repeats(
            sweeps.iter().flat_map(Sweep::points),
            |p| {
                let (rank, op, k, n, b) = p.key();
                (n, k, rank, op, b)
            },
            |p| &mut p.reps,
        );
        if points.is_empty() {
            return Err(Error::Campaign("the campaign has no point to measure".into()));
        }
        Ok(Campaign { points, settings: CampaignSettings::new(Self::NAME), keep_files: false })
    }

    /// The campaign a parameter file describes (see [`parse_params`]).
    pub fn from_params_file(path: &Path) -> Result<Campaign> {
        Campaign::new(&read_params(path)?)
    }

    /// The quick campaign ([`QUICK_PARAMS`]).
    pub fn quick() -> Campaign {
        let sweeps = parse_params(QUICK_PARAMS, Path::new("<built-in quick.csv>"))
            .expect("the built-in quick parameter file parses (checked by a test)");
        Campaign::new(&sweeps).expect("the built-in quick campaign is valid")
    }

    /// Keep the data files (and a temporary work directory) at the end.
    pub fn keep_files(mut self, yes: bool) -> Campaign {
        self.keep_files = yes;
        self
    }

    /// The points, in the order they run.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Total number of runs (points × reps).
    pub fn runs(&self) -> u64 {
        self.points.iter().map(|p| u64::from(p.reps)).sum()
    }

    /// The distinct data sets (k, N), in run order.
    fn data_sets(&self) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = self.points.iter().map(|p| (p.k, p.n)).collect();
        v.dedup();
        v
    }

    /// Runs the campaign (see the module docs), reporting one unit of
    /// progress per run in phase `"streams"`. Setting `cancel` stops it
    /// within a moment with an [`Interrupted`](emsort_io::ErrorKind::Interrupted)
    /// error; the data files are removed and `raw.csv` keeps the finished runs.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<Outcome> {
        let started = Instant::now();
        // 1. Checks.
        self.settings.check_cache()?;
        let raw_csv = self.settings.fresh_raw_csv("plots")?;
        let out = &self.settings.out_dir;
        let (work, temp) = self.settings.work_dir_or_temp(".emsort-work-")?;
        self.check_memory()?;
        self.check_disk(&work)?;

        // 2. The machine.
        let machine = self.settings.machine(&work);
        let machine_json = out.join("machine.json");
        write_json(&machine_json, &machine)?;
        let readme = out.join("README.md");
        std::fs::write(&readme, self.readme_text()).map_err(|e| Error::io("write", &readme, e))?;
        let mut warnings: Vec<String> = memory_fs_warning(&work, &machine.fs_type).into_iter().collect();

        // 3. The runs; 4. clean up whatever happened.
        let mut writer = RawWriter::create(&raw_csv)?;
        let result = self.run_points(&work, &mut writer, progress, cancel, &mut warnings);
        drop(writer);
        let cleaned = if self.keep_files {
            Ok(())
        } else {
            self.data_sets().into_iter().try_for_each(|(k, n)| dataset::remove(&work, k, n))
        };
        let files_kept = self.keep_files;
        if let Some(t) = temp {
            if files_kept {
                let _ = t.keep();
            }
            // Otherwise dropped here: the temporary directory is removed.
        }
        let runs = result?;
        cleaned?;

        // 5. Reports from the CSV; the README gets the results.
        let summary = summary_from_csv(out)?;
        let plots = plots_from_csv(out)?;
        let text = format!("{}\n{}", self.readme_text(), super::report::results_markdown(&summary));
        std::fs::write(&readme, text).map_err(|e| Error::io("write", &readme, e))?;
        Ok(Outcome {
            out_dir: out.clone(),
            raw_csv,
            summary_csv: out.join("summary.csv"),
            machine_json,
            readme,
            plots,
            summary,
            work_dir: work,
            files_kept,
            warnings,
            runs,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Step 3: every point, every repetition; returns the runs done.
    fn run_points(
        &self,
        work: &Path,
        writer: &mut RawWriter,
        progress: &dyn Progress,
        cancel: &AtomicBool,
        warnings: &mut Vec<String>,
    ) -> Result<u64> {
        progress.phase("streams", Some(self.runs()));
        let mut sets = DataSets::default();
        let mut current: Option<(u32, u64)> = None;
        let mut skipped: Vec<StreamKind> = Vec::new();
        let mut runs = 0;
        for p in &self.points {
            if current != Some((p.k, p.n)) {
                if let (Some((k, n)), false) = (current, self.keep_files) {
                    dataset::remove(work, k, n)?;
                    sets.forget(k, n);
                }
                current = Some((p.k, p.n));
            }
            if skipped.contains(&p.kind) {
                progress.advance(u64::from(p.reps));
                continue;
            }
            let files = dataset::paths(work, p.k, p.n);
            let expected = match p.op {
                Op::Read => Some(sets.ensure(work, p.k, p.n)?),
                Op::Write => {
                    dataset::ensure_space(work, &files, p.n * ELEMENT_SIZE, p.k, p.n)?;
                    None
                }
            };
            let cfg = p.config();
            for rep in 1..=p.reps {
                if cancel.load(Ordering::Relaxed) {
                    return Err(interrupted(work));
                }
                progress.message(&format!("{} rep {rep}/{}", p.label(), p.reps));
                self.empty_cache(&files)?;
                let measured = match p.op {
                    Op::Write => measure::write(&files, &cfg, p.n, cancel),
                    Op::Read => measure::read(&files, &cfg, cancel),
                };
                let m = match measured {
                    Ok(m) => m,
                    Err(e) if *e.kind() == ErrorKind::UringUnavailable => {
                        warnings.push(format!("{} skipped: {e}", p.kind));
                        skipped.push(p.kind);
                        progress.advance(u64::from(p.reps - rep + 1));
                        break;
                    }
                    Err(e) => return Err(Error::Run { point: p.label(), rep, source: e }),
                };
                match expected {
                    None => sets.written(p.k, p.n, m.sum),
                    Some(sum) => {
                        if m.sum != sum || m.elements != u64::from(p.k) * p.n {
                            return Err(Error::WrongData {
                                point: p.label(),
                                got: m.sum,
                                expected: sum,
                                elements: m.elements,
                            });
                        }
                    }
                }
                if let Some(f) = &m.info.fallback {
                    let w = format!("{} fell back: {f}", p.kind);
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                }
                writer.write(&self.row(p, rep, &m))?;
                runs += 1;
                progress.advance(1);
            }
        }
        progress.finish_phase();
        Ok(runs)
    }

    fn row(&self, p: &Point, rep: u32, m: &Measure) -> RawRow {
        let b_eff = m.info.block_size as u64;
        RawRow {
            kind: p.kind.name().to_string(),
            op: p.op.name().to_string(),
            k: p.k,
            n: p.n,
            b_requested: p.block_bytes(),
            b_effective: b_eff,
            rep,
            seconds: m.seconds,
            bytes: m.bytes,
            syscalls_data: m.calls.data_calls(),
            syscalls_total: m.calls.total(),
            predicted_ios: predicted_ios(p.kind, p.k, p.n, b_eff),
            cache: self.settings.cache.name().to_string(),
            fallback: m.info.fallback.clone().unwrap_or_default(),
        }
    }

    /// Empties the page cache before a run: the whole machine (`drop`) or
    /// the point's files that exist (`fadvise`).
    fn empty_cache(&self, files: &[PathBuf]) -> Result<()> {
        match self.settings.cache {
            CacheMethod::None => Ok(()),
            CacheMethod::Drop => Ok(CacheMethod::Drop.apply(&[])?),
            CacheMethod::Fadvise => {
                let present: Vec<&Path> = files.iter().map(PathBuf::as_path).filter(|p| p.exists()).collect();
                Ok(CacheMethod::Fadvise.apply(&present)?)
            }
        }
    }

    /// Fails when a point's buffers (k · B, · Q for `uring`) exceed half of
    /// the available memory.
    fn check_memory(&self) -> Result<()> {
        let Some(avail) = meminfo("MemAvailable:") else { return Ok(()) };
        if let Some(p) = self.points.iter().max_by_key(|p| p.buffer_bytes()) {
            let need = p.buffer_bytes();
            if need > avail / 2 {
                return Err(Error::Campaign(format!(
                    "{} needs {} of buffers (k x B), more than half of the {} of memory available; \
                     use a smaller B or k",
                    p.label(),
                    format_size(need),
                    format_size(avail)
                )));
            }
        }
        Ok(())
    }

    /// Fails when the work directory cannot hold the largest data set (all
    /// of them with `keep_files`), less files already there.
    fn check_disk(&self, work: &Path) -> Result<()> {
        let mut need = 0u64;
        let mut worst = (0, 0);
        for (k, n) in self.data_sets() {
            let existing: u64 = dataset::paths(work, k, n)
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum();
            let set = (u64::from(k) * n * ELEMENT_SIZE).saturating_sub(existing);
            if self.keep_files {
                need += set;
                worst = (k, n);
            } else if set >= need {
                need = set;
                worst = (k, n);
            }
        }
        let avail = dataset::free_bytes(work)?;
        if avail < need + HEADROOM {
            let what = if self.keep_files {
                format!("all data sets kept in {} (--keep-files)", work.display())
            } else {
                format!("k={} N={} ({} files in {})", worst.0, format_count(worst.1), worst.0, work.display())
            };
            return Err(Error::DiskSpace {
                what,
                need: need + HEADROOM,
                avail,
                source: emsort_io::Error::new(ErrorKind::DiskFull, work),
            });
        }
        Ok(())
    }

    fn readme_text(&self) -> String {
        let mut formulas = String::new();
        for k in StreamKind::ALL {
            formulas.push_str(&format!("- `{}`: {}\n", k, formula(k)));
        }
        format!(
            "# emsort stream campaign (experiment 1: the streams)\n\n\
             Command: `{cmd}`\n\n\
             - `raw.csv`: one row per run, written as runs finish. Columns: kind, op, k \
             (streams), n (elements per stream, u32), b_requested (bytes; empty where B is \
             ignored), b_effective (block size the stream used: 4 for syscall, BUFSIZ for \
             stdio, the window for mmap), rep, seconds, bytes, syscalls_data (read, write, \
             mmap, munmap, truncate, io_uring_enter counted by the streams), syscalls_total \
             (all counted calls), predicted_ios (cost formula below), cache, fallback.\n\
             - `summary.csv`: one row per point: min/median/max seconds, median MiB/s, ns per \
             element, median counted calls, predicted I/Os.\n\
             - `machine.json`: CPU, memory, kernel, file system, read_ahead_kb, version, date, \
             cache method.\n\
             - `plots/*.svg`: time vs N per k, time vs k per N, time vs B per N, all kinds on \
             one chart, counted vs predicted calls (all log-log).\n\n\
             Writes: k files written round-robin, synced on close; the time runs from the first \
             create to the last close. Reads: k files read round-robin until all are exhausted; \
             the sum of the values is checked against the written data. Page cache emptied \
             before each run with `{cache}`.\n\n\
             Predicted I/Os (the INFO-H-417 reports' cost formula; B = b_effective, W = the mmap window; \
             mmap counts one map and one unmap per window):\n\n{formulas}\n\
             Redraw the plots from raw.csv with `emsort bench streams --plot-only DIR`.\n",
            cmd = self.settings.command_line,
            cache = self.settings.cache,
        )
    }
}

/// Reads `dir/raw.csv`, writes `dir/summary.csv`, and returns its rows.
pub fn summary_from_csv(dir: &Path) -> Result<Vec<SummaryRow>> {
    let rows = summarise(&read_raw(&dir.join("raw.csv"))?);
    write_summary(&dir.join("summary.csv"), &rows)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emsort_io::NoProgress;

    #[test]
    fn quick_campaign_is_valid_and_deduplicated() {
        let c = Campaign::quick();
        let kinds: Vec<StreamKind> = c.points().iter().map(|p| p.kind).collect();
        for k in StreamKind::ALL {
            assert!(kinds.contains(&k), "{k} missing");
        }
        // buffered k=1 N=1e6 B=1M read is in both rows; it runs once.
        let dup = c
            .points()
            .iter()
            .filter(|p| {
                p.kind == StreamKind::Buffered
                    && p.op == Op::Read
                    && p.k == 1
                    && p.n == 1_000_000
                    && p.block == Some(super::super::BlockSize::Bytes(1 << 20))
            })
            .count();
        assert_eq!(dup, 1);
        assert!(c.points().iter().all(|p| p.n <= 1_000_000));
        assert!(c.points().iter().filter(|p| p.kind == StreamKind::Syscall).all(|p| p.n <= 100_000));
        // Sorted by data set: a (k, N) never comes back once left.
        let sets = c.data_sets();
        let mut uniq = sets.clone();
        uniq.sort_unstable();
        uniq.dedup();
        assert_eq!(sets.len(), uniq.len());
        assert!(c.runs() > 100 && c.runs() < 300, "{}", c.runs());
    }

    #[test]
    fn empty_and_b_less_campaigns_are_refused() {
        assert!(Campaign::new(&[]).is_err());
        let s = Sweep {
            kind: StreamKind::Mmap,
            ops: vec![Op::Read],
            n: vec![10],
            k: vec![1],
            blocks: vec![],
            reps: 1,
        };
        assert!(Campaign::new(&[s]).unwrap_err().to_string().contains("mmap uses a block size B"));
    }

    #[test]
    fn tiny_campaign_end_to_end() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("results");
        let text = "\
kind;ops;N list;k list;B range;reps
syscall;read,write;100,1000;1,2;-;2
buffered;write,read;100,1000;1;64,4K;1
mmap;read;1000;2;4K;1
";
        let sweeps = parse_params(text, Path::new("t.csv")).unwrap();
        let c = Campaign::new(&sweeps)
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(&out)
            .command_line("emsort bench streams --params t.csv");
        // syscall 2 ops x 2 N x 2 k x 2 reps + buffered 2 x 2 x 2 + mmap 1.
        assert_eq!(c.runs(), 16 + 8 + 1);
        let o = c.run(&NoProgress, &AtomicBool::new(false)).unwrap();
        assert_eq!(o.runs, 25);
        let raw = std::fs::read_to_string(&o.raw_csv).unwrap();
        assert_eq!(raw.lines().count(), 1 + 25);
        let rows = read_raw(&o.raw_csv).unwrap();
        assert!(rows.iter().all(|r| r.cache == "none" && r.seconds > 0.0));
        let sys =
            rows.iter().find(|r| r.kind == "syscall" && r.op == "write" && r.k == 2 && r.n == 1000).unwrap();
        assert_eq!(sys.predicted_ios, 2000);
        assert!(sys.syscalls_data >= 2000, "{sys:?}");
        let summary = std::fs::read_to_string(&o.summary_csv).unwrap();
        assert_eq!(summary.lines().count(), 1 + 8 + 8 + 1);
        assert_eq!(o.summary.len(), 17);
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
        for key in [
            "cpu_model",
            "cores",
            "memory_bytes",
            "kernel",
            "fs_type",
            "read_ahead_kb",
            "emsort_version",
            "command_line",
            "date",
            "cache_method",
            "drop_caches_possible",
        ] {
            assert!(m.get(key).is_some(), "machine.json lacks {key}");
        }
        assert_eq!(m["command_line"], "emsort bench streams --params t.csv");
        assert!(!o.plots.is_empty());
        assert!(o.plots.iter().all(|p| p.extension().unwrap() == "svg" && p.exists()));
        // Data files and the temporary work directory are gone.
        assert!(!o.work_dir.exists());
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".emsort-work")), "{left:?}");
        // A second campaign into the same directory is refused.
        let again = Campaign::new(&sweeps).unwrap().cache(CacheMethod::None).out_dir(&out);
        assert!(again
            .run(&NoProgress, &AtomicBool::new(false))
            .unwrap_err()
            .to_string()
            .contains("already holds"));
        // The plots can be redrawn from the CSV alone.
        std::fs::remove_dir_all(out.join("plots")).unwrap();
        assert_eq!(plots_from_csv(&out).unwrap().len(), o.plots.len());
    }

    #[test]
    fn cancel_keeps_raw_csv_and_removes_data() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let e = Campaign::quick()
            .cache(CacheMethod::None)
            .out_dir(&out)
            .run(&NoProgress, &AtomicBool::new(true))
            .unwrap_err();
        match e {
            Error::Io(io) => assert_eq!(*io.kind(), ErrorKind::Interrupted),
            other => panic!("{other}"),
        }
        assert!(out.join("raw.csv").exists() && out.join("machine.json").exists());
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".emsort-work")), "{left:?}");
    }

    #[test]
    fn keep_files_keeps_data_in_the_given_work_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let s = Sweep {
            kind: StreamKind::Buffered,
            ops: vec![Op::Read],
            n: vec![50],
            k: vec![3],
            blocks: vec![super::super::BlockSize::WholeFile],
            reps: 1,
        };
        let o = Campaign::new(&[s])
            .unwrap()
            .cache(CacheMethod::Fadvise)
            .out_dir(tmp.path().join("out"))
            .work_dir(&work)
            .keep_files(true)
            .run(&NoProgress, &AtomicBool::new(false))
            .unwrap();
        assert!(o.files_kept);
        assert_eq!(std::fs::metadata(work.join("k3_n50_2.bin")).unwrap().len(), 200);
        let rows = read_raw(&o.raw_csv).unwrap();
        assert_eq!(rows[0].b_requested, Some(200));
        assert_eq!(rows[0].cache, "fadvise");
    }
}
