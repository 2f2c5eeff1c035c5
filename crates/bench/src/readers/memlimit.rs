//! Reading more than the available memory: a child process, and how its
//! memory is limited.
//!
//! The reads of the memory experiment run in a child process, this binary's
//! hidden `emsort bench readers-worker` ([`worker_main`]), so that the limit
//! applies to the reader alone:
//!
//! ```text
//!  parent                                  child (readers-worker)
//!  empty the page cache
//!  spawn ─────────────────────────────────► reads the job (one JSON line)
//!  cgroup2: write its pid to cgroup.procs   waits for "go"
//!  "go" ──────────────────────────────────► measure() ─► one JSON line
//!  wait, read the result ◄─────────────────┘
//! ```
//!
//! [`LimitMethod`], in the order `auto` tries them:
//!
//! 1. `cgroup2`: a child cgroup of this process's cgroup v2 group with
//!    `memory.max` = the limit, when the v2 hierarchy offers the memory
//!    controller to it (`cgroup.subtree_control` lists `memory`; nothing
//!    is enabled by us). Page cache is charged to the cgroup, so the
//!    kernel reclaims the file's pages at the limit. Removed at the end.
//! 2. `balloon`: a helper child (`readers-worker`, balloon job) `mlock`s
//!    an anonymous allocation of `MemAvailable − limit` bytes, so the whole
//!    machine has about `limit` bytes left for the page cache; its
//!    `oom_score_adj` is 1000, so should memory run out it is the one the
//!    kernel kills. Released at the end of the limited runs.
//!
//! cgroup v1's memory controller is never touched: on the machines this
//! runs on it holds the machine's own sandboxing (`docs/ARCHITECTURE.md`).

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::measure::{measure, Measured};
use super::point::Point;
use crate::machine::meminfo;
use crate::{Error, Result};

/// How the memory experiment limits the reader's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitMethod {
    /// cgroup v2 `memory.max` when available, else a balloon.
    Auto,
    /// A cgroup v2 `memory.max`.
    Cgroup2,
    /// A locked balloon.
    Balloon,
    /// No limit (the limited series is left out).
    None,
}

impl LimitMethod {
    /// The name on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            LimitMethod::Auto => "auto",
            LimitMethod::Cgroup2 => "cgroup2",
            LimitMethod::Balloon => "balloon",
            LimitMethod::None => "none",
        }
    }
}

impl fmt::Display for LimitMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LimitMethod {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<LimitMethod, String> {
        match s {
            "auto" => Ok(LimitMethod::Auto),
            "cgroup2" => Ok(LimitMethod::Cgroup2),
            "balloon" => Ok(LimitMethod::Balloon),
            "none" => Ok(LimitMethod::None),
            _ => Err(format!("unknown memory limit method '{s}' (expected auto, cgroup2, balloon or none)")),
        }
    }
}

/// This process's cgroup v2 directory when the memory controller is
/// available to its children, else why not.
pub fn cgroup2_dir() -> std::result::Result<PathBuf, String> {
    let mounts =
        std::fs::read_to_string("/proc/self/mounts").map_err(|e| format!("/proc/self/mounts: {e}"))?;
    let mount = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
        })
        .next()
        .ok_or("no cgroup2 file system mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::")).ok_or("this process has no cgroup v2 group")?;
    let dir = mount.join(rel.trim_start_matches('/'));
    let sub = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    if !sub.split_whitespace().any(|c| c == "memory") {
        let ctl = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        return Err(format!(
            "the cgroup v2 group {} does not offer the memory controller to its children \
             (controllers: '{}', subtree_control: '{}')",
            dir.display(),
            ctl.trim(),
            sub.trim()
        ));
    }
    Ok(dir)
}

/// A job for the hidden `readers-worker` child (one JSON line on its stdin).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Job {
    /// Wait for a `go` line, measure the point on the file, print the
    /// [`Measured`] as one JSON line.
    Read {
        /// The point.
        point: Point,
        /// The data file.
        file: PathBuf,
        /// Seed of the offsets.
        seed: u64,
    },
    /// Lock this many bytes, print `locked`, hold them until stdin closes.
    Balloon {
        /// Bytes to lock.
        bytes: u64,
    },
}

