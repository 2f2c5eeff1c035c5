//! The `buffered` kind: an own buffer of B bytes, filled and drained with
//! one `read(2)` / `write(2)` per buffer.
//!
//! B is rounded up to a whole number of elements. The cost model predicts
//! ⌈N·size/B⌉ calls per stream (plus one `read` returning 0 at the end).

use std::fs::File;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use crate::file::{create_for_write, maybe_sync, open_for_read, read_retry, write_all_retry, Dest};
use crate::{
    as_bytes, from_bytes, Element, Error, ErrorKind, InputStream, OutputStream, Result, StreamConfig,
    StreamInfo, StreamKind, SyscallCounts,
};

fn rounded_block<T: Element>(cfg: &StreamConfig) -> usize {
    cfg.block_size.max(T::SIZE).div_ceil(T::SIZE) * T::SIZE
}

/// Input stream of the `buffered` kind.
pub struct BufferedInput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    len: u64,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    eof: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> BufferedInput<T> {
    /// Opens `path`; the buffer holds `cfg.block_size` bytes rounded up to
    /// whole elements.
    pub fn open(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        let mut counts = SyscallCounts::default();
        let (file, size) = open_for_read(path, T::SIZE, 0, &mut counts)?;
        let b = rounded_block::<T>(cfg);
        Ok(BufferedInput {
            path: path.to_path_buf(),
            file: Some(file),
            len: size / T::SIZE as u64,
            buf: vec![0; b],
            pos: 0,
            filled: 0,
            eof: false,
            counts,
            info: StreamInfo { kind: StreamKind::Buffered, block_size: b, queue_depth: 1, fallback: None },
            _t: PhantomData,
        })
    }

    /// Refills the buffer, keeping any partial element at its front; returns
    /// false at the end of the file.
    fn fill(&mut self) -> Result<bool> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        if self.eof {
            return Ok(false);
        }
        let rest = self.filled - self.pos;
        self.buf.copy_within(self.pos..self.filled, 0);
        self.pos = 0;
        self.filled = rest;
        // Loop until at least one whole element is buffered: a read may
        // return fewer bytes than asked (pipes, signals).
        while self.filled < T::SIZE {
            let n = read_retry(file, &mut self.buf[self.filled..], &mut self.counts)
                .map_err(|e| Error::from_io("read", &self.path, e))?;
            if n == 0 {
                self.eof = true;
                if self.filled != 0 {
                    // The file shrank or grew by a partial element since open.
                    let size = self.len * T::SIZE as u64 + self.filled as u64;
                    return Err(Error::new(ErrorKind::BadSize { size, element_size: T::SIZE }, &self.path));
                }
                return Ok(false);
            }
            self.filled += n;
        }
        Ok(true)
    }
}

impl<T: Element> InputStream<T> for BufferedInput<T> {
    #[inline]
    fn read_next(&mut self) -> Result<Option<T>> {
        if self.filled - self.pos < T::SIZE && !self.fill()? {
            return Ok(None);
        }
        let x = from_bytes::<T>(&self.buf[self.pos..]);
        self.pos += T::SIZE;
        Ok(Some(x))
    }

    fn end_of_stream(&mut self) -> Result<bool> {
        Ok(self.filled - self.pos < T::SIZE && !self.fill()?)
    }

    fn read_into(&mut self, out: &mut [T]) -> Result<usize> {
        let mut n = 0;
        while n < out.len() {
            if self.filled - self.pos < T::SIZE && !self.fill()? {
                break;
            }
            let avail = (self.filled - self.pos) / T::SIZE;
            let take = avail.min(out.len() - n);
            let bytes = take * T::SIZE;
            crate::as_bytes_mut(&mut out[n..n + take]).copy_from_slice(&self.buf[self.pos..self.pos + bytes]);
            self.pos += bytes;
            n += take;
        }
        Ok(n)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&mut self) -> Result<()> {
        if self.file.take().is_some() {
            self.counts.close += 1;
            self.buf = Vec::new();
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

/// Output stream of the `buffered` kind.
pub struct BufferedOutput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    buf: Vec<u8>,
    sync: bool,
    closed: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> BufferedOutput<T> {
    /// Creates or truncates `path`.
    pub fn create(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        Self::create_in(Dest::Path(path), cfg)
    }

    /// As [`Self::create`], into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, cfg: &StreamConfig) -> Result<Self> {
        let path = dest.name();
        let mut counts = SyscallCounts::default();
        let file = create_for_write(dest, 0, &mut counts)?;
        let b = rounded_block::<T>(cfg);
        Ok(BufferedOutput {
            path: path.to_path_buf(),
            file: Some(file),
            buf: Vec::with_capacity(b),
            sync: cfg.sync_on_close,
            closed: false,
            counts,
            info: StreamInfo { kind: StreamKind::Buffered, block_size: b, queue_depth: 1, fallback: None },
            _t: PhantomData,
        })
    }

    fn flush(&mut self) -> Result<()> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        let r = write_all_retry(file, &self.buf, &mut self.counts);
        self.buf.clear();
        r.map_err(|e| {
            // A failed stream accepts nothing more.
            self.file = None;
            Error::from_io("write", &self.path, e)
        })
    }

    fn finish(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        if !self.buf.is_empty() {
            self.flush()?;
        }
        let file = self.file.take().expect("checked above");
        maybe_sync(&file, self.sync, &self.path, &mut self.counts)?;
        self.counts.close += 1;
        drop(file);
        Ok(())
    }
}

impl<T: Element> OutputStream<T> for BufferedOutput<T> {
    #[inline]
    fn write(&mut self, x: T) -> Result<()> {
        if self.closed || self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        self.buf.extend_from_slice(as_bytes(std::slice::from_ref(&x)));
        if self.buf.len() >= self.info.block_size {
            self.flush()?;
        }
        Ok(())
    }

    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        if self.closed || self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        let mut bytes = as_bytes(xs);
        while !bytes.is_empty() {
            let room = self.info.block_size - self.buf.len();
            let take = room.min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.buf.len() >= self.info.block_size {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.finish()
    }

    fn syscalls(&self) -> SyscallCounts {
        self.counts
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

impl<T: Element> Drop for BufferedOutput<T> {
    fn drop(&mut self) {
        // Best effort, see the contract in `stream/mod.rs`.
        let _ = self.finish();
    }
}
