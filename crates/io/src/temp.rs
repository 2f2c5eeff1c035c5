//! Temporary files and directories that a killed emsort cannot leave
//! behind for good.
//!
//! A sort's runs live in a [`TempDir`] under each temp dir (`-T`), and its
//! output is written beside its target ([`crate::AtomicFile`]). Drops remove
//! both on success, on error and on an interrupt that unwinds. A process
//! that is killed (SIGKILL, the OOM killer, a power cut) runs no drop, so
//! each of these entries also carries a proof of life that the next emsort
//! can test:
//!
//! - the living process holds an exclusive `flock(2)` on it (on the
//!   directory itself, or on the temporary output file), for as long as
//!   it lives: the kernel drops the lock when the process dies, however it
//!   dies;
//!   (a directory made when the process has almost no descriptors left —
//!   `ulimit -n 6` — cannot spare one for the lock: it records its
//!   process instead, in a [`LIFE`] file, and a cleaner removes it only
//!   when that process is provably gone: same boot and PID namespace, and
//!   no process of that PID and start time);
//! - its name says emsort made it, in an exact grammar with a random part
//!   another user cannot guess ([`random_part`]): `emsort-[WORD-]PID-R`
//!   directories with a [`MARKER`] file inside, `.NAME.emsort-PID-R.tmp`
//!   files (R: 16 hex digits); and it belongs to the same user. A user's
//!   own file that only looks alike (`.report.emsort-2024-06.tmp`) is never
//!   touched (issue 37).
//!
//! (Since issue 37 an output is written into an unnamed `O_TMPFILE` where
//! the file system offers one: a killed sort then leaves nothing beside
//! its output but in the instant between naming it and renaming it.)
//!
//! [`remove_stale`] takes an entry's lock without waiting; if it gets it,
//! the owner is provably gone, and the entry is removed. Every [`TempDir`]
//! runs it on its parent first, and every `AtomicFile` on the directory of
//! its target, so the next sort that uses the same temp or output
//! directory cleans up what a dead one left. What was removed is kept for
//! the caller to report ([`take_stale_reports`]).
//!
//! A creator and a cleaner race only in the instant between making an
//! entry and locking it: the creator locks, then checks that the path still
//! names the inode it locked, and starts over under a new name if a cleaner
//! removed it in between. A cleaner checks the same after taking the lock.
//!
//! The registry ([`remove_registered`]) lists the live entries of this
//! process, so a last-resort handler (the binary's, when an interrupted
//! sort does not unwind in time) can still remove them before it exits;
//! such a handler waits while an [`ExitHold`] lives (a commit under way).
//!
//! A directory marked [`KEPT`] holds a complete result that its sort was
//! copying into an output it could not replace; if that sort dies, the
//! cleaners leave the directory and report it ([`take_kept_reports`]).
//!
//! ```no_run
//! # fn main() -> emsort_io::Result<()> {
//! let runs = emsort_io::TempDir::new_in("/tmp".as_ref(), "emsort-")?;
//! std::fs::write(runs.path().join("run-000000"), b"...").unwrap();
//! drop(runs); // removed; a SIGKILL instead would leave it to the next run
//! # Ok(()) }
//! ```

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::FlockOperation;

use crate::{Error, Result};

/// The file inside an emsort temporary directory that says emsort made it.
pub const MARKER: &str = ".emsort-temp";

/// One entry a [`remove_stale`] call removed: what and how many bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleEntry {
    /// The removed file or directory.
    pub path: PathBuf,
    /// The bytes it held.
    pub bytes: u64,
}

/// A directory a cleaner found marked [`KEPT`] and left alone: a result a
/// killed sort did not finish copying into its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptEntry {
    /// The directory.
    pub path: PathBuf,
    /// What its [`KEPT`] file says (which output, where the result is).
    pub note: String,
}

/// What this process registered for removal, and what cleaners removed.
struct Registry {
    live: Vec<(u64, PathBuf, bool)>,
    next: u64,
    removed: Vec<StaleEntry>,
    kept: Vec<KeptEntry>,
}

static REGISTRY: Mutex<Registry> =
    Mutex::new(Registry { live: Vec::new(), next: 0, removed: Vec::new(), kept: Vec::new() });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers a live temporary entry; returns its key for [`unregister`].
pub(crate) fn register(path: &Path, dir: bool) -> u64 {
    let mut r = registry();
    r.next += 1;
    let key = r.next;
    r.live.push((key, path.to_path_buf(), dir));
    key
}

