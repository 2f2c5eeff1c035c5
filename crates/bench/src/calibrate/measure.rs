//! One timed run of a calibration experiment: the data file, the access
//! patterns, and the clock.
//!
//! Every run starts on a cold cache ([`CacheMethod::apply`] on the data
//! file), opens its readers, reads, and stops the clock when the last read
//! returns: opening is timed too, because the `mmap` reader maps (and
//! advises) the file there, and the adaptive reader does the same on its
//! first request. Request offsets are page-aligned and drawn from a seeded
//! generator, so two readers compared at one point read the same ranges.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::{open_reader, Madvise, Reader, ReaderConfig, ReaderKind};
use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::{Error, Result};

/// Requests and offsets are multiples of this (a page).
pub const PAGE: u64 = 4096;

/// What one run reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// The whole file front to back, in requests of `request` bytes, split
    /// among the threads in contiguous slices.
    Sequential {
        /// Bytes per request.
        request: usize,
    },
    /// Runs of `run` bytes read front to back in requests of `request`
    /// bytes, each followed by `skip` bytes not read, from the start of the
    /// file; the runs dealt round-robin to the threads. Sequential reading
    /// that ends now and then, as an application reads its animations:
    /// whatever is read ahead past a run's end is wasted.
    Runs {
        /// Bytes per request.
        request: usize,
        /// Bytes per run.
        run: u64,
        /// Bytes skipped after each run.
        skip: u64,
    },
    /// `total` bytes in requests of `request` bytes at random page-aligned
    /// offsets (seeded by `seed`), dealt round-robin to the threads.
    Random {
        /// Bytes per request.
        request: usize,
        /// Bytes read by all threads together.
        total: u64,
        /// Seed of the offsets.
        seed: u64,
    },
    /// `total` bytes in requests of `request` bytes over a set of files
    /// ([`run_scattered`]), one thread.
    Scattered {
        /// Bytes per request.
        request: usize,
        /// Bytes read.
        total: u64,
        /// Seed of the files and offsets.
        seed: u64,
    },
}

impl Pattern {
    /// Bytes one run reads from a file of `size` bytes.
    pub fn bytes(&self, size: u64) -> u64 {
        match *self {
            Pattern::Sequential { .. } => size,
            Pattern::Runs { run, skip, .. } => {
                let period = (run + skip).max(1);
                (size / period) * run + (size % period).min(run)
            }
            Pattern::Random { request, total, .. } | Pattern::Scattered { request, total, .. } => {
                requests(total, request) * request as u64
            }
        }
    }
}

/// One cold run of random reads spread over a set of files, as an
/// application reads its tiles or maps: `total` bytes in requests of
/// `request` bytes, each at a random file and page-aligned offset (seeded),
/// interleaved, one thread with a reader per file; returns the wall time
/// in seconds (opening included, as in [`run`]).
pub fn run_scattered(
    files: &[DataFile],
    cfg: &ReaderConfig,
    request: usize,
    total: u64,
    seed: u64,
    cache: CacheMethod,
    cancel: &AtomicBool,
) -> Result<f64> {
    let Some(first) = files.first() else { return Ok(0.0) };
    check_cancel(cancel, &first.path)?;
    let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
    cache.apply(&paths)?;
    let reqs: Vec<(usize, u64, usize)> = scattered(files, request, total, seed)
        .into_iter()
        .map(|(f, offset)| (f, offset, request.min(files[f].size as usize)))
        .collect();
    let files: Vec<&DataFile> = files.iter().collect();
    read_all(&files, cfg, &reqs, cancel)
}

