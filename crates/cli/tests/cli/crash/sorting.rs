//! Running one `emsort sort` under a fault, and judging what it left.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::case::{At, Format};
use super::world::{Mount, NOBODY};
use crate::{emsort, emsort_path, p};

/// A sort that has not ended after this long is killed and reported.
pub const HANG: Duration = Duration::from_secs(90);

/// How a sort is started.
#[derive(Default)]
pub struct Spawn<'a> {
    pub stdin_from: Option<&'a Path>,
    /// RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_AS.
    pub fsize: Option<u64>,
    pub nofile: Option<u64>,
    pub address_space: Option<u64>,
    /// A signal the parent sets to be ignored.
    pub ignore: Option<i32>,
    pub as_nobody: bool,
    /// Runs `sh -c SCRIPT sh ARGS… emsort ARGS…` instead (the script ends
    /// by exec'ing the sort, which keeps its PID).
    pub through_shell: Option<(&'a str, Vec<String>)>,
}

/// What happens at the fault's moment.
pub enum Strike<'a> {
    Signal(i32),
    Truncate(&'a Path, u64),
    Grow(&'a Path, u64),
    Shutdown(&'a Mount),
}

/// What one `emsort sort` did.
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
    /// When the fault struck (after spawn).
    pub struck: Option<Duration>,
    pub hung: bool,
}

impl Ran {
    pub fn stop_latency(&self) -> Option<Duration> {
        self.struck.map(|at| self.elapsed.saturating_sub(at))
    }
}

/// Whether a run file exists in an emsort directory under one of `dirs`.
fn a_run_exists(dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|d| {
        std::fs::read_dir(d).into_iter().flatten().flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with("emsort-")
                && std::fs::read_dir(e.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|r| r.file_name().to_string_lossy().starts_with("run-"))
        })
    })
}

