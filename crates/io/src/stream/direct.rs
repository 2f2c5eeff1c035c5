//! The `direct` kind: `O_DIRECT` with aligned buffers of B bytes.
//!
//! With `O_DIRECT` the kernel moves data between the device and the user's
//! buffer without the page cache, and refuses (`EINVAL`) any transfer whose
//! buffer address, file offset or length is not aligned to what the device
//! requires.
//!
//! # Alignment and block size
//!
//! After opening, `statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN)` (Linux ≥ 6.1)
//! gives the memory alignment `stx_dio_mem_align` and the offset/length
//! alignment `stx_dio_offset_align`. When either is 0 or the call is not
//! supported, 4096 is used for both (the largest logical block size in
//! common use). With A = max(offset alignment, memory alignment, element
//! size) — all powers of two, so A is also their least common multiple — the
//! block size is B rounded up to a multiple of A (at least A), reported in
//! [`StreamInfo::block_size`]. The buffer is one block, an [`AlignedBuf`]
//! with alignment A.
//!
//! # Input
//!
//! Blocks are read front to back with `read(2)`, each into the whole
//! aligned buffer, or, when `read_into` is given room for a whole block
//! at the buffer's alignment, straight into the caller's memory (the same
//! read, without the copy). Every read but the last returns a full block; the last
//! returns the short rest of the file. The size is known from the open, so
//! the stream does not issue a final read that returns 0: a file of S bytes
//! costs exactly ⌈S/B⌉ reads.
//!
//! # Output
//!
//! Elements are copied into the buffer; a full block is written with one
//! `write(2)`. Whole blocks handed over at the buffer's alignment while the
//! buffer is empty are written from the caller's memory, one `write(2)`
//! each, without the copy. At `close` a partial last block of p bytes is
//! zero-padded to a multiple of the offset alignment and written, then the
//! file is trimmed with `ftruncate` to its exact length (only when padding
//! was written).
//! Writing S bytes costs ⌈S/B⌉ writes, plus one `ftruncate` when S is not a
//! multiple of the offset alignment.
//!
//! # Fallback
//!
//! Some file systems refuse `O_DIRECT` at `open` with `EINVAL` (ramfs, for
//! example). The stream then opens the file without `O_DIRECT`, does the same
//! block I/O through the page cache and says so in [`StreamInfo::fallback`]
//! ([`FALLBACK`]). Any other open error is reported as is.

use std::fs::File;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, StatxFlags};

use crate::file::{
    create_for_write, ftruncate, maybe_sync, open_for_read, read_retry, write_all_retry, Dest,
};
use crate::{
    as_bytes, as_bytes_mut, from_bytes, AlignedBuf, Element, Error, ErrorKind, InputStream, OutputStream,
    Result, StreamConfig, StreamInfo, StreamKind, SyscallCounts,
};

/// [`StreamInfo::fallback`] when the file system refused `O_DIRECT`.
pub(crate) const FALLBACK: &str =
    "file system refused O_DIRECT (EINVAL); using buffered I/O with the same block size";

/// Alignment used when `STATX_DIOALIGN` gives nothing.
const DEFAULT_ALIGN: usize = 4096;

/// Whether an `open` error means "this file system refuses `O_DIRECT`".
fn o_direct_refused(err: &Error) -> bool {
    matches!(err.kind(), ErrorKind::Io("open")) && err.raw_os_error() == Some(libc::EINVAL)
}

/// Runs `open` with `O_DIRECT`; if the file system refuses it, runs it again
/// without and returns the fallback note.
pub(super) fn open_direct<F>(mut open: F) -> Result<(File, Option<String>)>
where
    F: FnMut(i32) -> Result<File>,
{
    match open(libc::O_DIRECT) {
        Ok(f) => Ok((f, None)),
        Err(e) if o_direct_refused(&e) => Ok((open(0)?, Some(FALLBACK.to_string()))),
        Err(e) => Err(e),
    }
}

/// `(memory alignment, offset alignment)` for direct I/O on `file`.
pub(super) fn dio_alignment(file: &File, counts: &mut SyscallCounts) -> (usize, usize) {
    counts.open += 1; // statx
    match rustix::fs::statx(file, c"", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        Ok(st)
            if st.stx_mask & StatxFlags::DIOALIGN.bits() != 0
                && st.stx_dio_mem_align > 0
                && st.stx_dio_offset_align > 0 =>
        {
            (st.stx_dio_mem_align as usize, st.stx_dio_offset_align as usize)
        }
        _ => (DEFAULT_ALIGN, DEFAULT_ALIGN),
    }
}

