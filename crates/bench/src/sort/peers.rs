//! The peers a sort campaign runs on the same input as emsort, and how a
//! run's resource usage is measured.
//!
//! - [`run_child`]: runs a command as a child process and measures it: wall
//!   time, `wait4`'s rusage (context switches, page faults), its peak RSS
//!   from its `/proc/PID/status` `VmHWM` read while it runs, CPU migrations
//!   from an inherited perf counter. The campaign runs `emsort sort` itself
//!   this way (so the numbers are the sort's, not the harness's), and the
//!   child peers below.
//! - [`text_sort`]: `LC_ALL=C sort -S M --parallel=P -T TMP -o OUT IN`, a
//!   child process, with GNU's sort or uutils' ([`TextSort`]).
//! - [`StxxlBuild`] / [`StxxlDriver`] / [`stxxl_sort`]: STXXL's pipelined
//!   sorter on u32, through a small C++ driver (`bench/stxxl/stxxl_sort.cpp`,
//!   built into the harness as [`STXXL_DRIVER_SOURCE`]) compiled with `g++
//!   -O3` at the start of a campaign when STXXL's headers are installed.
//! - [`in_memory`]: read the whole file, sort it on all cores (numbers with
//!   emsort's own radix sort, [`emsort_sort::sort_numbers`]; records and
//!   lines with `par_sort`) in a fresh pool, write it: the floor where the
//!   data fits in memory.
//! - the I/O bound ([`super::fio::io_bound`]): read the input once and write as many bytes once, with
//!   O_DIRECT streams of 8 MiB blocks: one pass at the device's sequential
//!   rates. The campaign's lower bound for a two-pass sort is twice this.
//! - [`stxxl_installed`], [`gnu_sort_version`], [`cxx_version`]: machine
//!   facts.
//!
//! In-process runs measure their peak resident memory with [`PeakRss`]:
//! `/proc/self/clear_refs` resets the process's high-water mark (`VmHWM`)
//! before the run and `/proc/self/status` gives it after, so one run's peak
//! does not carry over into the next (`ru_maxrss` never goes down).

