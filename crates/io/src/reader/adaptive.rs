//! The `adaptive` reader: `mmap`, `pread` or `uring` per request, by the
//! thesis' guidelines (§4.7, §5.1, appendix B) and a [`Calibration`].
//!
//! The thesis' `AdaptiveReader` swaps between memory-mapped and buffered
//! reads. Its flowchart asks questions at three levels; this reader answers
//! them as follows:
//!
//! ```text
//! system   data read > available memory? ──yes──┐
//! file     reads sequential? ─────────────yes──┤  swapFlag clear: never mmap
//!            (with direct_readahead: O_DIRECT reads ahead of the run instead of pread)
//!          reads not at random offsets? ──yes──┤
//!          only a small part read? ──────yes──┘
//!            │ no to all: swapFlag set
//! request  amount ≤ mmap_max_request (32K) and swapFlag and not in a sequential run → mmap
//!            (with prefetch = on, the first such request also starts reading the whole file
//!            into the page cache in the background)
//!          amount ≥ uring_min_request (8M)  → uring: blocks of max_block (4M), Q = 32
//!          otherwise                        → pread: block = amount clamped to [4K, max_block]
//! ```
//!
//! - **swapFlag** comes from the [`AccessHint`]: `random` sets it (what the
//!   thesis' benchmark did for every file), `sequential` and
//!   `larger-than-memory` clear it, and `auto` sets it when the file fits in
//!   the available memory (`MemAvailable` in `/proc/meminfo`, read once per
//!   open, the first time a request is small enough for `mmap`). Whether a
//!   large part will be read cannot be known in advance; `auto` assumes so,
//!   as the thesis' benchmark did.
//! - **Sequential runs** (with `auto` only): a request that starts where the
//!   previous one ended continues a run; after
//!   [`Calibration::sequential_run`] such requests the reads count as
//!   sequential and small requests get `pread` (the kernel's readahead then
//!   serves them), until a request breaks the run.
//! - **Direct read-ahead** ([`Calibration::direct_readahead`], off in the
//!   built-in values; with `auto` only): the requests of a sequential run
//!   are served from `O_DIRECT` reads of 2 MiB that io_uring keeps in
//!   flight ahead of the run, in reused buffers backed by huge pages,
//!   instead of `pread` and the kernel's readahead. The run's bytes skip
//!   the page cache: no pages to allocate for them, no copy out of them,
//!   nothing evicted to make room. A request whose bytes the page cache
//!   already holds (`cachestat`) is copied from there instead, through a
//!   mapping that starts no readahead. Without `O_DIRECT` or `cachestat`
//!   (tmpfs on old kernels, Linux before 6.5, a file the caller could not
//!   write) the run gets `pread`, and [`AdaptiveReader::fallback`] says why.
//!   [`ChoiceCounts::direct_requests`] counts these requests.
//! - **Random offsets** (with `auto` only): a request that starts elsewhere
//!   than where the previous one ended (and than where the previous one
//!   started: reading a header again is not a random offset) is a jump;
//!   the swapFlag's "reads at
//!   random offsets" holds once the open file has seen
//!   [`Calibration::random_run`] jumps. Until then small requests get
//!   `pread`: the first request of a file says nothing about how the file
//!   will be read, and mapping a file for a one-off read (a header, the
//!   start of a sequential run) costs a fault that on Linux reads a whole
//!   readahead window around the page.
//! - **Prefetch** ([`Calibration::prefetch`], off in the built-in values):
//!   the first request a file's mapping serves also starts reading the
//!   whole file into the page cache in the background
//!   (`posix_fadvise(WILLNEED)` from a thread, 8 MiB per call), stopped when
//!   the file is closed. The swapFlag already promises that the file fits in
//!   memory and that a large part of it will be read at random; the
//!   prefetch turns that promise into a few large, concurrent reads instead
//!   of one read-around window per fault, and they go on while the caller
//!   works between requests. Only files up to a quarter of the available
//!   memory are prefetched (several may be at once).
//!   [`ChoiceCounts::prefetched_files`] counts them.
//! - **Large requests** go to io_uring with several blocks in flight: beyond
//!   the thesis' two synchronous techniques, following its conclusion that
//!   "the best overall reading strategy is to swap between memory-mapped
//!   reading and asynchronous reading" (§4.7).
//! - **Batches** ([`Reader::read_batch`]): requests that would use `mmap` are
//!   copied at once; all others go to io_uring together, up to Q in flight
//!   (all requests are known beforehand: the thesis' ideal case for
//!   asynchronous reads, §4.2).
//!
//! The file is opened once; the mapping and the ring are made the first time
//! a request needs them. If io_uring is unavailable (seccomp, disabled) or
//! the file system cannot map files (`ENODEV`), the reader uses `pread`
//! instead and says so in [`AdaptiveReader::fallback`].
//!
//! Every request's [`Choice`] is kept: [`Reader::last_choice`] for the last
//! one and [`AdaptiveReader::counts`] for requests and bytes per technique.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::ahead::{self, DirectAhead};
use super::mmap::Mapping;
use super::pread::pread_into;
use super::prefetch::Prefetch;
use super::uring::UringEngine;
use super::{
    check_buf, open_action, open_file, AccessHint, Calibration, Choice, ChoiceCounts, Completion, OpenAction,
    ReadRequest, Reader, ReaderConfig, ReaderKind, Rule,
};
use crate::{ErrorKind, Result};

