//! The replay engine: a trace read by each reader kind, timed per request.
//!
//! For each reader kind, in the order given:
//!
//! ```text
//!  empty the page cache (CacheMethod)
//!        │
//!  split the trace over T threads (contiguous slices or round-robin)
//!        │
//!  each thread: open a reader of the kind for every file it reads ──┐ untimed
//!        │      (once; the reader keeps it open, as the thesis did)  │
//!        ▼                                                           │
//!  all threads start together ───────────────────────────────────────┘
//!  each thread, for its requests in trace order:
//!        t0 ─ read_bytes(offset, size) ─ t1      latency = t1 − t0
//!        [--verify: pread the same range with FileExt::read_at and
//!         compare; untimed, its time is taken out of the thread's time;
//!         its descriptor has O_DIRECT (the range widened to whole 4 KiB
//!         units, into an aligned buffer), so it leaves the page cache as
//!         the reader left it: a buffered pread there would start readahead
//!         that serves the reader's next requests (where the file system
//!         refuses O_DIRECT: buffered, with POSIX_FADV_RANDOM)]
//!        │
//!  time = the slowest thread's time; latencies of all threads together
//! ```
//!
//! **Repeats.** With [`Replay::reps`] N > 1, the whole sequence (every
//! kind, each on a cold cache) runs N times, kinds interleaved (each
//! round runs every kind once, in the order of [`round_order`]: every kind
//! follows every other one equally often over the rounds), so that a drift of the
//! machine during the replay touches every kind alike. Each kind's result
//! is its median run (the run whose time is the median; for even N the
//! lower of the two middle ones), with every run's time in
//! [`ReaderResult::rep_seconds`].
//!
//! A [`ReaderResult`] per kind holds the time, bytes, requests, short reads,
//! latency percentiles (exact: every request's latency is kept and sorted),
//! and for the `adaptive` reader the requests and bytes it sent to each
//! technique ([`ChoiceCounts`], summed over its files and threads).
//!
//! **Short reads.** A request that reaches past the end of its file returns
//! fewer bytes (0 when it starts at or past the end), as the [`Reader`]
//! contract says; it is counted in [`ReaderResult::short_reads`] and is not
//! a mismatch: `--verify` compares the reader's bytes and count with what
//! `pread` returns for the same range, which is short in the same way.
//!
//! **Mismatch.** With verification on, the first request whose bytes differ
//! stops the replay (all threads) and is returned as
//! [`ReplayOutcome::mismatch`] with the reader, file and offset; kinds not
//! yet run are skipped.
//!
//! ```no_run
//! use emsort_bench::replay::{Replay, Trace};
//! use emsort_io::{cache::CacheMethod, NoProgress, ReaderKind};
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let trace = Trace::read("/tmp/tr/trace.csv".as_ref())?;
//! let out = Replay::new(&ReaderKind::ALL)
//!     .cache(CacheMethod::Fadvise)
//!     .verify(true)
//!     .run(&trace, &NoProgress, &AtomicBool::new(false))?;
//! for r in &out.results {
//!     println!("{}: {:.3} s, p99 {:.0} µs", r.reader, r.seconds, r.p99_us);
//! }
//! # Ok(()) }
//! ```

use std::fmt;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use emsort_io::cache::{self, CacheMethod};
use emsort_io::disks::{Block, DIRECT_ALIGN};
use emsort_io::{AnyReader, ChoiceCounts, Progress, Reader, ReaderConfig, ReaderKind};

use super::trace::{Request, Trace};
use crate::{Error, Result};

/// The readers' order round by round (moved to [`crate::grid`], where the
/// calibration's paired rounds use it too).
pub use crate::grid::round_order;

/// How the trace is shared among threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// Thread i gets the i-th of T contiguous slices (OpenMP's default
    /// static schedule, which the thesis used, §3.2.8).
    #[default]
    Contiguous,
    /// Request j goes to thread j mod T.
    RoundRobin,
}

