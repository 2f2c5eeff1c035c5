//! The device under a directory, and the stream kind and queue depth a
//! sort's temporary files get there (issue 38).
//!
//! What a request costs is measured by writing into an unnamed file in the
//! directory (`O_TMPFILE`: nothing to clean up, whatever happens) with
//! `O_DIRECT` — [`DeviceCost::probe`], a few milliseconds before a sort —
//! or read from the file `emsort calibrate` writes
//! ([`DeviceCache`], one line per device, measured with more rounds).
//! [`choose`] turns it into a [`IoDecision`]:
//!
//! - A device with a latency per request — the probing thread waits off the
//!   CPU for more than half of the writes' time — gets `O_DIRECT`: no copy
//!   through the page cache. Where requests in flight raise its bandwidth
//!   (one 1 MiB write at a time gets less than [`SERIAL_SHARE`] of the
//!   bandwidth with 8 in flight), `uring-direct`, with Q requests in flight
//!   so that the device stays busy. Q comes from Little's law: the device
//!   serves bandwidth × latency bytes at once, so a stream that alone keeps
//!   it busy has ⌈bandwidth × latency / B⌉ requests of B bytes in flight,
//!   and one more to submit while one completes
//!   ([`DeviceCost::queue_depth`]). (Issue 38: the synchronous `direct` kind
//!   waited on a disk with 2.5 ms per 1 MiB write at 41 % CPU.) Where one
//!   request at a time gets most of it, `direct`: a queue would add
//!   io_uring's cost for little (a Zen 4 EPYC's disk, 0.6 ms and 1.8 GB/s
//!   at queue depth 1, 2.1 GB/s with 8 in flight: 1 GiB of u32 in 2.5 s
//!   with `direct`, 2.8 s with `uring-direct`).
//! - Unless the runs fit under the kernel's background write-back
//!   threshold ([`cache_room`]: 10 % of the available memory by default)
//!   and the device would take longer to write and read them than the page
//!   cache takes the CPU to copy them ([`PAGE_CACHE_RATE`]): then they live
//!   in the page cache and are deleted before write-back would take them to
//!   the device, and the runs get `uring`, the page cache through io_uring,
//!   while the input and output files, which come from and go to the device
//!   whatever the runs do, keep the device's `O_DIRECT` kind
//!   ([`IoDecision::files_kind`]: a cold read through the page cache cost
//!   the Zen 4 EPYC 1.8 s of CPU per GiB, where the VM's freed memory goes
//!   back to its host — 1 GiB of lines 5.9–7.2 s with every stream through
//!   the cache, 3.5–6.6 s with the files direct). A sort's first run
//!   weighs the runs' place again against the CPU the sort needs
//!   ([`runs_stay_cached`]). (The matrix on an AVX2 AMD EPYC, 0.7 GB/s
//!   writes, 1 GiB of lines: `uring` 7.4–8.1 s, `uring-direct` 9.2–11.7 s;
//!   on an Intel Xeon a page-cache kind was fastest on 7 of the 9 device
//!   inputs. On the Zen 4
//!   EPYC's 2 GB/s disk, the other way: 1 GiB of u32 in 4.0 s through the
//!   page cache, 2.5 s with `direct`, of 100-byte records 3.4 s and 2.2 s.)
//! - Memory (tmpfs, or a cache in front of the device) has no latency to
//!   hide, and io_uring would add its own cost: `direct`, one request at a
//!   time (1 GiB of lines on tmpfs: 4.1–4.5 s with `direct`, 4.7–5.0 s with
//!   `uring-direct`).
//! - Where this process may not use io_uring, or M is below
//!   [`QUEUED_MEMORY`] (Q blocks per stream would take a small budget from
//!   the runs, and raise the least M a plan needs): `direct`, without a
//!   probe.
//! - Where the probe cannot run (no `O_TMPFILE` or no `O_DIRECT` there):
//!   `uring-direct` with the default Q, whose streams fall back to the page
//!   cache as `direct`'s do, and say so.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::{AlignedBuf, StreamConfig, StreamKind};

/// The least memory M for which [`choose`] keeps Q blocks in flight per
/// stream.
pub const QUEUED_MEMORY: u64 = 128 << 20;

/// The size of each probing write, and the block B the queue depth is
/// worked out for: 1 MiB, the sorts' largest default block.
pub const PROBE_BLOCK: usize = 1 << 20;

/// Writes one at a time in a probe, for the latency.
const SERIAL_WRITES: u64 = 4;
/// Writes, then reads, in flight at once in a probe, for the bandwidths.
const QUEUED_WRITES: u32 = 8;

/// The least and the most requests in flight [`DeviceCost::queue_depth`]
/// gives a stream.
pub const QUEUE_DEPTHS: (u32, u32) = (2, 8);

