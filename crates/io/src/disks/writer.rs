//! [`StripedWriter`]: one run written sequentially as a striped run.

use super::block::Block;
use super::layout::StripedRun;
use super::worker::{DiskIo, IoClient};
use crate::{Error, ErrorKind, Result};

/// Writes one run sequentially as a [`StripedRun`], keeping up to `depth`
/// blocks in flight. With `depth ≥ D` a whole logical block of D·B bytes
/// goes out at once, one block on each disk.
///
/// Bytes are gathered into B-byte [`Block`]s; each full block is queued as
/// the next block j of the run (on disk `(start_disk + j) % D`), and a
/// buffer comes back for reuse when its write completes. Up to `depth`
/// blocks are in flight while the next one is being filled, so at most
/// `depth + 1` buffers of B bytes exist.
pub struct StripedWriter {
    client: IoClient,
    run: StripedRun,
    depth: usize,
    cur: Option<Block>,
    fill: usize,
    free: Vec<Block>,
    next: u64,
    /// An error met while collecting completions early, reported by the
    /// next call.
    pending: Option<Error>,
    /// Set once an error was reported: the run is incomplete.
    failed: bool,
}

impl StripedWriter {
    /// A writer of run `id` whose block 0 goes to disk `start_disk % D`,
    /// with up to `depth` (at least 1) writes in flight.
    pub fn new(io: &DiskIo, id: u64, start_disk: usize, depth: usize) -> StripedWriter {
        let set = io.set();
        let run = StripedRun {
            id,
            start_disk: start_disk % set.disks(),
            bytes: 0,
            disks: set.disks(),
            block: set.block(),
        };
        StripedWriter {
            client: io.client(),
            run,
            depth: depth.max(1),
            cur: None,
            fill: 0,
            free: Vec::new(),
            next: 0,
            pending: None,
            failed: false,
        }
    }

    /// Appends `bytes` to the run. Blocks only when a full block is to be
    /// queued while `depth` writes are in flight. After an error the writer
    /// refuses further use (an [`ErrorKind::Closed`] error).
    pub fn write_all(&mut self, mut bytes: &[u8]) -> Result<()> {
        self.check()?;
        while !bytes.is_empty() {
            let mut buf = match self.cur.take() {
                Some(b) => b,
                None => self.free.pop().unwrap_or_else(|| Block::new(self.run.block)),
            };
            let n = (self.run.block - self.fill).min(bytes.len());
            buf.as_mut_slice()[self.fill..self.fill + n].copy_from_slice(&bytes[..n]);
            self.fill += n;
            self.run.bytes += n as u64;
            bytes = &bytes[n..];
            self.cur = Some(buf);
            if self.fill == self.run.block {
                self.guard(|w| w.submit())?;
                self.check()?;
            }
        }
        Ok(())
    }

    /// Writes the last partial block, waits for every write and returns
    /// where the run lives. On error the first error is returned after all
    /// writes have completed; the run's files stay for the caller to remove
    /// ([`DiskIo::remove_run`]).
    pub fn finish(mut self) -> Result<StripedRun> {
        let mut first = self.check();
        if first.is_ok() && self.fill > 0 {
            first = self.submit();
        }
        while self.client.in_flight() > 0 {
            if let (Err(e), true) = (self.client.wait(), first.is_ok()) {
                first = Err(e);
            }
        }
        first = first.and_then(|()| self.pending.take().map_or(Ok(()), Err));
        first.map(|()| self.run.clone())
    }

    /// Bytes accepted so far.
    pub fn bytes(&self) -> u64 {
        self.run.bytes
    }

    fn check(&mut self) -> Result<()> {
        if let Some(e) = self.pending.take() {
            self.failed = true;
            return Err(e);
        }
        if self.failed {
            let set = self.client.set();
            return Err(Error::new(ErrorKind::Closed, self.run.path(set, self.run.start_disk)));
        }
        Ok(())
    }

    fn guard<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let r = f(self);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    /// Queues the block being filled, first waiting while `depth` writes
    /// are in flight (their buffers come back for reuse).
    fn submit(&mut self) -> Result<()> {
        while self.client.in_flight() >= self.depth {
            let done = self.client.wait()?;
            self.free.push(done.buf);
        }
        let buf = self.cur.take().expect("a block being filled");
        self.client.write(&self.run, self.next, buf, self.fill, self.next);
        self.next += 1;
        self.fill = 0;
        // Collect finished writes early so errors surface soon and buffers
        // are reused.
        while let Some(r) = self.client.try_wait() {
            match r {
                Ok(d) => self.free.push(d.buf),
                Err(e) => {
                    self.pending.get_or_insert(e);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::disks::DiskSet;

    #[test]
    fn keeps_at_most_depth_writes_in_flight() {
        let root = tempfile::tempdir().unwrap();
        let dirs: Vec<_> = (0..3).map(|i| root.path().join(format!("d{i}"))).collect();
        for p in &dirs {
            std::fs::create_dir(p).unwrap();
        }
        let model = "1G,1ms".parse().ok();
        let io = DiskIo::start(Arc::new(DiskSet::new(dirs, 64, false, model).unwrap())).unwrap();
        for depth in [1, 2, 3, 5] {
            let mut w = StripedWriter::new(&io, depth as u64, 4, depth);
            assert_eq!(w.run.start_disk, 1, "start disk taken modulo D");
            let mut most = 0;
            for i in 0..40u8 {
                w.write_all(&[i; 50]).unwrap();
                most = most.max(w.client.in_flight());
                assert!(w.client.in_flight() <= depth);
                // Buffers are recycled: never more than depth + 1 exist.
                assert!(w.free.len() + w.client.in_flight() + w.cur.is_some() as usize <= depth + 1);
            }
            assert_eq!(most, depth, "the writer used its whole depth");
            let run = w.finish().unwrap();
            assert_eq!(run.bytes, 2000);
            io.remove_run(&run).unwrap();
        }
    }
}
