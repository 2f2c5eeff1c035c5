//! The `stream` reader: the standard library's buffered reader with seek.
//!
//! The thesis' `StreamReader` used C++ iostreams as the baseline against
//! lower-level techniques (§3.2.4.1). Here that is a `std::io::BufReader`
//! over a `std::fs::File` with its default 8 KiB buffer:
//!
//! 1. Seek to `offset` unless the reader is already there. The reader keeps
//!    its logical position; a seek that lands inside the buffered bytes uses
//!    `BufReader::seek_relative`, which keeps the buffer (as iostream's
//!    `seekg` inside the get area does), anything else becomes an `lseek`
//!    and drops it.
//! 2. `read` until `amount` bytes or the end of the file. A read of at least
//!    the buffer's size with an empty buffer goes straight to the file
//!    (`BufReader` bypasses its buffer); smaller ones go through it.
//!
//! After an error the position is unknown and the next read seeks absolutely.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::{check_buf, open_action, open_file, OpenAction, Reader, ReaderConfig};
use crate::{Error, Result};

/// Reader of the `stream` kind.
pub struct StreamReader {
    path: PathBuf,
    inner: Option<BufReader<File>>,
    size: u64,
    /// The file position the reader stands at, if known.
    pos: Option<u64>,
}

impl StreamReader {
    /// A closed reader (the configuration has nothing for this kind).
    pub fn new(_cfg: &ReaderConfig) -> StreamReader {
        StreamReader { path: PathBuf::new(), inner: None, size: 0, pos: None }
    }

    /// Seeks to `offset` and reads; the caller updates `pos`.
    fn read_at(
        r: &mut BufReader<File>,
        pos: Option<u64>,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        match pos {
            Some(p) if p == offset => {}
            Some(p) if offset.abs_diff(p) <= i64::MAX as u64 => {
                let d = if offset >= p { (offset - p) as i64 } else { -((p - offset) as i64) };
                r.seek_relative(d)?;
            }
            _ => {
                r.seek(SeekFrom::Start(offset))?;
            }
        }
        let mut n = 0;
        while n < buf.len() {
            match r.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

impl Reader for StreamReader {
    fn open(&mut self, path: &Path) -> Result<()> {
        if let OpenAction::Keep = open_action(self.is_open(), &self.path, path) {
            return Ok(());
        }
        self.close()?;
        self.path = path.to_path_buf();
        let (file, size) = open_file(path)?;
        self.inner = Some(BufReader::new(file));
        self.size = size;
        self.pos = Some(0);
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.inner.is_some()
    }

    fn close(&mut self) -> Result<()> {
        self.inner = None;
        self.size = 0;
        self.pos = None;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "stream"
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_bytes(&mut self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize> {
        check_buf(amount, buf);
        self.check_open()?;
        // Nothing can be stored at or past the largest file offset, and
        // `lseek` refuses to go there.
        if amount == 0 || offset >= i64::MAX as u64 {
            return Ok(0);
        }
        let r = self.inner.as_mut().expect("open");
        match Self::read_at(r, self.pos, offset, &mut buf[..amount]) {
            Ok(n) => {
                self.pos = Some(offset + n as u64);
                Ok(n)
            }
            Err(e) => {
                self.pos = None;
                Err(Error::from_io("read", &self.path, e))
            }
        }
    }
}