/// Forgets a registered entry (it was removed or committed).
pub(crate) fn unregister(key: u64) {
    registry().live.retain(|(k, _, _)| *k != key);
}

/// Removes every temporary file and directory this process still holds:
/// the last resort of a process that must exit without unwinding (an
/// interrupt that the work did not answer in time). Returns how many
/// entries it removed.
pub fn remove_registered() -> usize {
    // try_lock: a thread stopped while holding the lock must not block the
    // exit; the next run's cleaner then removes what is left.
    let live = match REGISTRY.try_lock() {
        Ok(mut r) => std::mem::take(&mut r.live),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut p.into_inner().live),
        Err(std::sync::TryLockError::WouldBlock) => return 0,
    };
    let mut n = 0;
    for (_, path, dir) in live {
        let ok = if dir { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        n += usize::from(ok.is_ok());
    }
    n
}

/// What the cleaners of this process removed since the last call (for the
/// caller to report; libraries do not print).
pub fn take_stale_reports() -> Vec<StaleEntry> {
    std::mem::take(&mut registry().removed)
}

/// Records a directory this process kept ([`TempDir::into_kept`]) for the
/// caller to report with [`take_kept_reports`].
pub fn report_kept(path: PathBuf, note: String) {
    registry().kept.push(KeptEntry { path, note });
}

/// What the cleaners of this process found marked [`KEPT`] and left alone,
/// and what it kept itself ([`report_kept`]), since the last call (for the
/// caller to report).
pub fn take_kept_reports() -> Vec<KeptEntry> {
    std::mem::take(&mut registry().kept)
}

/// Takes an exclusive lock on `f`, waiting for it. `false` when the file
/// system does not lock (then nothing proves this entry alive, and a
/// cleaner that cannot lock either leaves it alone).
fn lock_exclusive(f: &File) -> bool {
    loop {
        match rustix::fs::flock(f, FlockOperation::LockExclusive) {
            Ok(()) => return true,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return false,
        }
    }
}