/// Reader of the `adaptive` kind.
pub struct AdaptiveReader {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    access: AccessHint,
    cal: Calibration,
    /// The swapFlag, once decided for the open file.
    swap: Option<bool>,
    map: Option<Mapping>,
    /// The open file's background prefetch, once started.
    prefetch: Option<Prefetch>,
    /// Whether the prefetch was considered for the open file.
    prefetch_tried: bool,
    mmap_unavailable: bool,
    engine: Option<UringEngine>,
    uring_unavailable: bool,
    /// The open file's direct read-ahead, once a sequential run needs it.
    ahead: Option<DirectAhead>,
    direct_unavailable: bool,
    fallback: Option<String>,
    /// Where the next request of a sequential run would start.
    next_seq: Option<u64>,
    /// Where the previous request started.
    last_start: Option<u64>,
    /// Requests in the current run that continued the previous one.
    run: u32,
    /// Requests of the open file that did not continue the previous one.
    jumps: u32,
    last: Option<Choice>,
    counts: ChoiceCounts,
}

impl AdaptiveReader {
    /// A closed reader with `cfg.access` and `cfg.calibration` (the block
    /// size and queue depth come from the calibration); values the
    /// calibration marks inconclusive are the thesis' ones
    /// ([`Calibration::effective`]).
    pub fn new(cfg: &ReaderConfig) -> AdaptiveReader {
        AdaptiveReader {
            path: PathBuf::new(),
            file: None,
            size: 0,
            access: cfg.access,
            cal: cfg.calibration.effective(),
            swap: None,
            map: None,
            prefetch: None,
            prefetch_tried: false,
            mmap_unavailable: false,
            engine: None,
            uring_unavailable: false,
            ahead: None,
            direct_unavailable: false,
            fallback: None,
            next_seq: None,
            last_start: None,
            run: 0,
            jumps: 0,
            last: None,
            counts: ChoiceCounts::default(),
        }
    }

    /// The thresholds in use.
    pub fn calibration(&self) -> &Calibration {
        &self.cal
    }

    /// The access hint in use.
    pub fn access(&self) -> AccessHint {
        self.access
    }

    /// Requests and bytes per technique since the reader was made.
    pub fn counts(&self) -> ChoiceCounts {
        self.counts
    }

    /// Why a technique could not be used (io_uring unavailable, a file
    /// system that cannot map files), if one could not.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The open file's swapFlag, deciding it now if needed (see the module
    /// docs); `None` when no file is open.
    pub fn swap_flag(&mut self) -> Option<bool> {
        if !self.is_open() {
            return None;
        }
        Some(self.decide_swap())
    }

