//! Where an output path leads: a directory held open and a name in it.
//!
//! [`Place::resolve`] follows the path's symbolic links the way the kernel
//! follows them when it opens a file, and keeps the directory it ends in
//! open, so that everything done afterwards (creating the temporary file,
//! renaming it over the target, opening a FIFO) is done *relative to that
//! directory's descriptor* and never resolves the name again from the
//! start. Another user who can write into a directory on the way cannot
//! redirect a later step by swapping a name for a link (issue 37).
//!
//! The rule for links is the kernel's:
//!
//! - the directory part is opened by the kernel itself (`O_PATH`), with all
//!   its checks;
//! - a link in the last component is followed by hand — so that a dangling
//!   link still names the file to create, as `open(O_CREAT)` would — and
//!   with the kernel's `fs.protected_symlinks` rule applied to each hop:
//!   when the sysctl is 1 and the link sits in a sticky world-writable
//!   directory (`/tmp`), it is followed only if it belongs to this process's
//!   user or to the directory's owner; otherwise the answer is `EACCES`
//!   ("Permission denied"), as GNU `sort`, the shell and every other program
//!   get there. With the sysctl at 0 every link is followed, as the kernel
//!   does;
//! - at most 40 links in a row (`ELOOP`), as the kernel counts.
//!
//! ```no_run
//! # fn main() -> emsort_io::Result<()> {
//! let place = emsort_io::Place::resolve("out/sorted.txt".as_ref())?;
//! assert_eq!(place.name(), "sorted.txt");
//! # Ok(()) }
//! ```

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::{Error, ErrorKind, Result};

/// The most links followed in a row, as the kernel's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// What a [`Place`]'s name held when it was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Device and inode: the same file, later, has the same pair.
    pub dev: u64,
    /// See `dev`.
    pub ino: u64,
    /// File type and permission bits (`st_mode`).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Names (hard links) of the file.
    pub nlink: u64,
}

impl Found {
    pub(crate) fn of(st: &rustix::fs::Stat) -> Found {
        Found {
            dev: st.st_dev,
            ino: st.st_ino,
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            nlink: st.st_nlink,
        }
    }

    /// The file's type.
    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }

    /// Whether `st` describes the same file: device, inode and type (an
    /// inode number freed by a removal is soon given to a new file).
    pub fn same_file(&self, st: &rustix::fs::Stat) -> bool {
        self.dev == st.st_dev
            && self.ino == st.st_ino
            && self.mode & libc::S_IFMT == st.st_mode & libc::S_IFMT
    }
}

/// A directory held open and a name in it: where an output path leads
/// once its links are followed (see the module docs).
#[derive(Debug)]
pub struct Place {
    /// `None` between [`Place::release`] and [`Place::reattach`].
    dir: Option<OwnedFd>,
    /// The directory's device and inode, once released: what it must be
    /// when opened again.
    id: Option<(u64, u64)>,
    /// The directory as a path, for messages only.
    dir_path: PathBuf,
    name: OsString,
    /// The path as the caller gave it, for messages.
    given: PathBuf,
    followed: bool,
    found: Option<Found>,
}

/// Splits `path` into its directory and last component. A last component
/// that can only be a directory (`x/`, `.`, `..`, `/`) is
/// [`ErrorKind::IsADirectory`], as `open(O_CREAT)` says `EISDIR`.
fn split(path: &Path, about: &Path) -> Result<(PathBuf, OsString)> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() {
        return Err(Error::from_errno("open", about, libc::ENOENT));
    }
    if bytes.ends_with(b"/") {
        return Err(Error::new(ErrorKind::IsADirectory, about));
    }
    let cut = bytes.iter().rposition(|&b| b == b'/');
    // "/x" → dir "/"; "a/x" → dir "a"; "x" → dir "" (the current one).
    let (dir, name) = match cut {
        Some(0) => (&b"/"[..], &bytes[1..]),
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (&b""[..], bytes),
    };
    if name == b"." || name == b".." {
        return Err(Error::new(ErrorKind::IsADirectory, about));
    }
    Ok((PathBuf::from(OsStr::from_bytes(dir)), OsString::from_vec(name.to_vec())))
}

/// Opens directory `dir` (relative to `at`) as an `O_PATH` descriptor, by
/// the kernel's own resolution.
fn open_dir(at: BorrowedFd<'_>, dir: &Path, about: &Path) -> Result<OwnedFd> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    rustix::fs::openat(at, dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::from_io("open the directory of", about, e.into()))
}

/// Whether `fs.protected_symlinks` is on (read each time: it is a
/// system setting that may change). Unreadable: assumed on, the safer and
/// the usual setting.
pub fn protected_symlinks() -> bool {
    std::fs::read_to_string("/proc/sys/fs/protected_symlinks").map_or(true, |s| s.trim() != "0")
}