/// Bytes per second the page cache moves runs at, in CPU time: what the
/// sorts through it spent in the kernel beyond the same sorts with
/// `O_DIRECT`, per byte written or read through it — 1.2 GB/s on an
/// AVX-512 AMD EPYC (Zen 4, Linux 6.18: 1 GiB of u32, 2.9 s of system time
/// against 0.4 s), 1.8 GB/s on an AVX2 one (Zen 2: 2.3 s against 0.7 s).
/// A probe of a few megabytes does not tell it: writes into the page cache
/// ran at 0.5 to 5 GB/s from one try to the next there, since what costs
/// is the reclaim and the io_uring workers of a sort's gigabytes.
pub const PAGE_CACHE_RATE: f64 = 1.5e9;

/// One request at a time (`direct`) when it gets this share of the
/// bandwidth with requests in flight: a queue would add io_uring's cost and
/// gain little.
pub const SERIAL_SHARE: f64 = 0.75;

/// What a request costs on the device under a directory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceCost {
    /// The time of one 1 MiB `O_DIRECT` write at queue depth 1 (the
    /// shortest of a probe's).
    pub latency: Duration,
    /// The share of the serial writes' time the writing thread was not
    /// blocked — on a CPU, or runnable and waiting for one (a loaded
    /// machine's run queue is not a device): near 0 on a device (it
    /// sleeps until the write completes), near 1 on memory (it copies).
    pub on_cpu: f64,
    /// Bytes per second with 8 writes of 1 MiB in flight
    /// through io_uring; `None` where io_uring could not be used.
    pub write_bandwidth: Option<f64>,
    /// Bytes per second reading those writes back as many at once with
    /// `O_DIRECT` (from the device, not the page cache).
    pub read_bandwidth: Option<f64>,
}

impl DeviceCost {
    /// A probe of a few tens of milliseconds: three rounds of 4 writes of
    /// 1 MiB one at a time, then 8 at once through io_uring and the 8 read
    /// back at once, in an unnamed file in `dir`, allocated first (an
    /// `O_DIRECT` write past the end of an ext4 file waits under the inode
    /// lock). Each round writes blocks no round wrote before, as a sort
    /// writes its runs into new files: the Zen 4 EPYC's virtual disk took
    /// rewrites of the same 4 MiB at 1.7–2.1 GB/s, with 8 in flight, where
    /// fio wrote a new file at 0.75–1.2 GB/s, and the probe that rewrote
    /// chose `direct` where `uring` sorted 1 GiB of lines 1.29× faster
    /// (`bench/results/2026-12-06r-matrix-zen4`). `None` where that cannot
    /// be done (no such directory, no `O_TMPFILE` or `O_DIRECT` there, no
    /// room). (One round's bandwidths fell to half now and then on a busy
    /// machine, and one sort in three of the Zen 4 EPYC's went through the
    /// page cache for it.)
    pub fn probe(dir: &Path) -> Option<DeviceCost> {
        Self::measure(dir, 3)
    }

