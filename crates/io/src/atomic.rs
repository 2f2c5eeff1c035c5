//! Output that appears only when complete: written unnamed (or under a
//! random name) beside its target, then renamed over it.
//!
//! [`AtomicFile::create`] resolves the target ([`crate::Place`]: its links
//! followed as the kernel follows them, its directory held open) and makes
//! the temporary file in that directory: an unnamed `O_TMPFILE` where the
//! file system offers one, else `.NAME.emsort-PID-R.tmp` with a random `R`,
//! created with `O_EXCL | O_NOFOLLOW` (retried under a new name if taken).
//! The result is written through [`AtomicFile::file`].
//! [`AtomicFile::commit`] gives it the target's owner, mode and extended
//! attributes, syncs it, and renames it over the target
//! (`renameat` in the directory held open; an unnamed file is first linked
//! under a random name there). Dropping an uncommitted `AtomicFile` (an
//! error, an interrupt that unwinds) removes it; an unnamed one simply
//! vanishes with its descriptor, even on `SIGKILL`. The target is never
//! touched before `commit`, so an input given as its own output stays intact
//! until the result is complete.
//!
//! **After the temporary file is created, everything is done through its
//! descriptor** (`fchown`, `fchmod`, `fsetxattr`, `fsync`, the link) or
//! through the directory's (`renameat`), never through a name resolved
//! again from the start: the owner of a directory on the way cannot swap a
//! name for a link and make root overwrite or chmod another file (issue
//! 37).
//!
//! What the user had stays as it was:
//!
//! - **Symbolic links** are followed ([`crate::Place`], with the kernel's
//!   `protected_symlinks` rule): the link stays, the file it points to
//!   (through any chain of links, even one that does not exist yet) is
//!   replaced, atomically, beside itself.
//! - **Mode, owner, group and extended attributes** (ACLs and file
//!   capabilities included) of an existing target are read when the
//!   temporary file is made and given to it at commit, after the last byte
//!   is written: the kernel clears set-user-ID bits and `security.capability`
//!   when a file is written or changes owner, so given earlier they would
//!   not survive. Until then the temporary file is this user's, mode 0600:
//!   never more open than the target. A new target gets 0666 less the umask
//!   (and the directory's default ACL), as `open(O_CREAT)` gives. A security
//!   attribute (`security.*`) this process may not set is left to the
//!   kernel's policy for new files; any other attribute that cannot be
//!   given stops the commit, the target untouched.
//! - **Hard links**: the named path gets the new file; other names of the
//!   old file keep its previous content ([`AtomicFile::other_links`] says
//!   how many there were). GNU `sort` rewrites the same inode instead,
//!   which is not atomic.
//!
//! `commit` syncs the file before the rename and the directory after it, so
//! a power cut leaves the previous content or the complete result; it runs
//! under an [`crate::temp::ExitHold`].
//!
//! A named temporary file holds an exclusive `flock` while this process
//! lives, so the next emsort run that writes into the same directory
//! removes it if this process is killed ([`crate::temp`]).
//!
//! Targets that cannot be replaced this way (devices, FIFOs, a file whose
//! owner this user cannot give to a new file) are refused with
//! [`ErrorKind::NotReplaceable`]; [`crate::OutputTarget`] tells them apart
//! beforehand and writes into them instead.

use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::place::{Found, Place};
use crate::temp::{atomic_temp_name, hold_exit, register, remove_stale, unregister};
use crate::{Error, ErrorKind, Result};

/// A file written beside its target and renamed over it by
/// [`commit`](AtomicFile::commit).
#[derive(Debug)]
pub struct AtomicFile {
    place: Place,
    file: File,
    temp: Temp,
    /// The existing target's owner, mode and attributes, given at commit.
    existing: Option<Existing>,
    committed: bool,
}