impl Split {
    /// The name used on the command line (`contiguous`, `round-robin`).
    pub fn name(self) -> &'static str {
        match self {
            Split::Contiguous => "contiguous",
            Split::RoundRobin => "round-robin",
        }
    }

    /// The request indexes of each of `threads` threads.
    pub fn assign(self, requests: usize, threads: usize) -> Vec<Vec<usize>> {
        let t = threads.max(1);
        (0..t)
            .map(|i| match self {
                Split::Contiguous => (requests * i / t..requests * (i + 1) / t).collect(),
                Split::RoundRobin => (i..requests).step_by(t).collect(),
            })
            .collect()
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Split, String> {
        match s {
            "contiguous" => Ok(Split::Contiguous),
            "round-robin" => Ok(Split::RoundRobin),
            _ => Err(format!("unknown split '{s}' (expected contiguous or round-robin)")),
        }
    }
}

/// One reader kind's replay of the whole trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ReaderResult {
    /// The reader kind.
    pub reader: ReaderKind,
    /// Threads that shared the trace.
    pub threads: usize,
    /// How the trace was shared among them.
    pub split: Split,
    /// Block size B asked for (`pread`, `uring`; the adaptive reader takes
    /// its blocks from its calibration).
    pub block_size: usize,
    /// Queue depth Q asked for (`uring`).
    pub queue_depth: u32,
    /// Wall time of the slowest thread, seconds (verification excluded);
    /// with several repeats, the median run's.
    pub seconds: f64,
    /// Every run's `seconds`, in the order they ran (one per repeat).
    pub rep_seconds: Vec<f64>,
    /// Requests replayed.
    pub requests: u64,
    /// Bytes the requests asked for.
    pub bytes_requested: u64,
    /// Bytes the reader returned.
    pub bytes_read: u64,
    /// Requests that returned fewer bytes than asked (past the end of the file).
    pub short_reads: u64,
    /// Median request latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile request latency, microseconds.
    pub p99_us: f64,
    /// Slowest request, microseconds.
    pub max_us: f64,
    /// How the page cache was emptied before the replay.
    pub cache: CacheMethod,
    /// Whether every read was checked against `pread`.
    pub verified: bool,
    /// For `adaptive`: requests and bytes per technique.
    pub choices: Option<ChoiceCounts>,
    /// Why a reader fell back from a technique, if one did.
    pub fallback: Option<String>,
}

impl ReaderResult {
    /// Runs behind this result.
    pub fn reps(&self) -> usize {
        self.rep_seconds.len().max(1)
    }

    /// The fastest and slowest run, seconds.
    pub fn seconds_range(&self) -> (f64, f64) {
        let min = self.rep_seconds.iter().copied().fold(self.seconds, f64::min);
        let max = self.rep_seconds.iter().copied().fold(self.seconds, f64::max);
        (min, max)
    }

    /// Bytes read per second, in MiB/s.
    pub fn mib_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes_read as f64 / self.seconds / (1u64 << 20) as f64
        } else {
            f64::INFINITY
        }
    }
}

/// A read whose bytes differ from `pread`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The reader kind.
    pub reader: ReaderKind,
    /// The request's position in the trace, from 0.
    pub request: usize,
    /// The file.
    pub file: PathBuf,
    /// The request's offset.
    pub offset: u64,
    /// The request's size.
    pub size: u64,
    /// Bytes the reader returned.
    pub got: usize,
    /// Bytes `pread` returned.
    pub expected: usize,
    /// File offset of the first differing byte, when both returned it.
    pub first_difference: Option<u64>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reader {} returned wrong data for request {} ({} offset {} size {}): ",
            self.reader,
            self.request + 1,
            self.file.display(),
            self.offset,
            self.size
        )?;
        match self.first_difference {
            Some(at) => write!(f, "first differing byte at file offset {at}"),
            None => write!(f, "{} bytes read where pread reads {}", self.got, self.expected),
        }
    }
}

/// One run of one reader kind: which round it belonged to and where in
/// that round's order it ran ([`round_order`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRun {
    /// The round (repeat), from 0.
    pub round: usize,
    /// Its place in the round's order, from 0.
    pub position: usize,
    /// The run's own result (`rep_seconds` holds its time alone).
    pub result: ReaderResult,
}

/// What [`Replay::run`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOutcome {
    /// One result per reader kind replayed, in order.
    pub results: Vec<ReaderResult>,
    /// Every run, in the order they ran (round by round); a campaign
    /// records them one row each.
    pub runs: Vec<RoundRun>,
    /// The first mismatch found by verification (the replay stopped there).
    pub mismatch: Option<Mismatch>,
    /// The share of the trace's bytes in requests > 32 KiB.
    pub large_share: f64,
    /// `read_ahead_kb` of the device holding the first file, when found.
    pub read_ahead_kb: Option<u64>,
}

