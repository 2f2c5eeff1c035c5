//! Output that appears only when complete: write beside, then rename.
//!
//! [`AtomicFile::create`] opens a hidden temporary file
//! `.NAME.emsort-PID-N.tmp` in the target's directory (same file system, so
//! the final `rename` is atomic). [`AtomicFile::commit`] renames it over the
//! target; dropping an uncommitted `AtomicFile` (an error, or an interrupt
//! that unwinds) removes it. The target is never touched before `commit`,
//! so an input given as its own output stays intact until the result is
//! complete.
//!
//! What the user had stays as it was:
//!
//! - **Symbolic links** are followed: the link stays, the file it points to
//!   (through any chain of links, even one that does not exist yet) is
//!   replaced, atomically, beside itself.
//! - **Mode, owner, group and extended attributes** (ACLs included) of an
//!   existing target are given to the temporary file before any data is
//!   written into it (it is created 0600), so a secret file stays secret
//!   throughout and after. A new target gets the usual 0666 less the umask.
//!   A security label (`security.*`) this process may not set is left to
//!   the kernel's policy for new files; any other attribute that cannot be
//!   copied stops the sort before it starts, the target untouched.
//! - **Hard links**: the named path gets the new file; other names of the
//!   old file keep its previous content ([`AtomicFile::other_links`] says
//!   how many there were). GNU `sort` rewrites the same inode instead,
//!   which is not atomic.
//!
//! `commit` syncs the file before the rename and the directory after it, so
//! a power cut leaves the previous content or the complete result.
//!
//! The temporary file holds an exclusive `flock` while this process lives,
//! so the next emsort run that writes into the same directory removes it
//! if this process is killed ([`crate::temp`]).
//!
//! Targets that cannot be replaced this way (devices, FIFOs, a file whose
//! owner this user cannot give to a new file) are refused with
//! [`ErrorKind::NotReplaceable`]; [`crate::OutputTarget`] tells them apart
//! beforehand and writes into them instead.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::temp::{register, remove_stale, unregister};
use crate::{Error, ErrorKind, Result};

/// A file written under a temporary name beside its target and renamed over
/// the target by [`commit`](AtomicFile::commit).
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    // Open for the flock that proves this process alive.
    file: Option<File>,
    key: u64,
    // The existing target's permission bits, applied again at commit (a
    // write by a non-root process clears set-user-ID bits).
    mode: Option<u32>,
    other_links: u64,
    committed: bool,
}

/// Follows `path` through symbolic links (relative ones from the link's
/// directory) to the name that is not a link; a dangling link gives the
/// name it points to. More than 40 links is `ELOOP`, as the kernel counts.
pub fn resolve_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| Error::from_io("read the link", &p, e))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::from_io("follow the links of", path, std::io::Error::from_raw_os_error(libc::ELOOP)))
}

/// Whether this process can give a new file `uid` and `gid` (root, or the
/// owner when `gid` is one of its groups).
pub(crate) fn can_give_owner(uid: u32, gid: u32) -> bool {
    let euid = rustix::process::geteuid().as_raw();
    if euid == 0 {
        return true;
    }
    if uid != euid {
        return false;
    }
    gid == rustix::process::getegid().as_raw()
        || rustix::process::getgroups().is_ok_and(|g| g.iter().any(|x| x.as_raw() == gid))
}

/// Gives `to` the extended attributes of `from` (names and values), so
/// ACLs, capabilities and user attributes survive the replacement.
fn copy_xattrs(from: &Path, to: &File, temp: &Path) -> Result<()> {
    let list = |buf: &mut Vec<u8>| rustix::fs::llistxattr(from, buf.as_mut_slice());
    let mut names = vec![0u8; 1024];
    loop {
        match list(&mut names) {
            Ok(n) => {
                names.truncate(n);
                break;
            }
            Err(rustix::io::Errno::RANGE) => names.resize(names.len() * 4, 0),
            // The file system keeps no attributes: nothing to copy.
            Err(rustix::io::Errno::NOTSUP) => return Ok(()),
            Err(e) => return Err(Error::from_io("list the extended attributes of", from, e.into())),
        }
    }
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::ffi::CString::new(name).expect("split at NUL");
        let mut value = vec![0u8; 4096];
        let n = loop {
            match rustix::fs::lgetxattr(from, name.as_c_str(), value.as_mut_slice()) {
                Ok(n) => break n,
                Err(rustix::io::Errno::RANGE) => value.resize(value.len() * 4, 0),
                Err(e) => return Err(Error::from_io("read the extended attributes of", from, e.into())),
            }
        };
        match rustix::fs::fsetxattr(to, name.as_c_str(), &value[..n], rustix::fs::XattrFlags::empty()) {
            Ok(()) => {}
            // A security label (SELinux, SMACK, IMA) that this process may
            // not set: the kernel labels the new file by its own policy.
            Err(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS | rustix::io::Errno::NOTSUP)
                if name.as_bytes().starts_with(b"security.") => {}
            Err(e) => return Err(Error::from_io("copy the extended attributes to", temp, e.into())),
        }
    }
    Ok(())
}

