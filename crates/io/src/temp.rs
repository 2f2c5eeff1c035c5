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
//! - its name says emsort made it (`emsort-…` directories with a
//!   [`MARKER`] file inside; `.NAME.emsort-PID-N.tmp` files), and it belongs
//!   to the same user.
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
//! sort does not unwind in time) can still remove them before it exits.
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

/// What this process registered for removal, and what cleaners removed.
struct Registry {
    live: Vec<(u64, PathBuf, bool)>,
    next: u64,
    removed: Vec<StaleEntry>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { live: Vec::new(), next: 0, removed: Vec::new() });

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

/// A directory `PREFIX…` made for this process's temporary files, locked
/// while it lives, removed with everything in it when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    key: u64,
    // Holds the directory's flock: the proof of life `remove_stale` tests.
    _lock: File,
}

impl TempDir {
    /// Makes a new directory `root/PREFIX<pid>-<n>-<8 hex digits>` (mode 0700), after
    /// removing what dead emsort processes left in `root`
    /// ([`remove_stale`]). `prefix` should start with `emsort-` so that
    /// the cleaners recognise it. A missing `root` is
    /// [`crate::ErrorKind::NotFound`], a file [`crate::ErrorKind::Io`] (`ENOTDIR`), a full
    /// disk [`crate::ErrorKind::DiskFull`].
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
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let pid = std::process::id();
        for _ in 0..1000 {
            let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let path = root.join(format!("{prefix}{pid}-{seq}-{nanos:08x}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::from_io("create a temporary directory in", root, e)),
            }
            let dir = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| Error::from_io("open", &path, e))?;
            let locked = lock_exclusive(&dir);
            if locked && !same_inode(&path, &dir) {
                // A cleaner took it between mkdir and flock: start over.
                continue;
            }
            let key = register(&path, true);
            let this = TempDir { path, key, _lock: dir };
            let marker = this.path.join(MARKER);
            let text = format!(
                "a temporary directory of emsort (process {pid}); the next emsort run that uses {} \
                 removes it once that process is gone\n",
                root.display()
            );
            std::fs::write(&marker, text).map_err(|e| Error::from_io("create", &marker, e))?;
            return Ok(this);
        }
        Err(Error::from_io(
            "create a temporary directory in",
            root,
            std::io::Error::from_raw_os_error(libc::EEXIST),
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        unregister(self.key);
    }
}

/// Whether `name` is that of an [`crate::AtomicFile`]'s temporary file:
/// `.NAME.emsort-PID-N.tmp`.
pub fn is_atomic_temp_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|r| r.strip_suffix(".tmp")) else {
        return false;
    };
    let Some(at) = rest.rfind(".emsort-") else { return false };
    let mut ids = rest[at + ".emsort-".len()..].split('-');
    let digits = |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(ids.next()) && digits(ids.next()) && ids.next().is_none()
}

/// Whether `name` is exactly as [`TempDir::new_in`] names a directory:
/// `emsort-[WORD-]PID-N-XXXXXXXX` (decimal PID and N, 8 hex digits). Such a
/// directory without its [`MARKER`] is one whose process died between
/// `mkdir` and writing the marker: the cleaner removes it only if empty.
pub fn is_temp_dir_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("emsort-") else { return false };
    let parts: Vec<&str> = rest.split('-').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let tail = match parts.len() {
        3 => &parts[..],
        4 if !parts[0].is_empty() && parts[0].bytes().all(|b| b.is_ascii_lowercase()) => &parts[1..],
        _ => return false,
    };
    digits(tail[0]) && digits(tail[1]) && tail[2].len() == 8 && tail[2].bytes().all(|b| b.is_ascii_hexdigit())
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

