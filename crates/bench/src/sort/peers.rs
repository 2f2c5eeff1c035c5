//! The peers a sort campaign runs on the same input as emsort, and how a
//! run's resource usage is measured.
//!
//! - [`gnu_sort`]: `LC_ALL=C sort -S M --parallel=P -T TMP -o OUT IN`, a
//!   child process whose usage comes from `wait4` (context switches, page
//!   faults), its peak RSS from its `/proc/PID/status` `VmHWM` read while it
//!   runs and whose CPU migrations are counted by an
//!   inherited perf counter.
//! - [`in_memory`]: read the whole file, `par_sort_unstable` on all cores
//!   (a fresh pool), write it: the floor where the data fits in memory.
//! - [`io_bound`]: read the input once and write as many bytes once, with
//!   O_DIRECT streams of 8 MiB blocks: one pass at the device's sequential
//!   rates. The campaign's lower bound for a two-pass sort is twice this.
//! - [`stxxl_installed`], [`gnu_sort_version`]: machine facts.
//!
//! In-process runs measure their peak resident memory with [`PeakRss`]:
//! `/proc/self/clear_refs` resets the process's high-water mark (`VmHWM`)
//! before the run and `/proc/self/status` gives it after, so one run's peak
//! does not carry over into the next (`ru_maxrss` never goes down).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use emsort_io::{create_output, open_input, InputStream, OutputStream, StreamConfig, StreamKind};
use emsort_sort::stats::{MigrationCounter, Rusage};
use emsort_sort::{f32_key, f64_key, Format};
use rayon::prelude::*;

use super::record::RawRow;
use crate::{Error, Result};

/// Block size of the I/O bound's O_DIRECT streams.
pub const IO_BOUND_BLOCK: usize = 8 << 20;

/// Whether STXXL's headers are installed (`/usr/include/stxxl.h` or
/// `/usr/include/stxxl/`).
pub fn stxxl_installed() -> bool {
    Path::new("/usr/include/stxxl.h").exists() || Path::new("/usr/include/stxxl").is_dir()
}

/// The first line of `sort --version`, or `None` when `sort` cannot run.
pub fn gnu_sort_version() -> Option<String> {
    let o = Command::new("sort").arg("--version").env("LC_ALL", "C").output().ok()?;
    if !o.status.success() {
        return None;
    }
    String::from_utf8_lossy(&o.stdout).lines().next().map(|l| l.trim().to_string())
}

/// The process's peak resident memory since the last [`PeakRss::reset`].
pub struct PeakRss;

impl PeakRss {
    /// Resets the high-water mark (`echo 5 > /proc/self/clear_refs`);
    /// false when the kernel does not allow it.
    pub fn reset() -> bool {
        std::fs::write("/proc/self/clear_refs", b"5").is_ok()
    }

    /// Hands freed heap memory back to the kernel (`malloc_trim`), resets
    /// the high-water mark, and returns the resident memory then
    /// (`VmRSS`): the harness's own baseline, which the run's peak includes.
    /// `None` when the mark cannot be reset.
    pub fn start() -> Option<u64> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only releases free memory of the allocator.
        unsafe {
            libc::malloc_trim(0);
        }
        if !Self::reset() {
            return None;
        }
        let s = std::fs::read_to_string("/proc/self/status").ok()?;
        status_kb(&s, "VmRSS:")
    }

    /// `VmHWM` of `/proc/self/status` in bytes.
    pub fn read() -> Option<u64> {
        vm_hwm(&std::fs::read_to_string("/proc/self/status").ok()?)
    }
}

/// The `VmHWM` line of a `/proc/PID/status` text, in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    status_kb(status, "VmHWM:")
}

/// A `kB` field of a `/proc/PID/status` text, in bytes.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    let l = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = l[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Flushes `path` to the device (part of every tool's timed run, so that
/// all of them are timed to durable output).
pub fn sync_file(path: &Path) -> Result<()> {
    let f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    f.sync_all().map_err(|e| Error::io("fsync", path, e))
}

/// Fills the usage columns of `row` from a `Rusage` delta.
pub(crate) fn put_usage(row: &mut RawRow, u: &Rusage) {
    row.voluntary_cs = u.voluntary_context_switches;
    row.involuntary_cs = u.involuntary_context_switches;
    row.minor_faults = u.minor_page_faults;
    row.major_faults = u.major_page_faults;
}

