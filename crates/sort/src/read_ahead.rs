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
//!
//! **Free-behind.** A run the sort made and removes once merged
//! ([`Input::free_behind`]) gives its disk space back as it is read: every
//! [`FREE_STEP`] bytes read, one more thread punches a hole into what was
//! read (`fallocate(PUNCH_HOLE | KEEP_SIZE)`; the file keeps its size and
//! the bytes ahead are untouched). Freeing space costs time on some file
//! systems — ext4 mounted with online `discard`, as on this project's
//! machine, spent 0.3 ms per MiB freed, waiting, not computing: 0.4 s in
//! all when the 15 keyed runs of a 1 GiB `-t, -k3,3n` sort were unlinked
//! after the merge — and that thread waits while the merge works. A merge
//! pass also needs that much less free disk. A file system that cannot
//! punch holes (`EOPNOTSUPP`) simply keeps the space until the run is
//! removed.

use std::fs::File;
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
    /// Bytes at the run's start still to pass over (a header).
    skip: u64,
}

impl BlockReader {
    /// Hands the consumed block back and takes the run's next one; false
    /// at the end of the run.
    pub fn refill(&mut self) -> Result<bool> {
        loop {
            let used = std::mem::take(&mut self.buf);
            if self.req_tx.send((self.id, used)).is_err() {
                return Err(self.gone());
            }
            let (buf, n) = self.ret_rx.recv().map_err(|_| self.gone())??;
            let skipped = (self.skip.min(n as u64)) as usize;
            self.skip -= skipped as u64;
            (self.buf, self.pos, self.end) = (buf, skipped, n);
            if n == 0 || skipped < n {
                return Ok(n > 0);
            }
        }
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

/// Bytes read from a run between two holes punched into it (see the
/// module docs): a few milliseconds of freeing each.
pub(crate) const FREE_STEP: u64 = 8 << 20;

/// A run to read ahead.
pub(crate) struct Input {
    pub stream: ByteInput,
    pub path: PathBuf,
    /// Free its disk space as it is read (a run the sort made, read once
    /// from its start and removed after; never a caller's file).
    pub free_behind: bool,
    /// Bytes at its start that are not items (a header).
    pub skip: u64,
}

/// Starts the reader thread in `scope` for `inputs`, with two blocks of
/// `block` bytes (rounded up to a multiple of 8) per run, and the thread
/// that frees the runs' space behind it when some run asks for that.
pub(crate) fn start<'scope>(
    scope: &'scope Scope<'scope, '_>,
    inputs: Vec<Input>,
    block: usize,
) -> Result<Vec<BlockReader>> {
    let cap = block.max(8).div_ceil(8) * 8;
    let (req_tx, req_rx) = channel::<(usize, AlignedBuf)>();
    let mut streams = Vec::with_capacity(inputs.len());
    let mut ret_txs = Vec::with_capacity(inputs.len());
    let mut readers = Vec::with_capacity(inputs.len());
    // Each freed run's file, opened for writing (nothing else: no O_TRUNC,
    // no O_CREAT); one that cannot be is left alone (its space comes back
    // when it is removed).
    let free: Vec<Option<File>> = inputs
        .iter()
        .map(|i| i.free_behind.then(|| std::fs::OpenOptions::new().write(true).open(&i.path).ok()).flatten())
        .collect();
    let about = inputs.first().map_or_else(PathBuf::new, |i| i.path.clone());
    let free_tx = match free.iter().any(Option::is_some) {
        true => {
            let (tx, rx) = channel::<(usize, u64, u64)>();
            emsort_io::spawn_scoped(scope, "emsort-free", &about, move || free_behind(free, rx))?;
            Some(tx)
        }
        false => None,
    };
    for (id, Input { stream, path, skip, .. }) in inputs.into_iter().enumerate() {
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
            skip,
        });
    }
    drop(req_tx);
    emsort_io::spawn_scoped(scope, "emsort-read-ahead", &about, move || {
        // Bytes read from each run, and up to where its space is freed.
        let (mut read, mut freed) = (vec![0u64; streams.len()], vec![0u64; streams.len()]);
        // Ends when every BlockReader is gone; dropping the streams closes
        // them (and the free-behind sender, which ends that thread).
        for (id, mut buf) in req_rx {
            let filled = streams[id].read(buf.bytes_mut()).map(|n| (buf, n));
            if let (Ok((_, n)), Some(tx)) = (&filled, &free_tx) {
                // A compressed run frees the file bytes its decoded frames
                // came from.
                read[id] = streams[id].file_bytes_used().unwrap_or(read[id] + *n as u64);
                let upto = read[id] / FREE_STEP * FREE_STEP;
                if upto > freed[id] {
                    let _ = tx.send((id, freed[id], upto - freed[id]));
                    freed[id] = upto;
                }
            }
            let _ = ret_txs[id].send(filled);
        }
    })?;
    Ok(readers)
}