    fn decide_swap(&mut self) -> bool {
        *self.swap.get_or_insert_with(|| match self.access {
            AccessHint::Random => true,
            AccessHint::Sequential | AccessHint::LargerThanMemory => false,
            // Unknown available memory: assume the file fits, as the thesis did.
            AccessHint::Auto => available_memory().is_none_or(|m| self.size <= m),
        })
    }

    /// Notes a request at `offset` of `amount` bytes; whether it continues a
    /// sequential run long enough to count.
    fn track(&mut self, offset: u64, amount: usize) -> bool {
        match self.next_seq {
            Some(next) if next == offset => self.run = self.run.saturating_add(1),
            Some(_) => {
                self.run = 0;
                // Reading the previous request's start again (a header
                // read before each frame, a retry) is not a random offset.
                if self.last_start != Some(offset) {
                    self.jumps = self.jumps.saturating_add(1);
                }
            }
            None => self.run = 0,
        }
        self.last_start = Some(offset);
        self.next_seq = Some(offset.saturating_add(amount as u64));
        self.access == AccessHint::Auto && self.cal.sequential_run > 0 && self.run >= self.cal.sequential_run
    }

    /// Whether the open file may count as read at random: always unless
    /// the hint is `auto`, which needs [`Calibration::random_run`] jumps.
    fn random_enough(&self) -> bool {
        self.access != AccessHint::Auto || self.jumps >= self.cal.random_run
    }

    /// What the rules pick for a request of `amount` bytes, before fallbacks.
    fn rule_choice(&mut self, amount: usize, sequential: bool) -> Choice {
        let small = amount <= self.cal.mmap_max_request;
        if small && !sequential && !self.random_enough() && amount < self.cal.uring_min_request {
            return self.cal.pread_choice(amount, Rule::NotYetRandom);
        }
        // Read the available memory only when mmap is in question.
        if sequential && self.cal.direct_readahead > 0 && amount < self.cal.uring_min_request {
            return Choice {
                kind: ReaderKind::Uring,
                block_size: ahead::CHUNK,
                queue_depth: self.cal.direct_readahead,
                rule: Rule::DirectRun,
            };
        }
        let swap = small && self.decide_swap();
        self.cal.choose(amount, swap, sequential)
    }

    /// Makes sure the technique of `c` can be used (mapping the file or
    /// setting up the ring on first use); else the `pread` fallback.
    fn resolve(&mut self, c: Choice, amount: usize) -> Result<Choice> {
        if c.rule == Rule::DirectRun {
            if self.ahead.is_none() && !self.direct_unavailable {
                match DirectAhead::open(&self.path, self.size, c.queue_depth as usize) {
                    Ok(a) => self.ahead = Some(a),
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::EINVAL | libc::EOPNOTSUPP | libc::ENOSYS | libc::EPERM | libc::EACCES)
                        ) =>
                    {
                        self.direct_unavailable = true;
                        // O_DIRECT refused, cachestat (which the error may not
                        // name) or io_uring (UringUnavailable, its errno kept).
                        self.fallback = Some(format!("direct read-ahead unavailable ({e}); using pread"));
                    }
                    Err(e) => return Err(e),
                }
            }
            if self.ahead.is_none() {
                return Ok(self.cal.pread_choice(amount, Rule::DirectUnavailable));
            }
            return Ok(c);
        }
        match c.kind {
            ReaderKind::Mmap if self.map.is_none() && !self.mmap_unavailable => {
                let file = self.file.as_ref().expect("open");
                match Mapping::new(file, self.size, self.cal.mmap_advice, &self.path) {
                    Ok(m) => self.map = Some(m),
                    Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
                        self.mmap_unavailable = true;
                        self.fallback = Some(format!("{e}; using pread"));
                    }
                    Err(e) => return Err(e),
                }
            }
            ReaderKind::Uring if self.engine.is_none() && !self.uring_unavailable => {
                match UringEngine::new(self.cal.queue_depth, &self.path) {
                    Ok(r) => self.engine = Some(r),
                    Err(e) if *e.kind() == ErrorKind::UringUnavailable => {
                        self.uring_unavailable = true;
                        self.fallback = Some(format!("{e}; using pread"));
                    }
                    Err(e) => return Err(e),
                }
            }
            _ => {}
        }
        Ok(match c.kind {
            ReaderKind::Mmap if self.map.is_none() => self.cal.pread_choice(amount, Rule::MmapUnavailable),
            ReaderKind::Uring if self.engine.is_none() => {
                self.cal.pread_choice(amount, Rule::UringUnavailable)
            }
            _ => c,
        })
    }

    /// Copies a request out of the mapping, starting the file's
    /// background prefetch first if the calibration asks for it.
    fn mmap_copy(&mut self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize> {
        if self.cal.prefetch && !self.prefetch_tried {
            self.prefetch_tried = true;
            // Several files may be prefetched at once: each must leave room
            // for the others, or the cache evicts what was read ahead
            // before it is used.
            let fits = available_memory().is_none_or(|m| self.size <= m / 4);
            let file = self.file.as_ref().expect("open");
            self.prefetch = if fits && self.size > 0 { Prefetch::start(file, self.size) } else { None };
            if self.prefetch.is_some() {
                self.counts.prefetched_files += 1;
                self.counts.prefetched_bytes += self.size;
            }
        }
        self.map.as_ref().expect("mapped").copy(offset, amount, buf)
    }

    fn record(&mut self, c: Choice, bytes: usize) {
        self.last = Some(c);
        self.counts.add(c, bytes);
    }
}

