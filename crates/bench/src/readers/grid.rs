//! The points of each experiment, from a [`Plan`].
//!
//! | experiment    | readers (B, Q)                         | pattern, api                 | sweeps |
//! |---------------|----------------------------------------|------------------------------|--------|
//! | `blocksize`   | `pread` (B), `uring` (B, Q = 1)         | `seq` whole file, `rand` distinct blocks; a request is one block | `block` |
//! | `queue-depth` | `uring` (B = R, Q), `fio` (bs = R, iodepth = Q) | `seq` whole file, `rand` per request size; `batch` | `depth` |
//! | `mmap`        | `mmap` per hint                         | `spread`, one read per stretch | `request` |
//! | `sequential`  | each of `readers` (B = 4M, Q = 32)      | `seq`                         | `file`, `total` |
//! | `random`      | each of `readers`                       | `rand`                        | `request`, `file`, `total` |
//! | `memory`      | each of `readers`, limited and not     | `repeat`                      | `total` |
//! | `threads`     | each of `readers`                       | `seq`, `rand` per size        | `threads` |
//!
//! A sweep that asks for more distinct blocks than the file has reads them
//! all; a point larger than its file is left out.

use emsort_io::ReaderConfig;

use super::plan::{Experiment, Plan};
use super::point::{Api, Pattern, Point};
use crate::grid::product;

/// A point with the defaults: reader `reader`, B = 4 MiB, Q = 32, one
/// thread, `single` api.
#[allow(clippy::too_many_arguments)]
fn base(
    exp: Experiment,
    sweep: &str,
    reader: &str,
    pattern: Pattern,
    file: u64,
    req: u64,
    total: u64,
    reps: u32,
) -> Point {
    Point {
        experiment: exp.name().to_string(),
        sweep: sweep.to_string(),
        reader: reader.to_string(),
        block_size: ReaderConfig::DEFAULT_BLOCK_SIZE as u64,
        queue_depth: ReaderConfig::DEFAULT_QUEUE_DEPTH,
        madvise: "normal".to_string(),
        pattern,
        api: Api::Single,
        file_bytes: file,
        request_bytes: req,
        total_bytes: total,
        threads: 1,
        limited: false,
        reps,
    }
}

/// Bytes of `n` distinct requests of `r` bytes in a file of `f` bytes
/// (at most the whole file's blocks, at least one request).
fn distinct_total(f: u64, r: u64, n: u64) -> u64 {
    n.min(f / r).max(1) * r
}

