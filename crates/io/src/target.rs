//! What kind of file a path names, for inputs and outputs that are not
//! plain files.
//!
//! - [`input_size`]: the size of an input that can be read by offset, or
//!   `None` for one that must be read as a stream to its end: pipes,
//!   character devices, sockets, and the files of pseudo file systems
//!   (`/proc`, `/sys`, …), which report a size of 0 or 4096 whatever they
//!   hold. An empty regular file on a real file system has size 0 (`sort
//!   -m` then merges it as a file, with no temporary copy, as GNU's does).
//! - [`OutputTarget::classify`]: whether an output can be replaced
//!   atomically ([`crate::AtomicFile`]: a new file, or an existing regular
//!   file whose owner this user can give to a new one in a directory it may
//!   write), or must be written *into*: a character or block device or a
//!   FIFO (which stay what they are), or a regular file that cannot be
//!   replaced (then it is rewritten in place once the result is complete,
//!   as GNU `sort` does).
//! - [`open_into`] and [`write_into`] open and write such a target so that
//!   setting the cancel flag stops them even when nobody reads the other end
//!   of a FIFO; the open goes through the directory [`Place::resolve`] held
//!   open, without following a link, and checks the file is the one
//!   classified.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::fs::{FileType, OFlags};
use rustix::io::Errno;

use crate::atomic::can_give_owner;
use crate::place::Place;
use crate::{Error, ErrorKind, Result};

/// `statfs` magic numbers of file systems whose files do not know their
/// size before they are read.
const PSEUDO_FS: [i64; 11] = [
    0x9fa0,      // proc
    0x6265_6572, // sysfs
    0x6462_6720, // debugfs
    0x7472_6163, // tracefs
    0x7363_6673, // securityfs
    0x6367_7270, // cgroup2
    0x0027_e0eb, // cgroup
    0x6265_6570, // configfs
    0x6165_676c, // pstore
    0xde5e_81e4, // efivarfs
    0xcafe_4a11, // bpf
];

/// The size of `path` when it can be read by offset (a regular file with a
/// size, on a real file system), `None` when it must be read as a stream to
/// its end (see the module docs). A directory is
/// [`ErrorKind::IsADirectory`], a missing file [`ErrorKind::NotFound`].
pub fn input_size(path: &Path) -> Result<Option<u64>> {
    let md = std::fs::metadata(path).map_err(|e| Error::from_io("open", path, e))?;
    if md.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, path));
    }
    if !md.is_file() {
        return Ok(None);
    }
    // f_type is i64 here, a 32-bit type on other targets.
    #[allow(clippy::unnecessary_cast)]
    let pseudo = rustix::fs::statfs(path).is_ok_and(|s| PSEUDO_FS.contains(&(s.f_type as i64)));
    Ok(if pseudo { None } else { Some(md.len()) })
}

/// How an output path is to be written.
#[derive(Debug)]
pub enum OutputTarget {
    /// Written beside and renamed over ([`crate::AtomicFile::at`]): the
    /// place the path leads to (a new file, or a regular file this user may
    /// replace).
    Replace(Place),
    /// Written into: the place (symbolic links followed), and what it is.
    WriteInto(Place, IntoKind),
}

/// What an [`OutputTarget::WriteInto`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntoKind {
    /// A character device (a terminal, `/dev/null`-like nodes …).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A named pipe: opening it waits for a reader.
    Fifo,
    /// A regular file this process cannot replace (its owner cannot be
    /// given to a new file, or its directory is not writable): rewritten
    /// in place once the result is complete.
    InPlace,
}

impl std::fmt::Display for IntoKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IntoKind::CharDevice => "a character device",
            IntoKind::BlockDevice => "a block device",
            IntoKind::Fifo => "a FIFO",
            IntoKind::InPlace => "a file that cannot be replaced",
        })
    }
}