/// One cold run of sequential runs mixed with random reads, as the mixed
/// trace of `emsort gen-trace` (animations beside tiles): `file` read as
/// [`Pattern::Runs`] (`request`, `run`, `skip`), and random 4 KiB reads of
/// half of the set `files` ([`run_scattered`]'s, seeded), interleaved in
/// proportion to their counts, one thread with a reader per file; returns
/// the wall time in seconds.
#[allow(clippy::too_many_arguments)]
pub fn run_mixed(
    file: &DataFile,
    set: &[DataFile],
    cfg: &ReaderConfig,
    (request, run, skip): (usize, u64, u64),
    seed: u64,
    cache: CacheMethod,
    cancel: &AtomicBool,
) -> Result<f64> {
    check_cancel(cancel, &file.path)?;
    let mut paths: Vec<&Path> = set.iter().map(|f| f.path.as_path()).collect();
    paths.push(&file.path);
    cache.apply(&paths)?;
    let runs = plan(file.size, Pattern::Runs { request, run, skip }, 1).remove(0);
    let half = set.iter().map(|f| f.size).sum::<u64>() / 2;
    let small = scattered(set, 4096, half, seed);
    let (a, b) = (runs.len(), small.len());
    let mut reqs = Vec::with_capacity(a + b);
    let (mut i, mut j) = (0, 0);
    while i < a || j < b {
        // The next request from the list that is behind its share.
        if j == b || (i < a && i * b <= j * a) {
            reqs.push((set.len(), runs[i].0, runs[i].1));
            i += 1;
        } else {
            let (f, offset) = small[j];
            reqs.push((f, offset, 4096.min(set[f].size as usize)));
            j += 1;
        }
    }
    let mut files: Vec<&DataFile> = set.iter().collect();
    files.push(file);
    read_all(&files, cfg, &reqs, cancel)
}

/// Opens a reader per file, reads `reqs` (`(file, offset, amount)`) in
/// order, closes the readers; the wall time in seconds, opening included.
fn read_all(
    files: &[&DataFile],
    cfg: &ReaderConfig,
    reqs: &[(usize, u64, usize)],
    cancel: &AtomicBool,
) -> Result<f64> {
    let largest = reqs.iter().map(|r| r.2).max().unwrap_or(0);
    // Touched before the clock starts.
    let mut buf = vec![0xA5u8; largest];
    let start = Instant::now();
    let mut readers = Vec::with_capacity(files.len());
    for f in files {
        readers.push(open_reader(&f.path, cfg)?);
    }
    for (i, &(f, offset, amount)) in reqs.iter().enumerate() {
        if i % 256 == 0 {
            check_cancel(cancel, &files[f].path)?;
        }
        let n = readers[f].read_bytes(offset, amount, &mut buf[..amount])?;
        if n != amount {
            return Err(Error::Campaign(format!(
                "{}: {} read {n} bytes at offset {offset} where {amount} were asked (did the file change?)",
                files[f].path.display(),
                readers[f].name()
            )));
        }
    }
    for r in &mut readers {
        r.close()?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The requests of [`run_scattered`]: `(file, offset)`, a file with
/// probability ∝ its size.
fn scattered(files: &[DataFile], request: usize, total: u64, seed: u64) -> Vec<(usize, u64)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let sum: u64 = files.iter().map(|f| f.size).sum();
    (0..requests(total, request))
        .map(|_| {
            let mut x = rng.random_range(0..sum.max(1));
            let mut f = 0;
            while f + 1 < files.len() && x >= files[f].size {
                x -= files[f].size;
                f += 1;
            }
            let last = files[f].size.saturating_sub(request as u64) / PAGE;
            (f, rng.random_range(0..=last) * PAGE)
        })
        .collect()
}

/// Requests of `request` bytes that make up about `total` bytes (at least one).
fn requests(total: u64, request: usize) -> u64 {
    (total / request.max(1) as u64).max(1)
}

/// The data file the experiments read: `size` bytes of seeded pseudo-random
/// data, written once and synced.
#[derive(Debug)]
pub struct DataFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
}

impl DataFile {
    /// Writes `size` bytes (a multiple of [`PAGE`]) to `path`.
    pub fn create(path: &Path, size: u64, cancel: &AtomicBool) -> Result<DataFile> {
        const CHUNK: usize = 1 << 20;
        let mut f = std::fs::File::create(path).map_err(|e| Error::io("create", path, e))?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x0ca1_1b4a_7e00 ^ size);
        let mut buf = vec![0u8; CHUNK];
        let mut left = size;
        while left > 0 {
            check_cancel(cancel, path)?;
            let n = left.min(CHUNK as u64) as usize;
            rng.fill_bytes(&mut buf[..n]);
            f.write_all(&buf[..n]).map_err(|e| Error::io("write", path, e))?;
            left -= n as u64;
        }
        f.sync_all().map_err(|e| Error::io("fsync", path, e))?;
        Ok(DataFile { path: path.to_path_buf(), size })
    }
}