use std::io::{Read, Seek, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use emsort_io::rusage;
use emsort_io::ErrorKind;
use emsort_sort::stats::{MigrationCounter, Rusage};
use emsort_sort::Format;
use rayon::prelude::*;

use super::record::RawRow;
use crate::{Error, Result};

/// Whether STXXL's headers are installed (`/usr/include/stxxl.h` or
/// `/usr/include/stxxl/`).
pub fn stxxl_installed() -> bool {
    StxxlBuild::default().installed()
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

/// What a child process did and used ([`run_child`]).
#[derive(Debug, Clone)]
pub struct ChildRun {
    /// Wall time from the spawn to the child's exit, seconds.
    pub seconds: f64,
    /// How it ended.
    pub status: ExitStatus,
    /// What it printed on standard output.
    pub stdout: String,
    /// What it printed on standard error.
    pub stderr: String,
    /// Its peak resident memory: the child's own `VmHWM`, read from
    /// `/proc/PID/status` every few milliseconds while it runs (`VmHWM`
    /// only grows); `wait4`'s `ru_maxrss` when no reading succeeded.
    pub peak_rss_bytes: Option<u64>,
    /// `wait4`'s usage of the child (its peak RSS field is `ru_maxrss`,
    /// which starts from the harness's own high-water mark at the spawn).
    pub usage: Rusage,
    /// CPU migrations of the child's threads (and of the harness thread
    /// that waits for it), where perf events can be counted.
    pub cpu_migrations: Option<u64>,
    /// `wait4`'s user CPU time of the child (all its threads), seconds.
    pub user_s: f64,
    /// `wait4`'s system CPU time of the child, seconds.
    pub system_s: f64,
}

/// Runs `cmd` (standard input closed, standard output and error captured)
/// and measures it (see [`ChildRun`]). Only a failure to start or to wait
/// is an error: an exit status other than 0 is returned, for the caller to
/// judge. When `cancel` is set while the child runs, the child gets
/// SIGTERM and the result is an
/// [`Interrupted`](emsort_io::ErrorKind::Interrupted) error about
/// `interrupt_path`.
pub fn run_child(cmd: Command, what: &str, cancel: &AtomicBool, interrupt_path: &Path) -> Result<ChildRun> {
    run_child_with(cmd, what, cancel, interrupt_path, None)
}

/// [`run_child`] with the child's standard input and output given
/// (`emsort sort < IN > OUT`); its standard error is still captured.
pub fn run_child_with(
    mut cmd: Command,
    what: &str,
    cancel: &AtomicBool,
    interrupt_path: &Path,
    stdio: Option<(std::fs::File, std::fs::File)>,
) -> Result<ChildRun> {
    let spool = || {
        tempfile::tempfile()
            .map_err(|e| Error::Campaign(format!("{what}: cannot create a file for its output: {e}")))
    };
    let (mut out, mut err) = (spool()?, spool()?);
    let (out2, err2) = (
        out.try_clone().map_err(|e| Error::Campaign(format!("{what}: {e}")))?,
        err.try_clone().map_err(|e| Error::Campaign(format!("{what}: {e}")))?,
    );
    match stdio {
        Some((i, o)) => cmd.stdin(i).stdout(o).stderr(err2),
        None => cmd.stdin(Stdio::null()).stdout(out2).stderr(err2),
    };
    // The child's ru_maxrss starts from this process's high-water mark
    // (exec records the mm it leaves): keep that mark low.
    let _ = PeakRss::start();
    let migrations = MigrationCounter::start();
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| Error::Campaign(format!("{what}: cannot start: {e}")))?;
    drop(cmd); // closes the parent's copies of the output files' descriptors
    let pid = child.id() as libc::pid_t;
    // The peak is read from the child's own /proc/PID/status while it runs,
    // every few milliseconds (VmHWM only grows, so the last reading is the
    // peak up to then).
    let status_path = format!("/proc/{pid}/status");
    let mut hwm: Option<u64> = None;
    let mut cancelled = false;
    let waited = loop {
        if let Some(v) = std::fs::read_to_string(&status_path).ok().as_deref().and_then(vm_hwm) {
            hwm = Some(hwm.unwrap_or(0).max(v));
        }
        if !cancelled && cancel.load(Ordering::Relaxed) {
            cancelled = true;
            // SAFETY: signalling our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        // The pid is our own child, not yet reaped (std's Child never
        // waits on its own).
        match rusage::wait4(pid, libc::WNOHANG) {
            Ok(Some(done)) => break Ok(done),
            Ok(None) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
        std::thread::sleep(Duration::from_millis(4));
    };
    let seconds = started.elapsed().as_secs_f64();
    let (status, usage) = waited.map_err(|e| Error::Campaign(format!("{what}: wait4 failed: {e}")))?;
    if cancelled {
        return Err(Error::Io(emsort_io::Error::new(ErrorKind::Interrupted, interrupt_path)));
    }
    let text = |f: &mut std::fs::File| {
        let mut s = String::new();
        let mut bytes = Vec::new();
        if f.rewind().is_ok() && f.read_to_end(&mut bytes).is_ok() {
            s = String::from_utf8_lossy(&bytes).into_owned();
        }
        s
    };
    let ru_maxrss = usage.max_rss_bytes;
    Ok(ChildRun {
        seconds,
        status: ExitStatus::from_raw(status),
        stdout: text(&mut out),
        stderr: text(&mut err),
        peak_rss_bytes: hwm.or(Some(ru_maxrss)),
        usage: Rusage {
            peak_rss_bytes: ru_maxrss,
            voluntary_context_switches: usage.voluntary_context_switches,
            involuntary_context_switches: usage.involuntary_context_switches,
            minor_page_faults: usage.minor_faults,
            major_page_faults: usage.major_faults,
            user_seconds: usage.user_seconds,
            system_seconds: usage.system_seconds,
        },
        cpu_migrations: migrations.and_then(|m| m.read()),
        user_s: usage.user_seconds,
        system_s: usage.system_seconds,
    })
}

/// The last lines of a child's message (at most 20 lines, 2000 bytes),
/// trimmed, for an error text.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    let mut t = lines[lines.len().saturating_sub(20)..].join("\n");
    if t.len() > 2000 {
        let mut cut = t.len() - 2000;
        while !t.is_char_boundary(cut) {
            cut += 1;
        }
        t = format!("…{}", &t[cut..]);
    }
    t
}

/// Fills `row`'s usage columns from a child run (its `seconds` are the
/// caller's: they include an `fsync` of the output).
pub(crate) fn put_child(row: &mut RawRow, c: &ChildRun) {
    row.peak_rss_bytes = c.peak_rss_bytes;
    row.cpu_migrations = c.cpu_migrations;
    row.user_s = Some(c.user_s);
    row.system_s = Some(c.system_s);
    put_usage(row, &c.usage);
}

/// A text sort beside emsort's on `lines`: GNU's or uutils'.
#[derive(Debug, Clone, Copy)]
pub enum TextSort<'a> {
    /// GNU sort, `sort` on the `PATH`.
    Gnu,
    /// uutils sort: `EXE sort` (its multi-call binary).
    Uutils(&'a Path),
}

/// `LC_ALL=C sort -S Mb --parallel=T -T TMP -o OUT IN` with GNU's sort or
/// uutils' (`EXE sort …`, the same options), as a child process; `row`
/// gets its time until OUT is synced, its rusage and peak RSS.
#[allow(clippy::too_many_arguments)]
pub fn text_sort(
    sort: TextSort<'_>,
    input: &Path,
    output: &Path,
    tmp: &Path,
    memory: u64,
    threads: usize,
    cancel: &AtomicBool,
    row: &mut RawRow,
) -> Result<()> {
    let (mut cmd, name) = match sort {
        TextSort::Gnu => (Command::new("sort"), "GNU sort"),
        TextSort::Uutils(exe) => {
            let mut c = Command::new(exe);
            c.arg("sort");
            (c, "uutils sort")
        }
    };
    let what = format!("{name} -S {memory}b --parallel={threads} on {}", input.display());
    cmd.env("LC_ALL", "C")
        .arg("-S")
        .arg(format!("{memory}b"))
        .arg(format!("--parallel={threads}"))
        .arg("-T")
        .arg(tmp)
        .arg("-o")
        .arg(output)
        .arg(input);
    let c = run_child(cmd, &what, cancel, tmp)?;
    if !c.status.success() {
        return Err(Error::Campaign(format!("{what} failed ({}): {}", c.status, tail(&c.stderr))));
    }
    row.seconds = c.seconds;
    let t = Instant::now();
    sync_file(output)?;
    row.seconds += t.elapsed().as_secs_f64();
    put_child(row, &c);
    Ok(())
}

/// The C++ source of the STXXL driver, `bench/stxxl/stxxl_sort.cpp`:
/// `stxxl_sort INPUT OUTPUT MEMORY_BYTES TEMP_DIR [THREADS [FILEIO]]` sorts
/// a file of u32 with `stxxl::sorter` and prints a line `stxxl_sort:
/// seconds=… run_formation_s=… merge_s=… items=… block=…`.
pub const STXXL_DRIVER_SOURCE: &str = include_str!("../../../../bench/stxxl/stxxl_sort.cpp");

/// How a campaign builds the STXXL driver: the C++ compiler and where
/// STXXL's headers are (a missing header directory means "not installed").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StxxlBuild {
    /// The C++ compiler (`g++`).
    pub cxx: String,
    /// The directory holding `stxxl.h` and `stxxl/` (`/usr/include`).
    pub include_dir: PathBuf,
}

impl Default for StxxlBuild {
    fn default() -> StxxlBuild {
        StxxlBuild { cxx: "g++".into(), include_dir: PathBuf::from("/usr/include") }
    }
}

/// The STXXL driver, compiled ([`StxxlBuild::compile`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StxxlDriver {
    /// The executable.
    pub exe: PathBuf,
    /// STXXL's version ([`StxxlBuild::version`]).
    pub version: String,
    /// The command that compiled it.
    pub command: String,
}

