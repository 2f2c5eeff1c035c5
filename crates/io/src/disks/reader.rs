//! [`StripedReader`]: a whole striped run read back in order.

use std::collections::HashMap;
use std::io;

use super::block::Block;
use super::layout::StripedRun;
use super::worker::{DiskIo, Done, IoClient};

/// Reads a whole [`StripedRun`] back in order, with up to `depth` blocks in
/// flight (for tests and simple consumers; a merge forecasts its own reads).
///
/// Blocks are queued in order j = 0, 1, …; they complete in any order across
/// the disks and are handed out in order. Errors come out of
/// [`Read::read`](std::io::Read::read) as `io::Error`s wrapping the crate's
/// [`Error`](crate::Error), which names the file.
pub struct StripedReader {
    client: IoClient,
    run: StripedRun,
    depth: usize,
    next_submit: u64,
    next_deliver: u64,
    ready: HashMap<u64, Done>,
    cur: Option<(Block, usize, usize)>,
    free: Vec<Block>,
}

impl StripedReader {
    /// A reader of `run` with up to `depth` (at least 1) reads in flight.
    pub fn new(io: &DiskIo, run: StripedRun, depth: usize) -> StripedReader {
        StripedReader {
            client: io.client(),
            run,
            depth: depth.max(1),
            next_submit: 0,
            next_deliver: 0,
            ready: HashMap::new(),
            cur: None,
            free: Vec::new(),
        }
    }

    /// Queues reads while fewer than `depth` blocks are in flight or waiting.
    fn fill_queue(&mut self) {
        while self.next_submit < self.run.blocks() && self.client.in_flight() + self.ready.len() < self.depth
        {
            let buf = self.free.pop().unwrap_or_else(|| Block::new(self.run.block));
            self.client.read(&self.run, self.next_submit, buf, self.next_submit);
            self.next_submit += 1;
        }
    }

    /// Makes block `next_deliver` current; false at the end of the run.
    fn next_block(&mut self) -> crate::Result<bool> {
        if let Some((buf, _, _)) = self.cur.take() {
            self.free.push(buf);
        }
        if self.next_deliver >= self.run.blocks() {
            return Ok(false);
        }
        self.fill_queue();
        while !self.ready.contains_key(&self.next_deliver) {
            let d = self.client.wait()?;
            self.ready.insert(d.tag, d);
            self.fill_queue();
        }
        let d = self.ready.remove(&self.next_deliver).expect("present");
        self.next_deliver += 1;
        self.cur = Some((d.buf, d.len, 0));
        self.fill_queue();
        Ok(true)
    }
}

impl io::Read for StripedReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some((buf, len, pos)) = &mut self.cur {
                if *pos < *len {
                    let n = (*len - *pos).min(out.len());
                    out[..n].copy_from_slice(&buf.as_slice()[*pos..*pos + n]);
                    *pos += n;
                    return Ok(n);
                }
            }
            if !self.next_block().map_err(io::Error::other)? {
                return Ok(0);
            }
        }
    }
}