/// A replay of a trace with several reader kinds (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Replay {
    kinds: Vec<ReaderKind>,
    config: ReaderConfig,
    threads: usize,
    split: Split,
    verify: bool,
    cache: CacheMethod,
    reps: usize,
}

impl Replay {
    /// A replay with each of `kinds`, one thread, the default reader
    /// configuration, no verification and the best cache method available.
    pub fn new(kinds: &[ReaderKind]) -> Replay {
        Replay {
            kinds: kinds.to_vec(),
            config: ReaderConfig::default(),
            threads: 1,
            split: Split::Contiguous,
            verify: false,
            cache: CacheMethod::best_available(),
            reps: 1,
        }
    }

    /// Runs per kind (at least 1); see the module docs' Repeats.
    pub fn reps(mut self, n: usize) -> Replay {
        self.reps = n.max(1);
        self
    }

    /// The readers' block size, queue depth, hints and calibration (its
    /// `kind` is ignored).
    pub fn config(mut self, c: ReaderConfig) -> Replay {
        self.config = c;
        self
    }

    /// Threads sharing the trace, each with its own readers (at least 1).
    pub fn threads(mut self, t: usize) -> Replay {
        self.threads = t.max(1);
        self
    }

    /// How the trace is shared among the threads.
    pub fn split(mut self, s: Split) -> Replay {
        self.split = s;
        self
    }

    /// Check every read against an independent `pread`.
    pub fn verify(mut self, v: bool) -> Replay {
        self.verify = v;
        self
    }

    /// How to empty the page cache before each reader.
    pub fn cache(mut self, m: CacheMethod) -> Replay {
        self.cache = m;
        self
    }

    /// The cache method.
    pub fn cache_method(&self) -> CacheMethod {
        self.cache
    }

