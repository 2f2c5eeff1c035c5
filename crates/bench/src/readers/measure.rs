//! One timed run of a point: threads, readers, per-request latency, page
//! faults and the bytes the kernel paged in.
//!
//! ```text
//!  requests (Point::requests_list) ─► T contiguous parts
//!  each thread: open its reader (timed apart: open_seconds) ─► barrier
//!    single: t0 ─ read_bytes(offset, len) ─ t1          latency = t1 − t0
//!    batch:  windows of W = max(8Q, 64) requests (at most 256 MiB of
//!            buffers) through read_batch, B = R, Q in flight;
//!            request j of a window is queued when completion j − Q is
//!            reaped (the ring queues in request order), so
//!            latency_j = done_j − done_(j−Q)th completion (window start for j < Q)
//!    getrusage(RUSAGE_THREAD) before and after: minor and major faults
//!  seconds = the slowest thread; latencies of all threads, exact percentiles
//!  resident_bytes = the file's pages in the page cache afterwards (mincore)
//! ```
//!
//! A request that returns fewer bytes than asked is an error: every
//! request lies inside its file.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use emsort_io::rusage::{Usage, Who};
use emsort_io::{ErrorKind, ReadRequest, Reader};

use super::point::{Api, Point};
use crate::replay::{percentile, Split};
use crate::{Error, Result};

/// Largest buffer memory of one batch window.
const WINDOW_BYTES: u64 = 256 << 20;

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Wall time of the slowest thread from the common start, seconds.
    pub seconds: f64,
    /// Longest time a thread took to open its reader, seconds (not in `seconds`).
    pub open_seconds: f64,
    /// Requests made.
    pub requests: u64,
    /// Bytes asked for.
    pub bytes_requested: u64,
    /// Bytes the readers returned.
    pub bytes_read: u64,
    /// Median request latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile request latency, microseconds.
    pub p99_us: f64,
    /// Slowest request, microseconds.
    pub max_us: f64,
    /// Minor page faults of the reading threads.
    pub minor_faults: u64,
    /// Major page faults of the reading threads.
    pub major_faults: u64,
    /// The file's bytes in the page cache after the run, when `mincore`
    /// could tell.
    pub resident_bytes: Option<u64>,
}

impl Measured {
    /// MiB read per second.
    pub fn mib_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes_read as f64 / self.seconds / (1u64 << 20) as f64
        } else {
            0.0
        }
    }
}

/// Minor and major faults of the calling thread (zeros if `getrusage`
/// fails).
fn thread_faults() -> (u64, u64) {
    Usage::now(Who::Thread).map_or((0, 0), |u| (u.minor_faults, u.major_faults))
}

/// Bytes of `path` in the page cache (`mincore` over a fresh read-only
/// mapping), or `None` when it cannot be told.
pub fn resident_bytes(path: &Path) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len() as usize;
    if len == 0 {
        return Some(0);
    }
    let page = rustix::param::page_size();
    // SAFETY: a fresh shared read-only mapping of the whole file, never
    // touched (mincore only asks about it), unmapped below.
    let addr =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: `vec` has one byte per page of the mapping.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above, of `len` bytes.
    unsafe { libc::munmap(addr, len) };
    (rc == 0).then(|| vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64)
}

/// Runs `point` once on `file` (the page cache is the caller's business).
pub fn measure(point: &Point, file: &Path, seed: u64, cancel: &AtomicBool) -> Result<Measured> {
    let cfg = point.config().ok_or_else(|| {
        Error::Campaign(format!("{}: '{}' is not a reader kind", point.label(), point.reader))
    })?;
    let reqs = point.requests_list(seed);
    let parts = Split::Contiguous.assign(reqs.len(), point.threads.max(1));
    let barrier = Barrier::new(parts.len());
    let outs: Vec<Result<ThreadOut>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|ids| {
                let (cfg, barrier, reqs) = (&cfg, &barrier, &reqs);
                s.spawn(move || -> Result<ThreadOut> {
                    let t0 = Instant::now();
                    let opened = emsort_io::open_reader(file, cfg);
                    let open_s = t0.elapsed().as_secs_f64();
                    // Every thread waits, even one whose open failed.
                    barrier.wait();
                    let mut r = opened?;
                    let mine: Vec<(u64, usize)> = ids.iter().map(|&i| reqs[i]).collect();
                    let mut bufs = buffers(&mine, point.api, point.queue_depth);
                    let (f0, j0) = thread_faults();
                    let start = Instant::now();
                    let mut out = match point.api {
                        Api::Batch => run_batch(&mut r, &mine, point.queue_depth, &mut bufs, cancel)?,
                        _ => run_single(&mut r, &mine, &mut bufs[0], cancel)?,
                    };
                    out.busy = start.elapsed();
                    let (f1, j1) = thread_faults();
                    out.minor = f1 - f0;
                    out.major = j1 - j0;
                    out.open_s = open_s;
                    r.close()?;
                    Ok(out)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("reader thread panicked")).collect()
    });
    let mut m = Measured::default();
    let mut lat = Vec::with_capacity(reqs.len());
    for o in outs {
        let o = o?;
        m.seconds = m.seconds.max(o.busy.as_secs_f64());
        m.open_seconds = m.open_seconds.max(o.open_s);
        m.bytes_read += o.bytes;
        m.minor_faults += o.minor;
        m.major_faults += o.major;
        lat.extend_from_slice(&o.lat);
    }
    m.requests = reqs.len() as u64;
    m.bytes_requested = reqs.iter().map(|r| r.1 as u64).sum();
    if m.bytes_read != m.bytes_requested {
        return Err(Error::Campaign(format!(
            "{}: read {} bytes where {} were asked for inside the file",
            point.label(),
            m.bytes_read,
            m.bytes_requested
        )));
    }
    lat.sort_unstable();
    m.p50_us = percentile(&lat, 0.50) as f64 / 1e3;
    m.p99_us = percentile(&lat, 0.99) as f64 / 1e3;
    m.max_us = lat.last().copied().unwrap_or(0) as f64 / 1e3;
    m.resident_bytes = resident_bytes(file);
    Ok(m)
}

