//! Page cache control for cold-cache measurements.
//!
//! Two ways to start a measurement with a file's pages out of memory:
//! [`drop_all_caches`] writes `3` to `/proc/sys/vm/drop_caches` after `sync`
//! (root only, affects the whole machine), and [`evict_file`] calls `fsync`
//! and `posix_fadvise(POSIX_FADV_DONTNEED)` on one file (any user; the kernel
//! drops the file's clean pages). [`CacheMethod`] names the choice so results
//! can record it.

use std::fmt;
use std::fs::File;
use std::path::Path;
use std::str::FromStr;

use crate::{Error, Result};

/// How a benchmark empties the page cache before each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMethod {
    /// `sync; echo 3 > /proc/sys/vm/drop_caches` (root).
    Drop,
    /// `fsync` + `posix_fadvise(POSIX_FADV_DONTNEED)` on each file.
    Fadvise,
    /// Leave the cache alone (warm runs).
    None,
}

impl CacheMethod {
    /// The method's name as used on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            CacheMethod::Drop => "drop",
            CacheMethod::Fadvise => "fadvise",
            CacheMethod::None => "none",
        }
    }

    /// `Drop` when this process may write `drop_caches`, else `Fadvise`.
    pub fn best_available() -> CacheMethod {
        if can_drop_caches() {
            CacheMethod::Drop
        } else {
            CacheMethod::Fadvise
        }
    }

    /// Empties the cache of `files` (or of the whole machine for `Drop`).
    pub fn apply(self, files: &[&Path]) -> Result<()> {
        match self {
            CacheMethod::Drop => drop_all_caches(),
            CacheMethod::Fadvise => files.iter().try_for_each(|f| evict_file(f)),
            CacheMethod::None => Ok(()),
        }
    }
}

impl fmt::Display for CacheMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CacheMethod {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<CacheMethod, String> {
        match s {
            "drop" => Ok(CacheMethod::Drop),
            "fadvise" => Ok(CacheMethod::Fadvise),
            "none" => Ok(CacheMethod::None),
            _ => Err(format!("unknown cache method '{s}' (expected drop, fadvise or none)")),
        }
    }
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Whether this process can write `/proc/sys/vm/drop_caches`.
pub fn can_drop_caches() -> bool {
    std::fs::OpenOptions::new().write(true).open(DROP_CACHES).is_ok()
}

/// Syncs all file systems and drops the page cache, dentries and inodes.
pub fn drop_all_caches() -> Result<()> {
    rustix::fs::sync();
    std::fs::write(DROP_CACHES, b"3\n").map_err(|e| Error::from_io("write", DROP_CACHES, e))
}

/// Writes back and evicts one file's pages from the page cache.
pub fn evict_file(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::from_io("open", path, e))?;
    // fsync first: DONTNEED only drops clean pages.
    f.sync_all().map_err(|e| Error::from_io("fsync", path, e))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| Error::from_io("posix_fadvise", path, e.into()))
}

/// The `read_ahead_kb` of the block device holding `path`, when it can be
/// found in sysfs (the device of the file system, or its parent disk).
pub fn read_ahead_kb(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let base = format!("/sys/dev/block/{major}:{minor}");
    for p in [format!("{base}/queue/read_ahead_kb"), format!("{base}/../queue/read_ahead_kb")] {
        if let Ok(s) = std::fs::read_to_string(&p) {
            if let Ok(v) = s.trim().parse() {
                return Some(v);
            }
        }
    }
    None
}
