//! Sorting on D parallel disks: DSM and SRM (Barve & Vitter, "Simple
//! Randomized Mergesort on Parallel Disks", sections 2–4; SPEC part 3).
//!
//! A sort with [`Method::Dsm`] or [`Method::Srm`] runs these phases
//! ([`sort_file`](crate::sort_file) dispatches here on
//! [`SortPlan::method`](crate::SortPlan::method)):
//!
//! 1. **Disks.** D directories ([`SortPlan::disk_dirs`](crate::SortPlan::disk_dirs)),
//!    one temporary directory `emsort-XXXXXX` made in each, served by one
//!    I/O thread per disk ([`emsort_io::disks::DiskIo`], emulated at a set
//!    bandwidth and latency with [`SortPlan::emulate_disk`](crate::SortPlan::emulate_disk)).
//! 2. **Run formation**, the plain sort's ([`crate::run_formation`]: the
//!    same run lengths for both methods, so both merge the same U runs),
//!    writing each run striped in blocks of B = [`SortPlan::block_size`](crate::SortPlan::block_size),
//!    round-robin from a starting disk: disk 0 for DSM; for SRM a disk drawn
//!    uniformly from a generator seeded with [`SortPlan::seed`](crate::SortPlan::seed).
//!    SRM records each block's forecasting key meanwhile (`pdisk/forecast.rs`).
//! 3. **Merge passes** with merge order R ([`order`]) until one run is
//!    left: each pass merges groups of R consecutive runs (a lone last run
//!    waits for the next pass); intermediate merges write striped runs (with
//!    their forecasting keys), the last one writes the output file through
//!    the plan's output stream, fed by two buffers of D·B. Each input run is
//!    deleted as soon as its merge is done; the temporary directories take
//!    everything with them on error or interrupt.
//!    - DSM (`pdisk/dsm.rs`): logical blocks of D·B, double-buffered per run.
//!    - SRM (`pdisk/srm.rs`): the forecasting heap, the lookahead queue, the
//!      occupancy queues, `Parallel_Read` without blocking, flushes.
//!
//! Both share the merge computation (`pdisk/merger.rs`: a loser tree over R run
//! cursors that carry items across block boundaries, `pdisk/cursor.rs`) and count
//! the parallel reads of each pass: ν = parallel reads ÷ (bytes ÷ (D·B))
//! ([`ParallelDiskStats`]).
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use emsort_sort::{sort_file, Format, Method, SortPlan};
//! # fn main() -> Result<(), emsort_sort::SortError> {
//! let disks = (0..6).map(|d| format!("/mnt/d{d}").into()).collect();
//! let plan = SortPlan::builder("rec:104:0:8".parse().unwrap())
//!     .memory(24 << 20)
//!     .block_size(256 << 10)
//!     .method(Method::Srm)
//!     .disks(disks)
//!     .build()?;
//! let stats = sort_file(&plan, "in".as_ref(), "out".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
//! let pd = stats.parallel_disks.unwrap();
//! println!("U = {}, R = {:?}, ν = {:?}", pd.runs, pd.merge_orders, pd.nu);
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use emsort_io::disks::{DiskIo, DiskSet};
use emsort_io::{AtomicFile, Error, ErrorKind, Progress, StreamKind};
use serde::{Serialize, Serializer};

use crate::byte_stream::ByteOutput;
use crate::plan::SortPlan;
use crate::run_formation::RunFormation;
use crate::sorter::{check_input, finish_pool, sort_pool, temp_dir_in};
use crate::stats::{MigrationCounter, PhaseStats, PlanRecord, Rusage, SortStats};
use crate::write_behind::WriteBehind;
use crate::SortError;

mod cursor;
mod dsm;
mod forecast;
mod item;
mod merger;
pub mod order;
mod run;
mod srm;
mod tree;

#[cfg(test)]
mod tests;

use forecast::Mode;
use item::ItemFormat;
use merger::{Merger, Out};
use run::{Disks, PdRun, RunWriter};
/// How a sort merges its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// The plain d-way merge of [`crate::merge`] over the temp dirs.
    #[default]
    Plain,
    /// Disk-striped mergesort: logical blocks of D·B striped over all disks
    /// (`pdisk/dsm.rs`).
    Dsm,
    /// Simple randomized mergesort: runs start on a random disk, blocks are
    /// read by forecasting (`pdisk/srm.rs`).
    Srm,
}

