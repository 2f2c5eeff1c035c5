//! Sorting on D parallel disks: DSM and SRM (Barve & Vitter, "A Simple
//! and Efficient Parallel Disk Mergesort", sections 2–4).
//!
//! A sort with [`Method::Dsm`](crate::Method::Dsm) or
//! [`Method::Srm`](crate::Method::Srm) runs the one sort pipeline
//! ([`sort`](crate::sort)) with this module's run store and mergers in
//! place of the plain ones:
//!
//! 1. **Disks** (the striped store). D directories ([`SortPlan::disk_dirs`](crate::SortPlan::disk_dirs)),
//!    one temporary directory `emsort-XXXXXX` made in each, served by one
//!    I/O thread per disk ([`emsort_io::disks::DiskIo`], emulated at a set
//!    bandwidth and latency with [`ParallelDisks::emulate`](crate::ParallelDisks::emulate)).
//! 2. **Run formation**, the plain sort's (the same run lengths for both
//!    methods, so both merge the same U runs), writing each run striped in blocks of B = [`SortPlan::block_size`](crate::SortPlan::block_size),
//!    round-robin from a starting disk: disk 0 for DSM; for SRM a disk drawn
//!    uniformly from a generator seeded with [`ParallelDisks::seed`](crate::ParallelDisks::seed).
//!    SRM records each block's forecasting key meanwhile (`pdisk/forecast.rs`).
//! 3. **Merge passes** (the DSM and SRM mergers) with merge order R ([`order`]) until one run is
//!    left: each pass merges groups of R consecutive runs (a lone last run
//!    waits for the next pass); intermediate merges write striped runs (with
//!    their forecasting keys), the last one writes the sort's output, fed
//!    by two buffers of D·B. Each input run is
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
//! use emsort_sort::{sort_file, Format, Method, ParallelDisks, SortPlan, SrmOptions};
//! # fn main() -> Result<(), emsort_sort::SortError> {
//! let disks = ParallelDisks::new((0..6).map(|d| format!("/mnt/d{d}")));
//! let plan = SortPlan::builder("rec:104:0:8".parse().unwrap())
//!     .memory(24 << 20)
//!     .block_size(256 << 10)
//!     .method(Method::Srm(disks, SrmOptions::default()))
//!     .build()?;
//! let stats = sort_file(&plan, "in".as_ref(), "out".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
//! let pd = stats.parallel_disks.unwrap();
//! println!("U = {}, R = {:?}, ν = {:?}", pd.runs, pd.merge_orders, pd.nu);
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use emsort_io::disks::{DiskIo, DiskModel, DiskSet};
use emsort_io::{Error, ErrorKind, Result, TempDir};

use crate::method::{MethodKind, ParallelDisks};
use crate::output::Output;
use crate::plan::SortPlan;
use crate::run_store::{MergeCtx, Merged as Report, Merger as MergerTrait, Order, RunStore, SortedChunk};
use crate::stats::{ParallelDiskStats, PhaseStats};
use crate::write_behind::WriteBehind;

mod cursor;
mod dsm;
mod forecast;
mod merger;
pub mod order;
mod run;
mod srm;

#[cfg(test)]
mod tests;

use forecast::Mode;
use merger::{Merger, Out};
use run::{Disks, PdRun, RunWriter};
/// Runs striped over the D disks with their forecasting keys: the store
/// of DSM and SRM. Its temporary directories (one per disk) and disk
/// threads live as long as it does.
pub(crate) struct StripedStore {
    disks: Disks,
    runs: Mutex<Vec<PdRun>>,
    /// Dropped after the disk threads.
    _temps: Vec<TempDir>,
}

impl StripedStore {
    /// Makes a temporary directory on each of `plan`'s disks and starts
    /// their threads; `input_bytes` and `expected_runs` (when the input's
    /// size is known) decide where SRM keeps its forecasting data.
    pub fn new(
        plan: &SortPlan,
        input_bytes: Option<u64>,
        expected_runs: Option<u64>,
    ) -> Result<StripedStore> {
        let temps =
            plan.disk_dirs().iter().map(|dir| TempDir::new_in(dir, "emsort-")).collect::<Result<Vec<_>>>()?;
        let direct = plan.input_kind().bypasses_cache() || plan.output_kind().bypasses_cache();
        let dirs = temps.iter().map(|t| t.path().to_path_buf()).collect();
        let set = DiskSet::new(dirs, plan.block_size(), direct, emulated(plan))?;
        let codec = crate::codec::for_plan(plan);
        let mode = forecast_mode(plan, codec.forecast_len(), input_bytes, expected_runs.unwrap_or(1));
        let srm = plan.method().kind() == MethodKind::Srm;
        let disks = Disks::new(DiskIo::start(Arc::new(set))?, codec, mode, srm, seed(plan));
        Ok(StripedStore { disks, runs: Mutex::new(Vec::new()), _temps: temps })
    }