impl OutputTarget {
    /// Decides how `path` is written (see the module docs), resolving it
    /// once ([`Place::resolve`]). A directory is
    /// [`ErrorKind::IsADirectory`]; a socket [`ErrorKind::NotReplaceable`].
    pub fn classify(path: &Path) -> Result<OutputTarget> {
        let place = Place::resolve(path)?;
        let Some(found) = place.found() else { return Ok(OutputTarget::Replace(place)) };
        let kind = match found.file_type() {
            FileType::Directory => return Err(Error::new(ErrorKind::IsADirectory, path)),
            FileType::CharacterDevice => IntoKind::CharDevice,
            FileType::BlockDevice => IntoKind::BlockDevice,
            FileType::Fifo => IntoKind::Fifo,
            FileType::RegularFile => {
                let dir_writable = rustix::fs::accessat(
                    place.dir(),
                    ".",
                    rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
                    rustix::fs::AtFlags::EACCESS,
                )
                .is_ok();
                if dir_writable && can_give_owner(found.uid, found.gid) {
                    return Ok(OutputTarget::Replace(place));
                }
                IntoKind::InPlace
            }
            _ => return Err(Error::new(ErrorKind::NotReplaceable, path)),
        };
        Ok(OutputTarget::WriteInto(place, kind))
    }

    /// Where the path leads.
    pub fn place(&self) -> &Place {
        match self {
            OutputTarget::Replace(p) | OutputTarget::WriteInto(p, _) => p,
        }
    }

    /// How it is written, without the place: `None` for a replacement.
    pub fn into_kind(&self) -> Option<IntoKind> {
        match self {
            OutputTarget::Replace(_) => None,
            OutputTarget::WriteInto(_, k) => Some(*k),
        }
    }
}

/// Opens a [`OutputTarget::WriteInto`] target for writing, through its
/// directory's descriptor and without following a link (the name is the
/// one [`Place::resolve`] found), and checks that it is still the file
/// classified: a name swapped since for a link or another file is refused,
/// never written (issue 37). Nothing is created or truncated. A FIFO is
/// opened without blocking, retried until a reader opens the other end or
/// `cancel` is set ([`ErrorKind::Interrupted`]). Devices and FIFOs stay
/// non-blocking, for [`write_into`].
pub fn open_into(place: &Place, kind: IntoKind, cancel: &AtomicBool) -> Result<File> {
    let path = place.path();
    let mut flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
    if kind != IntoKind::InPlace {
        flags |= OFlags::NONBLOCK;
    }
    let fd = loop {
        match rustix::fs::openat(place.dir(), place.name(), flags, rustix::fs::Mode::empty()) {
            Ok(fd) => break fd,
            // A FIFO without a reader yet.
            Err(Errno::NXIO) if kind == IntoKind::Fifo => {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, &path));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(Error::from_io("open", &path, e.into())),
        }
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::from_io("stat", &path, e.into()))?;
    if !place.found().is_some_and(|f| f.same_file(&st)) {
        return Err(Error::new(ErrorKind::Io("open (the output was replaced during the sort)"), &path));
    }
    Ok(File::from(fd))
}

