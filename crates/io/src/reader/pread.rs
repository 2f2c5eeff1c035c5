//! The `pread` reader: `pread(2)` straight into the caller's buffer, in
//! pieces of at most B bytes.
//!
//! The thesis' `BufferReader` (§3.2.4.3): "the block size is the largest
//! amount of data read at once"; a request no larger than B is one system
//! call, a larger one ⌈amount/B⌉ calls, one after the other:
//!
//! ```text
//! request  |<------------------ amount ------------------>|
//! pieces   |<--- B --->|<--- B --->|<--- B --->|<- rest ->|   one pread each
//! ```
//!
//! `pread` names its offset, so there is no seek and no shared file
//! position. A `pread` may return fewer bytes than asked (a signal, the end
//! of the file); the reader asks again for the rest and stops at the first
//! 0, the end of the file. `EINTR` is retried.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{check_buf, open_action, open_file, OpenAction, Reader, ReaderConfig};
use crate::{Error, Result};

/// Reads `buf.len()` bytes at `offset` with `pread` calls of at most `block`
/// bytes; returns the bytes read (fewer only at the end of the file).
pub(crate) fn pread_into(
    file: &File,
    offset: u64,
    buf: &mut [u8],
    block: usize,
    path: &Path,
) -> Result<usize> {
    let block = block.max(1);
    let mut n = 0;
    while n < buf.len() {
        // Linux refuses a range reaching past the largest file offset
        // (i64::MAX) with EINVAL; nothing can be stored there anyway.
        let off = offset.saturating_add(n as u64);
        let room = (i64::MAX as u64).saturating_sub(off);
        let want = (buf.len() - n).min(block).min(room.try_into().unwrap_or(usize::MAX));
        if want == 0 {
            break;
        }
        match rustix::io::pread(file, &mut buf[n..n + want], off) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(Error::from_io("pread", path, e.into())),
        }
    }
    Ok(n)
}

/// Reader of the `pread` kind.
pub struct PreadReader {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    block: usize,
}

impl PreadReader {
    /// A closed reader that reads in pieces of at most `cfg.block_size`.
    pub fn new(cfg: &ReaderConfig) -> PreadReader {
        PreadReader { path: PathBuf::new(), file: None, size: 0, block: cfg.block_size.max(1) }
    }

    /// The block size B in use.
    pub fn block_size(&self) -> usize {
        self.block
    }
}

impl Reader for PreadReader {
    fn open(&mut self, path: &Path) -> Result<()> {
        if let OpenAction::Keep = open_action(self.is_open(), &self.path, path) {
            return Ok(());
        }
        self.close()?;
        self.path = path.to_path_buf();
        let (file, size) = open_file(path)?;
        self.file = Some(file);
        self.size = size;
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.file.is_some()
    }

    fn close(&mut self) -> Result<()> {
        self.file = None;
        self.size = 0;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "pread"
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
        pread_into(self.file.as_ref().expect("open"), offset, &mut buf[..amount], self.block, &self.path)
    }
}