/// Whether `path` still names the inode open as `f`.
fn same_inode(path: &Path, f: &File) -> bool {
    match (std::fs::symlink_metadata(path), f.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// 16 lowercase hex digits from the kernel's random source: the part of
/// a temporary name another user cannot guess (issue 37: names of the
/// form `PID-N` could be created in advance to make a sort fail).
pub fn random_part() -> String {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // No getrandom (a very old kernel): a clock, the PID and a
        // counter, mixed; names are still retried with O_EXCL.
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let t =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut z = (t as u64)
            ^ (u64::from(std::process::id()) << 32)
            ^ SEQ.fetch_add(0x9E37_79B9_7F4A_7C15, std::sync::atomic::Ordering::Relaxed);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        b = (z ^ (z >> 31)).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// How many commits are under way that must not be cut short (see
/// [`hold_exit`]).
static EXIT_HOLDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// While this lives, a last-resort handler must not end the process: a
/// commit is under way whose interruption would lose data (the rename of a
/// complete output, the copy of a result into a file rewritten in place).
/// Such work is short and bounded; it ignores the cancel flag, and the
/// binary's watchdog waits for it ([`exit_held`]).
#[derive(Debug)]
#[must_use = "the hold ends when dropped"]
pub struct ExitHold(());

/// Starts an [`ExitHold`].
pub fn hold_exit() -> ExitHold {
    EXIT_HOLDS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    ExitHold(())
}

impl Drop for ExitHold {
    fn drop(&mut self) {
        EXIT_HOLDS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Whether an [`ExitHold`] lives.
pub fn exit_held() -> bool {
    EXIT_HOLDS.load(std::sync::atomic::Ordering::SeqCst) > 0
}

/// The file inside a temporary directory that says it holds a result to
/// keep: the cleaners leave such a directory alone and report it.
pub const KEPT: &str = ".emsort-kept";

/// The file inside a temporary directory whose process holds no lock on
/// it (it had no descriptor to spare): which process made it, for the
/// cleaners to test: boot ID, PID namespace, PID and start time.
pub const LIFE: &str = ".emsort-life";

/// Descriptors a held lock must leave free: a merge's output and two
/// inputs. With fewer, a [`TempDir`] records its process ([`LIFE`]) instead.
const FREE_BESIDE_LOCK: u64 = 3;

/// This process, as a cleaner can later test whether it still lives:
/// `boot ID pidns N pid P start T` (the kernel's boot ID, the PID
/// namespace's inode, the PID, the start time in clock ticks since boot).
/// `None` where `/proc` cannot tell.
fn life_record() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let ns = std::fs::metadata("/proc/self/ns/pid").ok()?.ino();
    let pid = std::process::id();
    let start = start_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    Some(format!("boot {} pidns {ns} pid {pid} start {start}\n", boot.trim()))
}

/// The start time (field 22) of a `/proc/PID/stat` line.
fn start_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses: fields
    // are counted after its last ')'.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process a [`life_record`] names is provably gone: recorded
/// in this boot and this PID namespace, and no process has its PID with
/// its start time. Anything unsure (another boot or namespace, a `/proc`
/// that cannot be read, a record that does not parse) is `false`.
fn proven_dead(record: &str) -> bool {
    let words: Vec<&str> = record.split_whitespace().collect();
    let ["boot", boot, "pidns", ns, "pid", pid, "start", start] = words[..] else { return false };
    let (Ok(ns), Ok(pid), Ok(start)) = (ns.parse::<u64>(), pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    let here = std::fs::read_to_string("/proc/sys/kernel/random/boot_id");
    let here_ns = std::fs::metadata("/proc/self/ns/pid").map(|m| m.ino());
    if !here.is_ok_and(|b| b.trim() == boot) || !here_ns.is_ok_and(|n| n == ns) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(stat) => start_ticks(&stat).is_some_and(|t| t != start),
    }
}

/// A directory `PREFIX…` made for this process's temporary files, locked
/// while it lives (or, with almost no descriptor to spare, recorded in
/// [`LIFE`]), removed with everything in it when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    key: u64,
    // Holds the directory's flock: the proof of life `remove_stale` tests.
    // `None` while dropped, or when the process had no descriptor to spare
    // (then [`LIFE`] inside is the proof).
    lock: Option<File>,
    // The directory's device and inode: what a reopened path must name.
    id: (u64, u64),
    keep: bool,
}

impl TempDir {
    /// Makes a new directory `root/PREFIX<pid>-<16 hex digits>` (mode
    /// 0700; the hex digits random), after removing what dead emsort
    /// processes left in `root` ([`remove_stale`]). `prefix` should be
    /// `emsort-` or `emsort-WORD-` so that the cleaners recognise it. A
    /// missing `root` is [`crate::ErrorKind::NotFound`], a file
    /// [`crate::ErrorKind::Io`] (`ENOTDIR`), a full disk
    /// [`crate::ErrorKind::DiskFull`].
    ///
    /// Sorts sharing `root` run each other's cleaners: one may remove this
    /// directory between its `mkdir` and its lock (it is empty and
    /// unlocked then); the creation starts over under a new name when it
    /// finds its directory gone (issue 37: 11 of 400 sorts sharing a `-T`
    /// failed with "no such file").
    pub fn new_in(root: &Path, prefix: &str) -> Result<TempDir> {
        match std::fs::metadata(root) {
            Err(e) => return Err(Error::from_io("open", root, e)),
            Ok(m) if !m.is_dir() => {
                return Err(Error::from_io(
                    "use as a temporary directory",
                    root,
                    std::io::Error::from_raw_os_error(libc::ENOTDIR),
                ))
            }
            Ok(_) => {}
        }
        // Best effort: a cleaner that cannot read `root` must not stop the sort.
        let _ = remove_stale(root);
        let pid = std::process::id();
        for _ in 0..1000 {
            let path = root.join(format!("{prefix}{pid}-{}", random_part()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::from_io("create a temporary directory in", root, e)),
            }
            let dir = match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(d) => d,
                // A sibling's cleaner removed it before it was opened.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    // Made a moment ago and still empty (EMFILE under a low
                    // `ulimit -n` came here): rmdir removes only an empty
                    // directory, so nothing else can be lost.
                    let _ = std::fs::remove_dir(&path);
                    return Err(Error::from_io("open", &path, e));
                }
            };
            let locked = lock_exclusive(&dir);
            if locked && !same_inode(&path, &dir) {
                // A cleaner took it between mkdir and flock: start over.
                continue;
            }
            let meta = dir.metadata().map_err(|e| Error::from_io("open", &path, e))?;
            let key = register(&path, true);
            let mut this = TempDir { path, key, lock: Some(dir), id: (meta.dev(), meta.ino()), keep: false };
            // With the lock held, the descriptors left must still carry a
            // merge; if not, the process is recorded instead (written while
            // locked, so no cleaner sees the directory without it).
            let life =
                if crate::rusage::free_descriptors() < FREE_BESIDE_LOCK { life_record() } else { None };
            if let Some(record) = &life {
                this.write_inside(LIFE, record)?;
            }
            let text = format!(
                "a temporary directory of emsort (process {pid}); the next emsort run that uses {} \
                 removes it once that process is gone\n",
                root.display()
            );
            this.write_inside(MARKER, &text)?;
            if life.is_some() {
                this.lock = None;
            }
            return Ok(this);
        }
        Err(Error::from_io(
            "create a temporary directory in",
            root,
            std::io::Error::from_raw_os_error(libc::EEXIST),
        ))
    }

    /// Runs `f` on the directory's descriptor: the held one, or (none held)
    /// its path opened again without following a link, and refused unless
    /// it is still the directory made.
    fn with_dir<R>(&self, f: impl FnOnce(std::os::fd::BorrowedFd<'_>) -> Result<R>) -> Result<R> {
        use std::os::fd::AsFd;
        if let Some(lock) = &self.lock {
            return f(lock.as_fd());
        }
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.path)
            .map_err(|e| Error::from_io("open", &self.path, e))?;
        match dir.metadata() {
            Ok(m) if (m.dev(), m.ino()) == self.id => f(dir.as_fd()),
            Ok(_) => Err(Error::from_io("open", &self.path, std::io::Error::from_raw_os_error(libc::ESTALE))),
            Err(e) => Err(Error::from_io("open", &self.path, e)),
        }
    }

    /// Creates `name` inside through the directory's descriptor (never
    /// through its path again), with `text`.
    fn write_inside(&self, name: &str, text: &str) -> Result<()> {
        use std::io::Write;
        let at = self.path.join(name);
        let fd = self.with_dir(|dir| {
            rustix::fs::openat(
                dir,
                name,
                rustix::fs::OFlags::WRONLY
                    | rustix::fs::OFlags::CREATE
                    | rustix::fs::OFlags::TRUNC
                    | rustix::fs::OFlags::NOFOLLOW
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::from_raw_mode(0o600),
            )
            .map_err(|e| Error::from_io("create", &at, e.into()))
        })?;
        File::from(fd).write_all(text.as_bytes()).map_err(|e| Error::from_io("write", &at, e))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Marks the directory as holding a result to keep (`note` says what:
    /// it is the file [`KEPT`] inside), or unmarks it (`None`). A marked
    /// directory whose process dies is left alone by the cleaners, which
    /// report it ([`take_kept_reports`]) instead: a complete result that a
    /// killed sort was copying into its output is not lost.
    pub fn set_kept(&self, note: Option<&str>) -> Result<()> {
        match note {
            Some(text) => self.write_inside(KEPT, text),
            None => {
                self.with_dir(|dir| match rustix::fs::unlinkat(dir, KEPT, rustix::fs::AtFlags::empty()) {
                    Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
                    Err(e) => Err(Error::from_io("remove", self.path.join(KEPT), e.into())),
                })
            }
        }
    }

    /// Gives the directory up without removing it (it holds a result to
    /// keep, marked with [`TempDir::set_kept`]); returns its path.
    pub fn into_kept(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep && std::fs::remove_dir_all(&self.path).is_err() {
            // Removing a tree takes descriptors; with none left (`ulimit -n`
            // reached, issue 37) give back the lock's and try again; an
            // empty directory needs none at all.
            self.lock = None;
            if std::fs::remove_dir_all(&self.path).is_err() {
                let _ = std::fs::remove_dir(&self.path);
            }
        }
        unregister(self.key);
    }
}

/// Whether `s` is exactly 16 lowercase hex digits ([`random_part`]).
fn is_random_part(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `s` is a decimal number without sign or leading zero.
fn is_pid(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !(s.len() > 1 && s.starts_with('0'))
}

/// The name [`crate::AtomicFile`] gives a temporary output file beside
/// `target`: `.TARGET.emsort-PID-RRRRRRRRRRRRRRRR.tmp`, R random.
pub(crate) fn atomic_temp_name(target: &std::ffi::OsStr) -> std::ffi::OsString {
    let mut n = std::ffi::OsString::from(".");
    n.push(target);
    n.push(format!(".emsort-{}-{}.tmp", std::process::id(), random_part()));
    n
}

/// Whether `name` is exactly as [`crate::AtomicFile`] names a temporary
/// output file: `.NAME.emsort-PID-RRRRRRRRRRRRRRRR.tmp` (decimal PID, 16
/// lowercase hex digits). Returns `NAME`.
pub fn atomic_temp_target(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let at = rest.rfind(".emsort-")?;
    let (target, ids) = (&rest[..at], &rest[at + ".emsort-".len()..]);
    let (pid, random) = ids.split_once('-')?;
    (!target.is_empty() && is_pid(pid) && is_random_part(random)).then_some(target)
}

/// Whether `name` is that of an [`crate::AtomicFile`]'s temporary file
/// ([`atomic_temp_target`]).
pub fn is_atomic_temp_name(name: &str) -> bool {
    atomic_temp_target(name).is_some()
}

/// Whether `name` is exactly as [`TempDir::new_in`] names a directory:
/// `emsort-[WORD-]PID-RRRRRRRRRRRRRRRR` (WORD lowercase letters, decimal
/// PID, 16 lowercase hex digits). Such a directory without its [`MARKER`]
/// is one whose process died between `mkdir` and writing the marker: the
/// cleaner removes it only if empty.
pub fn is_temp_dir_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("emsort-") else { return false };
    let parts: Vec<&str> = rest.split('-').collect();
    let tail = match parts.len() {
        2 => &parts[..],
        3 if !parts[0].is_empty() && parts[0].bytes().all(|b| b.is_ascii_lowercase()) => &parts[1..],
        _ => return false,
    };
    is_pid(tail[0]) && is_random_part(tail[1])
}

/// Bytes under `path` (a file, or a directory's files, recursively).
fn bytes_under(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            std::fs::read_dir(path).map(|rd| rd.flatten().map(|e| bytes_under(&e.path())).sum()).unwrap_or(0)
        }
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Removes what dead emsort processes left in `dir`, and only that:
///
/// - temporary directories: named exactly as [`is_temp_dir_name`] says,
///   this user's, with the [`MARKER`] inside (removed whole) or empty
///   (killed before the marker); one marked [`KEPT`] is left alone and
///   reported ([`take_kept_reports`]);
/// - temporary output files: named exactly as [`is_atomic_temp_name`] says,
///   a regular file with one name, this user's — or, for root, the user's
///   who owns the file it was to replace (root gives a replacement the
///   owner of what it replaces);
///
/// and in both cases only when nobody holds its lock (its process is
/// gone). Everything else — other users' entries, names that only look
/// alike, links — is left alone. Files are removed through the
/// directory's descriptor after checking that the name still holds the
/// inode whose lock was taken. Returns what was removed (also kept for
/// [`take_stale_reports`]).
pub fn remove_stale(dir: &Path) -> Result<Vec<StaleEntry>> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let euid = rustix::process::geteuid().as_raw();
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    let dfd = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::from_io("open the directory", dir, e.into()))?;
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from_io("read the directory", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Names first: an output directory may hold many files, and only
        // emsort's are worth a stat.
        let is_dir_name = is_temp_dir_name(name);
        let target = atomic_temp_target(name);
        if !is_dir_name && target.is_none() {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW) else { continue };
        let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
        let is_dir = match (ft, target) {
            (rustix::fs::FileType::Directory, _) if is_dir_name && st.st_uid == euid => true,
            (rustix::fs::FileType::RegularFile, Some(target)) if st.st_nlink == 1 => {
                let owner_of_target = || {
                    rustix::fs::statat(&dfd, target, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|t| t.st_uid == st.st_uid)
                };
                if st.st_uid != euid && !(euid == 0 && owner_of_target()) {
                    continue;
                }
                false
            }
            _ => continue,
        };
        let flags = OFlags::RDONLY
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC
            | if is_dir { OFlags::DIRECTORY } else { OFlags::empty() };
        let Ok(fd) = rustix::fs::openat(&dfd, name, flags, Mode::empty()) else { continue };
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            // Held (its owner lives), or no locks here (nothing proves it dead).
            Err(_) => continue,
        }
        let same = |a: &rustix::fs::Stat| a.st_dev == st.st_dev && a.st_ino == st.st_ino;
        if !rustix::fs::fstat(&fd).is_ok_and(|a| same(&a))
            || !rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|a| same(&a))
        {
            continue;
        }
        let path = dir.join(name);
        let gone = if is_dir {
            let has = |f: &str| rustix::fs::statat(&fd, f, AtFlags::SYMLINK_NOFOLLOW).is_ok();
            // No lock held, but its process recorded: gone only if proven.
            if has(LIFE) {
                let record = rustix::fs::openat(
                    &fd,
                    LIFE,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
                .and_then(|f| std::io::read_to_string(File::from(f)).ok());
                if !record.is_some_and(|r| proven_dead(&r)) {
                    continue;
                }
            }
            if has(KEPT) {
                kept.push(KeptEntry {
                    path: path.clone(),
                    note: std::fs::read_to_string(path.join(KEPT)).unwrap_or_default().trim().to_string(),
                });
                continue;
            }
            let bytes = bytes_under(&path);
            let gone = if has(MARKER) {
                std::fs::remove_dir_all(&path)
            } else {
                rustix::fs::unlinkat(&dfd, name, AtFlags::REMOVEDIR).map_err(Into::into)
            };
            gone.map(|()| bytes)
        } else {
            rustix::fs::unlinkat(&dfd, name, AtFlags::empty()).map(|()| st.st_size as u64).map_err(Into::into)
        };
        if let Ok(bytes) = gone {
            removed.push(StaleEntry { path, bytes });
        }
    }
    let mut r = registry();
    r.removed.extend(removed.iter().cloned());
    for k in kept {
        if !r.kept.iter().any(|e| e.path == k.path) {
            r.kept.push(k);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn atomic_temp_names() {
        assert_eq!(atomic_temp_target(".out.txt.emsort-123-0123456789abcdef.tmp"), Some("out.txt"));
        assert_eq!(
            atomic_temp_target("..part-00001.tmp.emsort-9-ffffffffffffffff.tmp"),
            Some(".part-00001.tmp")
        );
        let made = atomic_temp_name(std::ffi::OsStr::new("sorted.txt"));
        assert_eq!(atomic_temp_target(made.to_str().unwrap()), Some("sorted.txt"));
        for no in [
            // A user's own files that only look alike (issue 37).
            ".report.emsort-2024-06.tmp",
            ".out.emsort-1-2.tmp",
            "out.emsort-1-0123456789abcdef.tmp",
            ".out.emsort-1.tmp",
            ".out.emsort-1-0123456789abcdef-3.tmp",
            ".out.emsort-a-0123456789abcdef.tmp",
            ".out.emsort--0123456789abcdef.tmp",
            ".out.emsort-01-0123456789abcdef.tmp",
            ".out.emsort-1-0123456789ABCDEF.tmp",
            ".out.emsort-1-0123456789abcde.tmp",
            ".out.emsort-1-0123456789abcdef.tmpx",
            "..emsort-1-0123456789abcdef.tmp",
            ".notes.tmp",
        ] {
            assert!(!is_atomic_temp_name(no), "{no}");
        }
    }

    #[test]
    fn random_parts_differ() {
        let a: std::collections::HashSet<String> = (0..1000).map(|_| random_part()).collect();
        assert_eq!(a.len(), 1000);
        assert!(a.iter().all(|r| is_random_part(r)));
    }

    #[test]
    fn temp_dir_names() {
        for yes in [
            "emsort-12-0a1b2c3d0a1b2c3d",
            "emsort-spool-7-ffffffffffffffff",
            "emsort-merge-1-0000000000000000",
        ] {
            assert!(is_temp_dir_name(yes), "{yes}");
        }
        for no in [
            "emsort-master",
            // The names of earlier versions (no random part).
            "emsort-12-0-0a1b2c3d",
            "emsort-12-0a1b2c3d0a1b2c3",
            "emsort-12-0a1b2c3d0a1b2c3g",
            "emsort-x-0a1b2c3d0a1b2c3d",
            "emsort-Spool-1-0a1b2c3d0a1b2c3d",
            "emsort-a-b-1-0a1b2c3d0a1b2c3d",
            "emsort--1-0a1b2c3d0a1b2c3d",
            "emsort-2024-0a1b2c3d0a1b2c3d0",
            "tmp-1-0a1b2c3d0a1b2c3d",
        ] {
            assert!(!is_temp_dir_name(no), "{no}");
        }
        let d = tempfile::tempdir().unwrap();
        let t = TempDir::new_in(d.path(), "emsort-spool-").unwrap();
        assert!(is_temp_dir_name(t.path().file_name().unwrap().to_str().unwrap()));
    }

    #[test]
    fn a_live_dir_is_kept_and_removed_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let t = TempDir::new_in(d.path(), "emsort-").unwrap();
        std::fs::write(t.path().join("run-000000"), vec![1u8; 1000]).unwrap();
        // Another cleaner (this process, another open file description)
        // cannot take the lock: the directory stays.
        assert!(remove_stale(d.path()).unwrap().is_empty());
        assert!(t.path().join("run-000000").exists());
        let p = t.path().to_path_buf();
        drop(t);
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    /// What a killed process leaves (the lock gone with it) is removed by
    /// the next cleaner; what emsort did not make, or makes without its
    /// marker, is not.
    #[test]
    fn dead_entries_are_removed_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        // A dead emsort's directory: the marker, no lock holder.
        let dead = d.path().join("emsort-4242-00000000000000a7");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(MARKER), b"").unwrap();
        std::fs::write(dead.join("run-000001"), vec![0u8; 5000]).unwrap();
        // A dead emsort's output beside its target.
        let out_tmp = d.path().join(".out.emsort-4242-00000000000000a3.tmp");
        std::fs::write(&out_tmp, vec![0u8; 700]).unwrap();
        // Not emsort's: no marker; names that only look alike; a symlink.
        let other = d.path().join("emsort-master");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes"), b"keep").unwrap();
        for keep in
            ["out.emsort-1-2.tmp", "emsort-data.txt", ".out.emsort-1.tmp", ".report.emsort-2024-06.tmp"]
        {
            std::fs::write(d.path().join(keep), b"keep").unwrap();
        }
        std::os::unix::fs::symlink(&dead, d.path().join("emsort-link")).unwrap();
        // A link with a name of the grammar: not followed, not removed.
        std::os::unix::fs::symlink(&dead, d.path().join("emsort-4242-00000000000000bb")).unwrap();
        // Killed between mkdir and the marker: ours by its exact name, and
        // empty, so it goes; the same name with something inside stays.
        let early = d.path().join("emsort-4242-000000000000abcd");
        std::fs::create_dir(&early).unwrap();
        let early_full = d.path().join("emsort-4242-000000000001abcd");
        std::fs::create_dir(&early_full).unwrap();
        std::fs::write(early_full.join("data"), b"keep").unwrap();
        // A live one: locked through another open file description, as
        // a living process holds it (flock locks conflict between open
        // file descriptions, in one process as across processes).
        let live = d.path().join("emsort-live-4242-00000000000000ee");
        std::fs::create_dir(&live).unwrap();
        std::fs::write(live.join(MARKER), b"").unwrap();
        let holder = File::open(&live).unwrap();
        rustix::fs::flock(&holder, FlockOperation::NonBlockingLockExclusive).unwrap();
        let got = remove_stale(d.path()).unwrap();
        let mut names: Vec<(String, u64)> =
            got.iter().map(|e| (e.path.file_name().unwrap().to_string_lossy().into(), e.bytes)).collect();
        names.sort();
        assert_eq!(
            names,
            [
                (".out.emsort-4242-00000000000000a3.tmp".to_string(), 700),
                ("emsort-4242-00000000000000a7".to_string(), 5000),
                ("emsort-4242-000000000000abcd".to_string(), 0)
            ]
        );
        assert!(live.exists() && other.join("notes").exists());
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".out.emsort-1.tmp",
                ".report.emsort-2024-06.tmp",
                "emsort-4242-00000000000000bb",
                "emsort-4242-000000000001abcd",
                "emsort-data.txt",
                "emsort-link",
                "emsort-live-4242-00000000000000ee",
                "emsort-master",
                "out.emsort-1-2.tmp"
            ]
        );
        assert!(take_stale_reports().iter().any(|e| e.path == dead));
        // Once its owner is gone, its directory goes too.
        drop(holder);
        let got = remove_stale(d.path()).unwrap();
        assert_eq!(got.len(), 1);
        assert!(!live.exists());
    }

    /// A directory whose process could not spare a descriptor for the
    /// lock (`ulimit -n 6`) records its process instead: the cleaners
    /// remove it only once that process is provably gone.
    #[test]
    fn an_unlocked_directory_goes_only_when_its_process_is_proven_gone() {
        let me = life_record().expect("/proc here");
        assert!(!proven_dead(&me));
        // A PID above the kernel's maximum: no such process, in this boot
        // and namespace.
        let words: Vec<&str> = me.split_whitespace().collect();
        let gone = format!("boot {} pidns {} pid 4999999 start 1", words[1], words[3]);
        assert!(proven_dead(&gone));
        // This process's PID with another start time: the PID was reused.
        let reused = format!("boot {} pidns {} pid {} start 1", words[1], words[3], std::process::id());
        assert!(proven_dead(&reused));
        // Unsure: another boot, another namespace, nonsense.
        for unsure in [
            format!("boot 00000000-0000-0000-0000-000000000000 pidns {} pid 4999999 start 1", words[3]),
            format!("boot {} pidns 1 pid 4999999 start 1", words[1]),
            "boot x pidns y pid z start w".to_string(),
            String::new(),
        ] {
            assert!(!proven_dead(&unsure), "{unsure}");
        }
        let d = tempfile::tempdir().unwrap();
        let live = d.path().join("emsort-4242-0000000000000001");
        let dead = d.path().join("emsort-4242-0000000000000002");
        for (dir, record) in [(&live, &me), (&dead, &gone)] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join(LIFE), record).unwrap();
            std::fs::write(dir.join(MARKER), b"").unwrap();
        }
        let got = remove_stale(d.path()).unwrap();
        assert_eq!(got.iter().map(|e| e.path.clone()).collect::<Vec<_>>(), std::slice::from_ref(&dead));
        assert!(live.exists() && !dead.exists());
    }

    #[test]
    fn start_ticks_skip_a_command_with_spaces_and_parentheses() {
        let stat = "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_ticks(stat), Some(987654));
        assert_eq!(start_ticks("42 (x) S 1"), None);
    }

    #[test]
    fn live_entries_are_registered_until_dropped() {
        // (remove_registered itself is tested through the binary: here it
        // would remove the entries of tests running beside this one.)
        let d = tempfile::tempdir().unwrap();
        let t = TempDir::new_in(d.path(), "emsort-").unwrap();
        let listed = |p: &Path| registry().live.iter().any(|(_, q, dir)| q == p && *dir);
        let p = t.path().to_path_buf();
        assert!(listed(&p));
        drop(t);
        assert!(!listed(&p));
    }

    #[test]
    fn a_missing_or_file_root_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let e = TempDir::new_in(&d.path().join("nope"), "emsort-").unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::NotFound);
        std::fs::write(d.path().join("f"), b"").unwrap();
        let e = TempDir::new_in(&d.path().join("f"), "emsort-").unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Io("use as a temporary directory"));
    }

    #[test]
    fn a_kept_directory_stays_and_is_reported() {
        let d = tempfile::tempdir().unwrap();
        let t = TempDir::new_in(d.path(), "emsort-out-").unwrap();
        std::fs::write(t.path().join("output"), b"the result").unwrap();
        t.set_kept(Some("the complete result for out.txt")).unwrap();
        // As if its process died: the lock goes, the directory stays.
        let p = t.into_kept();
        assert!(remove_stale(d.path()).unwrap().is_empty());
        assert_eq!(std::fs::read(p.join("output")).unwrap(), b"the result");
        let kept = take_kept_reports();
        assert!(kept.iter().any(|k| k.path == p && k.note == "the complete result for out.txt"), "{kept:?}");
        // Unmarked, it goes like any other.
        std::fs::remove_file(p.join(KEPT)).unwrap();
        assert_eq!(remove_stale(d.path()).unwrap().len(), 1);
        assert!(!p.exists());
    }

    /// Root gives a replacement the owner of the file it replaces; what a
    /// killed root sort left beside another user's file is removed by the
    /// next root run (issue 37), but not another user's look-alike beside
    /// a file that user does not own.
    #[test]
    fn root_removes_a_leftover_owned_by_the_owner_of_its_target() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: needs root to own files as another user");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let own = |p: &Path, uid: u32| std::os::unix::fs::chown(p, Some(uid), Some(uid)).unwrap();
        std::fs::write(d.path().join("theirs.txt"), b"x").unwrap();
        own(&d.path().join("theirs.txt"), 65534);
        let left = d.path().join(".theirs.txt.emsort-77-0123456789abcdef.tmp");
        std::fs::write(&left, b"partial").unwrap();
        own(&left, 65534);
        std::fs::write(d.path().join("roots.txt"), b"x").unwrap();
        let lookalike = d.path().join(".roots.txt.emsort-77-0123456789abcdef.tmp");
        std::fs::write(&lookalike, b"not emsort's").unwrap();
        own(&lookalike, 65534);
        let got = remove_stale(d.path()).unwrap();
        assert_eq!(got.iter().map(|e| e.path.clone()).collect::<Vec<_>>(), std::slice::from_ref(&left));
        assert!(!left.exists() && lookalike.exists());
    }

    #[test]
    fn exit_holds_nest() {
        assert!(!exit_held() || EXIT_HOLDS.load(std::sync::atomic::Ordering::SeqCst) > 0);
        let a = hold_exit();
        let b = hold_exit();
        assert!(exit_held());
        drop(a);
        assert!(exit_held());
        drop(b);
    }
}