/// Block size and alignment: B rounded up to a multiple of
/// A = max(offset alignment, memory alignment, element size).
pub(super) fn block_and_align(b: usize, mem: usize, off: usize, elem: usize) -> (usize, usize) {
    let a = mem.max(off).max(elem);
    (b.max(1).div_ceil(a) * a, a)
}

/// Input stream of the `direct` kind.
pub struct DirectInput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    /// Bytes read from the file so far.
    file_pos: u64,
    buf: AlignedBuf,
    pos: usize,
    filled: usize,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> DirectInput<T> {
    /// Opens `path` with `O_DIRECT` (or without, see the module docs).
    pub fn open(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        let mut counts = SyscallCounts::default();
        let mut size = 0;
        let (file, fallback) = open_direct(|flags| {
            let (f, s) = open_for_read(path, T::SIZE, flags, &mut counts)?;
            size = s;
            Ok(f)
        })?;
        let (mem, off) = dio_alignment(&file, &mut counts);
        let (block, align) = block_and_align(cfg.block_size, mem, off, T::SIZE);
        Ok(DirectInput {
            path: path.to_path_buf(),
            file: Some(file),
            size,
            file_pos: 0,
            buf: AlignedBuf::with_align(block, align),
            pos: 0,
            filled: 0,
            counts,
            info: StreamInfo { kind: StreamKind::Direct, block_size: block, queue_depth: 1, fallback },
            _t: PhantomData,
        })
    }

    /// Reads the next block straight into `out` when `out` starts at the
    /// buffer's alignment and has room for a whole block (the same one
    /// `read` as [`fill`](Self::fill), without the copy out of the
    /// buffer); its length is left in `filled`. False when it cannot (or
    /// the file has ended): then nothing was read.
    fn direct_into(&mut self, out: &mut [u8]) -> Result<bool> {
        let block = self.buf.capacity();
        let aligned = (out.as_ptr() as usize).is_multiple_of(self.buf.align());
        if out.len() < block || !aligned || self.file_pos >= self.size || self.file.is_none() {
            return Ok(false);
        }
        self.read_block(block, &mut out[..block])?;
        Ok(true)
    }

    /// Reads the next block; false at the end of the file.
    fn fill(&mut self) -> Result<bool> {
        if self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        if self.file_pos >= self.size {
            return Ok(false);
        }
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.read_block(buf.capacity(), buf.bytes_mut());
        self.buf = buf;
        r?;
        self.pos = 0;
        Ok(true)
    }

    /// Reads the next `block` bytes of the file (its rest, at the end)
    /// into `buf` (aligned, `block` long); sets `filled` and moves
    /// `file_pos`.
    fn read_block(&mut self, block: usize, buf: &mut [u8]) -> Result<()> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        let want = (self.size - self.file_pos).min(block as u64) as usize;
        let mut got = 0;
        // Ask for whole blocks (O_DIRECT lengths must be aligned); a regular
        // file returns short only at its end.
        while got < want {
            let n = read_retry(file, &mut buf[got..], &mut self.counts)
                .map_err(|e| Error::from_io("read", &self.path, e))?;
            if n == 0 {
                let e = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("file shrank to {} bytes while open", self.file_pos + got as u64),
                );
                return Err(Error::from_io("read", &self.path, e));
            }
            got += n;
        }
        self.filled = want;
        self.file_pos += want as u64;
        Ok(())
    }
}

impl<T: Element> InputStream<T> for DirectInput<T> {
    #[inline]
    fn read_next(&mut self) -> Result<Option<T>> {
        if self.pos == self.filled && !self.fill()? {
            return Ok(None);
        }
        let x = from_bytes::<T>(&self.buf.bytes()[self.pos..]);
        self.pos += T::SIZE;
        Ok(Some(x))
    }

    fn end_of_stream(&mut self) -> Result<bool> {
        if self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        Ok(self.pos == self.filled && self.file_pos >= self.size)
    }

    fn read_into(&mut self, out: &mut [T]) -> Result<usize> {
        let out = as_bytes_mut(out);
        let mut n = 0;
        while n < out.len() {
            if self.pos == self.filled && self.direct_into(&mut out[n..])? {
                // A whole block (or the file's rest) went straight into `out`.
                n += self.filled;
                self.pos = 0;
                self.filled = 0;
                continue;
            }
            if self.pos == self.filled && !self.fill()? {
                break;
            }
            let take = (self.filled - self.pos).min(out.len() - n);
            out[n..n + take].copy_from_slice(&self.buf.bytes()[self.pos..self.pos + take]);
            self.pos += take;
            n += take;
        }
        Ok(n / T::SIZE)
    }