/// Runs GNU sort on `input` into `output` with `-S memory`, `--parallel
/// threads` and `-T tmp`; fills `row`'s time and usage columns.
pub fn gnu_sort(
    input: &Path,
    output: &Path,
    tmp: &Path,
    memory: u64,
    threads: usize,
    row: &mut RawRow,
) -> Result<()> {
    let what = || format!("GNU sort -S {memory}b --parallel={threads} on {}", input.display());
    let migrations = MigrationCounter::start();
    let started = Instant::now();
    let mut child = Command::new("sort")
        .env("LC_ALL", "C")
        .arg("-S")
        .arg(format!("{memory}b"))
        .arg(format!("--parallel={threads}"))
        .arg("-T")
        .arg(tmp)
        .arg("-o")
        .arg(output)
        .arg(input)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Campaign(format!("{}: cannot start sort: {e}", what())))?;
    let pid = child.id() as libc::pid_t;
    // The child's ru_maxrss starts from this process's high-water mark
    // (exec records the mm it leaves), so the peak is read from the child's
    // own /proc/PID/status while it runs, every few milliseconds (VmHWM only
    // grows, so the last reading is the peak up to then).
    let status_path = format!("/proc/{pid}/status");
    let mut hwm: Option<u64> = None;
    // SAFETY: `status` and `ru` are plain data wait4 fills; the pid is our
    // own child, not yet reaped (std's Child never waits on its own).
    let mut status: libc::c_int = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        if let Some(v) = std::fs::read_to_string(&status_path).ok().as_deref().and_then(vm_hwm) {
            hwm = Some(hwm.unwrap_or(0).max(v));
        }
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == 0 || (r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted) {
            std::thread::sleep(std::time::Duration::from_millis(4));
            continue;
        }
        break r;
    };
    if r != pid {
        return Err(Error::Campaign(format!(
            "{}: wait4 failed: {}",
            what(),
            std::io::Error::last_os_error()
        )));
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = std::process::ExitStatus::from_raw(status);
    if !status.success() {
        return Err(Error::Campaign(format!("{} failed ({status}): {}", what(), err.trim())));
    }
    sync_file(output)?;
    row.seconds = started.elapsed().as_secs_f64();
    row.cpu_migrations = migrations.and_then(|m| m.read());
    row.peak_rss_bytes = hwm.or(Some(ru.ru_maxrss.max(0) as u64 * 1024));
    row.voluntary_cs = ru.ru_nvcsw.max(0) as u64;
    row.involuntary_cs = ru.ru_nivcsw.max(0) as u64;
    row.minor_faults = ru.ru_minflt.max(0) as u64;
    row.major_faults = ru.ru_majflt.max(0) as u64;
    Ok(())
}

/// Reads `input` whole, sorts it in memory on `threads` threads (a fresh
/// pool, so the perf counter sees its threads), writes `output`; fills
/// `row`'s time and usage columns.
pub fn in_memory(
    format: Format,
    input: &Path,
    output: &Path,
    threads: usize,
    row: &mut RawRow,
) -> Result<()> {
    let migrations = MigrationCounter::start();
    let usage0 = Rusage::now();
    let before = PeakRss::start();
    let started = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Campaign(format!("in-memory sort: cannot start a thread pool: {e}")))?;
    let mut data = std::fs::read(input).map_err(|e| Error::io("read", input, e))?;
    let file = std::fs::File::create(output).map_err(|e| Error::io("create", output, e))?;
    let mut w = std::io::BufWriter::with_capacity(8 << 20, file);
    let werr = |e| Error::io("write", output, e);
    macro_rules! numbers {
        ($t:ty, $sort:expr) => {{
            let mut v: Vec<$t> = data
                .chunks_exact(std::mem::size_of::<$t>())
                .map(|c| <$t>::from_ne_bytes(c.try_into().expect("item size")))
                .collect();
            drop(std::mem::take(&mut data));
            pool.install(|| $sort(&mut v));
            w.write_all(emsort_io::as_bytes(&v)).map_err(werr)?;
        }};
    }
    match format {
        Format::U32 => numbers!(u32, |v: &mut Vec<u32>| v.par_sort_unstable()),
        Format::I32 => numbers!(i32, |v: &mut Vec<i32>| v.par_sort_unstable()),
        Format::U64 => numbers!(u64, |v: &mut Vec<u64>| v.par_sort_unstable()),
        Format::I64 => numbers!(i64, |v: &mut Vec<i64>| v.par_sort_unstable()),
        Format::F32 => numbers!(f32, |v: &mut Vec<f32>| v.par_sort_unstable_by_key(|x| f32_key(*x))),
        Format::F64 => numbers!(f64, |v: &mut Vec<f64>| v.par_sort_unstable_by_key(|x| f64_key(*x))),
        Format::Rec(r) => {
            let mut recs: Vec<&[u8]> = data.chunks_exact(r.size).collect();
            let k = r.key_offset..r.key_offset + r.key_len;
            pool.install(|| recs.par_sort_by(|a, b| a[k.clone()].cmp(&b[k.clone()])));
            for rec in recs {
                w.write_all(rec).map_err(werr)?;
            }
        }
        Format::Lines => {
            let text = data.strip_suffix(b"\n").unwrap_or(&data);
            // An 8-byte big-endian prefix (zero-padded) orders lines as their
            // bytes do; ties fall back to the whole line.
            let prefix = |l: &[u8]| {
                let mut k = [0u8; 8];
                let n = l.len().min(8);
                k[..n].copy_from_slice(&l[..n]);
                u64::from_be_bytes(k)
            };
            let mut lines: Vec<(u64, &[u8])> = if data.is_empty() {
                Vec::new()
            } else {
                text.split(|&b| b == b'\n').map(|l| (prefix(l), l)).collect()
            };
            pool.install(|| lines.par_sort_unstable());
            for (_, l) in lines {
                w.write_all(l).map_err(werr)?;
                w.write_all(b"\n").map_err(werr)?;
            }
        }
    }
    let file = w.into_inner().map_err(|e| Error::io("write", output, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io("fsync", output, e))?;
    drop(file);
    drop(pool);
    row.seconds = started.elapsed().as_secs_f64();
    row.cpu_migrations = migrations.and_then(|m| m.read());
    row.rss_before_bytes = before;
    row.peak_rss_bytes = before.and_then(|_| PeakRss::read());
    put_usage(row, &Rusage::now().since(&usage0));
    Ok(())
}