impl AtomicFile {
    /// Creates an empty temporary file beside `target` (which is not
    /// touched), following `target` through symbolic links, with the
    /// existing target's mode, owner, group and extended attributes.
    /// Removes what killed emsort processes left in that directory first.
    /// Fails early if `target` is a directory, or cannot be replaced
    /// ([`ErrorKind::NotReplaceable`]: a device, a FIFO, a socket, or a file
    /// whose owner this user cannot give).
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let target = resolve_links(target)?;
        let existing = match std::fs::metadata(&target) {
            Ok(m) if m.is_dir() => return Err(Error::new(ErrorKind::IsADirectory, &target)),
            Ok(m) if !m.is_file() => return Err(Error::new(ErrorKind::NotReplaceable, &target)),
            Ok(m) if !can_give_owner(m.uid(), m.gid()) => {
                return Err(Error::new(ErrorKind::NotReplaceable, &target))
            }
            // As GNU sort: a file this user may not write is not replaced
            // (said now, not after the sort, when the output is opened).
            Ok(_) if rustix::fs::access(&target, rustix::fs::Access::WRITE_OK).is_err() => {
                return Err(Error::from_io("open", &target, std::io::Error::from_raw_os_error(libc::EACCES)))
            }
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::from_io("stat", &target, e)),
        };
        let name = target
            .file_name()
            .ok_or_else(|| Error::new(ErrorKind::IsADirectory, &target))?
            .to_string_lossy()
            .into_owned();
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Best effort: an unreadable directory must not stop the sort.
        let _ = remove_stale(&dir);
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        for _ in 0..1000 {
            let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temp = dir.join(format!(".{name}.emsort-{}-{seq}.tmp", std::process::id()));
            let opened = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(if existing.is_some() { 0o600 } else { 0o666 })
                .custom_flags(libc::O_CLOEXEC)
                .open(&temp);
            let file = match opened {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                // Errors name the target: the temporary name means nothing to the user.
                Err(e) => return Err(Error::from_io("create", &target, e)),
            };
            // The proof of life for cleaners; then make sure no cleaner
            // removed the file between its creation and the lock.
            let locked = loop {
                match rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive) {
                    Ok(()) => break true,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(_) => break false,
                }
            };
            if locked && !same_inode(&temp, &file) {
                continue;
            }
            let key = register(&temp, false);
            let mut this = AtomicFile {
                target: target.clone(),
                temp,
                file: None,
                key,
                mode: None,
                other_links: 0,
                committed: false,
            };
            if let Some(m) = &existing {
                rustix::fs::fchown(
                    &file,
                    Some(rustix::process::Uid::from_raw(m.uid())),
                    Some(rustix::process::Gid::from_raw(m.gid())),
                )
                .map_err(|e| Error::from_io("give the owner of the output to", &this.temp, e.into()))?;
                let mode = m.permissions().mode() & 0o7777;
                file.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| Error::from_io("give the mode of the output to", &this.temp, e))?;
                copy_xattrs(&target, &file, &this.temp)?;
                this.mode = Some(mode);
                this.other_links = m.nlink().saturating_sub(1);
            }
            this.file = Some(file);
            return Ok(this);
        }
        Err(Error::from_io("create", &target, std::io::Error::from_raw_os_error(libc::EEXIST)))
    }

    /// The temporary path to write to.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The final path (the target with symbolic links followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// How many other names (hard links) the replaced file had: they keep
    /// its previous content.
    pub fn other_links(&self) -> u64 {
        self.other_links
    }

    /// The same error about the target when it is about the temporary
    /// file (whose name means nothing to the user).
    pub fn about_target(&self, e: Error) -> Error {
        if e.path() == self.temp {
            e.with_path(&self.target)
        } else {
            e
        }
    }

    /// Makes the temporary file durable (`fsync`), renames it over the
    /// target and makes the rename durable (`fsync` of the directory).
    pub fn commit(mut self) -> Result<()> {
        if let Some(mode) = self.mode {
            std::fs::set_permissions(&self.temp, std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::from_io("give the mode of the output to", &self.temp, e))?;
        }
        // Durable before it is visible: after a power cut the target holds
        // its previous content or the complete result, on any file system
        // (not only where ext4's auto_da_alloc orders it).
        if let Some(f) = &self.file {
            f.sync_all().map_err(|e| Error::from_io("fsync", &self.target, e))?;
        }
        std::fs::rename(&self.temp, &self.target).map_err(|e| Error::from_io("rename", &self.target, e))?;
        self.committed = true;
        // And the rename itself.
        let dir = match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            d.sync_all().map_err(|e| Error::from_io("fsync", dir, e))?;
        }
        Ok(())
    }
}