/// `Interrupted` naming `path` once `cancel` is set.
pub(crate) fn check_cancel(cancel: &AtomicBool, path: &Path) -> Result<()> {
    if cancel.load(Ordering::Relaxed) {
        return Err(emsort_io::Error::new(emsort_io::ErrorKind::Interrupted, path).into());
    }
    Ok(())
}

/// A reader configuration for a run: the kind and its B, Q and hint.
pub fn config(kind: ReaderKind, block: usize, queue_depth: u32, advice: Madvise) -> ReaderConfig {
    ReaderConfig::new(kind).block_size(block).queue_depth(queue_depth).madvise(advice)
}

/// One cold run of `pattern` over `file` with `threads` threads, each with
/// its own reader of configuration `cfg`; returns the wall time in seconds.
/// (A [`Pattern::Scattered`] reads a set of files: [`run_scattered`].)
pub fn run(
    file: &DataFile,
    cfg: &ReaderConfig,
    pattern: Pattern,
    threads: usize,
    cache: CacheMethod,
    cancel: &AtomicBool,
) -> Result<f64> {
    check_cancel(cancel, &file.path)?;
    cache.apply(&[file.path.as_path()])?;
    let threads = threads.max(1);
    let jobs = plan(file.size, pattern, threads);
    let largest = jobs.iter().flatten().map(|r| r.1).max().unwrap_or(0);
    let barrier = Barrier::new(threads + 1);
    let (results, secs) = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut buf = vec![0u8; largest];
                    barrier.wait();
                    read_job(file, cfg, job, &mut buf, cancel)
                })
            })
            .collect();
        // Buffers are allocated; the clock starts when every thread is ready.
        barrier.wait();
        let start = Instant::now();
        let r: Vec<Result<()>> =
            handles.into_iter().map(|h| h.join().expect("calibration thread panicked")).collect();
        (r, start.elapsed().as_secs_f64())
    });
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(secs)
}

/// One thread's part of a run: open a reader, read `job`, close.
fn read_job(
    file: &DataFile,
    cfg: &ReaderConfig,
    job: &[(u64, usize)],
    buf: &mut [u8],
    cancel: &AtomicBool,
) -> Result<()> {
    let mut r = open_reader(&file.path, cfg)?;
    for (i, &(offset, amount)) in job.iter().enumerate() {
        if i % 256 == 0 {
            check_cancel(cancel, &file.path)?;
        }
        let n = r.read_bytes(offset, amount, buf)?;
        if n != amount {
            return Err(Error::Campaign(format!(
                "{}: {} read {n} bytes at offset {offset} where {amount} were asked (did the file change?)",
                file.path.display(),
                r.name()
            )));
        }
    }
    r.close()?;
    Ok(())
}