/// One thread's tallies.
#[derive(Default)]
struct ThreadOut {
    lat: Vec<u64>,
    bytes: u64,
    busy: Duration,
    open_s: f64,
    minor: u64,
    major: u64,
}

fn interrupted(r: &dyn Reader) -> Error {
    Error::Io(emsort_io::Error::new(ErrorKind::Interrupted, r.path()))
}

/// The buffers a thread reads into, made and touched before its clock
/// starts, as fio's are: the kernel's copy into fresh pages would otherwise
/// fault on every page (65 K minor faults for 256 MiB) and count the
/// caller's first touch as the reader's time. `single`: one buffer of the
/// largest request; batch: one per request of a window of
/// W = max(8Q, 64) requests, at most [`WINDOW_BYTES`] in all.
fn buffers(reqs: &[(u64, usize)], api: Api, q: u32) -> Vec<Vec<u8>> {
    let largest = reqs.iter().map(|x| x.1).max().unwrap_or(0).max(1);
    let count = match api {
        Api::Batch => batch_window(largest, q).min(reqs.len()),
        _ => 1,
    };
    (0..count).map(|_| vec![0xA5u8; largest]).collect()
}

/// Requests per `read_batch` call.
fn batch_window(largest: usize, q: u32) -> usize {
    let q = q.max(1) as usize;
    (8 * q).max(64).min((WINDOW_BYTES / largest as u64).max(q as u64) as usize)
}

fn run_single(
    r: &mut dyn Reader,
    reqs: &[(u64, usize)],
    buf: &mut [u8],
    cancel: &AtomicBool,
) -> Result<ThreadOut> {
    let mut out = ThreadOut { lat: Vec::with_capacity(reqs.len()), ..ThreadOut::default() };
    for (i, &(off, len)) in reqs.iter().enumerate() {
        if i % 64 == 0 && cancel.load(Ordering::Relaxed) {
            return Err(interrupted(r));
        }
        let t0 = Instant::now();
        let n = r.read_bytes(off, len, &mut buf[..len])?;
        out.lat.push(t0.elapsed().as_nanos() as u64);
        out.bytes += n as u64;
    }
    Ok(out)
}

fn run_batch(
    r: &mut dyn Reader,
    reqs: &[(u64, usize)],
    q: u32,
    bufs: &mut [Vec<u8>],
    cancel: &AtomicBool,
) -> Result<ThreadOut> {
    let q = q.max(1) as usize;
    let window = bufs.len().max(1);
    let mut out = ThreadOut { lat: Vec::with_capacity(reqs.len()), ..ThreadOut::default() };
    let mut first_err: Option<emsort_io::Error> = None;
    for chunk in reqs.chunks(window) {
        if cancel.load(Ordering::Relaxed) {
            return Err(interrupted(r));
        }
        let mut batch: Vec<ReadRequest<'_>> = chunk
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(off, len), b)| ReadRequest::new(off, &mut b[..len]))
            .collect();
        let mut done: Vec<(usize, Instant)> = Vec::with_capacity(chunk.len());
        let start = Instant::now();
        r.read_batch(&mut batch, &mut |c| {
            done.push((c.id, Instant::now()));
            match c.result {
                Ok(n) => out.bytes += n as u64,
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        })?;
        if let Some(e) = first_err.take() {
            return Err(e.into());
        }
        // Request j (request order = queueing order) entered the ring when
        // the (j − Q)-th completion freed a slot.
        let mut done_at = vec![start; chunk.len()];
        for &(id, t) in &done {
            done_at[id] = t;
        }
        for (j, &t) in done_at.iter().enumerate() {
            let queued = if j < q { start } else { done[j - q].1 };
            out.lat.push(t.saturating_duration_since(queued).as_nanos() as u64);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::point::Pattern;

    #[test]
    fn every_api_reads_what_it_asks_and_mincore_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("d.bin");
        std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
        let base = Point {
            experiment: "t".into(),
            sweep: "request".into(),
            reader: "uring".into(),
            block_size: 4096,
            queue_depth: 4,
            madvise: "normal".into(),
            pattern: Pattern::Rand,
            api: Api::Batch,
            file_bytes: 1 << 20,
            request_bytes: 4096,
            total_bytes: 40 * 4096,
            threads: 2,
            limited: false,
            reps: 1,
        };
        let stop = AtomicBool::new(false);
        let m = measure(&base, &f, 1, &stop).unwrap();
        assert_eq!((m.requests, m.bytes_read), (40, 40 * 4096));
        assert!(m.p50_us > 0.0 && m.p50_us <= m.p99_us && m.p99_us <= m.max_us, "{m:?}");
        for reader in ["stream", "mmap", "pread", "adaptive"] {
            let p = Point { reader: reader.into(), api: Api::Single, pattern: Pattern::Seq, ..base.clone() };
            let m = measure(&p, &f, 1, &stop).unwrap();
            assert_eq!(m.bytes_read, 40 * 4096, "{reader}");
        }
        assert!(resident_bytes(&f).unwrap() >= 40 * 4096);
        emsort_io::cache::evict_file(&f).unwrap();
        assert!(resident_bytes(&f).unwrap() < 1 << 20);
        assert!(measure(&base, &f, 1, &AtomicBool::new(true))
            .unwrap_err()
            .to_string()
            .contains("interrupted"));
    }
}