/// The hidden worker's body: reads a [`Job`] from `input` and does it,
/// answering on `output`.
pub fn worker_main(input: &mut dyn BufRead, output: &mut dyn Write) -> Result<()> {
    let stdin = Path::new("<stdin>");
    let mut line = String::new();
    input.read_line(&mut line).map_err(|e| Error::io("read", stdin, e))?;
    let job: Job =
        serde_json::from_str(&line).map_err(|e| Error::Campaign(format!("readers-worker: bad job: {e}")))?;
    match job {
        Job::Read { point, file, seed } => {
            line.clear();
            input.read_line(&mut line).map_err(|e| Error::io("read", stdin, e))?;
            if line.trim() != "go" {
                return Err(Error::Campaign("readers-worker: expected 'go'".into()));
            }
            let m = measure(&point, &file, seed, &AtomicBool::new(false))?;
            let text = serde_json::to_string(&m).expect("Measured serialises");
            writeln!(output, "{text}").map_err(|e| Error::io("write", Path::new("<stdout>"), e))
        }
        Job::Balloon { bytes } => {
            let _ = std::fs::write("/proc/self/oom_score_adj", b"1000");
            let len = bytes as usize;
            // SAFETY: a fresh private anonymous mapping, locked (which
            // faults every page in), never read or written by us; it goes
            // with the process.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if addr == libc::MAP_FAILED {
                let e = std::io::Error::last_os_error();
                return Err(Error::Campaign(format!("balloon: cannot map {bytes} bytes: {e}")));
            }
            // SAFETY: the mapping made above.
            if unsafe { libc::mlock(addr, len) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(Error::Campaign(format!("balloon: cannot lock {bytes} bytes: {e}")));
            }
            writeln!(output, "locked")
                .and_then(|_| output.flush())
                .map_err(|e| Error::io("write", Path::new("<stdout>"), e))?;
            // Hold until the parent closes our stdin.
            let mut rest = String::new();
            while input.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
                rest.clear();
            }
            // SAFETY: the mapping made above, no longer used.
            unsafe { libc::munmap(addr, len) };
            Ok(())
        }
    }
}

fn spawn_worker(exe: &Path, job: &Job) -> Result<(Child, ChildStdin)> {
    let mut child = Command::new(exe)
        .args(["bench", "readers-worker"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Campaign(format!("cannot start {} bench readers-worker: {e}", exe.display())))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let text = serde_json::to_string(job).expect("Job serialises");
    writeln!(stdin, "{text}").map_err(|e| Error::io("write", exe, e))?;
    Ok((child, stdin))
}

fn child_failed(exe: &Path, child: Child, what: &str) -> Error {
    let out = child.wait_with_output();
    let msg = match out {
        Ok(o) => format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr).trim()),
        Err(e) => e.to_string(),
    };
    Error::Campaign(format!("{} bench readers-worker ({what}) failed: {msg}", exe.display()))
}

/// Runs `point` on `file` in a child process, in `cgroup` when given.
pub fn measure_in_child(
    exe: &Path,
    point: &Point,
    file: &Path,
    seed: u64,
    cgroup: Option<&Path>,
) -> Result<Measured> {
    let job = Job::Read { point: point.clone(), file: file.to_path_buf(), seed };
    let (mut child, mut stdin) = spawn_worker(exe, &job)?;
    if let Some(cg) = cgroup {
        let procs = cg.join("cgroup.procs");
        if let Err(e) = std::fs::write(&procs, child.id().to_string()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::io("write", &procs, e));
        }
    }
    let go = writeln!(stdin, "go");
    drop(stdin);
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
    if go.is_err() || text.trim().is_empty() {
        return Err(child_failed(exe, child, &point.label()));
    }
    let status = child.wait().map_err(|e| Error::io("wait", exe, e))?;
    if !status.success() {
        return Err(child_failed(exe, child, &point.label()));
    }
    serde_json::from_str(text.trim())
        .map_err(|e| Error::Campaign(format!("{}: readers-worker's answer: {e}", point.label())))
}

/// A memory limit in force: a cgroup to put readers in, or a balloon held.
pub struct Limit {
    /// The method in force (`cgroup2`, `balloon` or `none`).
    pub method: LimitMethod,
    /// What was done, for the output (e.g. `balloon of 22.5G locked`).
    pub note: String,
    cgroup: Option<PathBuf>,
    balloon: Option<(Child, ChildStdin)>,
}

impl Limit {
    /// No limit, for the reason given.
    pub fn none(note: impl Into<String>) -> Limit {
        Limit { method: LimitMethod::None, note: note.into(), cgroup: None, balloon: None }
    }