impl Method {
    /// Every method, in the order the command line lists them.
    pub const ALL: [Method; 3] = [Method::Plain, Method::Dsm, Method::Srm];

    /// The command-line name: `plain`, `dsm` or `srm`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Plain => "plain",
            Method::Dsm => "dsm",
            Method::Srm => "srm",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown merge method '{s}' (expected plain, dsm or srm)"))
    }
}

impl Serialize for Method {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a DSM or SRM sort did, part of [`SortStats`](crate::SortStats::parallel_disks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParallelDiskStats {
    /// `dsm` or `srm`.
    pub method: Method,
    /// D, the number of disks.
    pub disks: usize,
    /// B, the block size in bytes (a logical block is D·B).
    pub block_size: usize,
    /// The seed of the starting disks.
    pub seed: u64,
    /// Whether each run started on a randomly drawn disk (SRM), or on
    /// disk 0 (DSM).
    pub start_disks_drawn: bool,
    /// U, the runs formed.
    pub runs: u64,
    /// Merge passes.
    pub passes: usize,
    /// R of each pass: the most runs one merge of that pass read.
    pub merge_orders: Vec<usize>,
    /// Parallel reads of each pass (an I/O step reading up to one block per
    /// disk; for DSM one logical block).
    pub parallel_reads: Vec<u64>,
    /// ν of each pass: parallel reads ÷ (bytes of the pass ÷ (D·B)); 1 is
    /// optimal.
    pub nu: Vec<f64>,
    /// Blocks flushed (dropped from memory to be read again) in each pass
    /// (SRM; 0 for DSM).
    pub flushes: Vec<u64>,
    /// Seconds of all merge passes.
    pub merge_seconds: f64,
    /// Bytes read while merging (run blocks and forecasting data).
    pub merge_bytes_read: u64,
    /// Bytes written while merging (runs, output and forecasting data).
    pub merge_bytes_written: u64,
    /// (merge bytes read + written) ÷ merge seconds.
    pub merge_rate: f64,
    /// Whether SRM kept its forecasting data in memory (4.1.3), or read it
    /// in the blocked scheme (4.1.2); true for DSM, which needs none.
    pub forecast_in_memory: bool,
    /// The emulated disk model (`100M,5ms`), if any.
    pub emulated_disk: Option<String>,
}

/// Where run formation writes DSM's and SRM's runs: striped over the
/// disks, with their forecasting keys.
pub(crate) struct FormationSink<'a> {
    disks: &'a Disks,
    runs: Mutex<Vec<PdRun>>,
    cancel: &'a AtomicBool,
}

impl<'a> FormationSink<'a> {
    fn new(disks: &'a Disks, cancel: &'a AtomicBool) -> FormationSink<'a> {
        FormationSink { disks, runs: Mutex::new(Vec::new()), cancel }
    }

    fn check_cancel(&self) -> emsort_io::Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, self.disks.dir()));
        }
        Ok(())
    }

    /// Writes a sorted chunk of fixed-size items of `size` bytes as the next
    /// run; returns its bytes.
    pub fn write_fixed(&self, data: &[u8], size: usize) -> emsort_io::Result<u64> {
        let mut w = self.disks.create()?;
        let piece = (1 << 20) / size * size;
        for chunk in data.chunks(piece.max(size)) {
            w.push_items(chunk, size)?;
            self.check_cancel()?;
        }
        self.finish(w)
    }

    /// Writes `items` in order as the next run; returns its bytes.
    pub fn write_items<'d>(&self, items: impl Iterator<Item = &'d [u8]>) -> emsort_io::Result<u64> {
        let mut w = self.disks.create()?;
        for (n, item) in items.enumerate() {
            w.push(item)?;
            if n % 65536 == 65535 {
                self.check_cancel()?;
            }
        }
        self.finish(w)
    }

    fn finish(&self, w: RunWriter) -> emsort_io::Result<u64> {
        let (run, fc) = w.finish()?;
        self.disks.forecast_written.fetch_add(fc, Ordering::Relaxed);
        let bytes = run.bytes();
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).push(run);
        Ok(bytes)
    }

    fn into_runs(self) -> Vec<PdRun> {
        self.runs.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// The final merge's output: the output file through the plan's output
/// stream, fed by two buffers of D·B through a writer thread.
struct FileOut<'s>(WriteBehind<'s>);