/// The kernel's `may_follow_link`: whether a process of user `follower`
/// may follow a link owned by `link_uid` in a directory of `dir_mode` owned
/// by `dir_uid`, when `fs.protected_symlinks` is `protected`.
pub fn may_follow_link(protected: bool, link_uid: u32, dir_mode: u32, dir_uid: u32, follower: u32) -> bool {
    let sticky_world_writable = libc::S_ISVTX | libc::S_IWOTH;
    !protected
        || link_uid == follower
        || dir_mode & sticky_world_writable != sticky_world_writable
        || dir_uid == link_uid
}

impl Place {
    /// Resolves `path` (see the module docs). The name need not exist; its
    /// directory must. Errors name `path`.
    pub fn resolve(path: &Path) -> Result<Place> {
        let (dir_path, name) = split(path, path)?;
        let mut dir = open_dir(CWD, &dir_path, path)?;
        let mut place = Place {
            dir: None,
            id: None,
            dir_path,
            name,
            given: path.to_path_buf(),
            followed: false,
            found: None,
        };
        let protected = protected_symlinks();
        let follower = rustix::process::geteuid().as_raw();
        for _ in 0..=MAX_LINKS {
            let st = match rustix::fs::statat(&dir, &place.name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => return Ok(Place { dir: Some(dir), ..place }),
                Err(e) => return Err(Error::from_io("stat", path, e.into())),
            };
            if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
                place.found = Some(Found::of(&st));
                return Ok(Place { dir: Some(dir), ..place });
            }
            let d = rustix::fs::fstat(&dir).map_err(|e| Error::from_io("stat", path, e.into()))?;
            if !may_follow_link(protected, st.st_uid, d.st_mode, d.st_uid, follower) {
                // What the kernel answers (and logs) for such a link.
                return Err(Error::from_errno("follow the symbolic link", place.path(), libc::EACCES));
            }
            let to = rustix::fs::readlinkat(&dir, &place.name, Vec::new())
                .map_err(|e| Error::from_io("read the link", place.path(), e.into()))?;
            let to = PathBuf::from(OsString::from_vec(to.into_bytes()));
            let (to_dir, to_name) = split(&to, path)?;
            if to.is_absolute() {
                dir = open_dir(CWD, &to_dir, path)?;
                place.dir_path = to_dir;
            } else if !to_dir.as_os_str().is_empty() {
                dir = open_dir(dir.as_fd(), &to_dir, path)?;
                place.dir_path = place.dir_path.join(to_dir);
            }
            place.name = to_name;
            place.followed = true;
        }
        Err(Error::from_errno("follow the links of", path, libc::ELOOP))
    }

    /// The directory, held open (`O_PATH`): for `openat`, `renameat` and
    /// the like.
    ///
    /// # Panics
    ///
    /// Between [`Place::release`] and [`Place::reattach`].
    pub fn dir(&self) -> BorrowedFd<'_> {
        self.dir.as_ref().expect("a released place is reattached before use").as_fd()
    }

    /// Gives the directory's descriptor back (a process at its
    /// `RLIMIT_NOFILE` needs it for a merge) until [`Place::reattach`].
    pub fn release(&mut self) -> Result<()> {
        if let Some(dir) = self.dir.take() {
            let st =
                rustix::fs::fstat(&dir).map_err(|e| Error::from_io("stat", self.dir_path(), e.into()))?;
            self.id = Some((st.st_dev, st.st_ino));
        }
        Ok(())
    }

    /// Opens the directory again after [`Place::release`] (by its path,
    /// as the kernel resolves it), and refuses it unless it is the same
    /// directory (device and inode): a directory renamed or replaced
    /// meanwhile is an error, never another place to write.
    pub fn reattach(&mut self) -> Result<()> {
        let (Some(id), None) = (self.id, &self.dir) else { return Ok(()) };
        let dir = open_dir(CWD, &self.dir_path, &self.given)?;
        let st = rustix::fs::fstat(&dir).map_err(|e| Error::from_io("stat", self.dir_path(), e.into()))?;
        if (st.st_dev, st.st_ino) != id {
            return Err(Error::new(
                ErrorKind::Io("open the directory (it was replaced during the sort)"),
                self.dir_path(),
            ));
        }
        self.dir = Some(dir);
        Ok(())
    }

    /// The name in [`Place::dir`].
    pub fn name(&self) -> &OsStr {
        &self.name
    }

    /// The path for messages: as given when no link was followed, else the
    /// file the links lead to.
    pub fn path(&self) -> PathBuf {
        if self.followed {
            self.dir_path.join(&self.name)
        } else {
            self.given.clone()
        }
    }

    /// The directory as a path (for messages and for the cleaner).
    pub fn dir_path(&self) -> &Path {
        if self.dir_path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir_path
        }
    }

    /// What the name held when resolved (`None`: nothing).
    pub fn found(&self) -> Option<&Found> {
        self.found.as_ref()
    }

    /// `fstatat` of the name now, not following a link.
    pub fn stat_now(&self) -> std::io::Result<rustix::fs::Stat> {
        rustix::fs::statat(self.dir(), &self.name, AtFlags::SYMLINK_NOFOLLOW).map_err(Into::into)
    }

    /// The directory opened for reading (for `fsync`), when it may be.
    pub fn open_dir_for_sync(&self) -> Option<OwnedFd> {
        rustix::fs::openat(
            self.dir(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A place released for lack of descriptors is opened again only if
    /// its directory is the same one: renamed away and replaced meanwhile,
    /// it is refused, never written into.
    #[test]
    fn a_released_place_reattaches_only_to_the_same_directory() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("out");
        std::fs::create_dir(&dir).unwrap();
        let mut place = Place::resolve(&dir.join("sorted.txt")).unwrap();
        place.release().unwrap();
        place.reattach().unwrap();
        assert!(rustix::fs::fstat(place.dir()).is_ok());
        place.release().unwrap();
        std::fs::rename(&dir, d.path().join("moved")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        let e = place.reattach().unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Io("open the directory (it was replaced during the sort)"));
    }

    #[test]
    fn splits_like_the_kernel() {
        let s = |p: &str| split(Path::new(p), Path::new(p)).map(|(d, n)| (d, n.into_string().unwrap()));
        assert_eq!(s("a").unwrap(), (PathBuf::from(""), "a".into()));
        assert_eq!(s("d/a").unwrap(), (PathBuf::from("d"), "a".into()));
        assert_eq!(s("/a").unwrap(), (PathBuf::from("/"), "a".into()));
        assert_eq!(s("/x/y/a").unwrap(), (PathBuf::from("/x/y"), "a".into()));
        for dir in ["a/", "/", ".", "..", "x/.."] {
            assert_eq!(*s(dir).unwrap_err().kind(), ErrorKind::IsADirectory, "{dir}");
        }
        assert_eq!(*s("").unwrap_err().kind(), ErrorKind::NotFound);
    }

    #[test]
    fn the_kernels_rule_for_links_in_sticky_directories() {
        let sticky = 0o1777 | libc::S_IFDIR;
        // Off: everything is followed.
        assert!(may_follow_link(false, 1000, sticky, 0, 0));
        // On: another user's link in root's /tmp is not followed by root…
        assert!(!may_follow_link(true, 1000, sticky, 0, 0));
        // …but one's own is, and so is the directory owner's.
        assert!(may_follow_link(true, 0, sticky, 0, 0));
        assert!(may_follow_link(true, 1000, sticky, 1000, 0));
        // Not sticky, or not world-writable: followed.
        assert!(may_follow_link(true, 1000, 0o777 | libc::S_IFDIR, 0, 0));
        assert!(may_follow_link(true, 1000, 0o1775 | libc::S_IFDIR, 0, 0));
    }

    #[test]
    fn follows_links_to_the_file_they_name() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("real"), b"x").unwrap();
        symlink("real", sub.join("hop")).unwrap();
        symlink("sub/hop", d.path().join("link")).unwrap();
        let p = Place::resolve(&d.path().join("link")).unwrap();
        assert_eq!(p.name(), "real");
        assert_eq!(p.path(), d.path().join("sub").join("real"));
        assert!(p.found().is_some_and(|f| f.file_type() == FileType::RegularFile));
        // Dangling: the name it points to, not found.
        symlink("made", d.path().join("dangling")).unwrap();
        let p = Place::resolve(&d.path().join("dangling")).unwrap();
        assert_eq!((p.name(), p.found()), (OsStr::new("made"), None));
        // A loop.
        symlink("loop", d.path().join("loop")).unwrap();
        assert_eq!(Place::resolve(&d.path().join("loop")).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        // No link: as given.
        let p = Place::resolve(&sub.join("real")).unwrap();
        assert_eq!(p.path(), sub.join("real"));
    }

    /// Root in a sticky world-writable directory, a link of another user:
    /// refused exactly when the kernel refuses it (whatever the sysctl says
    /// on this machine: the kernel is the oracle).
    #[test]
    fn a_link_the_kernel_would_refuse_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: needs root to own a link as another user");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let sticky = d.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        let link = sticky.join("out");
        symlink(&victim, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
        let kernel = std::fs::OpenOptions::new().append(true).open(&link);
        let ours = Place::resolve(&link);
        match kernel {
            Ok(_) => assert_eq!(ours.unwrap().path(), victim),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EACCES));
                assert_eq!(*ours.unwrap_err().kind(), ErrorKind::PermissionDenied);
            }
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
    }
}
