//! What kind of file a path names, for inputs and outputs that are not
//! plain files.
//!
//! - [`input_size`]: the size of an input that can be read by offset, or
//!   `None` for one that must be read as a stream to its end: pipes,
//!   character devices, sockets, and the files of pseudo file systems
//!   (`/proc`, `/sys`, …), which report a size of 0 or 4096 whatever they
//!   hold. An empty regular file is read as a stream too (it costs
//!   nothing and is right if the size lied).
//! - [`OutputTarget::classify`]: whether an output can be replaced
//!   atomically ([`crate::AtomicFile`]: a new file, or an existing regular
//!   file whose owner this user can give to a new one in a directory it may
//!   write), or must be written *into*: a character or block device or a
//!   FIFO (which stay what they are), or a regular file that cannot be
//!   replaced (then it is rewritten in place once the result is complete,
//!   as GNU `sort` does).
//! - [`open_into`] and [`write_into`] open and write such a target so that
//!   setting the cancel flag stops them even when nobody reads the other end
//!   of a FIFO.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::atomic::{can_give_owner, resolve_links};
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
    if !md.is_file() || md.len() == 0 {
        return Ok(None);
    }
    // f_type is i64 here, a 32-bit type on other targets.
    #[allow(clippy::unnecessary_cast)]
    let pseudo = rustix::fs::statfs(path).is_ok_and(|s| PSEUDO_FS.contains(&(s.f_type as i64)));
    Ok(if pseudo { None } else { Some(md.len()) })
}

/// How an output path is to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    /// Written beside and renamed over ([`crate::AtomicFile`]); the path as
    /// given (symbolic links are followed when it is created).
    Replace(PathBuf),
    /// Written into once the result is complete: the path with symbolic
    /// links followed, and what it is.
    WriteInto(PathBuf, IntoKind),
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
    /// given to a new file, or its directory is not writable): truncated
    /// and rewritten in place once the result is complete.
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
    /// Decides how `path` is written (see the module docs). A directory is
    /// [`ErrorKind::IsADirectory`]; a socket [`ErrorKind::NotReplaceable`].
    pub fn classify(path: &Path) -> Result<OutputTarget> {
        let real = resolve_links(path)?;
        let md = match std::fs::metadata(&real) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(OutputTarget::Replace(path.to_path_buf()))
            }
            Err(e) => return Err(Error::from_io("stat", &real, e)),
        };
        let ft = md.file_type();
        let kind = if md.is_dir() {
            return Err(Error::new(ErrorKind::IsADirectory, path));
        } else if ft.is_char_device() {
            IntoKind::CharDevice
        } else if ft.is_block_device() {
            IntoKind::BlockDevice
        } else if ft.is_fifo() {
            IntoKind::Fifo
        } else if ft.is_socket() {
            return Err(Error::new(ErrorKind::NotReplaceable, path));
        } else {
            let dir = match real.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let dir_writable =
                rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK).is_ok();
            if dir_writable && can_give_owner(md.uid(), md.gid()) {
                return Ok(OutputTarget::Replace(path.to_path_buf()));
            }
            IntoKind::InPlace
        };
        Ok(OutputTarget::WriteInto(real, kind))
    }
}

/// Opens a [`OutputTarget::WriteInto`] target for writing, without creating
/// anything. A FIFO is opened without blocking, retried until a reader
/// opens the other end or `cancel` is set ([`ErrorKind::Interrupted`]); a
/// regular file is truncated. Devices and FIFOs stay non-blocking, for
/// [`write_into`].
pub fn open_into(path: &Path, kind: IntoKind, cancel: &AtomicBool) -> Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    match kind {
        IntoKind::InPlace => {
            opts.truncate(true).custom_flags(libc::O_CLOEXEC);
        }
        _ => {
            opts.custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK);
        }
    }
    loop {
        match opts.open(path) {
            Ok(f) => return Ok(f),
            // A FIFO without a reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && kind == IntoKind::Fifo => {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, path));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from_io("open", path, e)),
        }
    }
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
        assert_eq!(input_size(&f).unwrap(), None);
        assert_eq!(input_size("/proc/self/status".as_ref()).unwrap(), None);
        assert_eq!(*input_size(d.path()).unwrap_err().kind(), ErrorKind::IsADirectory);
        assert_eq!(*input_size(&d.path().join("nope")).unwrap_err().kind(), ErrorKind::NotFound);
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        assert_eq!(input_size(&fifo).unwrap(), None);
    }

    #[test]
    fn outputs_are_classified() {
        let d = tempfile::tempdir().unwrap();
        let new = d.path().join("new");
        assert_eq!(OutputTarget::classify(&new).unwrap(), OutputTarget::Replace(new.clone()));
        std::fs::write(&new, b"").unwrap();
        assert_eq!(OutputTarget::classify(&new).unwrap(), OutputTarget::Replace(new.clone()));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&new, &link).unwrap();
        assert_eq!(OutputTarget::classify(&link).unwrap(), OutputTarget::Replace(link.clone()));
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        assert_eq!(
            OutputTarget::classify(&fifo).unwrap(),
            OutputTarget::WriteInto(fifo.clone(), IntoKind::Fifo)
        );
        // A link to the FIFO: written into the FIFO, the link stays.
        let flink = d.path().join("flink");
        std::os::unix::fs::symlink("fifo", &flink).unwrap();
        assert_eq!(
            OutputTarget::classify(&flink).unwrap(),
            OutputTarget::WriteInto(fifo.clone(), IntoKind::Fifo)
        );
        // A character device node of our own (the null device's numbers),
        // where the test may make one.
        let null = d.path().join("null");
        if mknod(&null, rustix::fs::FileType::CharacterDevice, rustix::fs::makedev(1, 3)) {
            assert_eq!(
                OutputTarget::classify(&null).unwrap(),
                OutputTarget::WriteInto(null.clone(), IntoKind::CharDevice)
            );
        }
        assert_eq!(*OutputTarget::classify(d.path()).unwrap_err().kind(), ErrorKind::IsADirectory);
    }

    #[test]
    fn a_fifo_waits_for_its_reader_and_can_be_cancelled() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert!(mknod(&fifo, rustix::fs::FileType::Fifo, 0));
        // Nobody reads: cancelled.
        let cancel = AtomicBool::new(true);
        let e = open_into(&fifo, IntoKind::Fifo, &cancel).unwrap_err();
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
        let f = open_into(&fifo, IntoKind::Fifo, &no).unwrap();
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
        let f = open_into(&fifo, IntoKind::Fifo, &no).unwrap();
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