impl Out for FileOut<'_> {
    #[inline]
    fn push(&mut self, item: &[u8]) -> emsort_io::Result<()> {
        self.0.push(item)
    }
}

/// One merge pass's numbers.
#[derive(Debug, Default, Clone, Copy)]
struct Pass {
    order: usize,
    parallel_reads: u64,
    flushes: u64,
    /// Bytes of the runs merged.
    bytes: u64,
}

/// What the merge phase did.
#[derive(Debug, Default)]
struct Merged {
    passes: Vec<Pass>,
    merges: usize,
    bytes_read: u64,
    bytes_written: u64,
    forecast_in_memory: bool,
}

/// Everything a merge needs.
struct Ctx<'a> {
    plan: &'a SortPlan,
    disks: &'a Disks,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
}

impl Ctx<'_> {
    /// Merges `runs` pass after pass, the last pass into `output`.
    fn merge_all(&self, runs: Vec<PdRun>, output: &Path, u: u64) -> emsort_io::Result<Merged> {
        let (plan, disks) = (self.plan, self.disks);
        let (b, d) = (disks.block(), disks.d());
        let r = match plan.method {
            Method::Dsm => order::dsm_merge_order(plan.memory, b, d).max(2),
            _ => order::srm_merge_order(u, order::srm_max_fit(plan.memory, b, d).max(2), plan.srm_max_order),
        };
        let mut merged =
            Merged { forecast_in_memory: !matches!(disks.mode, Mode::Blocked { .. }), ..Merged::default() };
        // The bytes every pass will merge, for the progress bar.
        let total: u64 = {
            let mut sizes: Vec<u64> = runs.iter().map(|r| r.bytes()).collect();
            let mut total = 0;
            while !sizes.is_empty() {
                let last = sizes.len() <= r;
                let mut next = Vec::new();
                for g in sizes.chunks(r) {
                    if g.len() > 1 || last {
                        total += g.iter().sum::<u64>();
                    }
                    next.push(g.iter().sum());
                }
                if last {
                    break;
                }
                sizes = next;
            }
            total
        };
        self.progress.phase_bytes("merge", Some(total));
        let mut level = runs;
        while !level.is_empty() {
            let last = level.len() <= r;
            let mut pass = Pass::default();
            let mut next = Vec::new();
            let mut rest = level.into_iter().peekable();
            while rest.peek().is_some() {
                let group: Vec<PdRun> = rest.by_ref().take(r).collect();
                if group.len() == 1 && !last {
                    next.extend(group);
                    continue;
                }
                pass.order = pass.order.max(group.len());
                pass.bytes += group.iter().map(|g| g.bytes()).sum::<u64>();
                let m = self.input_blocks(group.len(), &group);
                let (counts, written) = if last {
                    std::thread::scope(|scope| {
                        let cfg = plan.stream_config(false);
                        let stream = ByteOutput::create(output, plan.unit(), &cfg)?;
                        let mut out = FileOut(WriteBehind::new(scope, stream, d * b, output));
                        let counts = self.merge(&group, m, &mut out)?;
                        let written = out.0.finish()?;
                        Ok::<_, Error>((counts, written))
                    })?
                } else {
                    let mut out = disks.create()?;
                    let counts = self.merge(&group, m, &mut out)?;
                    let (run, fc) = out.finish()?;
                    let written = run.bytes() + fc;
                    next.push(run);
                    (counts, written)
                };
                for run in &group {
                    disks.remove(run)?;
                }
                pass.parallel_reads += counts.0;
                pass.flushes += counts.1;
                merged.bytes_read += group.iter().map(|g| g.bytes()).sum::<u64>() + counts.2;
                merged.bytes_written += written;
                merged.merges += 1;
            }
            merged.passes.push(pass);
            if last {
                break;
            }
            level = next;
        }
        self.progress.finish_phase();
        Ok(merged)
    }

    /// m, SRM's input blocks for a merge of `r` runs: all the memory beside
    /// the two output buffers of D·B and the forecasting data (at least
    /// 2R + D).
    fn input_blocks(&self, r: usize, group: &[PdRun]) -> usize {
        let (b, d) = (self.disks.block() as u64, self.disks.d() as u64);
        let fc = match self.disks.mode {
            Mode::Blocked { block } => (2 * r as u64 + 1) * block as u64,
            // This merge's keys, input and output.
            _ => 2 * group.iter().map(|g| g.forecast.bytes()).sum::<u64>(),
        };
        let m = self.plan.memory.saturating_sub(2 * d * b + fc) / b;
        (m as usize).max(2 * r + d as usize)
    }

    /// One merge of `group` into `out`: (parallel reads, flushes, bytes of
    /// forecasting data read).
    fn merge<O: Out>(&self, group: &[PdRun], m: usize, out: &mut O) -> emsort_io::Result<(u64, u64, u64)> {
        let disks = self.disks;
        let blocks: Vec<u64> = group.iter().map(|g| g.striped.blocks()).collect();
        let mut merger = Merger::new(disks.fmt, &blocks, self.progress, self.cancel, disks.dir());
        match self.plan.method {
            Method::Dsm => {
                let mut feed =
                    dsm::DsmFeed::new(disks.io.client(), group, disks.d(), disks.block(), disks.dir());
                merger.start(&mut feed)?;
                merger.run(&mut feed, out)?;
                Ok((feed.parallel_reads, 0, 0))
            }
            _ => {
                let fc_buf = order::forecast_block(disks.block());
                let feed = srm::SrmFeed::new(disks.io.client(), group, disks.fmt, m, fc_buf, disks.dir())?;
                let c = srm::merge(&mut merger, feed, out)?;
                Ok((c.parallel_reads, c.flushes, c.forecast_read))
            }
        }
    }
}