    fn len(&self) -> u64 {
        self.size / T::SIZE as u64
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

/// Output stream of the `direct` kind.
pub struct DirectOutput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    buf: AlignedBuf,
    filled: usize,
    /// Bytes written to the file so far (whole blocks).
    flushed: u64,
    offset_align: usize,
    sync: bool,
    closed: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> DirectOutput<T> {
    /// Creates or truncates `path` with `O_DIRECT` (or without, see the
    /// module docs).
    pub fn create(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        Self::create_in(Dest::Path(path), cfg)
    }

    /// As [`Self::create`], into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, cfg: &StreamConfig) -> Result<Self> {
        let path = dest.name();
        let mut counts = SyscallCounts::default();
        let (file, fallback) = open_direct(|flags| create_for_write(dest, flags, &mut counts))?;
        let (mem, off) = dio_alignment(&file, &mut counts);
        let (block, align) = block_and_align(cfg.block_size, mem, off, T::SIZE);
        Ok(DirectOutput {
            path: path.to_path_buf(),
            file: Some(file),
            buf: AlignedBuf::with_align(block, align),
            filled: 0,
            flushed: 0,
            offset_align: off,
            sync: cfg.sync_on_close,
            closed: false,
            counts,
            info: StreamInfo { kind: StreamKind::Direct, block_size: block, queue_depth: 1, fallback },
            _t: PhantomData,
        })
    }

    /// Writes the first `len` bytes of the buffer (an aligned length).
    fn flush(&mut self, len: usize) -> Result<()> {
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_from(&buf.bytes()[..len]);
        self.buf = buf;
        self.filled = 0;
        r
    }

    /// Writes `block` (aligned, of an aligned length) from where it is.
    fn write_from(&mut self, block: &[u8]) -> Result<()> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        match write_all_retry(file, block, &mut self.counts) {
            Ok(()) => {
                self.flushed += block.len() as u64;
                Ok(())
            }
            Err(e) => {
                // A failed stream accepts nothing more.
                self.file = None;
                Err(Error::from_io("write", &self.path, e))
            }
        }
    }

    fn finish(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        let exact = self.flushed + self.filled as u64;
        if self.filled > 0 {
            let padded = self.filled.div_ceil(self.offset_align) * self.offset_align;
            let p = self.filled;
            self.buf.bytes_mut()[p..padded].fill(0);
            self.flush(padded)?;
        }
        let file = self.file.take().expect("checked above");
        if self.flushed != exact {
            ftruncate(&file, exact, &self.path, &mut self.counts)?;
        }
        maybe_sync(&file, self.sync, &self.path, &mut self.counts)?;
        self.counts.close += 1;
        drop(file);
        Ok(())
    }
}

