//! Output that appears only when complete: write beside, then rename.
//!
//! [`AtomicFile::create`] opens a hidden temporary file in the target's
//! directory (same file system, so the final `rename` is atomic).
//! [`AtomicFile::commit`] renames it over the target; dropping an uncommitted
//! `AtomicFile` (an error, or an interrupt that unwinds) removes it. The
//! target is never touched before `commit`, so an input given as its own
//! output stays intact until the result is complete.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::{Error, ErrorKind, Result};

/// A file written under a temporary name beside its target and renamed over
/// the target by [`commit`](AtomicFile::commit).
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicFile {
    /// Creates an empty temporary file beside `target` (which is not
    /// touched). Fails early if `target` is a directory.
    pub fn create(target: &Path) -> Result<AtomicFile> {
        if target.is_dir() {
            return Err(Error::new(ErrorKind::IsADirectory, target));
        }
        let name = target
            .file_name()
            .ok_or_else(|| Error::new(ErrorKind::IsADirectory, target))?
            .to_string_lossy()
            .into_owned();
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.emsort-{}-{seq}.tmp", std::process::id()));
        // Errors name the target: the temporary name means nothing to the user.
        File::create(&temp).map_err(|e| Error::from_io("create", target, e))?;
        Ok(AtomicFile { target: target.to_path_buf(), temp, committed: false })
    }

    /// The temporary path to write to.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file over the target.
    pub fn commit(mut self) -> Result<()> {
        std::fs::rename(&self.temp, &self.target).map_err(|e| Error::from_io("rename", &self.target, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appears_only_on_commit_and_cleans_up_otherwise() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out.bin");
        std::fs::write(&target, b"old").unwrap();
        let a = AtomicFile::create(&target).unwrap();
        std::fs::write(a.path(), b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        a.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let b = AtomicFile::create(&target).unwrap();
        let tmp = b.path().to_path_buf();
        assert!(tmp.exists());
        drop(b);
        assert!(!tmp.exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        assert_eq!(*AtomicFile::create(d.path()).unwrap_err().kind(), ErrorKind::IsADirectory);
    }
}