/// Whether SRM keeps forecasting data in memory: as the plan says, else by
/// 4.1.3's test with the keys estimated from the input (one per block,
/// 8 bytes for numbers, the key field for records, 64 bytes per line).
fn forecast_mode(plan: &SortPlan, input_bytes: u64, expected_runs: u64) -> Mode {
    if plan.method != Method::Srm {
        return Mode::None;
    }
    let (b, d) = (plan.block_size, plan.disk_dirs().len());
    let in_memory = plan.forecast_in_memory.unwrap_or_else(|| {
        let key = ItemFormat::new(plan.format, plan.reverse).key_len().unwrap_or(64) as u64;
        let keys = input_bytes / b as u64 + expected_runs;
        let r = order::srm_merge_order(
            expected_runs,
            order::srm_max_fit(plan.memory, b, d).max(2),
            plan.srm_max_order,
        );
        order::forecast_fits(plan.memory, r, b, d, 2 * keys * key)
    });
    if in_memory {
        Mode::Memory
    } else {
        Mode::Blocked { block: order::forecast_block(b) }
    }
}

/// [`sort_file`](crate::sort_file) for DSM and SRM (see the module docs).
pub(crate) fn sort_file(
    plan: &SortPlan,
    input: &Path,
    output: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    let start = Instant::now();
    let usage0 = Rusage::now();
    let migrations = MigrationCounter::start();
    let input_bytes = check_input(plan, input)?;
    let plan = plan.with_input_bytes(input_bytes);
    plan.validate()?;
    let derived = plan.derived();
    let (pool, pool_name) = sort_pool(&plan)?;
    let temps =
        plan.disk_dirs().iter().map(|dir| temp_dir_in(dir, "emsort-")).collect::<Result<Vec<_>, _>>()?;
    let direct = plan.input_kind == StreamKind::Direct || plan.output_kind == StreamKind::Direct;
    let dirs: Vec<PathBuf> = temps.iter().map(|t| t.path().to_path_buf()).collect();
    let set = DiskSet::new(dirs, plan.block_size, direct, plan.emulate_disk)?;
    let fmt = ItemFormat::new(plan.format, plan.reverse);
    let mode = forecast_mode(&plan, input_bytes, derived.expected_runs.unwrap_or(1));
    let disks = Disks::new(DiskIo::start(Arc::new(set))?, fmt, mode, plan.method == Method::Srm, plan.seed);
    let out = AtomicFile::create(output)?;

    // Run formation.
    let t = Instant::now();
    progress.phase_bytes("run formation", Some(input_bytes));
    let sink = FormationSink::new(&disks, cancel);
    let formation =
        RunFormation { plan: &plan, derived: &derived, pool: &pool, progress, cancel, striped: Some(&sink) };
    let formed =
        formation.form(
            input,
            |_, single| {
                if single {
                    out.path().to_path_buf()
                } else {
                    disks.dir().to_path_buf()
                }
            },
        )?;
    progress.finish_phase();
    let runs = sink.into_runs();
    let forecast_written_rf = disks.forecast_written.load(Ordering::Relaxed);
    let run_formation = PhaseStats {
        seconds: t.elapsed().as_secs_f64(),
        bytes_read: formed.bytes_read,
        bytes_written: formed.bytes_written + forecast_written_rf,
    };
    let u = formed.runs.len() as u64;
    let output_bytes = formed.runs.iter().map(|r| r.bytes).sum();

    // Merge passes.
    let t = Instant::now();
    let merged = if formed.wrote_output {
        Merged { forecast_in_memory: !matches!(mode, Mode::Blocked { .. }), ..Merged::default() }
    } else {
        let ctx = Ctx { plan: &plan, disks: &disks, progress, cancel };
        ctx.merge_all(runs, out.path(), u)?
    };
    let merge_seconds = t.elapsed().as_secs_f64();
    out.commit()?;
    let emulated_disk = plan.emulate_disk.map(|m| m.to_string());
    drop(disks);
    drop(temps);
    let total_seconds = start.elapsed().as_secs_f64();
    let cpu_migrations = finish_pool(pool, &pool_name, migrations);

    let (b, d) = (plan.block_size, plan.disk_dirs().len());
    let logical = (b * d) as f64;
    let merged_bytes: u64 = merged.passes.iter().map(|p| p.bytes).sum();
    let merge = PhaseStats {
        seconds: merge_seconds,
        bytes_read: merged.bytes_read,
        bytes_written: merged.bytes_written,
    };
    let parallel = ParallelDiskStats {
        method: plan.method,
        disks: d,
        block_size: b,
        seed: plan.seed,
        start_disks_drawn: plan.method == Method::Srm,
        runs: u,
        passes: merged.passes.len(),
        merge_orders: merged.passes.iter().map(|p| p.order).collect(),
        parallel_reads: merged.passes.iter().map(|p| p.parallel_reads).collect(),
        nu: merged
            .passes
            .iter()
            .map(|p| if p.bytes == 0 { 0.0 } else { p.parallel_reads as f64 / (p.bytes as f64 / logical) })
            .collect(),
        flushes: merged.passes.iter().map(|p| p.flushes).collect(),
        merge_seconds,
        merge_bytes_read: merged.bytes_read,
        merge_bytes_written: merged.bytes_written,
        merge_rate: if merge_seconds > 0.0 {
            (merged.bytes_read + merged.bytes_written) as f64 / merge_seconds
        } else {
            0.0
        },
        forecast_in_memory: merged.forecast_in_memory,
        emulated_disk,
    };
    Ok(SortStats {
        plan: PlanRecord::new(&plan, &derived),
        input_bytes,
        output_bytes,
        runs: u,
        passes: if input_bytes == 0 { 1.0 } else { 1.0 + merged_bytes as f64 / input_bytes as f64 },
        merge_levels: merged.passes.len() as u32,
        merges: merged.merges,
        merge_order: merged.passes.iter().map(|p| p.order).max().unwrap_or(0),
        run_formation,
        merge,
        total_seconds,
        rusage: Rusage::now().since(&usage0),
        cpu_migrations,
        parallel_disks: Some(parallel),
    })
}
