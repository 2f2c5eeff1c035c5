//! The `stdio` kind: C stdio's `FILE`, one `fread` / `fwrite` per element.
//!
//! This is really libc's `FILE` with libc's own buffer, not a Rust buffered
//! reader. To count the system calls libc makes on the stream's behalf, the
//! `FILE` is made with glibc's `fopencookie(3)`: its four callbacks
//! (`read`, `write`, `seek`, `close`) call the real `read(2)`, `write(2)`,
//! `lseek(2)` and `close(2)` on the file descriptor, count each call and keep
//! the `errno` of a failed one (libc may overwrite `errno` before `ferror`
//! is seen, so the saved value is what errors report).
//!
//! # Buffering
//!
//! A cookie `FILE` has no `st_blksize` to size its buffer from, so glibc
//! allocates `BUFSIZ` = 8192 bytes on first use; [`StreamInfo::block_size`]
//! reports that size and B is ignored. Reading N elements of `s` bytes one
//! `fread` at a time therefore costs ⌈N·s/8192⌉ + 1 `read(2)` calls (the last
//! one returns 0 and sets the end-of-file flag); writing costs ⌈N·s/8192⌉
//! `write(2)` calls (libc writes a full buffer each time and the rest at
//! `fflush`). The integration tests assert both formulas.
//!
//! # Calls
//!
//! - `read_next`: one `fread(p, 1, s, f)` of one element; a short count is
//!   either the end (`feof`), an error (`ferror`, reported with the saved
//!   `errno`) or a partial element (the file changed size since open).
//! - `end_of_stream`: `fgetc` + `ungetc`, stdio's own way to peek.
//! - `write`: one `fwrite(p, 1, s, f)` of one element.
//! - `read_into` / `write_all`: one `fread` / `fwrite` of the whole slice
//!   (still stdio: glibc copies through its buffer or, for large requests,
//!   reads/writes whole buffer multiples directly).
//! - output `close`: `fflush`, `fsync` when asked, `fclose`; each result is
//!   checked. `ENOSPC` becomes [`ErrorKind::DiskFull`], `EFBIG`
//!   [`ErrorKind::FileTooLarge`] (see [`Error::from_io`]).

use std::ffi::{c_char, c_int, c_void};
use std::marker::PhantomData;
use std::os::fd::{IntoRawFd, RawFd};
use std::path::{Path, PathBuf};

use crate::file::{create_for_write, open_for_read, Dest};
use crate::{
    as_bytes, as_bytes_mut, Element, Error, ErrorKind, InputStream, OutputStream, Result, StreamConfig,
    StreamInfo, StreamKind, SyscallCounts,
};

/// glibc's `cookie_io_functions_t` (the `libc` crate does not declare it).
#[repr(C)]
struct CookieIoFunctions {
    read: Option<unsafe extern "C" fn(*mut c_void, *mut c_char, libc::size_t) -> libc::ssize_t>,
    write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, libc::size_t) -> libc::ssize_t>,
    seek: Option<unsafe extern "C" fn(*mut c_void, *mut libc::off64_t, c_int) -> c_int>,
    close: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, funcs: CookieIoFunctions) -> *mut libc::FILE;
}

/// The state behind a cookie `FILE`: the descriptor, the counts and the
/// `errno` of the last failed call.
struct Cookie {
    fd: RawFd,
    counts: SyscallCounts,
    errno: c_int,
}

fn last_errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

unsafe extern "C" fn cookie_read(c: *mut c_void, buf: *mut c_char, size: libc::size_t) -> libc::ssize_t {
    // SAFETY: `c` is the `Cookie` registered with `fopencookie`; libc calls
    // the callbacks only from inside a stdio call on this stream, while no
    // Rust reference to the cookie is alive.
    let c = unsafe { &mut *(c as *mut Cookie) };
    loop {
        c.counts.read += 1;
        // SAFETY: libc passes a buffer of `size` writable bytes.
        let n = unsafe { libc::read(c.fd, buf.cast(), size) };
        if n >= 0 {
            return n;
        }
        let e = last_errno();
        if e != libc::EINTR {
            c.errno = e;
            return -1;
        }
    }
}