    /// `rounds` probes: the shortest of their latencies and the highest of
    /// their bandwidths — what the device reached, since other work on the
    /// machine only slows a round — and the median of their shares on the
    /// CPU (`emsort calibrate`).
    pub fn measure(dir: &Path, rounds: usize) -> Option<DeviceCost> {
        use rustix::fs::{FallocateFlags, Mode, OFlags};
        let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::DIRECT | OFlags::CLOEXEC;
        let fd = rustix::fs::open(dir, flags, Mode::from_raw_mode(0o600)).ok()?;
        let serial_bytes = SERIAL_WRITES * PROBE_BLOCK as u64;
        let round_bytes = serial_bytes + QUEUED_WRITES as u64 * PROBE_BLOCK as u64;
        let rounds = rounds.max(1);
        rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, round_bytes * rounds as u64).ok()?;
        let mut buf = AlignedBuf::with_align(QUEUED_WRITES as usize * PROBE_BLOCK, 4096);
        let (mut latencies, mut on_cpu) = (Vec::new(), Vec::new());
        let (mut writes, mut reads) = (Vec::new(), Vec::new());
        for round in 0..rounds as u64 {
            let at = round * round_bytes;
            let (wall0, cpu0) = (Instant::now(), thread_cpu());
            for i in 0..SERIAL_WRITES {
                let t = Instant::now();
                let block = &buf.bytes()[..PROBE_BLOCK];
                if rustix::io::pwrite(&fd, block, at + i * PROBE_BLOCK as u64).ok()? != PROBE_BLOCK {
                    return None;
                }
                latencies.push(t.elapsed());
            }
            on_cpu.push((thread_cpu() - cpu0).as_secs_f64() / wall0.elapsed().as_secs_f64().max(1e-9));
            if let Some(w) = queued(&fd, &mut buf, at + serial_bytes, false) {
                writes.push(w);
                if let Some(r) = queued(&fd, &mut buf, at + serial_bytes, true) {
                    reads.push(r);
                }
            }
        }
        Some(DeviceCost {
            latency: latencies.iter().copied().min()?,
            on_cpu: median_f(&mut on_cpu),
            write_bandwidth: highest(&writes),
            read_bandwidth: highest(&reads),
        })
    }

    /// Whether this is memory rather than a device: the writing thread was
    /// not blocked for at least half of the writes' time.
    pub fn is_memory(&self) -> bool {
        self.on_cpu >= 0.5
    }

    /// Requests of `block` bytes a stream keeps in flight here, by Little's
    /// law: the device serves bandwidth × latency bytes at once, so
    /// ⌈bandwidth × latency / block⌉ requests keep it busy, and one more is
    /// submitted while one completes; within [`QUEUE_DEPTHS`]. Without a
    /// bandwidth, the streams' default.
    pub fn queue_depth(&self, block: usize) -> u32 {
        let Some(bw) = self.write_bandwidth else {
            return StreamConfig::DEFAULT_QUEUE_DEPTH;
        };
        let in_flight = bw * self.latency.as_secs_f64() / block.max(1) as f64;
        let q = in_flight.ceil().min(u32::MAX as f64) as u32 + 1;
        q.clamp(QUEUE_DEPTHS.0, QUEUE_DEPTHS.1)
    }

    /// Whether requests in flight add enough to the device's bandwidth to
    /// be worth a queue: one 1 MiB write at a time gets less than
    /// [`SERIAL_SHARE`] of the bandwidth with 8 in flight
    /// (true when that bandwidth is not known).
    pub fn queue_pays(&self) -> bool {
        let Some(queued) = self.write_bandwidth else { return true };
        let serial = PROBE_BLOCK as f64 / self.latency.as_secs_f64().max(1e-9);
        serial < SERIAL_SHARE * queued
    }

    /// The figures as the reasons and the devices file say them.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "1 MiB O_DIRECT write {:.2} ms at queue depth 1, {:.0} % of it on the CPU (not blocked)",
            self.latency.as_secs_f64() * 1e3,
            self.on_cpu * 100.0
        );
        if let Some(w) = self.write_bandwidth {
            let _ = write!(s, "; {QUEUED_WRITES} in flight: write {:.0} MB/s", w / 1e6);
            if let Some(r) = self.read_bandwidth {
                let _ = write!(s, ", read {:.0} MB/s", r / 1e6);
            }
        }
        s
    }

    /// Seconds to read `read` bytes and write `written` bytes at the
    /// measured bandwidths, one after the other (the I/O bound as the
    /// benchmarks measure it); `None` without both bandwidths.
    pub fn io_seconds(&self, read: u64, written: u64) -> Option<f64> {
        Some(read as f64 / self.read_bandwidth? + written as f64 / self.write_bandwidth?)
    }
}

/// [`QUEUED_WRITES`] requests of [`PROBE_BLOCK`] from offset `at`,
/// submitted at once through io_uring — writes of `buf`'s blocks, or
/// (`read`) reads into them: their bytes over the time until the last
/// completes.
fn queued(fd: &rustix::fd::OwnedFd, buf: &mut AlignedBuf, at: u64, read: bool) -> Option<f64> {
    use io_uring::{opcode, types};
    use std::os::fd::AsRawFd;
    let mut ring = io_uring::IoUring::new(QUEUED_WRITES).ok()?;
    let base = buf.bytes_mut().as_mut_ptr();
    let t = Instant::now();
    for i in 0..QUEUED_WRITES as u64 {
        // SAFETY: block i of `buf`, which holds QUEUED_WRITES blocks.
        let ptr = unsafe { base.add(i as usize * PROBE_BLOCK) };
        let (fd, len, off) = (types::Fd(fd.as_raw_fd()), PROBE_BLOCK as u32, at + i * PROBE_BLOCK as u64);
        let op = if read {
            opcode::Read::new(fd, ptr, len).offset(off).build()
        } else {
            opcode::Write::new(fd, ptr, len).offset(off).build()
        };
        // SAFETY: each request has a block of `buf` of its own, which
        // outlives it: every completion is reaped below before `buf` is
        // touched again (a failed `io_uring_enter` returns with `buf`
        // borrowed by the caller, who keeps it until the ring is gone).
        unsafe { ring.submission().push(&op.user_data(i)).ok()? };
    }
    // Every completion is reaped before returning, so no write is left in
    // flight when the ring is dropped.
    let (mut done, mut whole) = (0, true);
    while done < QUEUED_WRITES {
        if ring.submit_and_wait((QUEUED_WRITES - done) as usize).is_err() {
            return None;
        }
        for c in ring.completion() {
            whole &= c.result() == PROBE_BLOCK as i32;
            done += 1;
        }
    }
    if !whole {
        return None;
    }
    Some(QUEUED_WRITES as f64 * PROBE_BLOCK as f64 / t.elapsed().as_secs_f64().max(1e-9))
}

/// Whether `dir` is on tmpfs or ramfs: memory, whatever a probe on a busy
/// machine (writes waiting for page allocation or locks) may suggest.
fn in_memory(dir: &Path) -> bool {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    rustix::fs::statfs(dir).is_ok_and(|s| matches!(s.f_type as u64, TMPFS_MAGIC | RAMFS_MAGIC))
}

