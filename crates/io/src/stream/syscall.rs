//! The `syscall` kind: one `read(2)` / `write(2)` system call per element.
//!
//! No buffering at all, so N elements cost N calls (the INFO-H-417 reports' "Simple"
//! stream, k·N I/Os for k streams). B is ignored.

use std::fs::File;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use crate::file::{create_for_write, maybe_sync, open_for_read, read_retry, write_all_retry, Dest};
use crate::{
    as_bytes, as_bytes_mut, Element, Error, ErrorKind, InputStream, OutputStream, Result, StreamConfig,
    StreamInfo, StreamKind, SyscallCounts,
};

/// Input stream of the `syscall` kind.
pub struct SyscallInput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    len: u64,
    read: u64,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> SyscallInput<T> {
    /// Opens `path`.
    pub fn open(path: &Path, _cfg: &StreamConfig) -> Result<Self> {
        let mut counts = SyscallCounts::default();
        let (file, size) = open_for_read(path, T::SIZE, 0, &mut counts)?;
        Ok(SyscallInput {
            path: path.to_path_buf(),
            file: Some(file),
            len: size / T::SIZE as u64,
            read: 0,
            counts,
            info: StreamInfo {
                kind: StreamKind::Syscall,
                block_size: T::SIZE,
                queue_depth: 1,
                fallback: None,
            },
            _t: PhantomData,
        })
    }
}

impl<T: Element> InputStream<T> for SyscallInput<T> {
    fn read_next(&mut self) -> Result<Option<T>> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        let mut x = T::zeroed();
        let buf = as_bytes_mut(std::slice::from_mut(&mut x));
        let mut got = 0;
        while got < T::SIZE {
            let n = read_retry(file, &mut buf[got..], &mut self.counts)
                .map_err(|e| Error::from_io("read", &self.path, e))?;
            if n == 0 {
                if got == 0 {
                    return Ok(None);
                }
                let size = self.read * T::SIZE as u64 + got as u64;
                return Err(Error::new(ErrorKind::BadSize { size, element_size: T::SIZE }, &self.path));
            }
            got += n;
        }
        self.read += 1;
        Ok(Some(x))
    }

    fn end_of_stream(&mut self) -> Result<bool> {
        // Known from the size checked at open; no call needed.
        Ok(self.read >= self.len)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&mut self) -> Result<()> {
        if self.file.take().is_some() {
            self.counts.close += 1;
        }
        Ok(())
    }

    fn syscalls(&self) -> SyscallCounts {
        self.counts
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

/// Output stream of the `syscall` kind.
pub struct SyscallOutput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    sync: bool,
    closed: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> SyscallOutput<T> {
    /// Creates or truncates `path`.
    pub fn create(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        Self::create_in(Dest::Path(path), cfg)
    }

    /// As [`Self::create`], into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, cfg: &StreamConfig) -> Result<Self> {
        let path = dest.name();
        let mut counts = SyscallCounts::default();
        let file = create_for_write(dest, 0, &mut counts)?;
        Ok(SyscallOutput {
            path: path.to_path_buf(),
            file: Some(file),
            sync: cfg.sync_on_close,
            closed: false,
            counts,
            info: StreamInfo {
                kind: StreamKind::Syscall,
                block_size: T::SIZE,
                queue_depth: 1,
                fallback: None,
            },
            _t: PhantomData,
        })
    }
}

impl<T: Element> OutputStream<T> for SyscallOutput<T> {
    fn write(&mut self, x: T) -> Result<()> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        if let Err(e) = write_all_retry(file, as_bytes(std::slice::from_ref(&x)), &mut self.counts) {
            self.file = None;
            return Err(Error::from_io("write", &self.path, e));
        }
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let file = self.file.take().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        maybe_sync(&file, self.sync, &self.path, &mut self.counts)?;
        self.counts.close += 1;
        Ok(())
    }

    fn syscalls(&self) -> SyscallCounts {
        self.counts
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

impl<T: Element> Drop for SyscallOutput<T> {
    fn drop(&mut self) {
        // Nothing is buffered: every element already reached the file. Close
        // (and sync when asked) as `close` would; errors are lost (see the
        // contract in `stream/mod.rs`).
        let _ = self.close();
    }
}
