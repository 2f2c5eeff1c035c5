//! Write-behind: a merge hands full blocks to a writer thread and goes on
//! merging while they are written.
//!
//! ```text
//!  merge thread:  fill block A ─┐ fill block B ─┐ fill block A …
//!                               ▼               ▼
//!  writer thread:          write A         write B        (output stream)
//! ```
//!
//! [`BLOCKS`] blocks of half the size asked for circulate: the merge fills
//! one while the writer thread writes the others through the output stream,
//! so the copy into the stream and the `write` system calls run on another
//! core, and a burst of slow writes does not stop the merge at once (with
//! two blocks, a 1 GiB merge of lines waited for the writer a tenth of its
//! time). Blocks are filled to their exact capacity (a multiple of 8) by
//! [`WriteBehind::push`], or with whole items through
//! [`WriteBehind::spare`], so every block but the last holds whole stream
//! units even when an item straddles two blocks. The writer's error
//! (a full disk) surfaces at the next block handed over, or at
//! [`WriteBehind::finish`]. A sink that keeps the blocks it is given (a
//! reader's channel: [`BlockSink::keeps_blocks`]) lends them on instead of
//! copying them, and they come back when the reader drops them; the filler
//! then makes a new block when none has come back yet (the reader's
//! channel bounds how many are out).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender, TryRecvError};
use std::thread::{Scope, ScopedJoinHandle};

use emsort_io::{Error, ErrorKind, Result};

use crate::byte_stream::{AlignedBuf, BlockSink};

/// Blocks that circulate between the filler and the writer.
const BLOCKS: usize = 4;

/// An output stream written by a helper thread, fed in blocks.
pub(crate) struct WriteBehind<'scope> {
    block: AlignedBuf,
    len: usize,
    cap: usize,
    full_tx: Option<SyncSender<(AlignedBuf, usize)>>,
    empty_rx: Receiver<AlignedBuf>,
    writer: Option<ScopedJoinHandle<'scope, Result<()>>>,
    path: PathBuf,
    written: u64,
    /// The sink keeps the blocks it is given (a reader's channel, which
    /// gives each back once read): a new block is made when none has come
    /// back, and the reader's channel bounds how many are out.
    lends: bool,
}

impl<'scope> WriteBehind<'scope> {
    /// Starts a writer thread in `scope` that writes to `out` from
    /// [`BLOCKS`] blocks of `block`/2 bytes (rounded up to a multiple of 8):
    /// `2·block` bytes in all.
    pub fn new<'env>(
        scope: &'scope Scope<'scope, 'env>,
        mut out: Box<dyn BlockSink + 'scope>,
        block: usize,
        path: &Path,
    ) -> Result<Self> {
        let cap = (block / 2).max(8).div_ceil(8) * 8;
        let (full_tx, full_rx) = sync_channel::<(AlignedBuf, usize)>(BLOCKS);
        let (empty_tx, empty_rx) = channel::<AlignedBuf>();
        for _ in 1..BLOCKS {
            let _ = empty_tx.send(AlignedBuf::new(cap));
        }
        let lends = out.keeps_blocks();
        let writer = emsort_io::spawn_scoped(scope, "emsort-write", path, move || {
            for (buf, len) in full_rx {
                if let Some(buf) = out.write_block(buf, len, &empty_tx)? {
                    let _ = empty_tx.send(buf);
                }
            }
            out.close()
        })?;
        Ok(WriteBehind {
            block: AlignedBuf::new(cap),
            len: 0,
            cap,
            full_tx: Some(full_tx),
            empty_rx,
            writer: Some(writer),
            path: path.to_path_buf(),
            written: 0,
            lends,
        })
    }

    /// Appends `bytes`.
    #[inline]
    pub fn push(&mut self, bytes: &[u8]) -> Result<()> {
        if self.cap - self.len >= bytes.len() {
            self.block.bytes_mut()[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
            return Ok(());
        }
        self.push_slow(bytes)
    }

    /// The free part of the current block, handing a full block to the
    /// writer first; never empty. Fill a prefix and [`commit`](Self::commit) it.
    pub fn spare(&mut self) -> Result<&mut [u8]> {
        if self.len == self.cap {
            self.hand_over()?;
        }
        Ok(&mut self.block.bytes_mut()[self.len..self.cap])
    }

    /// Like [`spare`](Self::spare), but hands a block that is at least half
    /// full to the writer first when fewer than `want` bytes are free, so
    /// that a caller filling the spare part in rounds does not make many
    /// small ones at the end of each block.
    pub fn spare_for(&mut self, want: usize) -> Result<&mut [u8]> {
        if self.len > 0 && self.cap - self.len < want && self.len >= self.cap / 2 {
            self.hand_over()?;
        }
        self.spare()
    }

    /// Appends the first `n` bytes of [`spare`](Self::spare).
    pub fn commit(&mut self, n: usize) {
        debug_assert!(self.len + n <= self.cap);
        self.len += n;
    }

    #[cold]
    fn push_slow(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            if self.len == self.cap {
                self.hand_over()?;
            }
            let take = (self.cap - self.len).min(bytes.len());
            self.block.bytes_mut()[self.len..self.len + take].copy_from_slice(&bytes[..take]);
            self.len += take;
            bytes = &bytes[take..];
        }
        Ok(())
    }

    /// Sends the current block to the writer and takes the free one.
    fn hand_over(&mut self) -> Result<()> {
        let fresh = if self.lends {
            match self.empty_rx.try_recv() {
                Ok(b) => b,
                Err(TryRecvError::Empty) => AlignedBuf::new(self.cap),
                Err(TryRecvError::Disconnected) => return Err(self.writer_error()),
            }
        } else {
            let Ok(b) = self.empty_rx.recv() else { return Err(self.writer_error()) };
            b
        };
        let full = std::mem::replace(&mut self.block, fresh);
        let tx = self.full_tx.as_ref().expect("open until finish");
        if tx.send((full, self.len)).is_err() {
            return Err(self.writer_error());
        }
        self.written += self.len as u64;
        self.len = 0;
        Ok(())
    }

    /// The writer thread stopped early: its error.
    fn writer_error(&mut self) -> Error {
        self.full_tx = None;
        match self.writer.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => Error::new(ErrorKind::Io("write (the writer thread stopped)"), &self.path),
        }
    }

    /// Writes the last block, closes the stream and returns the bytes
    /// written; a full disk is reported here at the latest.
    pub fn finish(mut self) -> Result<u64> {
        if self.len > 0 {
            self.hand_over()?;
        }
        self.full_tx = None;
        match self.writer.take().map(|h| h.join()) {
            Some(Ok(r)) => r.map(|()| self.written),
            _ => Err(Error::new(ErrorKind::Io("write (the writer thread panicked)"), &self.path)),
        }
    }
}