/// Reads `input` once and writes as many bytes to `output` once, both with
/// O_DIRECT streams of [`IO_BOUND_BLOCK`] bytes (the write synced on
/// close); fills `row`: `seconds` = read + write, `run_formation_s` = the
/// read, `merge_s` = the write.
pub fn io_bound(input: &Path, output: &Path, row: &mut RawRow) -> Result<()> {
    let cfg = StreamConfig::new(StreamKind::Direct).block_size(IO_BOUND_BLOCK);
    let migrations = MigrationCounter::start();
    let usage0 = Rusage::now();
    let before = PeakRss::start();
    let mut buf = vec![0u8; IO_BOUND_BLOCK];
    let t0 = Instant::now();
    let mut inp = open_input::<u8>(input, &cfg)?;
    let mut total = 0u64;
    loop {
        let n = inp.read_into(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    inp.close()?;
    let t_read = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut out = create_output::<u8>(output, &cfg.sync_on_close(true))?;
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        out.write_all(&buf[..n])?;
        left -= n as u64;
    }
    out.close()?;
    let t_write = t1.elapsed().as_secs_f64();
    row.seconds = t_read + t_write;
    row.run_formation_s = Some(t_read);
    row.merge_s = Some(t_write);
    row.bytes_read = Some(total);
    row.bytes_written = Some(total);
    row.block_size = Some(IO_BOUND_BLOCK as u64);
    row.io = "direct".into();
    row.cpu_migrations = migrations.and_then(|m| m.read());
    row.rss_before_bytes = before;
    row.peak_rss_bytes = before.and_then(|_| PeakRss::read());
    put_usage(row, &Rusage::now().since(&usage0));
    Ok(())
}

/// Whether two files hold the same bytes (streamed, 8 MiB at a time).
pub fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    let open = |p: &Path| std::fs::File::open(p).map_err(|e| Error::io("open", p, e));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let la = fa.metadata().map_err(|e| Error::io("stat", a, e))?.len();
    let lb = fb.metadata().map_err(|e| Error::io("stat", b, e))?.len();
    if la != lb {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    let mut left = la;
    while left > 0 {
        let n = left.min(ba.len() as u64) as usize;
        fa.read_exact(&mut ba[..n]).map_err(|e| Error::io("read", a, e))?;
        fb.read_exact(&mut bb[..n]).map_err(|e| Error::io("read", b, e))?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
        left -= n as u64;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_sort_lines_like_each_other() {
        let d = tempfile::tempdir().unwrap();
        let inp = d.path().join("in.txt");
        std::fs::write(&inp, b"b\n\nz\xff\na\x00b\nab").unwrap();
        let (o1, o2, o3) = (d.path().join("1"), d.path().join("2"), d.path().join("3"));
        let mut row = RawRow::new("in-memory", "lines", 13, 5, 2, 1);
        in_memory(Format::Lines, &inp, &o1, 2, &mut row).unwrap();
        assert_eq!(std::fs::read(&o1).unwrap(), b"\na\x00b\nab\nb\nz\xff\n");
        assert!(row.seconds > 0.0);
        if gnu_sort_version().is_some() {
            let mut g = RawRow::new("gnu-sort", "lines", 13, 5, 1, 1);
            gnu_sort(&inp, &o2, d.path(), 1 << 20, 1, &mut g).unwrap();
            assert!(same_bytes(&o1, &o2).unwrap());
            assert!(g.peak_rss_bytes.unwrap() > 0);
        }
        let mut io = RawRow::new("io-bound", "lines", 13, 5, 1, 1);
        io_bound(&inp, &o3, &mut io).unwrap();
        assert_eq!(io.bytes_read, Some(12));
        assert!(same_bytes(&o3, &o3).unwrap() && !same_bytes(&o1, &inp).unwrap());
    }

    #[test]
    fn in_memory_numbers() {
        let d = tempfile::tempdir().unwrap();
        let inp = d.path().join("in");
        let xs: Vec<u32> = vec![5, 1, 4, 1, 3];
        std::fs::write(&inp, emsort_io::as_bytes(&xs)).unwrap();
        let out = d.path().join("out");
        let mut row = RawRow::new("in-memory", "u32", 20, 5, 1, 1);
        in_memory(Format::U32, &inp, &out, 1, &mut row).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), emsort_io::as_bytes(&[1u32, 1, 3, 4, 5]));
    }
}