unsafe extern "C" fn cookie_write(c: *mut c_void, buf: *const c_char, size: libc::size_t) -> libc::ssize_t {
    // SAFETY: as in `cookie_read`.
    let c = unsafe { &mut *(c as *mut Cookie) };
    // glibc treats a short count from a cookie write as an error, so the
    // callback writes everything (retrying short writes) or fails. It must
    // return the bytes written, never a negative value (fopencookie(3)).
    let mut done = 0usize;
    while done < size {
        c.counts.write += 1;
        // SAFETY: libc passes `size` readable bytes at `buf`.
        let n = unsafe { libc::write(c.fd, buf.add(done).cast(), size - done) };
        if n > 0 {
            done += n as usize;
        } else if n == 0 {
            c.errno = libc::ENOSPC;
            break;
        } else {
            let e = last_errno();
            if e != libc::EINTR {
                c.errno = e;
                break;
            }
        }
    }
    done as libc::ssize_t
}

unsafe extern "C" fn cookie_seek(c: *mut c_void, off: *mut libc::off64_t, whence: c_int) -> c_int {
    // SAFETY: as in `cookie_read`; `off` points to the requested offset.
    let c = unsafe { &mut *(c as *mut Cookie) };
    c.counts.other += 1;
    // SAFETY: plain system call on our descriptor.
    let r = unsafe { libc::lseek64(c.fd, *off, whence) };
    if r < 0 {
        c.errno = last_errno();
        return -1;
    }
    // SAFETY: see above.
    unsafe { *off = r };
    0
}

unsafe extern "C" fn cookie_close(c: *mut c_void) -> c_int {
    // SAFETY: as in `cookie_read`.
    let c = unsafe { &mut *(c as *mut Cookie) };
    if c.fd < 0 {
        return 0;
    }
    c.counts.close += 1;
    // SAFETY: we own the descriptor; it is closed exactly once (Linux
    // releases it even when close reports an error, so no retry).
    let r = unsafe { libc::close(c.fd) };
    c.fd = -1;
    if r < 0 {
        c.errno = last_errno();
        return -1;
    }
    0
}

/// A cookie `FILE` and its cookie. The cookie lives until this value drops,
/// after `fclose`, so the counts stay readable after `close`.
struct CFile {
    fp: *mut libc::FILE,
    cookie: *mut Cookie,
}

// SAFETY: a glibc `FILE` may be used from any thread (it locks itself); the
// cookie is only touched through the `FILE` or by the single owner of `CFile`.
unsafe impl Send for CFile {}

impl CFile {
    /// Wraps `fd` (owned from now on) in a cookie `FILE` opened with `mode`.
    fn new(fd: RawFd, counts: SyscallCounts, mode: &std::ffi::CStr, path: &Path) -> Result<CFile> {
        let cookie = Box::into_raw(Box::new(Cookie { fd, counts, errno: 0 }));
        let funcs = CookieIoFunctions {
            read: Some(cookie_read),
            write: Some(cookie_write),
            seek: Some(cookie_seek),
            close: Some(cookie_close),
        };
        // SAFETY: `cookie` is a valid heap pointer we keep alive until after
        // `fclose`; `mode` is a NUL-terminated string.
        let fp = unsafe { fopencookie(cookie.cast(), mode.as_ptr(), funcs) };
        if fp.is_null() {
            let e = last_errno();
            // SAFETY: libc did not take the cookie; close the fd and free it.
            unsafe {
                cookie_close(cookie.cast());
                drop(Box::from_raw(cookie));
            }
            return Err(Error::from_errno("fopencookie", path, e));
        }
        Ok(CFile { fp, cookie })
    }

    fn counts(&self) -> SyscallCounts {
        // SAFETY: no stdio call is running (we are the only user).
        unsafe { (*self.cookie).counts }
    }

    fn counts_mut(&mut self) -> &mut SyscallCounts {
        // SAFETY: as in `counts`.
        unsafe { &mut (*self.cookie).counts }
    }

    fn errno(&self) -> c_int {
        // SAFETY: as in `counts`.
        unsafe { (*self.cookie).errno }
    }

    fn fd(&self) -> RawFd {
        // SAFETY: as in `counts`.
        unsafe { (*self.cookie).fd }
    }

    fn is_open(&self) -> bool {
        !self.fp.is_null()
    }

    /// `fclose` (which flushes and calls the cookie's close); returns the
    /// errno on failure. A second call does nothing.
    fn fclose(&mut self) -> std::result::Result<(), c_int> {
        if self.fp.is_null() {
            return Ok(());
        }
        // SAFETY: `fp` is open; after this call it is never used again.
        let r = unsafe { libc::fclose(self.fp) };
        self.fp = std::ptr::null_mut();
        if r != 0 {
            Err(self.errno())
        } else {
            Ok(())
        }
    }
}