/// Dirty page-cache bytes the kernel keeps before it starts writing them
/// back in the background: `vm.dirty_background_bytes` when set, else
/// `vm.dirty_background_ratio` percent of the memory available
/// (`MemAvailable`, close to the kernel's own base). Runs that fit under it
/// are read back and deleted before any write-back: on the two machines the
/// matrix was recorded on, the page cache through io_uring was then the
/// fastest kind, or within the noise of it (issue 38). `None` where
/// `/proc` does not tell.
pub fn cache_room() -> Option<u64> {
    let read =
        |name: &str| std::fs::read_to_string(format!("/proc/sys/vm/{name}")).ok()?.trim().parse::<u64>().ok();
    if let Some(bytes) = read("dirty_background_bytes").filter(|&b| b > 0) {
        return Some(bytes);
    }
    let ratio = read("dirty_background_ratio")?;
    Some(crate::meminfo("MemAvailable:")? / 100 * ratio)
}

/// The time this thread has been on a CPU or waiting on a run queue for
/// one (`/proc/thread-self/schedstat`'s first two fields); without that
/// file, its CPU time alone.
fn thread_cpu() -> Duration {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        let mut f = text.split_whitespace().map(|v| v.parse::<u64>());
        if let (Some(Ok(run)), Some(Ok(wait))) = (f.next(), f.next()) {
            return Duration::from_nanos(run.saturating_add(wait));
        }
    }
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `bytes` as GiB with two decimals.
fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn highest(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

fn median_f(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Which device a directory is on, as far as a measurement can be kept for
/// it: the device number, the file system's type and the device's size in
/// sectors (so that another disk given the same number is not taken for
/// it). `None` on a file system without a device of its own (tmpfs,
/// btrfs, overlays: their device numbers are handed out anew at each mount).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceId {
    major: u32,
    minor: u32,
    fs_type: u64,
    sectors: u64,
}

impl DeviceId {
    /// The device under `dir`.
    pub fn of(dir: &Path) -> Option<DeviceId> {
        let dev = std::fs::metadata(dir).ok()?.dev();
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        if major == 0 {
            return None;
        }
        let fs_type = rustix::fs::statfs(dir).ok()?.f_type as u64;
        let sectors = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/size")).ok()?;
        Some(DeviceId { major, minor, fs_type, sectors: sectors.trim().parse().ok()? })
    }

    fn key(&self) -> String {
        format!("{}:{} {:#x} {}", self.major, self.minor, self.fs_type, self.sectors)
    }
}

/// `emsort calibrate`'s measurements of devices: the file
/// `$XDG_CONFIG_HOME/emsort/devices` (`~/.config/emsort/devices`), one line
/// per device — `MAJOR:MINOR FS_TYPE SECTORS latency_us on_cpu write_mbs
/// read_mbs measured_unix_seconds dir` (`-` for a bandwidth not
/// measured) — `#` starting a comment.
/// A sort reads it and never writes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceCache {
    entries: Vec<(String, DeviceCost, u64, PathBuf)>,
}

impl DeviceCache {
    /// Where the file is: beside the calibration
    /// ([`crate::reader::Calibration::default_path`]).
    pub fn default_path() -> Option<PathBuf> {
        Some(crate::reader::Calibration::default_path()?.with_file_name("devices"))
    }

    /// The file at `path`; empty when it is missing. Lines that do not
    /// parse are skipped (a later version's fields, or an edit).
    pub fn load(path: &Path) -> DeviceCache {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        DeviceCache { entries: text.lines().filter_map(parse_line).collect() }
    }

    /// The measurement of the device under `dir`, with the time it was made.
    pub fn lookup(&self, dir: &Path) -> Option<(DeviceCost, SystemTime)> {
        let key = DeviceId::of(dir)?.key();
        self.entries
            .iter()
            .find(|e| e.0 == key)
            .map(|e| (e.1, SystemTime::UNIX_EPOCH + Duration::from_secs(e.2)))
    }

    /// Records `cost` for the device under `dir` (replacing its earlier
    /// line); false when `dir` has no device of its own ([`DeviceId::of`]).
    pub fn insert(&mut self, dir: &Path, cost: DeviceCost) -> bool {
        let Some(id) = DeviceId::of(dir) else { return false };
        let key = id.key();
        self.entries.retain(|e| e.0 != key);
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.entries.push((key, cost, now, dir.to_path_buf()));
        true
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut s = String::from(
            "# emsort calibrate: the device under each directory measured \
             (MAJOR:MINOR FS_TYPE SECTORS latency_us on_cpu write_mbs read_mbs measured_unix dir)\n",
        );
        for (key, c, at, dir) in &self.entries {
            let mbs = |b: Option<f64>| b.map_or("-".to_string(), |b| format!("{:.1}", b / 1e6));
            let _ = writeln!(
                s,
                "{key} {:.1} {:.3} {} {} {at} {}",
                c.latency.as_secs_f64() * 1e6,
                c.on_cpu,
                mbs(c.write_bandwidth),
                mbs(c.read_bandwidth),
                dir.display()
            );
        }
        s
    }