/// The points of `exp`, in run order: the [`product`] of its lists (the
/// first varying slowest), those of a setting per reader built first where
/// a reader sweeps several of them.
pub fn points(plan: &Plan, exp: Experiment) -> Vec<Point> {
    let reps = plan.reps;
    let mut v = Vec::new();
    match exp {
        Experiment::BlockSize => {
            let f = plan.bs_file;
            let readers = ["pread", "uring"];
            let blocks: Vec<u64> = plan.bs_blocks.iter().copied().filter(|&b| b <= f).collect();
            let patterns = [Pattern::Seq, Pattern::Rand];
            for [k, b, pattern] in product([readers.len(), blocks.len(), patterns.len()]) {
                let (b, pattern) = (blocks[b], patterns[pattern]);
                let total = if pattern == Pattern::Seq { f } else { distinct_total(f, b, plan.bs_requests) };
                let mut p = base(exp, "block", readers[k], pattern, f, b, total, reps);
                p.block_size = b;
                p.queue_depth = 1;
                v.push(p);
            }
        }
        Experiment::QueueDepth => {
            let f = plan.qd_file;
            let mut settings: Vec<(Pattern, u64, u64)> = Vec::new();
            if plan.qd_seq_block <= f {
                settings.push((Pattern::Seq, plan.qd_seq_block, f));
            }
            for &r in plan.qd_rand_sizes.iter().filter(|&&r| r <= f) {
                let n = plan.qd_requests.min(plan.qd_rand_total / r);
                settings.push((Pattern::Rand, r, distinct_total(f, r, n)));
            }
            let readers: &[&str] = if plan.qd_fio { &["uring", "fio"] } else { &["uring"] };
            for [s, q, k] in product([settings.len(), plan.qd_depths.len(), readers.len()]) {
                let ((pattern, r, total), reader) = (settings[s], readers[k]);
                let mut p = base(exp, "depth", reader, pattern, f, r, total, reps);
                p.block_size = r;
                p.queue_depth = plan.qd_depths[q];
                p.api = if reader == "fio" { Api::Fio } else { Api::Batch };
                v.push(p);
            }
        }
        Experiment::Mmap => {
            let f = plan.mm_file;
            let sizes: Vec<u64> = plan.mm_sizes.iter().copied().filter(|&r| r <= f).collect();
            for [h, r] in product([plan.mm_hints.len(), sizes.len()]) {
                let r = sizes[r];
                let n = plan.mm_requests.min(f / r).max(1);
                let mut p = base(exp, "request", "mmap", Pattern::Spread, f, r, n * r, reps);
                p.madvise = plan.mm_hints[h].name().to_string();
                v.push(p);
            }
        }
        Experiment::Sequential => {
            // (sweep, file, request, total) of each reader.
            let largest = plan.seq_files.iter().copied().max().unwrap_or(0);
            let mut series: Vec<(&str, u64, u64, u64)> =
                plan.seq_files.iter().map(|&f| ("file", f, plan.seq_request.min(f), f)).collect();
            for &t in plan.seq_totals.iter().filter(|&&t| t < largest) {
                series.push(("total", largest, plan.seq_request.min(t), t));
            }
            for [k, s] in product([plan.readers.len(), series.len()]) {
                let (sweep, f, r, total) = series[s];
                v.push(base(exp, sweep, plan.readers[k].name(), Pattern::Seq, f, r, total, reps));
            }
        }
        Experiment::Random => {
            // (sweep, file, request, total) of each reader.
            let f = plan.rnd_file;
            let capped = |f: u64, r: u64| distinct_total(f, r, plan.rnd_requests.min(plan.rnd_total / r));
            let mut series: Vec<(&str, u64, u64, u64)> = Vec::new();
            for &r in plan.rnd_sizes.iter().filter(|&&r| r <= f) {
                series.push(("request", f, r, capped(f, r)));
            }
            for &ff in plan.rnd_files.iter().filter(|&&ff| ff >= plan.rnd_size) {
                series.push(("file", ff, plan.rnd_size, capped(ff, plan.rnd_size)));
            }
            if plan.rnd_size <= f {
                for &t in &plan.rnd_totals {
                    series.push((
                        "total",
                        f,
                        plan.rnd_size,
                        distinct_total(f, plan.rnd_size, t / plan.rnd_size),
                    ));
                }
            }
            for [k, s] in product([plan.readers.len(), series.len()]) {
                let (sweep, f, r, total) = series[s];
                v.push(base(exp, sweep, plan.readers[k].name(), Pattern::Rand, f, r, total, reps));
            }
        }
        Experiment::Memory => {
            let (f, r) = (plan.mem_file, plan.mem_size.min(plan.mem_file));
            let limited = [true, false];
            for [l, k, t] in product([limited.len(), plan.readers.len(), plan.mem_totals.len()]) {
                let total = plan.mem_totals[t].div_ceil(r) * r;
                let mut p = base(exp, "total", plan.readers[k].name(), Pattern::Repeat, f, r, total, reps);
                p.limited = limited[l];
                v.push(p);
            }
        }
        Experiment::Threads => {
            // (pattern, request, total) at each thread count of each reader.
            let f = plan.th_file;
            let threads = plan.th_threads.counts();
            let mut series = vec![(Pattern::Seq, plan.th_seq_request.min(f), f)];
            for &r in plan.th_rand_sizes.iter().filter(|&&r| r <= f) {
                let n = plan.th_requests.min(plan.th_rand_total / r);
                series.push((Pattern::Rand, r, distinct_total(f, r, n)));
            }
            for [k, t, s] in product([plan.readers.len(), threads.len(), series.len()]) {
                let (pattern, r, total) = series[s];
                let mut p = base(exp, "threads", plan.readers[k].name(), pattern, f, r, total, reps);
                p.threads = threads[t];
                v.push(p);
            }
        }
    }
    v
}

/// The file sizes `exp` reads.
pub fn file_sizes(plan: &Plan, exp: Experiment) -> Vec<u64> {
    let mut v: Vec<u64> = points(plan, exp).iter().map(|p| p.file_bytes).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_grid_is_small_and_consistent() {
        let plan = Plan::quick();
        let mut runs = 0;
        for exp in Experiment::ALL {
            let ps = points(&plan, exp);
            assert!(!ps.is_empty(), "{exp}");
            for p in &ps {
                assert!(p.total_bytes <= p.file_bytes || p.pattern == Pattern::Repeat, "{}", p.label());
                let reqs = p.requests_list(plan.seed);
                assert_eq!(reqs.len() as u64, p.request_count(), "{}", p.label());
                let bytes: u64 = reqs.iter().map(|r| r.1 as u64).sum();
                assert_eq!(bytes, p.total_bytes, "{}", p.label());
                assert!(reqs.iter().all(|&(o, l)| o + l as u64 <= p.file_bytes), "{}", p.label());
            }
            runs += ps.len();
        }
        assert!(runs < 250, "{runs}");
        // Both series of the memory experiment, every reader.
        let mem = points(&plan, Experiment::Memory);
        assert_eq!(mem.iter().filter(|p| p.limited).count(), mem.len() / 2);
        let qd = points(&plan, Experiment::QueueDepth);
        assert_eq!(qd.iter().filter(|p| p.reader == "fio").count(), qd.len() / 2);
    }

    #[test]
    fn full_grid_points() {
        let plan = Plan::full();
        assert_eq!(points(&plan, Experiment::BlockSize).len(), 2 * 8 * 2);
        assert_eq!(points(&plan, Experiment::QueueDepth).len(), 4 * 8 * 2);
        assert_eq!(points(&plan, Experiment::Mmap).len(), 4 * 8);
        assert_eq!(file_sizes(&plan, Experiment::Sequential), vec![64 << 20, 256 << 20, 1 << 30, 4 << 30]);
    }
}