impl Drop for CFile {
    fn drop(&mut self) {
        let _ = self.fclose();
        // SAFETY: the `FILE` is closed, nothing refers to the cookie any more.
        drop(unsafe { Box::from_raw(self.cookie) });
    }
}

fn info() -> StreamInfo {
    StreamInfo { kind: StreamKind::Stdio, block_size: libc::BUFSIZ as usize, queue_depth: 1, fallback: None }
}

/// Input stream of the `stdio` kind.
pub struct StdioInput<T: Element> {
    path: PathBuf,
    f: CFile,
    len: u64,
    read: u64,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> StdioInput<T> {
    /// Opens `path` and wraps it in a `FILE` (mode `"r"`); B is ignored.
    pub fn open(path: &Path, _cfg: &StreamConfig) -> Result<Self> {
        let mut counts = SyscallCounts::default();
        let (file, size) = open_for_read(path, T::SIZE, 0, &mut counts)?;
        let f = CFile::new(file.into_raw_fd(), counts, c"r", path)?;
        Ok(StdioInput {
            path: path.to_path_buf(),
            f,
            len: size / T::SIZE as u64,
            read: 0,
            info: info(),
            _t: PhantomData,
        })
    }

    fn fp(&self) -> Result<*mut libc::FILE> {
        if self.f.is_open() {
            Ok(self.f.fp)
        } else {
            Err(Error::new(ErrorKind::Closed, &self.path))
        }
    }

    fn read_error(&self) -> Error {
        Error::from_errno("read", &self.path, self.f.errno())
    }
}

impl<T: Element> InputStream<T> for StdioInput<T> {
    fn read_next(&mut self) -> Result<Option<T>> {
        let fp = self.fp()?;
        let mut x = T::zeroed();
        let buf = as_bytes_mut(std::slice::from_mut(&mut x));
        // SAFETY: `buf` holds `T::SIZE` writable bytes; `fp` is open.
        let n = unsafe { libc::fread(buf.as_mut_ptr().cast(), 1, T::SIZE, fp) };
        if n == T::SIZE {
            self.read += 1;
            return Ok(Some(x));
        }
        // SAFETY: `fp` is open.
        if unsafe { libc::ferror(fp) } != 0 {
            return Err(self.read_error());
        }
        if n == 0 {
            return Ok(None);
        }
        let size = self.read * T::SIZE as u64 + n as u64;
        Err(Error::new(ErrorKind::BadSize { size, element_size: T::SIZE }, &self.path))
    }

    fn end_of_stream(&mut self) -> Result<bool> {
        let fp = self.fp()?;
        // SAFETY: `fp` is open; one character of push-back is guaranteed.
        unsafe {
            let c = libc::fgetc(fp);
            if c == libc::EOF {
                if libc::ferror(fp) != 0 {
                    return Err(self.read_error());
                }
                return Ok(true);
            }
            libc::ungetc(c, fp);
        }
        Ok(false)
    }

    fn read_into(&mut self, out: &mut [T]) -> Result<usize> {
        let fp = self.fp()?;
        let bytes = as_bytes_mut(out);
        // SAFETY: `bytes` is writable for its length; `fp` is open.
        let n = unsafe { libc::fread(bytes.as_mut_ptr().cast(), 1, bytes.len(), fp) };
        let whole = n / T::SIZE;
        self.read += whole as u64;
        if n < bytes.len() {
            // SAFETY: `fp` is open.
            if unsafe { libc::ferror(fp) } != 0 {
                return Err(self.read_error());
            }
            if n % T::SIZE != 0 {
                let size = self.read * T::SIZE as u64 + (n % T::SIZE) as u64;
                return Err(Error::new(ErrorKind::BadSize { size, element_size: T::SIZE }, &self.path));
            }
        }
        Ok(whole)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&mut self) -> Result<()> {
        self.f.fclose().map_err(|e| Error::from_errno("fclose", &self.path, e))
    }