/// Whether `path` still names the inode open as `f`.
fn same_inode(path: &Path, f: &File) -> bool {
    match (std::fs::symlink_metadata(path), f.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
        unregister(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

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

    #[test]
    fn keeps_mode_owner_group_and_xattrs() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("secret");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let root = rustix::process::geteuid().is_root();
        if root {
            std::os::unix::fs::chown(&target, Some(65534), Some(65534)).unwrap();
        }
        let xattr =
            rustix::fs::lsetxattr(&target, c"user.emsort-test", b"kept", rustix::fs::XattrFlags::empty());
        let link = d.path().join("other-name");
        std::fs::hard_link(&target, &link).unwrap();
        let a = AtomicFile::create(&target).unwrap();
        let tmp = std::fs::metadata(a.path()).unwrap();
        assert_eq!(tmp.permissions().mode() & 0o7777, 0o640, "the temp file is as private as the target");
        assert_eq!(a.other_links(), 1);
        std::fs::write(a.path(), b"new").unwrap();
        a.commit().unwrap();
        let m = std::fs::metadata(&target).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o640);
        if root {
            assert_eq!((m.uid(), m.gid()), (65534, 65534));
        }
        if xattr.is_ok() {
            let mut v = [0u8; 16];
            let n = rustix::fs::lgetxattr(&target, c"user.emsort-test", &mut v).unwrap();
            assert_eq!(&v[..n], b"kept");
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read(&link).unwrap(), b"old", "the other name keeps the old file");
    }

    #[test]
    fn follows_symlinks_and_keeps_them() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let real = sub.join("real");
        std::fs::write(&real, b"old").unwrap();
        // link -> sub/hop -> real (relative, chained)
        std::os::unix::fs::symlink("real", sub.join("hop")).unwrap();
        std::os::unix::fs::symlink("sub/hop", d.path().join("link")).unwrap();
        let a = AtomicFile::create(&d.path().join("link")).unwrap();
        assert_eq!(a.path().parent().unwrap(), sub, "written beside the file the link names");
        assert_eq!(a.target(), real);
        std::fs::write(a.path(), b"new").unwrap();
        a.commit().unwrap();
        assert!(std::fs::symlink_metadata(d.path().join("link")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A dangling link: the file it names is created.
        std::os::unix::fs::symlink("made", d.path().join("dangling")).unwrap();
        let a = AtomicFile::create(&d.path().join("dangling")).unwrap();
        std::fs::write(a.path(), b"x").unwrap();
        a.commit().unwrap();
        assert_eq!(std::fs::read(d.path().join("made")).unwrap(), b"x");
        // A loop.
        std::os::unix::fs::symlink("loop", d.path().join("loop")).unwrap();
        assert!(AtomicFile::create(&d.path().join("loop")).is_err());
    }

    #[test]
    fn refuses_what_it_cannot_replace() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(*AtomicFile::create(&fifo).unwrap_err().kind(), ErrorKind::NotReplaceable);
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
}