    /// Replays `trace` with every kind. Stops at the first mismatch (see
    /// [`ReplayOutcome::mismatch`]); a reader's failure, a missing file or
    /// `cancel` being set is an error.
    pub fn run(&self, trace: &Trace, progress: &dyn Progress, cancel: &AtomicBool) -> Result<ReplayOutcome> {
        if self.kinds.is_empty() {
            return Err(Error::Campaign("no reader kind to replay with".into()));
        }
        if self.cache == CacheMethod::Drop && !cache::can_drop_caches() {
            return Err(Error::Campaign(
                "cache method 'drop' needs write access to /proc/sys/vm/drop_caches (root); \
                 use fadvise or none"
                    .into(),
            ));
        }
        trace.check_files()?;
        let mut out = ReplayOutcome {
            results: Vec::new(),
            runs: Vec::new(),
            mismatch: None,
            large_share: trace.large_share(),
            read_ahead_kb: trace.files().first().and_then(|f| cache::read_ahead_kb(f)),
        };
        let mut runs: Vec<Vec<ReaderResult>> = vec![Vec::new(); self.kinds.len()];
        'reps: for rep in 0..self.reps {
            for (position, i) in round_order(self.kinds.len(), rep).into_iter().enumerate() {
                let kind = self.kinds[i];
                let phase = if self.reps > 1 {
                    format!("{kind} {}/{}", rep + 1, self.reps)
                } else {
                    kind.name().to_string()
                };
                let (result, mismatch) = self.run_kind(kind, &phase, trace, progress, cancel)?;
                out.runs.push(RoundRun { round: rep, position, result: result.clone() });
                runs[i].push(result);
                if mismatch.is_some() {
                    out.mismatch = mismatch;
                    break 'reps;
                }
            }
        }
        out.results = runs.into_iter().filter(|r| !r.is_empty()).map(median_run).collect();
        Ok(out)
    }

    fn run_kind(
        &self,
        kind: ReaderKind,
        phase: &str,
        trace: &Trace,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<(ReaderResult, Option<Mismatch>)> {
        let files: Vec<&std::path::Path> = trace.files().iter().map(|p| p.as_path()).collect();
        self.cache.apply(&files)?;
        let cfg = ReaderConfig { kind, ..self.config.clone() };
        let slices = self.split.assign(trace.requests().len(), self.threads);
        let barrier = Barrier::new(slices.len());
        let stop = AtomicBool::new(false);
        progress.phase_bytes(phase, Some(trace.bytes()));
        let ws: Vec<Result<Worker>> = std::thread::scope(|s| {
            let handles: Vec<_> = slices
                .iter()
                .map(|ids| {
                    let (cfg, barrier, stop) = (&cfg, &barrier, &stop);
                    s.spawn(move || {
                        let w = Worker::open(trace, ids, cfg, self.verify);
                        // Every thread waits, even one whose open failed, so
                        // none waits for ever.
                        barrier.wait();
                        let mut w = w?;
                        let r = w.replay(trace, ids, progress, cancel, stop);
                        if r.is_err() || w.mismatch.is_some() {
                            stop.store(true, Ordering::Relaxed);
                        }
                        r.map(|()| w)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("replay thread panicked")).collect()
        });
        progress.finish_phase();
        let ws = ws.into_iter().collect::<Result<Vec<Worker>>>()?;
        let mut lat: Vec<u64> = Vec::with_capacity(trace.requests().len());
        let mut r = ReaderResult {
            reader: kind,
            threads: ws.len(),
            split: self.split,
            block_size: cfg.block_size,
            queue_depth: cfg.queue_depth,
            seconds: 0.0,
            rep_seconds: Vec::new(),
            requests: 0,
            bytes_requested: 0,
            bytes_read: 0,
            short_reads: 0,
            p50_us: 0.0,
            p99_us: 0.0,
            max_us: 0.0,
            cache: self.cache,
            verified: self.verify,
            choices: (kind == ReaderKind::Adaptive).then(ChoiceCounts::default),
            fallback: None,
        };
        let mut mismatch = None;
        for w in ws {
            r.seconds = r.seconds.max(w.busy.as_secs_f64());
            r.requests += w.latencies.len() as u64;
            r.bytes_requested += w.bytes_requested;
            r.bytes_read += w.bytes_read;
            r.short_reads += w.short_reads;
            lat.extend_from_slice(&w.latencies);
            for rd in w.readers.iter().flatten() {
                if let Some(a) = rd.as_adaptive() {
                    *r.choices.get_or_insert_with(ChoiceCounts::default) += a.counts();
                    if r.fallback.is_none() {
                        r.fallback = a.fallback().map(str::to_string);
                    }
                }
            }
            if mismatch.is_none() {
                mismatch = w.mismatch;
            }
        }
        lat.sort_unstable();
        r.p50_us = percentile(&lat, 0.50) as f64 / 1e3;
        r.p99_us = percentile(&lat, 0.99) as f64 / 1e3;
        r.max_us = lat.last().copied().unwrap_or(0) as f64 / 1e3;
        r.rep_seconds = vec![r.seconds];
        // Threads stop early only after a mismatch (errors returned above).
        debug_assert!(mismatch.is_some() || r.requests == trace.requests().len() as u64);
        Ok((r, mismatch))
    }
}

/// The run of median time among one kind's runs (the lower middle one for
/// an even count), with every run's time in `rep_seconds`.
fn median_run(mut runs: Vec<ReaderResult>) -> ReaderResult {
    let all: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let mut m = runs.swap_remove((runs.len() - 1) / 2);
    m.rep_seconds = all;
    m
}

/// The nearest-rank `p` quantile of sorted values (0 when empty).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One thread's readers, buffers and tallies.
struct Worker {
    /// A reader per file of the trace, for the files this thread reads.
    readers: Vec<Option<AnyReader>>,
    /// Files for verification, and whether each was opened with `O_DIRECT`.
    check: Vec<Option<(File, bool)>>,
    buf: Vec<u8>,
    /// Aligned, for `O_DIRECT`: the largest request plus two 4 KiB units.
    check_buf: Block,
    latencies: Vec<u64>,
    bytes_requested: u64,
    bytes_read: u64,
    short_reads: u64,
    busy: Duration,
    mismatch: Option<Mismatch>,
}

impl Worker {
    fn open(trace: &Trace, ids: &[usize], cfg: &ReaderConfig, verify: bool) -> Result<Worker> {
        let reqs = trace.requests();
        let mut readers: Vec<Option<AnyReader>> = (0..trace.files().len()).map(|_| None).collect();
        let mut check: Vec<Option<(File, bool)>> = (0..trace.files().len()).map(|_| None).collect();
        let mut largest = 0;
        for &i in ids {
            let f = reqs[i].file;
            largest = largest.max(reqs[i].size as usize);
            if readers[f].is_none() {
                let path = &trace.files()[f];
                readers[f] = Some(emsort_io::open_reader(path, cfg)?);
                if verify {
                    // The checker's reads should not warm the cache for the
                    // reader's next requests: O_DIRECT, else no readahead.
                    let direct =
                        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path);
                    check[f] = Some(match direct {
                        Ok(file) => (file, true),
                        Err(_) => {
                            let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
                            let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random);
                            (file, false)
                        }
                    });
                }
            }
        }
        Ok(Worker {
            readers,
            check,
            buf: vec![0; largest],
            check_buf: Block::new(if verify { largest + 2 * DIRECT_ALIGN } else { 0 }),
            latencies: Vec::with_capacity(ids.len()),
            bytes_requested: 0,
            bytes_read: 0,
            short_reads: 0,
            busy: Duration::ZERO,
            mismatch: None,
        })
    }

    fn replay(
        &mut self,
        trace: &Trace,
        ids: &[usize],
        progress: &dyn Progress,
        cancel: &AtomicBool,
        stop: &AtomicBool,
    ) -> Result<()> {
        const REPORT_EVERY: u64 = 4 << 20;
        let start = Instant::now();
        let mut checking = Duration::ZERO;
        let mut unreported = 0u64;
        for &i in ids {
            if cancel.load(Ordering::Relaxed) {
                return Err(emsort_io::Error::new(emsort_io::ErrorKind::Interrupted, trace.path()).into());
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let Request { file, offset, size } = trace.requests()[i];
            let size = size as usize;
            let reader = self.readers[file].as_mut().expect("opened for this thread");
            let t0 = Instant::now();
            let n = reader.read_bytes(offset, size, &mut self.buf[..size])?;
            let t1 = Instant::now();
            self.latencies.push((t1 - t0).as_nanos() as u64);
            self.bytes_requested += size as u64;
            self.bytes_read += n as u64;
            self.short_reads += u64::from(n < size);
            if let Some((f, direct)) = &self.check[file] {
                let m =
                    check_read((f, *direct), offset, &self.buf[..n], size, &mut self.check_buf, trace, i)?;
                checking += t1.elapsed();
                if let Some(m) = m {
                    self.mismatch = Some(Mismatch { reader: reader.kind(), ..m });
                    break;
                }
            }
            unreported += size as u64;
            if unreported >= REPORT_EVERY {
                progress.advance(unreported);
                unreported = 0;
            }
        }
        progress.advance(unreported);
        self.busy = start.elapsed().saturating_sub(checking);
        Ok(())
    }
}

/// Reads `[offset, offset + size)` with `pread` (until full or end of file;
/// with `O_DIRECT` the range widened to whole [`DIRECT_ALIGN`] units) and
/// compares it with `got`; the mismatch, if any (its `reader` is filled in
/// by the caller).
fn check_read(
    (f, direct): (&File, bool),
    offset: u64,
    got: &[u8],
    size: usize,
    buf: &mut Block,
    trace: &Trace,
    request: usize,
) -> Result<Option<Mismatch>> {
    let path = &trace.files()[trace.requests()[request].file];
    let align = if direct { DIRECT_ALIGN as u64 } else { 1 };
    let start = offset / align * align;
    let end = (offset + size as u64).div_ceil(align) * align;
    let wide = &mut buf.as_mut_slice()[..(end - start) as usize];
    let mut n = 0;
    while n < wide.len() {
        match f.read_at(&mut wide[n..], start + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("pread", path, e)),
        }
    }
    let skip = (offset - start) as usize;
    let want = &wide[skip.min(n)..n.min(skip + size)];
    let n = want.len();
    if got == want {
        return Ok(None);
    }
    let first_difference = got.iter().zip(want).position(|(a, b)| a != b).map(|i| offset + i as u64);
    Ok(Some(Mismatch {
        reader: ReaderKind::Pread,
        request,
        file: path.clone(),
        offset,
        size: trace.requests()[request].size,
        got: got.len(),
        expected: n,
        first_difference,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::trace::Trace;
    use emsort_io::NoProgress;

    #[test]
    fn round_orders_balance_who_runs_after_whom() {
        assert_eq!(round_order(1, 3), vec![0]);
        assert_eq!(round_order(5, 0), vec![0, 1, 4, 2, 3]);
        for k in 2..=7 {
            let rounds = if k % 2 == 0 { k } else { 2 * k };
            let mut after = vec![vec![0; k]; k];
            let mut at = vec![vec![0; k]; k];
            for r in 0..rounds {
                let o = round_order(k, r);
                let mut sorted = o.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..k).collect::<Vec<_>>(), "k {k} round {r}: {o:?}");
                for w in o.windows(2) {
                    after[w[0]][w[1]] += 1;
                }
                for (pos, &x) in o.iter().enumerate() {
                    at[x][pos] += 1;
                }
            }
            let each = rounds / k;
            for (a, (followers, positions)) in after.iter().zip(&at).enumerate() {
                for (b, &n) in followers.iter().enumerate() {
                    assert_eq!(n, if a == b { 0 } else { each }, "k {k}: {b} after {a}");
                }
                assert!(positions.iter().all(|&n| n == each), "k {k}: positions of {a}: {positions:?}");
            }
        }
    }

    #[test]
    fn splits_cover_every_request_once() {
        for split in [Split::Contiguous, Split::RoundRobin] {
            for (n, t) in [(10, 3), (2, 4), (0, 2), (7, 1)] {
                let s = split.assign(n, t);
                assert_eq!(s.len(), t);
                let mut all: Vec<usize> = s.concat();
                all.sort_unstable();
                assert_eq!(all, (0..n).collect::<Vec<_>>(), "{split} {n} {t}");
            }
        }
        assert_eq!(Split::Contiguous.assign(5, 2), [vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(Split::RoundRobin.assign(5, 2), [vec![0, 2, 4], vec![1, 3]]);
        assert_eq!("round-robin".parse::<Split>(), Ok(Split::RoundRobin));
        assert!("x".parse::<Split>().is_err());
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((percentile(&v, 0.5), percentile(&v, 0.99), percentile(&v, 1.0)), (50, 99, 100));
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(percentile(&[], 0.5), 0);
    }

    fn small_trace(dir: &std::path::Path) -> Trace {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.join("a.bin"), &data).unwrap();
        std::fs::write(dir.join("b.bin"), &data[..50_000]).unwrap();
        let text = "a.bin,0,4096\nb.bin,40000,20000\na.bin,100000,65536\nb.bin,60000,10\na.bin,8192,8192\n";
        Trace::parse(text, &dir.join("t.csv")).unwrap()
    }

    #[test]
    fn every_reader_replays_and_verifies_with_threads() {
        let dir = tempfile::tempdir().unwrap();
        let t = small_trace(dir.path());
        for (threads, split) in [(1, Split::Contiguous), (2, Split::RoundRobin), (3, Split::Contiguous)] {
            let out = Replay::new(&ReaderKind::ALL)
                .cache(CacheMethod::None)
                .verify(true)
                .threads(threads)
                .split(split)
                .run(&t, &NoProgress, &AtomicBool::new(false))
                .unwrap();
            assert_eq!(out.mismatch, None);
            assert_eq!(out.results.len(), 5);
            for r in &out.results {
                assert_eq!(r.requests, 5);
                assert_eq!(r.bytes_requested, 4096 + 20000 + 65536 + 10 + 8192);
                // b.bin has 50 000 bytes: 10 000 of the second request, none of the fourth.
                assert_eq!(r.bytes_read, 4096 + 10000 + 65536 + 8192, "{}", r.reader);
                assert_eq!(r.short_reads, 2);
                assert!(r.p50_us <= r.p99_us && r.p99_us <= r.max_us);
                assert_eq!(r.choices.is_some(), r.reader == ReaderKind::Adaptive);
            }
            let c = out.results[4].choices.unwrap();
            assert_eq!(c.requests(), 5);
            assert_eq!(c.bytes(), 4096 + 10000 + 65536 + 8192);
            assert!((out.large_share - 65536.0 / 97834.0).abs() < 1e-9);
        }
    }

    #[test]
    fn repeats_keep_every_run_and_report_the_median() {
        let dir = tempfile::tempdir().unwrap();
        let t = small_trace(dir.path());
        let out = Replay::new(&[ReaderKind::Pread, ReaderKind::Adaptive])
            .cache(CacheMethod::None)
            .reps(3)
            .run(&t, &NoProgress, &AtomicBool::new(false))
            .unwrap();
        assert_eq!(out.results.len(), 2);
        // Every run kept, round by round, in each round's order.
        let order: Vec<(usize, usize, ReaderKind)> =
            out.runs.iter().map(|r| (r.round, r.position, r.result.reader)).collect();
        let (p, a) = (ReaderKind::Pread, ReaderKind::Adaptive);
        assert_eq!(order, [(0, 0, p), (0, 1, a), (1, 0, a), (1, 1, p), (2, 0, p), (2, 1, a)]);
        for r in &out.results {
            let own: Vec<f64> =
                out.runs.iter().filter(|x| x.result.reader == r.reader).map(|x| x.result.seconds).collect();
            assert_eq!(own, r.rep_seconds);
            assert_eq!((r.reps(), r.rep_seconds.len()), (3, 3));
            let mut s = r.rep_seconds.clone();
            s.sort_by(f64::total_cmp);
            assert_eq!(r.seconds, s[1], "{:?}", r.rep_seconds);
            assert_eq!(r.seconds_range(), (s[0], s[2]));
            // The median run's own totals: one pass over the trace.
            assert_eq!(r.requests, 5);
        }
        let runs = |secs: &[f64]| {
            secs.iter()
                .map(|&s| ReaderResult { seconds: s, rep_seconds: vec![s], ..out.results[0].clone() })
                .collect::<Vec<_>>()
        };
        let m = median_run(runs(&[4.0, 1.0, 3.0, 2.0]));
        assert_eq!((m.seconds, m.rep_seconds), (2.0, vec![4.0, 1.0, 3.0, 2.0]));
        assert_eq!(median_run(runs(&[5.0])).seconds, 5.0);
    }

    #[test]
    fn a_changed_file_is_a_mismatch_naming_reader_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let t = small_trace(dir.path());
        let path = dir.path().join("a.bin");
        let want = std::fs::read(&path).unwrap()[100_000..100_016].to_vec();
        let direct = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path);
        let mut checkers = vec![(File::open(&path).unwrap(), false)];
        checkers.extend(direct.ok().map(|f| (f, true)));
        let mut buf = Block::new(16 + 2 * DIRECT_ALIGN);
        for (f, direct) in &checkers {
            let f = (f, *direct);
            // The checker compares what the reader returned with pread (of
            // whole 4 KiB units with O_DIRECT: the offset is not aligned).
            let m = check_read(f, 100_000, &[0u8; 16], 16, &mut buf, &t, 2).unwrap().unwrap();
            assert_eq!(m.file, path);
            assert_eq!((m.offset, m.got, m.expected), (100_000, 16, 16));
            let first = want.iter().position(|&b| b != 0).unwrap() as u64;
            assert_eq!(m.first_difference, Some(100_000 + first));
            assert!(m.to_string().contains("request 3 ("), "{m}");
            let m = check_read(f, 100_000, &want[..3], 16, &mut buf, &t, 2).unwrap().unwrap();
            assert!(m.to_string().ends_with("3 bytes read where pread reads 16"), "{m}");
            assert_eq!(check_read(f, 100_000, &want, 16, &mut buf, &t, 2).unwrap(), None, "direct {direct}");
        }
        assert_eq!(checkers.len(), 2, "O_DIRECT where the temporary directory allows it");
    }

    #[test]
    fn missing_files_cancel_and_drop_checks() {
        let dir = tempfile::tempdir().unwrap();
        let t = Trace::parse("nope.bin,0,1\n", &dir.path().join("t.csv")).unwrap();
        let e = Replay::new(&[ReaderKind::Pread])
            .cache(CacheMethod::None)
            .run(&t, &NoProgress, &AtomicBool::new(false))
            .unwrap_err();
        assert!(e.to_string().ends_with("nope.bin: no such file"), "{e}");
        let t = small_trace(dir.path());
        let e = Replay::new(&[ReaderKind::Mmap])
            .cache(CacheMethod::None)
            .run(&t, &NoProgress, &AtomicBool::new(true))
            .unwrap_err();
        assert!(e.to_string().contains("interrupted"), "{e}");
        assert!(Replay::new(&[]).run(&t, &NoProgress, &AtomicBool::new(false)).is_err());
    }
}