/// The free-behind thread: punches a hole into `(run, offset, length)` for
/// each request of a run with a file in `files`. A run whose file cannot
/// be punched is left alone from then on.
fn free_behind(mut files: Vec<Option<File>>, requests: Receiver<(usize, u64, u64)>) {
    let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
    for (id, offset, len) in requests {
        if files[id].as_ref().is_some_and(|f| rustix::fs::fallocate(f, flags, offset, len).is_err()) {
            files[id] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emsort_io::{StreamConfig, StreamKind};
    use std::os::unix::fs::MetadataExt;

    /// Reads `path` whole through the read-ahead; returns its bytes.
    fn read_all(path: &Path, free_behind: bool) -> Vec<u8> {
        read_from(path, free_behind, 0, 1 << 20)
    }

    /// Reads `path` through the read-ahead in blocks of `block`, its first
    /// `skip` bytes passed over; returns its bytes.
    fn read_from(path: &Path, free_behind: bool, skip: u64, block: usize) -> Vec<u8> {
        let cfg = StreamConfig::new(StreamKind::Direct).block_size(block);
        let stream = ByteInput::open(path, 1, &cfg).unwrap();
        let input = Input { stream, path: path.to_path_buf(), free_behind, skip };
        let mut got = Vec::new();
        std::thread::scope(|s| {
            let mut r = start(s, vec![input], block).unwrap().pop().unwrap();
            while r.refill().unwrap() {
                got.extend_from_slice(&r.buf.bytes()[r.pos..r.end]);
            }
        });
        got
    }

    #[test]
    fn a_skipped_start_never_comes_back_however_many_blocks_it_spans() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let path = dir.path().join("run");
        std::fs::write(&path, &data).unwrap();
        for skip in [0, 1, 4095, 4096, 4097, 20_000, 50_000, 60_000] {
            let want = &data[(skip as usize).min(data.len())..];
            assert!(read_from(&path, false, skip, 4096) == want, "skip {skip}");
        }
    }

    /// Whether the file system of `dir` punches holes (tmpfs and ext4 do).
    fn punches(dir: &Path) -> bool {
        let probe = dir.join("probe");
        std::fs::write(&probe, vec![1u8; 1 << 16]).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&probe).unwrap();
        let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        rustix::fs::fallocate(&f, flags, 0, 1 << 16).is_ok()
    }

    #[test]
    fn free_behind_gives_back_what_was_read_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let len = 3 * FREE_STEP as usize + 12345;
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let (kept, freed) = (dir.path().join("kept"), dir.path().join("freed"));
        std::fs::write(&kept, &data).unwrap();
        std::fs::write(&freed, &data).unwrap();
        // Every byte comes back in order, whether or not its space is freed.
        assert!(read_all(&kept, false) == data);
        assert!(read_all(&freed, true) == data);
        // A caller's file (no free-behind) is untouched.
        assert!(std::fs::read(&kept).unwrap() == data);
        assert_eq!(std::fs::metadata(&kept).unwrap().len(), len as u64);
        // The run keeps its size; the whole steps read are holes.
        let m = std::fs::metadata(&freed).unwrap();
        assert_eq!(m.len(), len as u64);
        if punches(dir.path()) {
            let allocated = m.blocks() * 512;
            // The tail after the last whole step, in 4 KiB blocks.
            let tail = (len as u64 - 3 * FREE_STEP).next_multiple_of(4096);
            assert!(allocated <= tail, "{allocated} bytes still allocated");
            let back = std::fs::read(&freed).unwrap();
            assert!(back[..3 * FREE_STEP as usize].iter().all(|&b| b == 0));
            assert!(back[3 * FREE_STEP as usize..] == data[3 * FREE_STEP as usize..]);
        }
    }
}