impl StxxlBuild {
    /// Whether STXXL's headers are there (`stxxl.h` or `stxxl/` in
    /// [`include_dir`](StxxlBuild::include_dir)).
    pub fn installed(&self) -> bool {
        self.include_dir.join("stxxl.h").exists() || self.include_dir.join("stxxl").is_dir()
    }

    /// STXXL's version from its headers (`STXXL_VERSION_STRING` and
    /// `STXXL_VERSION_PHASE` of `stxxl/bits/config.h`), with Debian's
    /// package version where `dpkg-query` knows `libstxxl-dev`:
    /// `1.4.1 (prerelease/Debug), Debian libstxxl-dev 1.4.1-3`.
    pub fn version(&self) -> Option<String> {
        let config = std::fs::read_to_string(self.include_dir.join("stxxl/bits/config.h")).ok()?;
        let define = |name: &str| -> Option<String> {
            config.lines().find_map(|l| {
                let rest = l.trim().strip_prefix("#define")?.trim_start().strip_prefix(name)?;
                Some(rest.trim().trim_matches('"').to_string())
            })
        };
        let mut v = define("STXXL_VERSION_STRING ")?;
        if let Some(phase) = define("STXXL_VERSION_PHASE ") {
            v.push_str(&format!(" ({phase})"));
        }
        if self.include_dir == Path::new("/usr/include") {
            if let Ok(o) = Command::new("dpkg-query").args(["-W", "-f=${Version}", "libstxxl-dev"]).output() {
                let deb = String::from_utf8_lossy(&o.stdout).trim().to_string();
                if o.status.success() && !deb.is_empty() {
                    v.push_str(&format!(", Debian libstxxl-dev {deb}"));
                }
            }
        }
        Some(v)
    }