    /// The cgroup readers go into (cgroup2 only).
    pub fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }

    /// Puts a limit of `limit` bytes in force by `method` (`Auto`: cgroup2,
    /// else balloon); `exe` runs the balloon. A method that cannot be used
    /// is an error for an explicit choice, a fallback (with its reason in
    /// the note) for `Auto`.
    pub fn start(method: LimitMethod, limit: u64, exe: &Path) -> Result<Limit> {
        let mut why_not_cgroup = String::new();
        if matches!(method, LimitMethod::Auto | LimitMethod::Cgroup2) {
            match cgroup2_dir().and_then(|d| make_cgroup(&d, limit)) {
                Ok(dir) => {
                    return Ok(Limit {
                        method: LimitMethod::Cgroup2,
                        note: format!("cgroup v2 {} with memory.max = {limit}", dir.display()),
                        cgroup: Some(dir),
                        balloon: None,
                    })
                }
                Err(e) if method == LimitMethod::Cgroup2 => {
                    return Err(Error::Campaign(format!("cgroup2: {e}")))
                }
                Err(e) => why_not_cgroup = format!("cgroup v2 unavailable ({e}); "),
            }
        }
        if method == LimitMethod::None {
            return Ok(Limit::none("no memory limit asked for"));
        }
        let avail = meminfo("MemAvailable:")
            .ok_or_else(|| Error::Campaign("balloon: MemAvailable unknown (/proc/meminfo)".into()))?;
        if avail <= limit {
            return Ok(Limit {
                method: LimitMethod::Balloon,
                note: format!("{why_not_cgroup}no balloon needed: only {avail} bytes available"),
                cgroup: None,
                balloon: None,
            });
        }
        let bytes = avail - limit;
        let (mut child, stdin) = spawn_worker(exe, &Job::Balloon { bytes })?;
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        if line.trim() != "locked" {
            drop(stdin);
            return Err(child_failed(exe, child, "balloon"));
        }
        let after = meminfo("MemAvailable:").unwrap_or(0);
        Ok(Limit {
            method: LimitMethod::Balloon,
            note: format!(
                "{why_not_cgroup}balloon of {bytes} bytes locked (MemAvailable {avail} before, {after} after)"
            ),
            cgroup: None,
            balloon: Some((child, stdin)),
        })
    }

    /// Lifts the limit: releases the balloon, removes the cgroup.
    pub fn stop(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if let Some((mut child, stdin)) = self.balloon.take() {
            drop(stdin);
            let _ = child.wait();
        }
        if let Some(dir) = self.cgroup.take() {
            std::fs::remove_dir(&dir).map_err(|e| Error::io("remove cgroup", &dir, e))?;
        }
        Ok(())
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Creates `parent/emsort-readers-<pid>` with `memory.max` = `limit`.
fn make_cgroup(parent: &Path, limit: u64) -> std::result::Result<PathBuf, String> {
    let dir = parent.join(format!("emsort-readers-{}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let set = |f: &str, v: String| std::fs::write(dir.join(f), v).map_err(|e| format!("{f}: {e}"));
    if let Err(e) = set("memory.max", limit.to_string()) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    let _ = set("memory.swap.max", "0".into());
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_cgroup_probe() {
        for m in [LimitMethod::Auto, LimitMethod::Cgroup2, LimitMethod::Balloon, LimitMethod::None] {
            assert_eq!(m.name().parse::<LimitMethod>(), Ok(m));
        }
        assert!("v1".parse::<LimitMethod>().is_err());
        // Either a directory or a reason; never a panic.
        match cgroup2_dir() {
            Ok(d) => assert!(d.is_dir()),
            Err(why) => assert!(!why.is_empty()),
        }
    }

    #[test]
    fn balloon_job_locks_and_read_job_measures() {
        // A small balloon in this process's worker body, fed from memory.
        let mut input = std::io::Cursor::new(b"{\"Balloon\":{\"bytes\":1048576}}\n".to_vec());
        let mut out = Vec::new();
        worker_main(&mut input, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "locked\n");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("d.bin");
        std::fs::write(&f, vec![1u8; 65536]).unwrap();
        let point = Point {
            experiment: "memory".into(),
            sweep: "total".into(),
            reader: "pread".into(),
            block_size: 4096,
            queue_depth: 1,
            madvise: "normal".into(),
            pattern: super::super::point::Pattern::Repeat,
            api: super::super::point::Api::Single,
            file_bytes: 65536,
            request_bytes: 4096,
            total_bytes: 8 * 4096,
            threads: 1,
            limited: true,
            reps: 1,
        };
        let job = serde_json::to_string(&Job::Read { point, file: f, seed: 1 }).unwrap();
        let mut input = std::io::Cursor::new(format!("{job}\ngo\n").into_bytes());
        let mut out = Vec::new();
        worker_main(&mut input, &mut out).unwrap();
        let m: Measured = serde_json::from_slice(&out).unwrap();
        assert_eq!(m.bytes_read, 8 * 4096);
        let mut input = std::io::Cursor::new(format!("{job}\nstop\n").into_bytes());
        assert!(worker_main(&mut input, &mut Vec::new()).is_err());
    }
}