/// Removes what dead emsort processes left in `dir`: temporary directories
/// (`emsort-…` with a [`MARKER`]) and temporary output files
/// (`.NAME.emsort-PID-N.tmp`) that belong to this user and whose lock
/// nobody holds. Entries of living processes, other users' entries and
/// anything emsort did not name are left alone. Returns what was removed
/// (also kept for [`take_stale_reports`]).
pub fn remove_stale(dir: &Path) -> Result<Vec<StaleEntry>> {
    let euid = rustix::process::geteuid().as_raw();
    let mut removed = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from_io("read the directory", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Names first: an output directory may hold many files, and only
        // emsort's are worth a stat.
        if !name.starts_with("emsort-") && !is_atomic_temp_name(name) {
            continue;
        }
        let path = entry.path();
        let Ok(md) = std::fs::symlink_metadata(&path) else { continue };
        if md.uid() != euid {
            continue;
        }
        // A directory with the marker goes whole; one without it (its
        // process died before writing it) only if its name is exactly ours
        // and it is empty.
        let (is_dir, whole) = if md.is_dir() && name.starts_with("emsort-") {
            if std::fs::symlink_metadata(path.join(MARKER)).is_ok_and(|m| m.is_file()) {
                (true, true)
            } else if is_temp_dir_name(name) {
                (true, false)
            } else {
                continue;
            }
        } else if md.is_file() && is_atomic_temp_name(name) {
            (false, true)
        } else {
            continue;
        };
        let mut opts = std::fs::OpenOptions::new();
        opts.read(true).custom_flags(libc::O_NOFOLLOW | if is_dir { libc::O_DIRECTORY } else { 0 });
        let Ok(f) = opts.open(&path) else { continue };
        match rustix::fs::flock(&f, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            // Held (its owner lives), or no locks here (nothing proves it dead).
            Err(_) => continue,
        }
        if !same_inode(&path, &f) {
            continue;
        }
        let bytes = bytes_under(&path);
        let gone = match (is_dir, whole) {
            (true, true) => std::fs::remove_dir_all(&path),
            (true, false) => std::fs::remove_dir(&path),
            (false, _) => std::fs::remove_file(&path),
        };
        if gone.is_ok() {
            removed.push(StaleEntry { path, bytes });
        }
    }
    registry().removed.extend(removed.iter().cloned());
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn atomic_temp_names() {
        assert!(is_atomic_temp_name(".out.txt.emsort-123-0.tmp"));
        assert!(is_atomic_temp_name("..part-00001.tmp.emsort-9-17.tmp"));
        for no in [
            "out.emsort-1-2.tmp",
            ".out.emsort-1.tmp",
            ".out.emsort-1-2-3.tmp",
            ".out.emsort-a-2.tmp",
            ".out.emsort--2.tmp",
            ".out.emsort-1-2.tmpx",
            ".notes.tmp",
        ] {
            assert!(!is_atomic_temp_name(no), "{no}");
        }
    }

    #[test]
    fn temp_dir_names() {
        for yes in ["emsort-12-0-0a1b2c3d", "emsort-spool-7-15-ffffffff", "emsort-merge-1-2-00000000"] {
            assert!(is_temp_dir_name(yes), "{yes}");
        }
        for no in [
            "emsort-master",
            "emsort-12-0-0a1b2c3",
            "emsort-12-0-0a1b2c3g",
            "emsort-x-0-0a1b2c3d",
            "emsort-Spool-1-2-00000000",
            "emsort-a-b-1-2-00000000",
            "emsort--1-2-00000000",
            "tmp-1-2-00000000",
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
        let dead = d.path().join("emsort-4242-7");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(MARKER), b"").unwrap();
        std::fs::write(dead.join("run-000001"), vec![0u8; 5000]).unwrap();
        // A dead emsort's output beside its target.
        let out_tmp = d.path().join(".out.emsort-4242-3.tmp");
        std::fs::write(&out_tmp, vec![0u8; 700]).unwrap();
        // Not emsort's: no marker; names that only look alike; a symlink.
        let other = d.path().join("emsort-master");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes"), b"keep").unwrap();
        for keep in ["out.emsort-1-2.tmp", "emsort-data.txt", ".out.emsort-1.tmp"] {
            std::fs::write(d.path().join(keep), b"keep").unwrap();
        }
        std::os::unix::fs::symlink(&dead, d.path().join("emsort-link")).unwrap();
        // Killed between mkdir and the marker: ours by its exact name, and
        // empty, so it goes; the same name with something inside stays.
        let early = d.path().join("emsort-4242-9-0000abcd");
        std::fs::create_dir(&early).unwrap();
        let early_full = d.path().join("emsort-4242-10-0000abcd");
        std::fs::create_dir(&early_full).unwrap();
        std::fs::write(early_full.join("data"), b"keep").unwrap();
        // A live one: locked through another open file description, as
        // a living process holds it (flock locks conflict between open
        // file descriptions, in one process as across processes).
        let live = d.path().join("emsort-live");
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
                (".out.emsort-4242-3.tmp".to_string(), 700),
                ("emsort-4242-7".to_string(), 5000),
                ("emsort-4242-9-0000abcd".to_string(), 0)
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
                "emsort-4242-10-0000abcd",
                "emsort-data.txt",
                "emsort-link",
                "emsort-live",
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
}