    /// The compiler and linker flags: `pkg-config --cflags --libs stxxl`
    /// where STXXL ships a `.pc` file, else what Debian's package needs
    /// (`-fopenmp -pthread … -lstxxl`, with `-I` for a header directory
    /// other than `/usr/include`).
    fn flags(&self) -> (Vec<String>, Vec<String>) {
        if self.include_dir == Path::new("/usr/include") {
            if let Ok(o) = Command::new("pkg-config").args(["--cflags", "--libs", "stxxl"]).output() {
                if o.status.success() {
                    let f: Vec<String> =
                        String::from_utf8_lossy(&o.stdout).split_whitespace().map(String::from).collect();
                    return (vec!["-fopenmp".into(), "-pthread".into()], f);
                }
            }
        }
        let mut cflags = vec!["-fopenmp".to_string(), "-pthread".to_string()];
        if self.include_dir != Path::new("/usr/include") {
            cflags.push(format!("-I{}", self.include_dir.display()));
        }
        (cflags, vec!["-lstxxl".into()])
    }

    /// Writes [`STXXL_DRIVER_SOURCE`] into `dir` and compiles it there with
    /// `CXX -O3 -DNDEBUG -std=c++14` and STXXL's flags. The error is a text
    /// for `machine.json`: STXXL not installed, the compiler missing, or
    /// the compiler's last lines.
    pub fn compile(&self, dir: &Path) -> std::result::Result<StxxlDriver, String> {
        if !self.installed() {
            return Err(format!("STXXL is not installed (no stxxl.h in {})", self.include_dir.display()));
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let src = dir.join("stxxl_sort.cpp");
        let exe = dir.join("stxxl_sort");
        std::fs::write(&src, STXXL_DRIVER_SOURCE)
            .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
        let (cflags, libs) = self.flags();
        let mut args: Vec<String> = vec!["-O3".into(), "-DNDEBUG".into(), "-std=c++14".into()];
        args.extend(cflags);
        args.push(src.display().to_string());
        args.push("-o".into());
        args.push(exe.display().to_string());
        args.extend(libs);
        let command = format!("{} {}", self.cxx, args.join(" "));
        let o = Command::new(&self.cxx)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run the C++ compiler '{}': {e}", self.cxx))?;
        if !o.status.success() {
            return Err(format!(
                "`{command}` failed ({}): {}",
                o.status,
                tail(&String::from_utf8_lossy(&o.stderr))
            ));
        }
        Ok(StxxlDriver { exe, version: self.version().unwrap_or_else(|| "unknown".into()), command })
    }
}

/// The first line of `CXX --version` (`g++ (Debian 12.2.0-14) 12.2.0`), or
/// `None` when it cannot run.
pub fn cxx_version(cxx: &str) -> Option<String> {
    let o = Command::new(cxx).arg("--version").output().ok()?;
    if !o.status.success() {
        return None;
    }
    String::from_utf8_lossy(&o.stdout).lines().next().map(|l| l.trim().to_string())
}

/// The numbers of the driver's `stxxl_sort: seconds=… run_formation_s=…`
/// line: (run formation s, merge s, block bytes, fileio).
fn parse_driver_line(stdout: &str) -> Option<(f64, f64, u64, String)> {
    let line = stdout.lines().rev().find_map(|l| l.strip_prefix("stxxl_sort: "))?;
    let field = |k: &str| line.split_whitespace().find_map(|w| w.strip_prefix(k)?.strip_prefix('='));
    Some((
        field("run_formation_s")?.parse().ok()?,
        field("merge_s")?.parse().ok()?,
        field("block")?.parse().ok()?,
        field("fileio")?.to_string(),
    ))
}

/// Runs the STXXL driver on the u32 file `input` into `output` with
/// `memory` bytes, `threads` OpenMP threads (`OMP_WAIT_POLICY=passive`)
/// and its scratch file in `tmp`;
/// fills `row`'s time, phases (the driver's own: pushing the input into
/// the sorter and writing its last run / merging and writing the output),
/// block size and usage columns. A failed run is an
/// [`Error::Campaign`] holding the driver's message.
#[allow(clippy::too_many_arguments)]
pub fn stxxl_sort(
    driver: &StxxlDriver,
    input: &Path,
    output: &Path,
    tmp: &Path,
    memory: u64,
    threads: usize,
    cancel: &AtomicBool,
    row: &mut RawRow,
) -> Result<()> {
    let what = format!("STXXL M={memory} threads={threads} on {}", input.display());
    let mut cmd = Command::new(&driver.exe);
    cmd.arg(input).arg(output).arg(memory.to_string()).arg(tmp).arg(threads.to_string());
    // OpenMP threads that spin while they wait steal the only other core
    // from STXXL's I/O threads here: passive waiting made a 2-thread sort
    // of 64 MiB with M = 8 MiB 4-6x faster (and never slower).
    cmd.env("OMP_NUM_THREADS", threads.to_string()).env("OMP_WAIT_POLICY", "passive").current_dir(tmp);
    let c = run_child(cmd, &what, cancel, tmp)?;
    if !c.status.success() {
        let msg = if c.stderr.trim().is_empty() { tail(&c.stdout) } else { tail(&c.stderr) };
        return Err(Error::Campaign(format!("{what} failed ({}): {msg}", c.status)));
    }
    let Some((rf, merge, block, fileio)) = parse_driver_line(&c.stdout) else {
        return Err(Error::Campaign(format!(
            "{what}: no 'stxxl_sort:' line in its output: {}",
            tail(&c.stdout)
        )));
    };
    let t = Instant::now();
    sync_file(output)?;
    row.seconds = c.seconds + t.elapsed().as_secs_f64();
    row.run_formation_s = Some(rf);
    row.merge_s = Some(merge);
    row.block_size = Some(block);
    row.io = fileio;
    put_child(row, &c);
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
        Format::U32 => numbers!(u32, |v: &mut Vec<u32>| emsort_sort::sort_numbers(v, false)),
        Format::I32 => numbers!(i32, |v: &mut Vec<i32>| emsort_sort::sort_numbers(v, false)),
        Format::U64 => numbers!(u64, |v: &mut Vec<u64>| emsort_sort::sort_numbers(v, false)),
        Format::I64 => numbers!(i64, |v: &mut Vec<i64>| emsort_sort::sort_numbers(v, false)),
        Format::F32 => numbers!(f32, |v: &mut Vec<f32>| emsort_sort::sort_numbers(v, false)),
        Format::F64 => numbers!(f64, |v: &mut Vec<f64>| emsort_sort::sort_numbers(v, false)),
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
            let no = AtomicBool::new(false);
            text_sort(TextSort::Gnu, &inp, &o2, d.path(), 1 << 20, 1, &no, &mut g).unwrap();
            assert!(same_bytes(&o1, &o2).unwrap());
            assert!(g.peak_rss_bytes.unwrap() > 0);
        }
        let mut io = RawRow::new("io-bound", "lines", 13, 5, 1, 1);
        super::super::fio::io_bound(&inp, &o3, &mut io).unwrap();
        assert_eq!(io.bytes_read, Some(12));
        assert!(same_bytes(&o3, &o3).unwrap() && !same_bytes(&o1, &inp).unwrap());
    }

    #[test]
    fn child_runs_are_measured_and_cancelled() {
        let d = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let c = run_child(cmd, "sh", &AtomicBool::new(false), d.path()).unwrap();
        assert_eq!(c.status.code(), Some(3));
        assert_eq!((c.stdout.as_str(), c.stderr.as_str()), ("out\n", "err\n"));
        assert!(c.peak_rss_bytes.unwrap() > 0 && c.seconds > 0.0);
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let t = Instant::now();
        let e = run_child(cmd, "sleep", &AtomicBool::new(true), d.path()).unwrap_err();
        assert!(matches!(&e, Error::Io(io) if *io.kind() == ErrorKind::Interrupted), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(tail(&"x\n".repeat(50)), "x\n".repeat(20).trim_end());
    }

    #[test]
    fn driver_line_parses() {
        let out = "[STXXL-MSG] STXXL v1.4.1\nstxxl_sort: seconds=1.5 run_formation_s=1.0 merge_s=0.5 \
                   items=4 block=2097152 threads=2 fileio=syscall version=1.4.1\n";
        assert_eq!(parse_driver_line(out), Some((1.0, 0.5, 2 << 20, "syscall".to_string())));
        assert_eq!(parse_driver_line("stxxl_sort: seconds=1\n"), None);
    }

    /// STXXL missing, a compiler that cannot run or fails, a driver that
    /// fails or prints nothing: each is an error text, never a panic.
    #[test]
    fn stxxl_peer_fails_cleanly() {
        let d = tempfile::tempdir().unwrap();
        let missing = StxxlBuild { cxx: "g++".into(), include_dir: d.path().join("no-such-include") };
        assert!(!missing.installed() && missing.version().is_none());
        let e = missing.compile(&d.path().join("b1")).unwrap_err();
        assert!(e.contains("not installed"), "{e}");
        // Fake headers: the build is attempted with the given compiler.
        let inc = d.path().join("include");
        std::fs::create_dir_all(inc.join("stxxl/bits")).unwrap();
        std::fs::write(inc.join("stxxl.h"), "").unwrap();
        std::fs::write(
            inc.join("stxxl/bits/config.h"),
            "#define STXXL_VERSION_STRING \"9.9.9\"\n#define STXXL_VERSION_PHASE \"test\"\n",
        )
        .unwrap();
        let no_cxx =
            StxxlBuild { cxx: d.path().join("no-such-cxx").display().to_string(), include_dir: inc.clone() };
        assert_eq!(no_cxx.version().as_deref(), Some("9.9.9 (test)"));
        let e = no_cxx.compile(&d.path().join("b2")).unwrap_err();
        assert!(e.contains("cannot run the C++ compiler"), "{e}");
        let failing = StxxlBuild { cxx: "false".into(), include_dir: inc };
        let e = failing.compile(&d.path().join("b3")).unwrap_err();
        assert!(e.contains("failed") && e.contains("-O3"), "{e}");
        assert!(d.path().join("b3/stxxl_sort.cpp").exists());
        // A driver that fails, and one that prints no timing line.
        let inp = d.path().join("in");
        std::fs::write(&inp, [0u8; 16]).unwrap();
        let out = d.path().join("out");
        let no = AtomicBool::new(false);
        for (exe, want) in [("false", "failed"), ("true", "no 'stxxl_sort:' line")] {
            let driver = StxxlDriver { exe: exe.into(), version: "test".into(), command: String::new() };
            let mut row = RawRow::new("stxxl", "u32", 16, 4, 1, 1);
            let e = stxxl_sort(&driver, &inp, &out, d.path(), 1 << 20, 1, &no, &mut row).unwrap_err();
            assert!(matches!(e, Error::Campaign(_)) && e.to_string().contains(want), "{e}");
        }
    }

    /// The real driver (needs Debian's libstxxl-dev and g++; compiling takes
    /// about 20 s): 1 MiB of u32 with the extreme values, its output byte for
    /// byte emsort's.
    #[test]
    #[ignore = "needs libstxxl-dev and g++ (bench/setup.sh); compiling takes ~20 s"]
    fn stxxl_driver_sorts_like_emsort() {
        let build = StxxlBuild::default();
        if !build.installed() {
            eprintln!("STXXL is not installed: skipped");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let driver = build.compile(&d.path().join("stxxl")).unwrap();
        assert!(driver.version.starts_with("1."), "{}", driver.version);
        let inp = d.path().join("in.u32");
        let mut xs: Vec<u32> =
            (0..(1u32 << 18)).map(|i| i.wrapping_mul(2_654_435_761).rotate_left(i % 31)).collect();
        xs[7] = 0;
        xs[99] = u32::MAX;
        xs[1000] = u32::MAX;
        std::fs::write(&inp, emsort_io::as_bytes(&xs)).unwrap();
        let tmp = d.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let no = AtomicBool::new(false);
        let em = d.path().join("emsort.out");
        let plan = emsort_sort::SortPlan::builder(Format::U32)
            .memory(256 << 10)
            .fan_in(8)
            .temp_dir(&tmp)
            .input_bytes(4 << 18)
            .build()
            .unwrap();
        emsort_sort::sort_file(&plan, &inp, &em, &emsort_io::NoProgress, &no).unwrap();
        for (memory, threads) in [(256u64 << 10, 1), (4 << 20, 2)] {
            let out = d.path().join("stxxl.out");
            let mut row = RawRow::new("stxxl", "u32", 4 << 18, 1 << 18, threads, 1);
            stxxl_sort(&driver, &inp, &out, &tmp, memory, threads, &no, &mut row).unwrap();
            assert!(same_bytes(&out, &em).unwrap(), "M={memory} t={threads}");
            assert!(row.seconds > 0.0 && row.block_size.unwrap() >= 4 << 10, "{row:?}");
            assert!(row.peak_rss_bytes.unwrap() > 0);
        }
        // Its scratch file is unlinked as soon as it is open: nothing is left.
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
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