    fn finish(&self, w: RunWriter) -> Result<u64> {
        let (run, fc) = w.finish()?;
        self.disks.forecast_written.fetch_add(fc, Ordering::Relaxed);
        let bytes = run.bytes();
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).push(run);
        Ok(bytes + fc)
    }
}

impl RunStore for StripedStore {
    fn write_run(&self, chunk: &SortedChunk<'_>, cancel: &AtomicBool) -> Result<u64> {
        let mut w = self.disks.create()?;
        if let Order::InPlace = chunk.order {
            let size = chunk.format.item_size().expect("fixed-size format");
            let piece = (1 << 20) / size * size;
            for part in chunk.data.chunks(piece.max(size)) {
                w.push_items(part, size)?;
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, self.disks.dir()));
                }
            }
        } else {
            chunk.for_each_item(cancel, self.disks.dir(), |item| w.push(item))?;
        }
        self.finish(w)
    }
}

/// The final merge's output: the sort's output, fed by two buffers of
/// D·B through a writer thread.
impl Out for WriteBehind<'_> {
    #[inline]
    fn push(&mut self, item: &[u8]) -> emsort_io::Result<()> {
        WriteBehind::push(self, item)
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
}

/// Everything a merge needs.
struct Ctx<'a> {
    plan: &'a SortPlan,
    disks: &'a Disks,
    progress: &'a dyn emsort_io::Progress,
    cancel: &'a AtomicBool,
}

impl Ctx<'_> {
    /// Merges `runs` pass after pass, the last pass into `output`.
    fn merge_all(&self, runs: Vec<PdRun>, output: &Output<'_>, u: u64) -> Result<Merged> {
        let (plan, disks) = (self.plan, self.disks);
        let (b, d) = (disks.block(), disks.d());
        let r = match plan.method().srm() {
            None => order::dsm_merge_order(plan.memory(), b, d).max(2),
            Some(o) => order::srm_merge_order(u, order::srm_max_fit(plan.memory(), b, d).max(2), o.max_order),
        };
        let mut merged = Merged::default();
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
                        let stream = output.open(plan.block_size())?;
                        let mut out = WriteBehind::new(scope, stream, d * b, output.name())?;
                        let counts = self.merge(&group, m, &mut out)?;
                        let written = out.finish()?;
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
            Mode::Blocked { block, .. } => (2 * r as u64 + 1) * block as u64,
            // This merge's keys, input and output.
            _ => 2 * group.iter().map(|g| g.forecast.bytes()).sum::<u64>(),
        };
        let m = self.plan.memory().saturating_sub(2 * d * b + fc) / b;
        (m as usize).max(2 * r + d as usize)
    }

    /// One merge of `group` into `out`: (parallel reads, flushes, bytes of
    /// forecasting data read).
    fn merge<O: Out>(&self, group: &[PdRun], m: usize, out: &mut O) -> Result<(u64, u64, u64)> {
        let disks = self.disks;
        let blocks: Vec<u64> = group.iter().map(|g| g.striped.blocks()).collect();
        let mut merger = Merger::new(&*disks.codec, &blocks, self.progress, self.cancel, disks.dir());
        match self.plan.method().kind() {
            MethodKind::Dsm => {
                let mut feed =
                    dsm::DsmFeed::new(disks.io.client(), group, disks.d(), disks.block(), disks.dir());
                merger.start(&mut feed)?;
                merger.run(&mut feed, out)?;
                Ok((feed.parallel_reads, 0, 0))
            }
            _ => {
                let fc_buf = order::forecast_block(disks.block());
                let feed =
                    srm::SrmFeed::new(disks.io.client(), group, &*disks.codec, m, fc_buf, disks.dir())?;
                let c = srm::merge(&mut merger, feed, out)?;
                Ok((c.parallel_reads, c.flushes, c.forecast_read))
            }
        }
    }
}