/// Runs `emsort args…` as `how` says, striking at `at` (time after spawn;
/// once a run appears in `watch`; or once `copy_of`'s modification time
/// changes); standard output captured.
pub fn run_sort(
    args: &[String],
    how: &Spawn<'_>,
    strike: Option<(Strike<'_>, At, Duration)>,
    watch: &[PathBuf],
    copy_of: Option<&Path>,
) -> Ran {
    let mut cmd = match &how.through_shell {
        Some((script, pre)) => {
            let mut c = Command::new("sh");
            c.args(["-c", script, "sh"]).args(pre).arg(emsort_path());
            crate::default_signals(&mut c);
            c
        }
        None => emsort(),
    };
    cmd.args(args)
        .stdin(if how.stdin_from.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if how.as_nobody {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let (fsize, nofile, address_space, ignore) = (how.fsize, how.nofile, how.address_space, how.ignore);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let set = |res, lim: u64| {
                let r = libc::rlimit { rlim_cur: lim, rlim_max: lim };
                if libc::setrlimit(res, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            // No core files from SIGQUIT and SIGXCPU in the test's directory.
            set(libc::RLIMIT_CORE, 0)?;
            if let Some(l) = fsize {
                // Only the limit (SIGXFSZ at its default, which kills): the
                // binary must handle it itself.
                set(libc::RLIMIT_FSIZE, l)?;
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            }
            if let Some(l) = nofile {
                set(libc::RLIMIT_NOFILE, l)?;
            }
            if let Some(l) = address_space {
                set(libc::RLIMIT_AS, l)?;
            }
            if let Some(sig) = ignore {
                libc::signal(sig, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let mtime = |f: &Path| std::fs::metadata(f).map(|m| (m.mtime(), m.mtime_nsec())).ok();
    let copy_mtime = copy_of.and_then(mtime);
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn emsort");
    let writer = how.stdin_from.map(|path| {
        let mut f = std::fs::File::open(path).unwrap();
        let mut sin = child.stdin.take().unwrap();
        // A sort that stops reading (signal, error) makes this fail: fine.
        std::thread::spawn(move || drop(std::io::copy(&mut f, &mut sin)))
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let mut strike = strike;
    let mut struck = None;
    let mut hung = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Some((what, at, undisturbed)) = &strike {
            let due = match at {
                At::Fraction(f) => t.elapsed() >= undisturbed.mul_f64(*f),
                At::FirstRun => a_run_exists(watch),
                At::Copy => copy_of.is_some_and(|f| mtime(f) != copy_mtime),
            };
            if due {
                match what {
                    // The child is not reaped before try_wait returns it, so
                    // the pid is still its own. SAFETY: kill(2) on our own child.
                    Strike::Signal(sig) => unsafe {
                        libc::kill(pid, *sig);
                    },
                    Strike::Truncate(f, len) => {
                        let _ = std::fs::OpenOptions::new().write(true).open(f).and_then(|f| f.set_len(*len));
                    }
                    Strike::Grow(f, by) => {
                        use std::io::Write;
                        let _ = std::fs::OpenOptions::new()
                            .append(true)
                            .open(f)
                            .and_then(|mut f| f.write_all(&vec![b'\n'; *by as usize]));
                    }
                    Strike::Shutdown(m) => m.shutdown(),
                }
                struck = Some(t.elapsed());
                strike = None;
            }
        }
        if t.elapsed() > HANG && !hung {
            hung = true;
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_micros(500));
    };
    let elapsed = t.elapsed();
    if let Some(w) = writer {
        w.join().unwrap();
    }
    Ran {
        status,
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        elapsed,
        struck,
        hung,
    }
}

/// What a complete result is, for one input.
pub struct Oracle {
    pub format: Format,
    /// The pristine input (the sorts never see this file).
    pub original: PathBuf,
    /// `LC_ALL=C sort` of it for lines; for binary formats, the verified
    /// output of an undisturbed sort, if one ran (to check prefixes).
    pub sorted: Option<Vec<u8>>,
}

impl Oracle {
    pub fn new(format: Format, original: &Path) -> Oracle {
        let sorted = (format == Format::Lines).then(|| {
            let o = Command::new("sort").env("LC_ALL", "C").arg(original).output().unwrap();
            assert!(o.status.success(), "LC_ALL=C sort {}", original.display());
            o.stdout
        });
        Oracle { format, original: original.to_path_buf(), sorted }
    }

    /// Whether `bytes` (at `path`, if it is a file) is the complete result.
    pub fn complete(&self, bytes: &[u8], path: Option<&Path>, scratch: &Path) -> bool {
        if self.format == Format::Lines {
            return self.sorted.as_deref() == Some(bytes);
        }
        if bytes.len() as u64 != std::fs::metadata(&self.original).unwrap().len() {
            return false;
        }
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => {
                let f = scratch.join("stdout.bin");
                std::fs::write(&f, bytes).unwrap();
                f
            }
        };
        let o = emsort()
            .args(["verify", "-f", self.format.name(), p(&path), "--input", p(&self.original)])
            .output()
            .unwrap();
        o.status.success()
    }
}

/// What an output file holds after a sort.
#[derive(Debug, PartialEq, Eq)]
pub enum State {
    Absent,
    Previous,
    /// Standard output cut short: a prefix of the result.
    Prefix,
    Complete,
    Other(String),
}

pub fn output_state(path: &Path, previous: Option<&[u8]>, oracles: &[&Oracle], scratch: &Path) -> State {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match previous {
            None => State::Absent,
            Some(_) => State::Other("the output is gone; it held a previous content".into()),
        },
        Err(e) => State::Other(format!("cannot read the output: {e}")),
        Ok(b) if previous == Some(&b[..]) => State::Previous,
        Ok(b) if oracles.iter().any(|o| o.complete(&b, Some(path), scratch)) => State::Complete,
        Ok(b) => State::Other(format!(
            "{} bytes that are neither the previous content ({}) nor the complete result ({} bytes)",
            b.len(),
            previous.map_or("none".into(), |p| format!("{} bytes", p.len())),
            std::fs::metadata(&oracles[0].original).unwrap().len()
        )),
    }
}

pub fn status_text(s: &ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (_, Some(sig)) => format!("killed by {}", super::case::signal_name(sig)),
        _ => format!("{s}"),
    }
}
