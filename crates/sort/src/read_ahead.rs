//! Read-ahead: one helper thread keeps the next block of every run of a
//! merge filled while the merge consumes the current one.
//!
//! ```text
//!  merge thread:   run 0: [block A: consuming]  [block B: ready]
//!                  run 1: [block A: consuming]  [block B: being read] ◄──┐
//!                   …                                                     │
//!  reader thread:  requests (run, empty block), in order ─── read() ──────┘
//! ```
//!
//! Each run has two blocks. When the merge has consumed one, it sends it back
//! as a request for the run's next block and takes the other, which the
//! reader thread has usually filled meanwhile; it waits only when it
//! overtakes the reader. Requests are served in the order sent, so each
//! run's blocks come back in file order. The read system calls and the
//! copies out of the page cache (or the stream's own buffer) so run on
//! another core. An error is handed back in place of the block.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::Scope;

use emsort_io::{Error, ErrorKind, Result};

use crate::byte_stream::{AlignedBuf, ByteInput};

type Filled = Result<(AlignedBuf, usize)>;

/// The blocks of one run, as the merge sees them.
pub(crate) struct BlockReader {
    id: usize,
    path: PathBuf,
    req_tx: Sender<(usize, AlignedBuf)>,
    ret_rx: Receiver<Filled>,
    /// The current block.
    pub buf: AlignedBuf,
    /// Next unread byte of `buf`.
    pub pos: usize,
    /// End of the valid bytes of `buf`.
    pub end: usize,
}

impl BlockReader {
    /// Hands the consumed block back and takes the run's next one; false
    /// at the end of the run.
    pub fn refill(&mut self) -> Result<bool> {
        let used = std::mem::take(&mut self.buf);
        if self.req_tx.send((self.id, used)).is_err() {
            return Err(self.gone());
        }
        let (buf, n) = self.ret_rx.recv().map_err(|_| self.gone())??;
        self.buf = buf;
        self.pos = 0;
        self.end = n;
        Ok(n > 0)
    }

    /// The run's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn gone(&self) -> Error {
        Error::new(ErrorKind::Io("read (the read-ahead thread stopped)"), &self.path)
    }
}

/// The blocks' alignment: a page, so that an `O_DIRECT` stream reads
/// into them without a copy through its own buffer.
const BLOCK_ALIGN: usize = 4096;

/// Starts the reader thread in `scope` for `inputs` (each with its path),
/// with two blocks of `block` bytes (rounded up to a multiple of 8) per run.
pub(crate) fn start<'scope>(
    scope: &'scope Scope<'scope, '_>,
    inputs: Vec<(ByteInput, PathBuf)>,
    block: usize,
) -> Vec<BlockReader> {
    let cap = block.max(8).div_ceil(8) * 8;
    let (req_tx, req_rx) = channel::<(usize, AlignedBuf)>();
    let mut streams = Vec::with_capacity(inputs.len());
    let mut ret_txs = Vec::with_capacity(inputs.len());
    let mut readers = Vec::with_capacity(inputs.len());
    for (id, (stream, path)) in inputs.into_iter().enumerate() {
        let (ret_tx, ret_rx) = channel::<Filled>();
        streams.push(stream);
        ret_txs.push(ret_tx);
        // One block asked for now; the other is the (empty) current one.
        let _ = req_tx.send((id, AlignedBuf::with_align(cap, BLOCK_ALIGN)));
        readers.push(BlockReader {
            id,
            path,
            req_tx: req_tx.clone(),
            ret_rx,
            buf: AlignedBuf::with_align(cap, BLOCK_ALIGN),
            pos: 0,
            end: 0,
        });
    }
    drop(req_tx);
    scope.spawn(move || {
        // Ends when every BlockReader is gone; dropping the streams closes them.
        for (id, mut buf) in req_rx {
            let filled = streams[id].read(buf.bytes_mut()).map(|n| (buf, n));
            let _ = ret_txs[id].send(filled);
        }
    });
    readers
}