    /// Writes the file (its directory made when missing), beside its name
    /// and renamed over it, so a sort never reads half a file.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(name);
        std::fs::write(&tmp, self.to_text()).and_then(|()| std::fs::rename(&tmp, path)).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

fn parse_line(line: &str) -> Option<(String, DeviceCost, u64, PathBuf)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let f: Vec<&str> = line.splitn(9, ' ').collect();
    if f.len() < 8 {
        return None;
    }
    let latency_us: f64 = f[3].parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
    let on_cpu: f64 = f[4].parse().ok().filter(|v: &f64| v.is_finite())?;
    let mbs = |s: &str| match s {
        "-" => Some(None),
        b => Some(Some(b.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)? * 1e6)),
    };
    let cost = DeviceCost {
        latency: Duration::from_secs_f64(latency_us / 1e6),
        on_cpu,
        write_bandwidth: mbs(f[5])?,
        read_bandwidth: mbs(f[6])?,
    };
    Some((
        format!("{} {} {}", f[0], f[1], f[2]),
        cost,
        f[7].parse().ok()?,
        PathBuf::from(f.get(8).unwrap_or(&"")),
    ))
}

/// The stream kind, the queue depth and why, for a sort whose front end
/// asked for none ([`choose`]).
#[derive(Debug, Clone, PartialEq)]
pub struct IoDecision {
    /// The kind for reading and writing the runs (and the files, unless
    /// `files_kind` says otherwise).
    pub kind: StreamKind,
    /// The kind for the user's input and output files where it is not
    /// `kind`: runs kept in the page cache (`uring`) leave the files, which
    /// must come from and go to the device anyway, to `O_DIRECT`.
    pub files_kind: Option<StreamKind>,
    /// Requests in flight per stream (`uring-direct`), else the default.
    pub queue_depth: u32,
    /// Why, for `--show-plan` and `--stats`.
    pub why: String,
    /// What the device under the runs' directory costs, where it was
    /// measured (by `emsort calibrate` or the probe).
    pub cost: Option<DeviceCost>,
}

/// The kind and queue depth for a sort with memory `memory` whose
/// temporary runs, about `runs_bytes` of them (`None`: not known ahead, as
/// from a pipe), go to `runs_dir` (`None`: a sort that writes no runs),
/// as the module docs say: from `cache` (`emsort calibrate`'s measurement
/// of that device) when it has one, else from a probe.
pub fn choose(
    runs_dir: Option<&Path>,
    runs_bytes: Option<u64>,
    memory: u64,
    cache: Option<&DeviceCache>,
) -> IoDecision {
    let decision = |kind, queue_depth, why: String| IoDecision {
        kind,
        files_kind: None,
        queue_depth,
        why: format!("default: {why}"),
        cost: None,
    };
    let q0 = StreamConfig::DEFAULT_QUEUE_DEPTH;
    if memory < QUEUED_MEMORY {
        return decision(
            StreamKind::Direct,
            q0,
            format!(
                "M below {} MiB: one block per stream, O_DIRECT one request at a time",
                QUEUED_MEMORY >> 20
            ),
        );
    }
    if let Some(why) = crate::uring::unavailable() {
        return decision(
            StreamKind::Direct,
            q0,
            format!("io_uring is unavailable ({why}), so O_DIRECT one request at a time"),
        );
    }
    let Some(dir) = runs_dir else {
        return decision(
            StreamKind::UringDirect,
            q0,
            format!("O_DIRECT through io_uring, Q = {q0} requests in flight per stream (no runs: no probe)"),
        );
    };
    let found = cache.and_then(|c| c.lookup(dir));
    let (cost, source) = match found {
        Some((cost, _)) => (Some(cost), "emsort calibrate measured"),
        None => (DeviceCost::probe(dir), "a probe of the temp dir:"),
    };
    // The runs and the room the page cache has for them, where they fit.
    let cached_runs = runs_bytes.zip(cache_room()).filter(|(runs, room)| runs <= room);
    let d = decide(cost, in_memory(dir), cached_runs, source);
    let d = IoDecision { why: format!("default: {}", d.why), ..d };
    if cost.is_none() {
        return IoDecision {
            why: format!("{} (the temp dir {} could not be probed)", d.why, dir.display()),
            ..d
        };
    }
    IoDecision { cost, ..d }
}