/// The temporary file's name, if it has one.
#[derive(Debug)]
enum Temp {
    /// `O_TMPFILE`: no name until commit.
    Unnamed,
    /// `.NAME.emsort-PID-R.tmp` in the place's directory, registered for
    /// the last-resort cleanup under `key`.
    Named { name: OsString, key: u64 },
}

#[derive(Debug)]
struct Existing {
    found: Found,
    xattrs: Vec<(CString, Vec<u8>)>,
}

/// Follows `path` through symbolic links as [`crate::Place::resolve`] does
/// (the kernel's rule, `protected_symlinks` included) and returns the path
/// of the file they lead to (which need not exist).
pub fn resolve_links(path: &Path) -> Result<PathBuf> {
    Place::resolve(path).map(|p| p.path())
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

/// A path through which the file open as `fd` is reached by the kernel
/// (the `/proc` magic link), for the calls that take no descriptor.
fn proc_fd_path(fd: &impl AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The extended attributes (names and values) of the file `at` names;
/// `follow`: whether to follow a final link (the `/proc` magic link).
fn read_xattrs(at: &Path, follow: bool, about: &Path) -> Result<Vec<(CString, Vec<u8>)>> {
    let list = |buf: &mut Vec<u8>| {
        if follow {
            rustix::fs::listxattr(at, buf.as_mut_slice())
        } else {
            rustix::fs::llistxattr(at, buf.as_mut_slice())
        }
    };
    let mut names = vec![0u8; 1024];
    loop {
        match list(&mut names) {
            Ok(n) => {
                names.truncate(n);
                break;
            }
            Err(Errno::RANGE) => names.resize(names.len() * 4, 0),
            // The file system keeps no attributes: nothing to copy.
            Err(Errno::NOTSUP) => return Ok(Vec::new()),
            Err(e) => return Err(Error::from_io("list the extended attributes of", about, e.into())),
        }
    }
    let mut out = Vec::new();
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = CString::new(name).expect("split at NUL");
        let mut value = vec![0u8; 4096];
        let got = loop {
            let r = if follow {
                rustix::fs::getxattr(at, name.as_c_str(), value.as_mut_slice())
            } else {
                rustix::fs::lgetxattr(at, name.as_c_str(), value.as_mut_slice())
            };
            match r {
                Ok(n) => break Some(n),
                Err(Errno::RANGE) => value.resize(value.len() * 4, 0),
                // Removed meanwhile.
                Err(Errno::NODATA) => break None,
                Err(e) => return Err(Error::from_io("read the extended attributes of", about, e.into())),
            }
        };
        if let Some(n) = got {
            value.truncate(n);
            out.push((name, value));
        }
    }
    Ok(out)
}

/// The existing target's attributes, read through a descriptor of it
/// (`O_PATH`, not following a link): the same file that was classified,
/// or an error if the name now holds another.
fn read_existing(place: &Place, found: Found, target: &Path) -> Result<Existing> {
    let fd = rustix::fs::openat(
        place.dir(),
        place.name(),
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::from_io("open", target, e.into()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::from_io("stat", target, e.into()))?;
    if !found.same_file(&st) {
        return Err(Error::new(ErrorKind::Io("open (the output was replaced while it was opened)"), target));
    }
    let via_proc = proc_fd_path(&fd);
    let xattrs = if std::fs::symlink_metadata(&via_proc).is_ok() {
        read_xattrs(&via_proc, true, target)?
    } else {
        // No /proc: the name, not following a link (reading only).
        read_xattrs(&place.path(), false, target)?
    };
    Ok(Existing { found: Found::of(&st), xattrs })
}

impl AtomicFile {
    /// Creates an empty temporary file beside `target` (which is not
    /// touched), following `target` through symbolic links
    /// ([`crate::Place::resolve`]); the existing target's mode, owner,
    /// group and extended attributes are read now and given at commit.
    /// Removes what killed emsort processes left in that directory first.
    /// Fails early if `target` is a directory, or cannot be replaced
    /// ([`ErrorKind::NotReplaceable`]: a device, a FIFO, a socket, or a file
    /// whose owner this user cannot give), or may not be written.
    pub fn create(target: &Path) -> Result<AtomicFile> {
        AtomicFile::at(Place::resolve(target)?)
    }

    /// [`AtomicFile::create`] at a resolved place.
    pub fn at(place: Place) -> Result<AtomicFile> {
        let target = place.path();
        let existing = match place.found() {
            None => None,
            Some(f) if f.file_type() == FileType::Directory => {
                return Err(Error::new(ErrorKind::IsADirectory, &target))
            }
            Some(f) if f.file_type() != FileType::RegularFile => {
                return Err(Error::new(ErrorKind::NotReplaceable, &target))
            }
            Some(f) if !can_give_owner(f.uid, f.gid) => {
                return Err(Error::new(ErrorKind::NotReplaceable, &target))
            }
            Some(f) => {
                // As GNU sort: a file this user may not write is not
                // replaced (said now, not after the sort).
                if rustix::fs::accessat(
                    place.dir(),
                    place.name(),
                    rustix::fs::Access::WRITE_OK,
                    AtFlags::EACCESS,
                )
                .is_err()
                {
                    return Err(Error::from_errno("open", &target, libc::EACCES));
                }
                Some(read_existing(&place, *f, &target)?)
            }
        };
        // Best effort: an unreadable directory must not stop the sort.
        let _ = remove_stale(place.dir_path());
        // Private until commit when it replaces a file; a new file gets
        // 0666 less the umask, as open(O_CREAT) gives.
        let mode = Mode::from_raw_mode(if existing.is_some() { 0o600 } else { 0o666 });
        #[cfg(test)]
        let force_named = tests::FORCE_NAMED.with(|f| f.get());
        #[cfg(not(test))]
        let force_named = false;
        let unnamed = if force_named {
            Err(Errno::OPNOTSUPP)
        } else {
            rustix::fs::openat(place.dir(), ".", OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC, mode)
        };
        let (fd, temp) = match unnamed {
            Ok(fd) => (fd, Temp::Unnamed),
            // No O_TMPFILE on this file system (or kernel): a named file.
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOSYS) => {
                create_named(&place, mode, &target)?
            }
            Err(e) => return Err(Error::from_io("create", &target, e.into())),
        };
        Ok(AtomicFile { place, file: File::from(fd), temp, existing, committed: false })
    }

    /// Gives the directory's descriptor back until the commit, which opens
    /// the directory again and refuses it unless it is the same
    /// ([`Place::release`]): for a process at its `RLIMIT_NOFILE`.
    pub fn release_dir(&mut self) -> Result<()> {
        self.place.release()
    }

    /// The temporary file, open for reading and writing: write the result
    /// through it (or through a stream made from it).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// A writer of the result from the file's start, through a duplicate
    /// of its descriptor, that hands what it writes to the disk as it goes
    /// ([`WriteBack`]): the sync at [`commit`](AtomicFile::commit) then
    /// waits for the last few MiB rather than the whole file.
    pub fn writer(&self) -> Result<WriteBack> {
        let file = self.file.try_clone().map_err(|e| Error::from_io("write", self.place.path(), e))?;
        Ok(WriteBack::new(file))
    }

    /// The final path (the target with symbolic links followed), for
    /// messages.
    pub fn target(&self) -> PathBuf {
        self.place.path()
    }

    /// How many other names (hard links) the replaced file had: they keep
    /// its previous content.
    pub fn other_links(&self) -> u64 {
        self.existing.as_ref().map_or(0, |e| e.found.nlink.saturating_sub(1))
    }

    /// Gives the file the existing target's owner, mode and attributes
    /// (in that order: a change of owner clears set-user-ID bits and
    /// capabilities, so they come after it).
    fn give_attributes(&self, target: &Path) -> Result<()> {
        let Some(e) = &self.existing else { return Ok(()) };
        let st = rustix::fs::fstat(&self.file).map_err(|err| Error::from_io("stat", target, err.into()))?;
        if (st.st_uid, st.st_gid) != (e.found.uid, e.found.gid) {
            rustix::fs::fchown(
                &self.file,
                Some(rustix::process::Uid::from_raw(e.found.uid)),
                Some(rustix::process::Gid::from_raw(e.found.gid)),
            )
            .map_err(|err| Error::from_io("give the owner of the output to", target, err.into()))?;
        }
        rustix::fs::fchmod(&self.file, Mode::from_raw_mode(e.found.mode & 0o7777))
            .map_err(|err| Error::from_io("give the mode of the output to", target, err.into()))?;
        for (name, value) in &e.xattrs {
            match rustix::fs::fsetxattr(&self.file, name.as_c_str(), value, rustix::fs::XattrFlags::empty()) {
                Ok(()) => {}
                // A security label (SELinux, SMACK, IMA) or capability that
                // this process may not set: the kernel's policy for new files.
                Err(Errno::PERM | Errno::ACCESS | Errno::NOTSUP)
                    if name.as_bytes().starts_with(b"security.") => {}
                Err(err) => {
                    return Err(Error::from_io("copy the extended attributes to", target, err.into()))
                }
            }
        }
        Ok(())
    }

    /// Gives the file the target's attributes, makes it durable (`fsync`),
    /// renames it over the target and makes the rename durable (`fsync` of
    /// the directory). Runs under an [`crate::temp::ExitHold`].
    pub fn commit(mut self) -> Result<()> {
        let _hold = hold_exit();
        let target = self.place.path();
        self.place.reattach()?;
        self.give_attributes(&target)?;
        // Durable before it is visible: after a power cut the target holds
        // its previous content or the complete result, on any file system
        // (not only where ext4's auto_da_alloc orders it).
        self.file.sync_all().map_err(|e| Error::from_io("fsync", &target, e))?;
        let dir = self.place.dir();
        match &self.temp {
            Temp::Named { name, .. } => {
                if !self.name_holds_file(name) {
                    return Err(Error::new(
                        ErrorKind::Io("rename (the temporary file was replaced)"),
                        &target,
                    ));
                }
                rustix::fs::renameat(dir, name, dir, self.place.name())
                    .map_err(|e| Error::from_io("rename", &target, e.into()))?;
            }
            Temp::Unnamed => {
                // A new target gets the file's first name straight away
                // (EEXIST if another appeared meanwhile: replaced as below).
                let linked =
                    self.place.found().is_none() && self.link_as(self.place.name().to_owned()).is_ok();
                if !linked {
                    let name = self.link_under_random_name(&target)?;
                    if !self.name_holds_file(&name) {
                        return Err(Error::new(
                            ErrorKind::Io("rename (the temporary file was replaced)"),
                            &target,
                        ));
                    }
                    if let Err(e) = rustix::fs::renameat(dir, &name, dir, self.place.name()) {
                        let _ = rustix::fs::unlinkat(dir, &name, AtFlags::empty());
                        return Err(Error::from_io("rename", &target, e.into()));
                    }
                }
            }
        }
        self.committed = true;
        // And the rename itself.
        if let Some(d) = self.place.open_dir_for_sync() {
            rustix::fs::fsync(&d).map_err(|e| Error::from_io("fsync", self.place.dir_path(), e.into()))?;
        }
        Ok(())
    }

    /// Whether `name` in the place's directory holds this file (not a
    /// link or another file put there since).
    fn name_holds_file(&self, name: &std::ffi::OsStr) -> bool {
        rustix::fs::statat(self.place.dir(), name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .zip(rustix::fs::fstat(&self.file).ok())
            .is_some_and(|(a, b)| a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    }

    /// Gives the unnamed file the name `name` in the place's directory
    /// (`linkat` through `/proc/self/fd`, or `AT_EMPTY_PATH` without it).
    fn link_as(&self, name: OsString) -> std::result::Result<(), Errno> {
        let dir = self.place.dir();
        match rustix::fs::linkat(
            rustix::fs::CWD,
            proc_fd_path(&self.file),
            dir,
            &name,
            AtFlags::SYMLINK_FOLLOW,
        ) {
            Err(Errno::NOENT) if std::fs::symlink_metadata("/proc/self/fd").is_err() => {
                rustix::fs::linkat(&self.file, "", dir, &name, AtFlags::EMPTY_PATH)
            }
            r => r,
        }
    }

    /// Links the unnamed file under a fresh random name; returns it.
    fn link_under_random_name(&self, target: &Path) -> Result<OsString> {
        for _ in 0..100 {
            let name = atomic_temp_name(self.place.name());
            match self.link_as(name.clone()) {
                Ok(()) => return Ok(name),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(Error::from_io("link", target, e.into())),
            }
        }
        Err(Error::from_errno("link", target, libc::EEXIST))
    }
}

/// A named temporary file `.NAME.emsort-PID-R.tmp` in the place's
/// directory, `O_EXCL | O_NOFOLLOW` (a name another user made first is
/// skipped, never opened), locked and registered.
fn create_named(place: &Place, mode: Mode, target: &Path) -> Result<(OwnedFd, Temp)> {
    for _ in 0..1000 {
        let name = atomic_temp_name(place.name());
        let fd = match rustix::fs::openat(
            place.dir(),
            &name,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        ) {
            Ok(fd) => fd,
            Err(Errno::EXIST) => continue,
            // Errors name the target: the temporary name means nothing to the user.
            Err(e) => return Err(Error::from_io("create", target, e.into())),
        };
        // The proof of life for cleaners; then make sure no cleaner removed
        // the file between its creation and the lock.
        let locked = loop {
            match rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive) {
                Ok(()) => break true,
                Err(Errno::INTR) => continue,
                Err(_) => break false,
            }
        };
        let same = rustix::fs::statat(place.dir(), &name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .zip(rustix::fs::fstat(&fd).ok())
            .is_some_and(|(a, b)| a.st_dev == b.st_dev && a.st_ino == b.st_ino);
        if locked && !same {
            continue;
        }
        let key = register(&place.dir_path().join(&name), false);
        return Ok((fd, Temp::Named { name, key }));
    }
    Err(Error::from_errno("create", target, libc::EEXIST))
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Temp::Named { name, key } = &self.temp {
            if !self.committed {
                // Only if the name still holds this file.
                if self.place.reattach().is_ok() && self.name_holds_file(name) {
                    let _ = rustix::fs::unlinkat(self.place.dir(), name, AtFlags::empty());
                }
            }
            unregister(*key);
        }
    }
}

/// A file written in order from its current offset whose pages are handed
/// to the disk as they are written: every [`WriteBack::STEP`] bytes it
/// starts the write-back of the step just written (`sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`) and waits for the step before it. Left to the
/// kernel, the dirty pages of an output smaller than its background
/// threshold (a tenth of the free memory) wait for the final `fsync`: the
/// 1 GiB Parquet output of a table sort spent its last 0.58 s there
/// (`strace`), the disk idle until then. The wait bounds the dirty pages
/// to two steps, and slows the writer only when the disk is slower than it.
/// The syncs are hints: a file system that refuses them is written as
/// usual, and the final `fsync` reports any error.
#[derive(Debug)]
pub struct WriteBack {
    file: File,
    /// How far the writes have reached.
    at: u64,
    /// The end of the ranges whose write-back has been started, and of
    /// those waited for.
    started: u64,
    waited: u64,
}

impl WriteBack {
    /// Bytes between two calls of `sync_file_range`.
    pub const STEP: u64 = 8 << 20;

    /// Writes into `file` from its current offset.
    pub(crate) fn new(mut file: File) -> WriteBack {
        use std::io::Seek;
        let start = file.stream_position().unwrap_or(0);
        WriteBack { file, at: start, started: start, waited: start }
    }

    fn sync_range(&self, from: u64, to: u64, flags: libc::c_uint) {
        // SAFETY: a plain system call on a descriptor this writer owns.
        unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                from as libc::off64_t,
                (to - from) as libc::off64_t,
                flags,
            );
        }
    }

    /// Counts `n` more bytes written after the last ones through another
    /// descriptor of the file (a stream of the sort's output), and hands
    /// them to the disk as [`Write::write`](std::io::Write::write) would.
    /// Bytes a stream still holds in its own buffer are handed over with
    /// the next step, whose wait starts any write-back not yet started.
    pub fn wrote(&mut self, n: u64) {
        self.at += n;
        if self.at - self.started >= Self::STEP {
            self.hand_over();
        }
    }

    /// Starts the write-back of what was written since the last call and
    /// waits for the step before it.
    fn hand_over(&mut self) {
        self.sync_range(self.started, self.at, libc::SYNC_FILE_RANGE_WRITE);
        if self.waited < self.started {
            self.sync_range(
                self.waited,
                self.started,
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            );
        }
        self.waited = self.started;
        self.started = self.at;
    }
}