    fn syscalls(&self) -> SyscallCounts {
        self.f.counts()
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

/// Output stream of the `stdio` kind.
pub struct StdioOutput<T: Element> {
    path: PathBuf,
    f: CFile,
    sync: bool,
    failed: bool,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> StdioOutput<T> {
    /// Creates or truncates `path` and wraps it in a `FILE` (mode `"w"`); B is
    /// ignored.
    pub fn create(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        Self::create_in(Dest::Path(path), cfg)
    }

    /// As [`Self::create`], into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, cfg: &StreamConfig) -> Result<Self> {
        let path = dest.name();
        let mut counts = SyscallCounts::default();
        let file = create_for_write(dest, 0, &mut counts)?;
        let f = CFile::new(file.into_raw_fd(), counts, c"w", path)?;
        Ok(StdioOutput {
            path: path.to_path_buf(),
            f,
            sync: cfg.sync_on_close,
            failed: false,
            info: info(),
            _t: PhantomData,
        })
    }

    /// One `fwrite` of `bytes`; a short count fails the stream.
    fn fwrite(&mut self, bytes: &[u8]) -> Result<()> {
        if self.failed || !self.f.is_open() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        // SAFETY: `bytes` is readable for its length; the `FILE` is open.
        let n = unsafe { libc::fwrite(bytes.as_ptr().cast(), 1, bytes.len(), self.f.fp) };
        if n != bytes.len() {
            self.failed = true;
            return Err(Error::from_errno("write", &self.path, self.f.errno()));
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if !self.f.is_open() {
            return Ok(());
        }
        if self.failed {
            // Release the FILE; libc retries the flush, which fails again.
            let _ = self.f.fclose();
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        // SAFETY: the `FILE` is open.
        if unsafe { libc::fflush(self.f.fp) } != 0 {
            let err = Error::from_errno("write", &self.path, self.f.errno());
            let _ = self.f.fclose();
            return Err(err);
        }
        if self.sync {
            self.f.counts_mut().other += 1;
            // SAFETY: the descriptor stays open until the `fclose` below.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.f.fd()) };
            if let Err(e) = rustix::fs::fsync(fd) {
                let _ = self.f.fclose();
                return Err(Error::from_io("fsync", &self.path, e.into()));
            }
        }
        self.f.fclose().map_err(|e| Error::from_errno("fclose", &self.path, e))
    }
}

impl<T: Element> OutputStream<T> for StdioOutput<T> {
    fn write(&mut self, x: T) -> Result<()> {
        self.fwrite(as_bytes(std::slice::from_ref(&x)))
    }

    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        self.fwrite(as_bytes(xs))
    }

    fn close(&mut self) -> Result<()> {
        self.finish()
    }

    fn syscalls(&self) -> SyscallCounts {
        self.f.counts()
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

impl<T: Element> Drop for StdioOutput<T> {
    fn drop(&mut self) {
        // Best effort, see the contract in `stream/mod.rs`.
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        /// glibc's `__fbufsize` (`<stdio_ext.h>`): the size of a `FILE`'s buffer.
        fn __fbufsize(fp: *mut libc::FILE) -> libc::size_t;
    }

    #[test]
    fn cookie_file_buffer_is_bufsiz() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, vec![7u8; 20000]).unwrap();
        let mut s = StdioInput::<u32>::open(&p, &StreamConfig::new(StreamKind::Stdio)).unwrap();
        assert_eq!(s.read_next().unwrap(), Some(u32::from_ne_bytes([7; 4])));
        // SAFETY: the stream is open.
        let size = unsafe { __fbufsize(s.f.fp) };
        assert_eq!(size, libc::BUFSIZ as usize);
        assert_eq!(s.info().block_size, size);
        assert_eq!(s.syscalls().read, 1, "one buffer fill so far");
        s.close().unwrap();
    }

    #[test]
    fn peek_does_not_consume() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, [1u32, 2].iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<_>>()).unwrap();
        let mut s = StdioInput::<u32>::open(&p, &StreamConfig::new(StreamKind::Stdio)).unwrap();
        assert!(!s.end_of_stream().unwrap());
        assert_eq!(s.read_next().unwrap(), Some(1));
        assert!(!s.end_of_stream().unwrap());
        assert_eq!(s.read_next().unwrap(), Some(2));
        assert!(s.end_of_stream().unwrap());
        assert_eq!(s.read_next().unwrap(), None);
        s.close().unwrap();
        s.close().unwrap();
        assert_eq!(s.syscalls().close, 1);
        assert_eq!(*s.read_next().unwrap_err().kind(), ErrorKind::Closed);
    }
}