/// The rule of [`choose`] (the module docs), from what was measured: the
/// device's `cost` (by `source`), whether the directory is memory
/// (`tmpfs`), and the runs and the page cache's room when they fit in it.
pub fn decide(
    cost: Option<DeviceCost>,
    tmpfs: bool,
    cached_runs: Option<(u64, u64)>,
    source: &str,
) -> IoDecision {
    let q0 = StreamConfig::DEFAULT_QUEUE_DEPTH;
    let decision =
        |kind, queue_depth, why: String| IoDecision { kind, files_kind: None, queue_depth, why, cost };
    let Some(c) = cost else {
        return decision(
            StreamKind::UringDirect,
            q0,
            format!("O_DIRECT through io_uring, Q = {q0} requests in flight per stream"),
        );
    };
    if c.is_memory() || tmpfs {
        return decision(
            StreamKind::Direct,
            q0,
            format!(
                "{source} {}: {}, no device to wait for, so one request at a time",
                c.describe(),
                if tmpfs { "tmpfs, memory" } else { "memory" }
            ),
        );
    }
    if let Some((runs, room)) = cached_runs {
        // The device's time to write the runs and read them back (reads
        // taken at least as fast as writes: the probe reads back what it
        // has just written, which some devices serve slower than a merge's
        // reads), against the page cache's (PAGE_CACHE_RATE each way);
        // without the device's bandwidths, the page cache.
        let device = c.write_bandwidth.map(|w| {
            let r = c.read_bandwidth.unwrap_or(w).max(w);
            runs as f64 / w + runs as f64 / r
        });
        let copies = 2.0 * runs as f64 / PAGE_CACHE_RATE;
        let costs = device.map_or(String::new(), |d| {
            format!(
                "; the device would take {d:.2} s to write and read them, the page cache {copies:.2} s of CPU \
                 ({:.1} GB/s each way)",
                PAGE_CACHE_RATE / 1e9
            )
        });
        if device.is_none_or(|d| d > copies) {
            // The files are read from and written to the device whatever
            // the runs do: through the page cache they would only add its
            // copies (a cold input read through it cost 1.8 s of CPU per
            // GiB on the Zen 4 EPYC, against 0.1 s for blocks just freed).
            let files = direct_kind(c, source, "", decision).kind;
            let d = decision(
                StreamKind::Uring,
                q0,
                format!(
                    "{source} {}: a device, but the runs ({}) fit under the kernel's background write-back \
                     threshold ({}){costs}: they stay in the page cache and are gone before they need to reach \
                     the device, so the runs go through the page cache with io_uring, and the input and output \
                     files, which come from and go to the device in any case, through {files} (O_DIRECT); \
                     Q = {q0} requests in flight per stream; a sort's first run weighs the runs' place again \
                     against the CPU the sort needs",
                    c.describe(),
                    gib(runs),
                    gib(room),
                ),
            );
            return IoDecision { files_kind: Some(files), ..d };
        }
        let why =
            format!(", and the runs ({}) fit in the page cache{costs}: the device is the cheaper", gib(runs));
        return direct_kind(c, source, &why, decision);
    }
    direct_kind(c, source, "", decision)
}

/// Whether runs that [`decide`] kept in the page cache stay there, weighed
/// at the sort's first run against the CPU the sort has needed: `cpu_per_byte`
/// CPU seconds per byte of input on `threads` threads (run formation so
/// far). Per byte and pass, with a = `cpu_per_byte` / T, the device's
/// bandwidths w and r and the page cache's copies c = 1 / [`PAGE_CACHE_RATE`]
/// (one per byte and pass, on the same CPUs):
///
/// ```text
///  runs in the page cache   max(a + c/T, 1/r) + max(a + c/T, 1/w)   (the device reads the input, writes the output)
///  runs on the device       2 · max(a, 1/r + 1/w)                   (and writes and reads the runs)
/// ```
///
/// The copies cost nothing where the device binds and all where the CPU
/// does: 1 GiB of a CSV export sorted by a text column, CPU-bound on the
/// Zen 4 EPYC, took 10.8–12.1 s with its runs in the page cache (5.4 s of
/// system time) and 7.9–9.1 s with `O_DIRECT`. Returns whether they stay,
/// and why; they stay where the bandwidths are not known.
pub fn runs_stay_cached(cost: &DeviceCost, cpu_per_byte: f64, threads: usize) -> (bool, String) {
    let (Some(w), Some(r)) = (cost.write_bandwidth, cost.read_bandwidth) else {
        return (true, "the device's bandwidths are not known".into());
    };
    let t = threads.max(1) as f64;
    let a = cpu_per_byte.max(0.0) / t;
    let c = 1.0 / PAGE_CACHE_RATE;
    let cached = (a + c / t).max(1.0 / r) + (a + c / t).max(1.0 / w);
    let direct = 2.0 * a.max(1.0 / r + 1.0 / w);
    let stay = cached < direct;
    let gib = (1u64 << 30) as f64;
    let why = format!(
        "the sort needed {:.2} CPU s/GiB on {threads} thread(s) until its first run; the device writes {:.0} MB/s \
         and reads {:.0} MB/s: est. {:.2} s/GiB with the runs in the page cache ({:.1} GB/s of copies), {:.2} s/GiB \
         with them on the device",
        cpu_per_byte * gib,
        w / 1e6,
        r / 1e6,
        cached * gib,
        PAGE_CACHE_RATE / 1e9,
        direct * gib,
    );
    (stay, why)
}