impl std::io::Write for WriteBack {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.wrote(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

    thread_local! {
        /// Makes this thread's `AtomicFile`s named, as on a file system
        /// without `O_TMPFILE`.
        pub(super) static FORCE_NAMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    fn write(a: &AtomicFile, bytes: &[u8]) {
        a.file().write_all(bytes).unwrap();
    }

    #[test]
    fn write_back_writes_every_byte_in_place_and_hands_them_over_as_it_goes() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out.bin");
        let a = AtomicFile::create(&target).unwrap();
        write(&a, b"header:");
        let mut w = a.writer().unwrap();
        assert_eq!(w.at, 7);
        let mut want = b"header:".to_vec();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        while want.len() < 3 * WriteBack::STEP as usize + 12345 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let chunk: Vec<u8> = (0..(x % (1 << 20)) as usize).map(|i| (i as u64 ^ x) as u8).collect();
            w.write_all(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            // Everything written but the last step's worth has been handed
            // over, and all but the last two steps waited for.
            assert!(w.waited <= w.started && w.started <= w.at && w.at == want.len() as u64);
            assert!(w.at - w.started < WriteBack::STEP, "{} {}", w.at, w.started);
        }
        assert!(w.waited >= WriteBack::STEP, "write-back of the first steps waited for: {}", w.waited);
        w.flush().unwrap();
        drop(w);
        a.commit().unwrap();
        assert!(std::fs::read(&target).unwrap() == want);
    }

    #[test]
    fn appears_only_on_commit_and_cleans_up_otherwise() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out.bin");
        std::fs::write(&target, b"old").unwrap();
        let a = AtomicFile::create(&target).unwrap();
        write(&a, b"new");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        a.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let b = AtomicFile::create(&target).unwrap();
        write(&b, b"dropped");
        drop(b);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A new file.
        let c = AtomicFile::create(&d.path().join("new.bin")).unwrap();
        write(&c, b"fresh");
        c.commit().unwrap();
        assert_eq!(std::fs::read(d.path().join("new.bin")).unwrap(), b"fresh");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
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
        let tmp = a.file().metadata().unwrap();
        assert_eq!(tmp.permissions().mode() & 0o777, 0o600, "the temp file is private until the commit");
        assert_eq!(a.other_links(), 1);
        write(&a, b"new");
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

    /// Set-user-ID bits and file capabilities are cleared by the kernel
    /// when a file is written or changes owner: given at commit, they
    /// survive (issue 37: `security.capability` was dropped).
    #[test]
    fn setuid_bits_and_capabilities_survive() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: setting a file capability needs root");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("tool");
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::chown(&target, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o4755)).unwrap();
        // VFS_CAP_REVISION_2, CAP_NET_RAW (13) permitted and effective.
        let mut cap = Vec::new();
        for w in [0x0200_0001u32, 1 << 13, 1 << 13, 0, 0] {
            cap.extend_from_slice(&w.to_le_bytes());
        }
        if rustix::fs::lsetxattr(&target, c"security.capability", &cap, rustix::fs::XattrFlags::empty())
            .is_err()
        {
            eprintln!("skipped: the file system keeps no file capabilities");
            return;
        }
        let a = AtomicFile::create(&target).unwrap();
        write(&a, b"new content");
        a.commit().unwrap();
        let m = std::fs::metadata(&target).unwrap();
        assert_eq!((m.uid(), m.gid(), m.permissions().mode() & 0o7777), (65534, 65534, 0o4755));
        let mut v = [0u8; 64];
        let n =
            rustix::fs::lgetxattr(&target, c"security.capability", &mut v).expect("the capability is kept");
        assert_eq!(&v[..n], &cap[..]);
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
        assert_eq!(a.target(), real);
        write(&a, b"new");
        a.commit().unwrap();
        assert!(std::fs::symlink_metadata(d.path().join("link")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A dangling link: the file it names is created.
        std::os::unix::fs::symlink("made", d.path().join("dangling")).unwrap();
        let a = AtomicFile::create(&d.path().join("dangling")).unwrap();
        write(&a, b"x");
        a.commit().unwrap();
        assert_eq!(std::fs::read(d.path().join("made")).unwrap(), b"x");
        // A loop.
        std::os::unix::fs::symlink("loop", d.path().join("loop")).unwrap();
        assert!(AtomicFile::create(&d.path().join("loop")).is_err());
    }

    /// The directory's owner swaps names while the result is written: the
    /// commit still lands on the target, through the descriptors, and the
    /// file the swap points at is untouched (issue 37).
    #[test]
    fn names_swapped_during_the_sort_change_nothing_else() {
        swap_names(false);
        swap_names(true);
    }

    fn swap_names(named: bool) {
        FORCE_NAMED.with(|f| f.set(named));
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = d.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let target = out.join("sorted");
        std::fs::write(&target, b"old").unwrap();
        let a = AtomicFile::create(&target).unwrap();
        write(&a, b"new");
        // Every name that looks like a temporary one becomes a link to the victim.
        for e in std::fs::read_dir(&out).unwrap() {
            let e = e.unwrap();
            if e.file_name() != "sorted" {
                std::fs::remove_file(e.path()).unwrap();
                std::os::unix::fs::symlink(&victim, e.path()).unwrap();
            }
        }
        let swapped = std::fs::read_dir(&out).unwrap().count() > 1;
        assert_eq!(swapped, named, "a temporary name exists only without O_TMPFILE");
        match a.commit() {
            Ok(()) => assert_eq!(std::fs::read(&target).unwrap(), b"new"),
            // The swapped name is refused: the target keeps its content.
            Err(e) => {
                assert!(named, "{e}");
                assert_eq!(std::fs::read(&target).unwrap(), b"old");
            }
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
        assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(std::fs::symlink_metadata(&target).unwrap().is_file());
        FORCE_NAMED.with(|f| f.set(false));
    }

    #[test]
    fn without_o_tmpfile_a_random_name_is_used_and_cleaned_up() {
        FORCE_NAMED.with(|f| f.set(true));
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out.txt");
        let a = AtomicFile::create(&target).unwrap();
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 1);
        assert_eq!(crate::temp::atomic_temp_target(&names[0]), Some("out.txt"), "{names:?}");
        write(&a, b"x");
        drop(a);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        let a = AtomicFile::create(&target).unwrap();
        write(&a, b"y");
        a.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"y");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        FORCE_NAMED.with(|f| f.set(false));
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