/// Each thread's requests, `(offset, amount)`.
fn plan(size: u64, pattern: Pattern, threads: usize) -> Vec<Vec<(u64, usize)>> {
    let mut jobs = vec![Vec::new(); threads];
    match pattern {
        Pattern::Sequential { request } => {
            let request = request.max(1) as u64;
            let pages = size / PAGE;
            for (t, job) in jobs.iter_mut().enumerate() {
                let (from, to) = (
                    pages * t as u64 / threads as u64 * PAGE,
                    pages * (t as u64 + 1) / threads as u64 * PAGE,
                );
                let to = if t + 1 == threads { size } else { to };
                let mut off = from;
                while off < to {
                    let n = request.min(to - off);
                    job.push((off, n as usize));
                    off += n;
                }
            }
        }
        Pattern::Runs { request, run, skip } => {
            let request = request.max(1) as u64;
            let period = (run + skip).max(1);
            for (k, start) in (0..size).step_by(period as usize).enumerate() {
                let end = (start + run).min(size);
                let job = &mut jobs[k % threads];
                let mut off = start;
                while off < end {
                    let n = request.min(end - off);
                    job.push((off, n as usize));
                    off += n;
                }
            }
        }
        Pattern::Scattered { .. } => unreachable!("a set of files is read by run_scattered"),
        Pattern::Random { request, total, seed } => {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let last = size.saturating_sub(request as u64) / PAGE;
            for i in 0..requests(total, request) {
                let offset = rng.random_range(0..=last) * PAGE;
                jobs[(i % threads as u64) as usize].push((offset, request.min(size as usize)));
            }
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_read_every_other_stretch() {
        let size = 10 * PAGE + 100;
        let p = Pattern::Runs { request: 3 * PAGE as usize, run: 4 * PAGE, skip: 2 * PAGE };
        let jobs = plan(size, p, 1);
        let want: Vec<(u64, usize)> =
            vec![(0, 3 * 4096), (3 * 4096, 4096), (6 * 4096, 3 * 4096), (9 * 4096, 4096)];
        assert_eq!(jobs[0], want);
        assert_eq!(p.bytes(size), want.iter().map(|r| r.1 as u64).sum::<u64>());
    }

    #[test]
    fn plans_cover_the_file_or_the_total() {
        let size = 10 * PAGE + 100;
        for threads in [1, 2, 3] {
            let jobs = plan(size, Pattern::Sequential { request: 3 * PAGE as usize }, threads);
            let mut all: Vec<(u64, usize)> = jobs.concat();
            all.sort_unstable();
            let mut next = 0;
            for (o, n) in all {
                assert_eq!(o, next);
                next += n as u64;
            }
            assert_eq!(next, size);
        }
        let p = Pattern::Random { request: 8192, total: 100_000, seed: 1 };
        let jobs = plan(size, p, 2);
        assert_eq!(jobs.iter().map(Vec::len).sum::<usize>(), 12);
        assert_eq!(p.bytes(size), 12 * 8192);
        for (o, n) in jobs.concat() {
            assert!(o % PAGE == 0 && o + n as u64 <= size);
        }
        assert_eq!(plan(size, p, 2), jobs, "seeded");
    }

    #[test]
    fn scattered_reads_spread_over_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let files: Vec<DataFile> = (0..3)
            .map(|i| DataFile::create(&dir.path().join(format!("f{i}")), (8 + 8 * i) * PAGE, &stop).unwrap())
            .collect();
        let reqs = scattered(&files, 8192, 300 * 8192, 5);
        assert_eq!(reqs.len(), 300);
        let mut per = [0usize; 3];
        for &(f, o) in &reqs {
            per[f] += 1;
            assert!(o % PAGE == 0 && o + 8192 <= files[f].size);
        }
        assert!(per[0] < per[1] && per[1] < per[2], "∝ size: {per:?}");
        assert_eq!(scattered(&files, 8192, 300 * 8192, 5), reqs, "seeded");
        for kind in [ReaderKind::Mmap, ReaderKind::Pread, ReaderKind::Adaptive] {
            let cfg = config(kind, 4096, 1, Madvise::Normal);
            let s = run_scattered(&files, &cfg, 8192, 64 * 8192, 1, CacheMethod::None, &stop).unwrap();
            assert!(s > 0.0, "{kind}");
        }
    }

    #[test]
    fn a_run_reads_and_times() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let f = DataFile::create(&dir.path().join("d"), 64 * PAGE, &stop).unwrap();
        assert_eq!(std::fs::metadata(&f.path).unwrap().len(), 64 * PAGE);
        for kind in [ReaderKind::Mmap, ReaderKind::Pread, ReaderKind::Uring] {
            let cfg = config(kind, 16 << 10, 4, Madvise::Random);
            for p in [
                Pattern::Sequential { request: 20_000 },
                Pattern::Random { request: 4096, total: 40960, seed: 3 },
            ] {
                let s = run(&f, &cfg, p, 2, CacheMethod::None, &stop).unwrap();
                assert!(s > 0.0 && s < 10.0, "{kind}: {s}");
            }
        }
        stop.store(true, Ordering::Relaxed);
        let e = run(
            &f,
            &config(ReaderKind::Pread, 4096, 1, Madvise::Normal),
            Pattern::Sequential { request: 4096 },
            1,
            CacheMethod::None,
            &stop,
        )
        .unwrap_err();
        assert!(e.to_string().contains("interrupted"), "{e}");
    }
}