/// `O_DIRECT` on the device `c`: one request at a time where a queue
/// gains little ([`DeviceCost::queue_pays`]), else Q in flight through
/// io_uring.
fn direct_kind(
    c: DeviceCost,
    source: &str,
    runs: &str,
    decision: impl Fn(StreamKind, u32, String) -> IoDecision,
) -> IoDecision {
    if c.queue_pays() {
        let q = c.queue_depth(PROBE_BLOCK);
        decision(
            StreamKind::UringDirect,
            q,
            format!(
                "{source} {}{runs}: a device to keep busy, so O_DIRECT through io_uring, Q = {q} requests of \
                 1 MiB in flight per stream (bandwidth × latency / B, plus one)",
                c.describe()
            ),
        )
    } else {
        decision(
            StreamKind::Direct,
            StreamConfig::DEFAULT_QUEUE_DEPTH,
            format!(
                "{source} {}{runs}: one request at a time already gets {:.0} % of the device's bandwidth with \
                 requests in flight, so O_DIRECT one request at a time",
                c.describe(),
                (PROBE_BLOCK as f64 / c.latency.as_secs_f64().max(1e-9)) / c.write_bandwidth.unwrap_or(f64::MAX) * 100.0
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(latency_ms: f64, bandwidth_mbs: Option<f64>) -> DeviceCost {
        DeviceCost {
            latency: Duration::from_secs_f64(latency_ms / 1e3),
            on_cpu: 0.05,
            write_bandwidth: bandwidth_mbs.map(|b| b * 1e6),
            read_bandwidth: bandwidth_mbs.map(|b| 2.0 * b * 1e6),
        }
    }

    /// Little's law, and its bounds: the issue's disk (2.5 ms, 0.87 GB/s)
    /// holds 2.2 MB in flight, 3 requests of 1 MiB, plus one.
    #[test]
    fn queue_depth_is_bandwidth_times_latency_over_block() {
        assert_eq!(cost(2.5, Some(870.0)).queue_depth(PROBE_BLOCK), 4);
        assert_eq!(cost(0.93, Some(1640.0)).queue_depth(PROBE_BLOCK), 3);
        assert_eq!(cost(0.1, Some(100.0)).queue_depth(PROBE_BLOCK), QUEUE_DEPTHS.0);
        assert_eq!(cost(50.0, Some(3000.0)).queue_depth(PROBE_BLOCK), QUEUE_DEPTHS.1);
        // Smaller blocks: more of them in flight for the same bytes.
        assert_eq!(cost(2.5, Some(870.0)).queue_depth(PROBE_BLOCK / 4), QUEUE_DEPTHS.1);
        assert_eq!(cost(2.5, None).queue_depth(PROBE_BLOCK), StreamConfig::DEFAULT_QUEUE_DEPTH);
    }

    /// The devices file: written and read back alike; comments, bad lines
    /// and a missing bandwidth handled.
    #[test]
    fn device_cache_round_trips() {
        let c = DeviceCache {
            entries: vec![
                ("253:0 0xef53 524288000".into(), cost(0.95, Some(1500.0)), 1_764_300_000, "/tmp".into()),
                ("8:1 0x58465342 100".into(), cost(2.5, None), 5, "/mnt/a b".into()),
            ],
        };
        let text = c.to_text() + "garbage line\n253:1 ext4\n1:2 0x1 3 4 0.1 x - 5 /d\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("devices");
        std::fs::write(&path, text).unwrap();
        let back = DeviceCache::load(&path);
        assert_eq!(back.entries.len(), 2);
        for (a, b) in back.entries.iter().zip(&c.entries) {
            assert_eq!((&a.0, a.2, &a.3), (&b.0, b.2, &b.3));
            assert!((a.1.latency.as_secs_f64() - b.1.latency.as_secs_f64()).abs() < 1e-6);
            assert_eq!(a.1.write_bandwidth.map(|x| x.round()), b.1.write_bandwidth.map(|x| x.round()));
            assert_eq!(a.1.read_bandwidth.map(|x| x.round()), b.1.read_bandwidth.map(|x| x.round()));
        }
        assert_eq!(DeviceCache::load(&dir.path().join("missing")), DeviceCache::default());
    }

    /// A directory's device found by the cache; a cached memory-like
    /// measurement decides, with the reason naming calibrate.
    #[test]
    fn choose_reads_the_cache_before_probing() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = DeviceCache::default();
        if !cache.insert(dir.path(), DeviceCost { on_cpu: 0.9, ..cost(0.2, Some(5000.0)) }) {
            return; // a temp dir without a device of its own: nothing to key
        }
        if crate::uring::unavailable().is_some() {
            return;
        }
        let d = choose(Some(dir.path()), None, QUEUED_MEMORY, Some(&cache));
        assert_eq!(d.kind, StreamKind::Direct, "{}", d.why);
        assert!(d.why.contains("calibrate"), "{}", d.why);
        cache.insert(dir.path(), cost(2.5, Some(870.0)));
        let d = choose(Some(dir.path()), None, QUEUED_MEMORY, Some(&cache));
        assert_eq!((d.kind, d.queue_depth), (StreamKind::UringDirect, 4), "{}", d.why);
        // Runs larger than the page cache keeps dirty: O_DIRECT as above;
        // runs that fit: the page cache, through io_uring.
        let d = choose(Some(dir.path()), Some(u64::MAX), QUEUED_MEMORY, Some(&cache));
        assert_eq!(d.kind, StreamKind::UringDirect, "{}", d.why);
        // Runs that fit: the page cache, unless its copies cost more than
        // the device (measured here: either may hold on a given machine).
        // Half the room: it follows the memory available, which other
        // tests running beside this one move (runs of exactly the room
        // measured here once did not fit in the room `choose` measured).
        if let Some(room) = cache_room().filter(|&r| r > 1) {
            let d = choose(Some(dir.path()), Some(room / 2), QUEUED_MEMORY, Some(&cache));
            assert!(
                d.why.contains("write-back threshold") || d.why.contains("fit in the page cache"),
                "{}",
                d.why
            );
            assert_eq!(d.kind == StreamKind::Uring, d.why.contains("write-back threshold"), "{}", d.why);
        }
    }

    /// Runs in the page cache stay there where the device binds (u32 on
    /// the issue's slow disk) and leave it where the CPU does (a CSV export
    /// sorted by a text column, 14 CPU s/GiB on 2 threads).
    #[test]
    fn runs_stay_cached_where_the_device_binds() {
        let gib = (1u64 << 30) as f64;
        let slow = cost(2.5, Some(870.0));
        let (stay, why) = runs_stay_cached(&slow, 1.3 / gib, 2);
        assert!(stay, "{why}");
        let (stay, why) = runs_stay_cached(&slow, 14.0 / gib, 2);
        assert!(!stay, "{why}");
        assert!(why.contains("14.00 CPU s/GiB on 2 thread(s)"), "{why}");
        // Without bandwidths, the decision stands.
        assert!(runs_stay_cached(&cost(2.5, None), 14.0 / gib, 2).0);
    }

    /// The rule, on fixed figures: memory; runs that fit where the device
    /// is slower than the page cache (the page cache) or faster (O_DIRECT);
    /// a device whose queue pays (uring-direct) or not (direct); a missing
    /// measurement.
    #[test]
    fn decide_weighs_the_device_against_the_page_cache() {
        let gib = 1u64 << 30;
        let room = Some((gib, 2 * gib));
        let memory = DeviceCost { on_cpu: 0.9, ..cost(0.2, Some(5000.0)) };
        assert_eq!(decide(Some(memory), false, room, "p").kind, StreamKind::Direct);
        assert_eq!(decide(Some(cost(0.5, Some(900.0))), true, None, "p").kind, StreamKind::Direct);
        // The issue's disk (2.5 ms, 0.87 GB/s, reads 1.74): 1.85 s to write
        // and read 1 GiB, the page cache 1.43 s: the page cache.
        let slow = cost(2.5, Some(870.0));
        let d = decide(Some(slow), false, room, "p");
        assert_eq!(d.kind, StreamKind::Uring, "{}", d.why);
        assert!(d.why.contains("write-back threshold") && d.why.contains("1.85 s"), "{}", d.why);
        // The files, which reach the device in any case, bypass the cache.
        assert_eq!(d.files_kind, Some(StreamKind::UringDirect), "{}", d.why);
        // Zen 4's disk (0.59 ms, 2.1 GB/s, reads measured slower, 1.3 GB/s,
        // taken as 2.1): 1.01 s: O_DIRECT, one request at a time (1.8 GB/s
        // of 2.1 with 8 in flight).
        let fast = DeviceCost { read_bandwidth: Some(1300e6), ..cost(0.59, Some(2130.0)) };
        let d = decide(Some(fast), false, room, "p");
        assert_eq!((d.kind, d.files_kind), (StreamKind::Direct, None), "{}", d.why);
        assert!(d.why.contains("1.01 s") && d.why.contains("% of the device"), "{}", d.why);
        // Runs that do not fit: O_DIRECT, queued where the queue pays.
        let d = decide(Some(slow), false, None, "p");
        assert_eq!((d.kind, d.queue_depth), (StreamKind::UringDirect, 4), "{}", d.why);
        assert_eq!(decide(Some(fast), false, None, "p").kind, StreamKind::Direct);
        // Without the device's bandwidths, runs that fit take the cache.
        let unknown = cost(0.59, None);
        assert_eq!(decide(Some(unknown), false, room, "p").kind, StreamKind::Uring);
        assert_eq!(decide(None, false, room, "p").kind, StreamKind::UringDirect);
    }
}
