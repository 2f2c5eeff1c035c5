//! Scratch directories on a disk.
//!
//! Measurements of disk I/O mean nothing on a file system kept in memory.
//! [`disk_tempdir`] makes a temporary directory under `$TMPDIR` (usually
//! `/tmp`) unless that is `tmpfs` or `ramfs`, in which case it uses the
//! current directory. The directory is removed when the returned
//! [`tempfile::TempDir`] is dropped.
//!
//! ```no_run
//! let dir = emsort_bench::scratch::disk_tempdir("emsort-demo-")?;
//! println!("{}", dir.path().display());
//! # Ok::<(), emsort_bench::Error>(())
//! ```

use std::path::Path;

use crate::machine::{fs_type, is_memory_fs};
use crate::{Error, Result};

/// A new temporary directory named `prefix…` on a disk-backed file system
/// (see the module docs).
pub fn disk_tempdir(prefix: &str) -> Result<tempfile::TempDir> {
    let tmp = std::env::temp_dir();
    let base: &Path = if is_memory_fs(&fs_type(&tmp).0) { Path::new(".") } else { &tmp };
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(base)
        .map_err(|e| Error::io("create directory", base, e))
}

/// Fails with [`Error::DiskSpace`] unless `dir`'s file system has `need`
/// bytes free plus 64 MiB of headroom; `what` names what needs the room
/// ("the trace's data files in DIR").
pub(crate) fn check_space(dir: &Path, need: u64, what: String) -> Result<()> {
    let s = rustix::fs::statvfs(dir).map_err(|e| Error::io("statvfs", dir, e.into()))?;
    let avail = s.f_bavail.saturating_mul(s.f_frsize);
    let need = need + (64 << 20);
    if avail < need {
        return Err(Error::DiskSpace {
            what,
            need,
            avail,
            source: emsort_io::Error::new(emsort_io::ErrorKind::DiskFull, dir),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn makes_and_removes_a_directory() {
        let d = super::disk_tempdir("emsort-test-").unwrap();
        let p = d.path().to_path_buf();
        assert!(p.is_dir());
        assert!(p.file_name().unwrap().to_string_lossy().starts_with("emsort-test-"));
        drop(d);
        assert!(!p.exists());
    }
}