impl<T: Element> OutputStream<T> for DirectOutput<T> {
    #[inline]
    fn write(&mut self, x: T) -> Result<()> {
        if self.closed || self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        let p = self.filled;
        self.buf.bytes_mut()[p..p + T::SIZE].copy_from_slice(as_bytes(std::slice::from_ref(&x)));
        self.filled += T::SIZE;
        if self.filled == self.info.block_size {
            self.flush(self.filled)?;
        }
        Ok(())
    }

    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        if self.closed || self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        let mut bytes = as_bytes(xs);
        let block = self.info.block_size;
        // Whole blocks at the buffer's alignment go out from the caller's
        // memory, one write each, as they would from the buffer.
        while self.filled == 0
            && bytes.len() >= block
            && (bytes.as_ptr() as usize).is_multiple_of(self.buf.align())
        {
            self.write_from(&bytes[..block])?;
            bytes = &bytes[block..];
        }
        while !bytes.is_empty() {
            let p = self.filled;
            let take = (self.info.block_size - p).min(bytes.len());
            self.buf.bytes_mut()[p..p + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == self.info.block_size {
                self.flush(self.filled)?;
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

impl<T: Element> Drop for DirectOutput<T> {
    fn drop(&mut self) {
        // Best effort, see the contract in `stream/mod.rs`.
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_rounding() {
        assert_eq!(block_and_align(1, 512, 512, 4), (512, 512));
        assert_eq!(block_and_align(0, 512, 512, 4), (512, 512));
        assert_eq!(block_and_align(5000, 512, 512, 4), (5120, 512));
        assert_eq!(block_and_align(4096, 4, 512, 4096), (4096, 4096));
        assert_eq!(block_and_align(1 << 20, 4096, 512, 8), (1 << 20, 4096));
        assert_eq!(block_and_align(12, 8, 4, 16), (16, 16));
    }

    #[test]
    fn only_einval_at_open_means_refused() {
        let einval = Error::from_io("open", "x", std::io::Error::from_raw_os_error(libc::EINVAL));
        assert!(o_direct_refused(&einval));
        let other = Error::from_io("read", "x", std::io::Error::from_raw_os_error(libc::EINVAL));
        assert!(!o_direct_refused(&other));
        let enoent = Error::from_io("open", "x", std::io::Error::from_raw_os_error(libc::ENOENT));
        assert!(!o_direct_refused(&enoent));
    }

    /// Whole blocks handed over at the buffer's alignment while it is
    /// empty are written from where they lie: the stream's own buffer
    /// holds none of their bytes, one write each; what is not a whole
    /// block, or not aligned, goes through the buffer; the file holds
    /// every byte in order either way.
    #[test]
    fn aligned_whole_blocks_are_written_without_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let cfg = StreamConfig::new(StreamKind::Direct).block_size(8192);
        let mut out = DirectOutput::<u8>::create(&p, &cfg).unwrap();
        let b = out.info().block_size;
        let mut src = AlignedBuf::with_align(3 * b + 100, 4096);
        for (i, x) in src.bytes_mut().iter_mut().enumerate() {
            *x = (i % 251) as u8 + 1;
        }
        let src = &src.bytes()[..3 * b + 100];
        out.write_all(&src[..2 * b]).unwrap();
        assert!(out.buf.bytes().iter().all(|&x| x == 0), "a whole aligned block was copied");
        assert_eq!((out.filled, out.counts.write), (0, 2));
        // Not at the alignment: through the buffer.
        out.write_all(&src[2 * b..2 * b + 1]).unwrap();
        out.write_all(&src[2 * b + 1..]).unwrap();
        assert_eq!(out.filled, 100);
        out.close().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), src);
    }

    /// `O_DIRECT` really is on the descriptor (the kernel's view, from
    /// `/proc/self/fdinfo`) unless the stream reported a fallback.
    #[test]
    fn o_direct_is_really_set() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let flags = |f: &File| {
            let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", f.as_raw_fd())).unwrap();
            let line = info.lines().find(|l| l.starts_with("flags:")).unwrap().to_string();
            i32::from_str_radix(line.trim_start_matches("flags:").trim(), 8).unwrap()
        };
        let cfg = StreamConfig::new(StreamKind::Direct).block_size(4096);
        let mut out = DirectOutput::<u32>::create(&p, &cfg).unwrap();
        let direct = flags(out.file.as_ref().unwrap()) & libc::O_DIRECT != 0;
        assert_eq!(direct, out.info().fallback.is_none());
        out.write_all(&[1, 2, 3]).unwrap();
        out.close().unwrap();
        let inp = DirectInput::<u32>::open(&p, &cfg).unwrap();
        let direct = flags(inp.file.as_ref().unwrap()) & libc::O_DIRECT != 0;
        assert_eq!(direct, inp.info().fallback.is_none());
    }

    /// Reads into an aligned slice with room for a block go straight into
    /// it; unaligned or short ones through the buffer: the same bytes in
    /// the same ⌈S/B⌉ reads either way.
    #[test]
    fn aligned_reads_skip_the_buffer_with_the_same_reads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let data: Vec<u8> = (0..4096 * 7 + 1000).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let cfg = StreamConfig::new(StreamKind::Direct).block_size(4096 * 2);
        for (align_at, piece) in [(0usize, 4096 * 3), (1, 4096 * 3), (0, 100), (0, 4096 * 2)] {
            let mut inp = DirectInput::<u8>::open(&p, &cfg).unwrap();
            let mut space = AlignedBuf::with_align(piece + 4096, 4096);
            let mut got = Vec::new();
            loop {
                let dest = &mut space.bytes_mut()[align_at..align_at + piece];
                let n = inp.read_into(dest).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&dest[..n]);
            }
            assert_eq!(got, data, "at {align_at}, pieces of {piece}");
            assert_eq!(inp.syscalls().read, data.len().div_ceil(4096 * 2) as u64, "at {align_at}, {piece}");
        }
    }

    #[test]
    fn statx_reports_an_alignment_here() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("x")).unwrap();
        let mut c = SyscallCounts::default();
        let (mem, off) = dio_alignment(&f, &mut c);
        assert!(mem.is_power_of_two() && off.is_power_of_two(), "{mem} {off}");
        assert_eq!(c.open, 1);
    }
}