impl Reader for AdaptiveReader {
    fn open(&mut self, path: &Path) -> Result<()> {
        if let OpenAction::Keep = open_action(self.is_open(), &self.path, path) {
            return Ok(());
        }
        self.close()?;
        self.path = path.to_path_buf();
        let (file, size) = open_file(path)?;
        self.file = Some(file);
        self.size = size;
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Closes the file and unmaps it; keeps the ring (not tied to a file)
    /// and the counts.
    fn close(&mut self) -> Result<()> {
        self.prefetch = None;
        self.prefetch_tried = false;
        self.ahead = None;
        self.direct_unavailable = false;
        self.file = None;
        self.map = None;
        self.mmap_unavailable = false;
        self.size = 0;
        self.swap = None;
        self.next_seq = None;
        self.last_start = None;
        self.run = 0;
        self.jumps = 0;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "adaptive"
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_bytes(&mut self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize> {
        check_buf(amount, buf);
        self.check_open()?;
        let sequential = self.track(offset, amount);
        let c = self.rule_choice(amount, sequential);
        let mut c = self.resolve(c, amount)?;
        let n = match c.kind {
            _ if c.rule == Rule::DirectRun => {
                let ahead = self.ahead.as_mut().expect("direct read-ahead");
                let (n, cached) = ahead.read_or_cached(offset, &mut buf[..amount])?;
                if cached {
                    c = Choice {
                        kind: ReaderKind::Pread,
                        block_size: amount,
                        queue_depth: 1,
                        rule: Rule::CachedRun,
                    };
                }
                n
            }
            ReaderKind::Mmap => self.mmap_copy(offset, amount, buf)?,
            ReaderKind::Uring => {
                let file = self.file.as_ref().expect("open");
                let engine = self.engine.as_mut().expect("a ring");
                let mut out = Ok(0);
                let mut reqs = [ReadRequest::new(offset, &mut buf[..amount])];
                engine.read_batch(file, self.size, c.block_size, &self.path, &mut reqs, &mut |d| {
                    out = d.result
                });
                out?
            }
            _ => {
                let file = self.file.as_ref().expect("open");
                pread_into(file, offset, &mut buf[..amount], c.block_size, &self.path)?
            }
        };
        self.record(c, n);
        Ok(n)
    }

    fn read_batch(
        &mut self,
        reqs: &mut [ReadRequest<'_>],
        on_complete: &mut dyn FnMut(Completion<'_>),
    ) -> Result<()> {
        self.check_open()?;
        let mut ids = Vec::new();
        let mut rest = Vec::new();
        for (id, r) in reqs.iter_mut().enumerate() {
            let amount = r.buf.len();
            // The batch's own requests are the evidence of random offsets;
            // all are known at once, so none is taken as a sequential run.
            self.track(r.offset, amount);
            let c = self.rule_choice(amount, false);
            let c = if c.kind == ReaderKind::Mmap {
                self.resolve(c, amount)?
            } else {
                self.resolve(self.cal.uring_choice(Rule::Batch), amount)?
            };
            match c.kind {
                ReaderKind::Mmap => {
                    let n = self.mmap_copy(r.offset, amount, r.buf)?;
                    self.record(c, n);
                    on_complete(Completion { id, result: Ok(n), data: &r.buf[..n] });
                }
                ReaderKind::Uring => {
                    ids.push(id);
                    rest.push(ReadRequest::new(r.offset, &mut *r.buf));
                }
                _ => {
                    let file = self.file.as_ref().expect("open");
                    let result = pread_into(file, r.offset, r.buf, c.block_size, &self.path);
                    let n = *result.as_ref().unwrap_or(&0);
                    self.record(c, n);
                    on_complete(Completion { id, result, data: &r.buf[..n] });
                }
            }
        }
        if !rest.is_empty() {
            let c = self.cal.uring_choice(Rule::Batch);
            let file = self.file.as_ref().expect("open");
            let engine = self.engine.as_mut().expect("a ring");
            let mut done = Vec::with_capacity(rest.len());
            engine.read_batch(file, self.size, c.block_size, &self.path, &mut rest, &mut |d| {
                done.push(*d.result.as_ref().unwrap_or(&0));
                on_complete(Completion { id: ids[d.id], ..d });
            });
            for n in done {
                self.record(c, n);
            }
        }
        Ok(())
    }

    fn last_choice(&self) -> Option<Choice> {
        self.last
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub(crate) fn available_memory() -> Option<u64> {
    crate::meminfo("MemAvailable:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_is_read() {
        // /proc is mounted wherever these tests run.
        assert!(available_memory().is_some_and(|m| m > 0));
    }

    #[test]
    fn jumps_count_towards_random_offsets() {
        let mut r = AdaptiveReader::new(&ReaderConfig::new(ReaderKind::Adaptive));
        assert!(!r.random_enough());
        r.track(0, 10);
        r.track(10, 10);
        assert!(!r.random_enough(), "the first request and continuing ones are not jumps");
        r.track(10, 10);
        r.track(10, 10);
        assert!(!r.random_enough(), "reading the same start again is not a jump");
        r.track(100, 10);
        assert!(r.random_enough());
        assert_eq!(r.rule_choice(4096, false).rule, Rule::SmallRandom);
        let mut r = AdaptiveReader::new(&ReaderConfig::new(ReaderKind::Adaptive));
        assert_eq!(r.rule_choice(4096, false).rule, Rule::NotYetRandom);
        assert_eq!(r.rule_choice(1 << 20, false).rule, Rule::LargerThanMmap);
        for access in [AccessHint::Random, AccessHint::Sequential] {
            let r = AdaptiveReader::new(&ReaderConfig::new(ReaderKind::Adaptive).access(access));
            assert!(r.random_enough(), "{access}: the hint answers the question");
        }
    }

    #[test]
    fn sequential_runs_need_auto_and_a_run() {
        let mut r = AdaptiveReader::new(&ReaderConfig::new(ReaderKind::Adaptive));
        assert!(!r.track(0, 10));
        assert!(!r.track(10, 10)); // run 1
        assert!(r.track(20, 10)); // run 2 = sequential_run
        assert!(!r.track(0, 10)); // broken
        let mut r = AdaptiveReader::new(&ReaderConfig::new(ReaderKind::Adaptive).access(AccessHint::Random));
        for i in 0..5 {
            assert!(!r.track(i * 10, 10));
        }
    }
}