/// Writes all of `buf` into `f` (opened by [`open_into`]), waiting while a
/// pipe is full and stopping with [`ErrorKind::Interrupted`] when `cancel`
/// is set.
pub fn write_into(f: &File, mut buf: &[u8], path: &Path, cancel: &AtomicBool) -> Result<()> {
    while !buf.is_empty() {
        match rustix::io::write(f, buf) {
            Ok(0) => return Err(Error::from_errno("write", path, libc::ENOSPC)),
            Ok(n) => buf = &buf[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, path));
                }
                let mut fds = [rustix::event::PollFd::new(f, rustix::event::PollFlags::OUT)];
                let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
                let _ = rustix::event::poll(&mut fds, Some(&timeout));
            }
            Err(e) => return Err(Error::from_io("write", path, e.into())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::path::PathBuf;

    fn mknod(path: &Path, ft: rustix::fs::FileType, dev: u64) -> bool {
        rustix::fs::mknodat(rustix::fs::CWD, path, ft, rustix::fs::Mode::from_raw_mode(0o666), dev).is_ok()
    }

    #[test]
    fn inputs_of_unknown_size_are_streams() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(input_size(&f).unwrap(), Some(3));
        std::fs::write(&f, b"").unwrap();
        assert_eq!(input_size(&f).unwrap(), Some(0));
        assert_eq!(input_size("/proc/self/status".as_ref()).unwrap(), None);
        assert_eq!(*input_size(d.path()).unwrap_err().kind(), ErrorKind::IsADirectory);
        assert_eq!(*input_size(&d.path().join("nope")).unwrap_err().kind(), ErrorKind::NotFound);
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        assert_eq!(input_size(&fifo).unwrap(), None);
    }

    /// The kind and the path it leads to.
    fn classified(p: &Path) -> (Option<IntoKind>, PathBuf) {
        let t = OutputTarget::classify(p).unwrap();
        (t.into_kind(), t.place().path())
    }

    #[test]
    fn outputs_are_classified() {
        let d = tempfile::tempdir().unwrap();
        let new = d.path().join("new");
        assert_eq!(classified(&new), (None, new.clone()));
        std::fs::write(&new, b"").unwrap();
        assert_eq!(classified(&new), (None, new.clone()));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&new, &link).unwrap();
        assert_eq!(classified(&link), (None, new.clone()));
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        assert_eq!(classified(&fifo), (Some(IntoKind::Fifo), fifo.clone()));
        // A link to the FIFO: written into the FIFO, the link stays.
        let flink = d.path().join("flink");
        std::os::unix::fs::symlink("fifo", &flink).unwrap();
        assert_eq!(classified(&flink), (Some(IntoKind::Fifo), fifo.clone()));
        // A character device node of our own (the null device's numbers),
        // where the test may make one.
        let null = d.path().join("null");
        if mknod(&null, rustix::fs::FileType::CharacterDevice, rustix::fs::makedev(1, 3)) {
            assert_eq!(classified(&null), (Some(IntoKind::CharDevice), null.clone()));
        }
        assert_eq!(*OutputTarget::classify(d.path()).unwrap_err().kind(), ErrorKind::IsADirectory);
    }

    /// A FIFO swapped for a link to another file after it was classified
    /// is refused when opened, and the other file is untouched.
    #[test]
    fn a_target_swapped_after_classification_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        let t = OutputTarget::classify(&fifo).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        std::fs::remove_file(&fifo).unwrap();
        std::os::unix::fs::symlink(&victim, &fifo).unwrap();
        let no = AtomicBool::new(false);
        assert!(open_into(t.place(), IntoKind::Fifo, &no).is_err());
        // A regular file put in its place: refused too.
        std::fs::remove_file(&fifo).unwrap();
        std::fs::write(&fifo, b"other").unwrap();
        assert!(open_into(t.place(), IntoKind::Fifo, &no).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
        assert_eq!(std::fs::read(&fifo).unwrap(), b"other");
    }

    #[test]
    fn a_fifo_waits_for_its_reader_and_can_be_cancelled() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        // Nobody reads: cancelled.
        let place = OutputTarget::classify(&fifo).unwrap();
        let place = place.place();
        let cancel = AtomicBool::new(true);
        let e = open_into(place, IntoKind::Fifo, &cancel).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Interrupted);
        // A reader that starts later gets every byte, through a full pipe.
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                let mut v = Vec::new();
                File::open(&fifo).unwrap().read_to_end(&mut v).unwrap();
                v
            })
        };
        let no = AtomicBool::new(false);
        let f = open_into(place, IntoKind::Fifo, &no).unwrap();
        write_into(&f, &data, &fifo, &no).unwrap();
        drop(f);
        assert_eq!(reader.join().unwrap(), data);
        // A reader that stops reading: the writer stops when cancelled.
        let _held = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let f = File::open(&fifo).unwrap();
                std::thread::sleep(Duration::from_millis(800));
                drop(f);
            })
        };
        let f = open_into(place, IntoKind::Fifo, &no).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::Relaxed);
            });
            let e = write_into(&f, &data, &fifo, &stop).unwrap_err();
            assert_eq!(*e.kind(), ErrorKind::Interrupted);
        });
    }
}