/// The emulated disk model of `plan`'s disks, if any.
fn emulated(plan: &SortPlan) -> Option<DiskModel> {
    plan.method().disks().and_then(|d| d.emulate)
}

/// The seed of `plan`'s starting disks.
fn seed(plan: &SortPlan) -> u64 {
    plan.method().disks().map_or(ParallelDisks::DEFAULT_SEED, |d| d.seed)
}

/// Whether SRM keeps forecasting data in memory: as the plan says, else by
/// 4.1.3's test with the keys estimated from the input (one per block, of
/// `key_len` bytes: 8 for numbers, the key field for records; 64 bytes
/// when they vary, as lines do).
/// An input of unknown size (a stream) gets the blocked scheme, whose
/// memory does not grow with the input.
fn forecast_mode(
    plan: &SortPlan,
    key_len: Option<usize>,
    input_bytes: Option<u64>,
    expected_runs: u64,
) -> Mode {
    let Some(srm) = plan.method().srm() else {
        return Mode::None;
    };
    let (b, d) = (plan.block_size(), plan.disk_dirs().len());
    let in_memory = srm.forecast_in_memory.unwrap_or_else(|| {
        let Some(input_bytes) = input_bytes else { return false };
        let key = key_len.unwrap_or(64) as u64;
        let keys = input_bytes / b as u64 + expected_runs;
        let r = order::srm_merge_order(
            expected_runs,
            order::srm_max_fit(plan.memory(), b, d).max(2),
            srm.max_order,
        );
        order::forecast_fits(plan.memory(), r, b, d, 2 * keys * key)
    });
    if in_memory {
        Mode::Memory
    } else {
        Mode::Blocked {
            block: order::forecast_block(b),
            input: plan.input_kind(),
            output: plan.output_kind(),
        }
    }
}

/// The DSM merger: logical blocks of D·B, double-buffered per run.
pub(crate) struct Dsm;

/// The SRM merger: forecasting, prefetching and flushing.
pub(crate) struct Srm;

/// DSM and SRM merge the same striped store: the plan's method picks the
/// reads ([`merge_striped`]).
macro_rules! striped_merger {
    ($($merger:ty),*) => {$(
        impl MergerTrait for $merger {
            type Store = StripedStore;
            fn merge(&self, s: StripedStore, o: &Output<'_>, w: bool, c: &MergeCtx<'_>) -> Result<Report> {
                merge_striped(s, o, w, c)
            }
        }
    )*};
}
striped_merger!(Dsm, Srm);

/// Merges a striped store's runs pass after pass (the plan's method picks
/// DSM's or SRM's reads) and reports their numbers.
fn merge_striped(store: StripedStore, out: &Output<'_>, written: bool, ctx: &MergeCtx<'_>) -> Result<Report> {
    let plan = ctx.plan;
    let disks = &store.disks;
    let runs = std::mem::take(&mut *store.runs.lock().unwrap_or_else(|e| e.into_inner()));
    let u = runs.len() as u64 + u64::from(written);
    let t = Instant::now();
    let merged = if written {
        Merged::default()
    } else {
        let c = Ctx { plan, disks, progress: ctx.progress, cancel: ctx.cancel };
        c.merge_all(runs, out, u)?
    };
    let merge_seconds = t.elapsed().as_secs_f64();
    let (b, d) = (plan.block_size(), plan.disk_dirs().len());
    let logical = (b * d) as f64;
    let merged_bytes: u64 = merged.passes.iter().map(|p| p.bytes).sum();
    let parallel = ParallelDiskStats {
        method: plan.method().kind(),
        disks: d,
        block_size: b,
        seed: seed(plan),
        start_disks_drawn: plan.method().kind() == MethodKind::Srm,
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
        forecast_in_memory: !matches!(disks.mode, Mode::Blocked { .. }),
        emulated_disk: emulated(plan).map(|m| m.to_string()),
    };
    drop(store);
    Ok(Report {
        phase: PhaseStats {
            seconds: 0.0,
            bytes_read: merged.bytes_read,
            bytes_written: merged.bytes_written,
        },
        merged_bytes,
        levels: merged.passes.len() as u32,
        merges: merged.merges,
        order: merged.passes.iter().map(|p| p.order).max().unwrap_or(0),
        output_bytes: merged.passes.last().map_or(0, |p| p.bytes),
        parallel_disks: Some(parallel),
        compression: None,
        runs_io: None,
    })
}
