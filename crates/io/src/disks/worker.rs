//! [`DiskIo`]: one I/O thread per disk, and [`IoClient`]s that queue
//! requests to them and collect the completions.
//!
//! Each disk thread owns a FIFO queue (an `mpsc` channel) and serves it one
//! request at a time, with real `pread`/`pwrite` on the run's file in that
//! disk's directory (`O_DIRECT` when the set says so). A request carries the
//! sender of its client's completion queue, so several clients (a merge's
//! reader and its output writer) can share the disks and each waits only for
//! its own requests.
//!
//! With a [`DiskModel`] a request starts when the thread dequeues it — that
//! is `max(submitted, disk free)`, as the thread serves one at a time — and
//! completes no earlier than `start + service_time(len)`: the thread sleeps
//! the rest after the real I/O.
//!
//! A request that is never served (the [`DiskIo`] was dropped first) still
//! completes, with an [`ErrorKind::Closed`] error: its reply guard sends one
//! when dropped, so [`IoClient::wait`] never hangs.

use std::cell::Cell;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use super::block::Block;
use super::layout::{run_file_name, DiskSet, StripedRun, DIRECT_ALIGN};
use super::model::DiskModel;
use crate::{Error, ErrorKind, Result};

/// How many run files a disk thread keeps open at once; the least recently
/// used is closed beyond that (a merge of many runs would otherwise run
/// into the descriptor limit).
const MAX_OPEN_FILES: usize = 128;

/// What one disk did: requests, bytes and time spent serving them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskCounters {
    /// Read requests served.
    pub reads: u64,
    /// Write requests served.
    pub writes: u64,
    /// Bytes read (true block lengths, without `O_DIRECT` padding).
    pub bytes_read: u64,
    /// Bytes written (true block lengths, without `O_DIRECT` padding).
    pub bytes_written: u64,
    /// Seconds the disk was busy serving requests (the emulated service
    /// time when that is longer than the real I/O).
    pub busy_seconds: f64,
}

/// A completed request.
#[derive(Debug)]
pub struct Done {
    /// The tag the request was queued with.
    pub tag: u64,
    /// The request's buffer: for a read, filled with `len` bytes.
    pub buf: Block,
    /// Bytes read or written.
    pub len: usize,
    /// The disk that served it.
    pub disk: usize,
    /// Whether it was a write.
    pub write: bool,
}

/// Guarantees a request an answer: dropped unanswered (its disk thread
/// stopped), it sends an [`ErrorKind::Closed`] error about the run's file.
struct Reply {
    tx: Option<Sender<Result<Done>>>,
    dir: Arc<Path>,
    id: u64,
}

impl Reply {
    fn send(mut self, r: Result<Done>) {
        if let Some(tx) = self.tx.take() {
            // The client may be gone; its completions no longer matter then.
            let _ = tx.send(r);
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err(Error::new(ErrorKind::Closed, self.dir.join(run_file_name(self.id)))));
        }
    }
}

/// One read or write of one block.
struct Request {
    write: bool,
    id: u64,
    offset: u64,
    len: usize,
    buf: Block,
    tag: u64,
    reply: Reply,
}

enum Msg {
    Io(Box<Request>),
    Remove { id: u64, reply: Sender<Result<()>> },
    Stop,
}

/// One I/O thread per disk (named `emsort-disk-{d}`), each serving its
/// queue in order. The threads end when the `DiskIo` drops (after the
/// requests queued before).
///
/// ```no_run
/// use std::sync::Arc;
/// use emsort_io::disks::{DiskIo, DiskSet, StripedReader, StripedWriter};
/// # fn main() -> emsort_io::Result<()> {
/// let set = DiskSet::new(vec!["/d0".into(), "/d1".into()], 1 << 20, true, None)?;
/// let io = DiskIo::start(Arc::new(set))?;
/// let mut w = StripedWriter::new(&io, 1, 0, 4);
/// w.write_all(b"hello")?;
/// let run = w.finish()?;
/// let mut back = Vec::new();
/// std::io::Read::read_to_end(&mut StripedReader::new(&io, run.clone(), 4), &mut back).unwrap();
/// io.remove_run(&run)?;
/// # Ok(()) }
/// ```
pub struct DiskIo {
    set: Arc<DiskSet>,
    queues: Vec<Sender<Msg>>,
    threads: Vec<JoinHandle<()>>,
    counters: Vec<Arc<Mutex<DiskCounters>>>,
}

impl DiskIo {
    /// Starts one thread per disk of `set`.
    pub fn start(set: Arc<DiskSet>) -> Result<DiskIo> {
        let mut io =
            DiskIo { set: set.clone(), queues: Vec::new(), threads: Vec::new(), counters: Vec::new() };
        for d in 0..set.disks() {
            let (tx, rx) = mpsc::channel();
            let counters = Arc::new(Mutex::new(DiskCounters::default()));
            let worker = Worker {
                disk: d,
                dir: Arc::from(set.dir(d)),
                direct: set.direct(),
                model: set.model(),
                files: HashMap::new(),
                clock: 0,
                counters: counters.clone(),
            };
            let handle = std::thread::Builder::new()
                .name(format!("emsort-disk-{d}"))
                .spawn(move || worker.run(rx))
                .map_err(|e| Error::from_io("spawn disk thread", set.dir(d), e))?;
            // Already started threads are stopped by `io`'s drop on error.
            io.queues.push(tx);
            io.threads.push(handle);
            io.counters.push(counters);
        }
        Ok(io)
    }

    /// The disks.
    pub fn set(&self) -> &DiskSet {
        &self.set
    }

    /// A client with its own completion queue. Several clients may share
    /// the disks (a merge's reader and its output writer).
    pub fn client(&self) -> IoClient {
        let (tx, rx) = mpsc::channel();
        IoClient {
            set: self.set.clone(),
            queues: self.queues.clone(),
            dirs: (0..self.set.disks()).map(|d| Arc::from(self.set.dir(d))).collect(),
            tx,
            rx,
            in_flight: Cell::new(0),
        }
    }

    /// Deletes the run's D files, closing any descriptors the threads hold
    /// for it. Missing files are fine. Each disk removes its file after the
    /// requests queued before this call.
    pub fn remove_run(&self, run: &StripedRun) -> Result<()> {
        let mut replies = Vec::with_capacity(self.queues.len());
        for (d, q) in self.queues.iter().enumerate() {
            let (tx, rx) = mpsc::channel();
            if q.send(Msg::Remove { id: run.id, reply: tx }).is_err() {
                return Err(Error::new(ErrorKind::Closed, run.path(&self.set, d)));
            }
            replies.push(rx);
        }
        let mut first = Ok(());
        for (d, rx) in replies.into_iter().enumerate() {
            let r = rx.recv().unwrap_or_else(|_| Err(Error::new(ErrorKind::Closed, run.path(&self.set, d))));
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// What each disk did so far, one entry per disk.
    pub fn counters(&self) -> Vec<DiskCounters> {
        self.counters.iter().map(|c| c.lock().unwrap_or_else(PoisonError::into_inner).clone()).collect()
    }
}

impl Drop for DiskIo {
    fn drop(&mut self) {
        for q in &self.queues {
            let _ = q.send(Msg::Stop);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A client of the disks with its own completion queue. `Send`, so a
/// reader or writer can live on another thread.
pub struct IoClient {
    set: Arc<DiskSet>,
    queues: Vec<Sender<Msg>>,
    dirs: Vec<Arc<Path>>,
    tx: Sender<Result<Done>>,
    rx: Receiver<Result<Done>>,
    in_flight: Cell<usize>,
}

impl IoClient {
    /// Queues the read of block `j` of `run` on its disk; does not block.
    /// The completion carries `tag` and the buffer filled with
    /// `run.block_len(j)` bytes.
    ///
    /// Panics if `buf` is shorter than the block or `run` is not laid out
    /// on this client's disk set.
    pub fn read(&self, run: &StripedRun, j: u64, buf: Block, tag: u64) {
        let len = run.block_len(j);
        assert!(buf.capacity() >= len, "buffer of {} bytes for a block of {len}", buf.capacity());
        self.submit(run, j, false, buf, len, tag);
    }

    /// Queues the write of `buf[..len]` as block `j` of `run`; does not
    /// block. The disk's file for the run is created on first use. Only
    /// `run`'s id, start disk and geometry matter here (a run being written
    /// does not know its length yet).
    ///
    /// Panics if `len` exceeds the buffer or the block size, or `run` is not
    /// laid out on this client's disk set.
    pub fn write(&self, run: &StripedRun, j: u64, buf: Block, len: usize, tag: u64) {
        assert!(len <= buf.capacity(), "write of {len} bytes from a buffer of {}", buf.capacity());
        assert!(len <= run.block, "write of {len} bytes into a block of {}", run.block);
        self.submit(run, j, true, buf, len, tag);
    }

    fn submit(&self, run: &StripedRun, j: u64, write: bool, buf: Block, len: usize, tag: u64) {
        assert!(
            run.disks == self.set.disks() && run.block == self.set.block(),
            "run striped over {} disks with B = {} used on a set of {} disks with B = {}",
            run.disks,
            run.block,
            self.set.disks(),
            self.set.block()
        );
        let disk = run.disk_of(j);
        let reply = Reply { tx: Some(self.tx.clone()), dir: self.dirs[disk].clone(), id: run.id };
        let req = Request { write, id: run.id, offset: run.offset_of(j), len, buf, tag, reply };
        self.in_flight.set(self.in_flight.get() + 1);
        // A refused send drops the request, whose reply guard then queues a
        // `Closed` error for this client.
        let _ = self.queues[disk].send(Msg::Io(Box::new(req)));
    }

    /// Blocks until one of this client's requests completes. An I/O error
    /// is returned as an [`Error`] naming the file (the request's tag and
    /// buffer are lost; callers treat errors as fatal).
    ///
    /// Panics if no request is in flight (it would wait forever).
    pub fn wait(&self) -> Result<Done> {
        assert!(self.in_flight.get() > 0, "IoClient::wait with no request in flight");
        // This client holds a sender itself, and every request is answered.
        let r = self.rx.recv().expect("the client holds its own completion sender");
        self.in_flight.set(self.in_flight.get() - 1);
        r
    }

    /// A completed request if one is ready, without blocking.
    pub fn try_wait(&self) -> Option<Result<Done>> {
        if self.in_flight.get() == 0 {
            return None;
        }
        let r = self.rx.try_recv().ok()?;
        self.in_flight.set(self.in_flight.get() - 1);
        Some(r)
    }

    /// Requests queued and not yet returned by [`wait`](IoClient::wait) or
    /// [`try_wait`](IoClient::try_wait).
    pub fn in_flight(&self) -> usize {
        self.in_flight.get()
    }

    /// The disks this client uses.
    pub(crate) fn set(&self) -> &DiskSet {
        &self.set
    }
}

/// An open run file on one disk.
struct OpenFile {
    file: File,
    writable: bool,
    last_use: u64,
}

/// The state of one disk thread.
struct Worker {
    disk: usize,
    dir: Arc<Path>,
    direct: bool,
    model: Option<DiskModel>,
    files: HashMap<u64, OpenFile>,
    clock: u64,
    counters: Arc<Mutex<DiskCounters>>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Msg>) {
        while let Ok(msg) = rx.recv() {
            match msg {
                Msg::Io(req) => self.serve(*req),
                Msg::Remove { id, reply } => {
                    let _ = reply.send(self.remove(id));
                }
                Msg::Stop => break,
            }
        }
        // Requests queued after the stop are dropped here; each reply guard
        // answers its client with a `Closed` error. Those arriving later
        // fail to send, with the same effect.
        drop(rx);
    }

    fn path(&self, id: u64) -> PathBuf {
        self.dir.join(run_file_name(id))
    }

    fn serve(&mut self, mut req: Request) {
        let start = Instant::now();
        let r = if req.write { self.write(&mut req) } else { self.read(&mut req) };
        if let Some(m) = self.model {
            let until = start + m.service_time(req.len);
            let now = Instant::now();
            if until > now {
                std::thread::sleep(until - now);
            }
        }
        let busy = start.elapsed().as_secs_f64();
        {
            let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
            c.busy_seconds += busy;
            if r.is_ok() {
                if req.write {
                    c.writes += 1;
                    c.bytes_written += req.len as u64;
                } else {
                    c.reads += 1;
                    c.bytes_read += req.len as u64;
                }
            }
        }
        let Request { write, len, buf, tag, reply, .. } = req;
        let disk = self.disk;
        reply.send(r.map(|()| Done { tag, buf, len, disk, write }));
    }

    /// The open file of run `id`, opened (and for writing, created) if needed.
    fn file(&mut self, id: u64, writable: bool) -> Result<&File> {
        self.clock += 1;
        let clock = self.clock;
        let reopen = match self.files.get(&id) {
            Some(f) => writable && !f.writable,
            None => true,
        };
        if reopen {
            if self.files.len() >= MAX_OPEN_FILES && !self.files.contains_key(&id) {
                if let Some((&old, _)) = self.files.iter().min_by_key(|(_, f)| f.last_use) {
                    self.files.remove(&old);
                }
            }
            let path = self.path(id);
            let mut opts = OpenOptions::new();
            opts.read(true);
            if writable {
                opts.write(true).create(true);
            }
            if self.direct {
                opts.custom_flags(libc::O_DIRECT);
            }
            let file = opts.open(&path).map_err(|e| Error::from_io("open", &path, e))?;
            self.files.insert(id, OpenFile { file, writable, last_use: clock });
        }
        let f = self.files.get_mut(&id).expect("just opened");
        f.last_use = clock;
        Ok(&f.file)
    }

    fn read(&mut self, req: &mut Request) -> Result<()> {
        if req.len == 0 {
            return Ok(());
        }
        let path = self.path(req.id);
        // O_DIRECT transfers whole alignment units; the file of a run ends
        // at its true length, so the padded read of a last block comes back
        // short, which is fine.
        let want = if self.direct { req.len.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN } else { req.len };
        let (offset, len) = (req.offset, req.len);
        let file = self.file(req.id, false)?;
        let buf = &mut req.buf.allocation_mut()[..want];
        let mut got = 0;
        while got < len {
            match rustix::io::pread(file, &mut buf[got..], offset + got as u64) {
                Ok(0) => {
                    let e = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("run file ends at {} bytes, inside block at {offset}", offset + got as u64),
                    );
                    return Err(Error::from_io("pread", &path, e));
                }
                Ok(n) => got += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(Error::from_io("pread", &path, e.into())),
            }
        }
        Ok(())
    }

    fn write(&mut self, req: &mut Request) -> Result<()> {
        let path = self.path(req.id);
        let (offset, len, direct) = (req.offset, req.len, self.direct);
        // O_DIRECT writes whole alignment units: pad a short last block
        // with zeros, then cut the file back to its true length.
        let want = if direct { len.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN } else { len };
        let all = req.buf.allocation_mut();
        all[len..want].fill(0);
        let buf = &all[..want];
        let file = self.file(req.id, true)?;
        let mut done = 0;
        while done < want {
            match rustix::io::pwrite(file, &buf[done..], offset + done as u64) {
                Ok(0) => {
                    return Err(Error::from_io("pwrite", &path, io::Error::from_raw_os_error(libc::ENOSPC)))
                }
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(Error::from_io("pwrite", &path, e.into())),
            }
        }
        if want != len {
            loop {
                match rustix::fs::ftruncate(file, offset + len as u64) {
                    Ok(()) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(Error::from_io("ftruncate", &path, e.into())),
                }
            }
        }
        Ok(())
    }

    fn remove(&mut self, id: u64) -> Result<()> {
        self.files.remove(&id);
        let path = self.path(id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::from_io("unlink", &path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(d: usize, block: usize) -> (tempfile::TempDir, DiskIo) {
        let root = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (0..d).map(|i| root.path().join(format!("d{i}"))).collect();
        for p in &dirs {
            std::fs::create_dir(p).unwrap();
        }
        let set = DiskSet::new(dirs, block, false, None).unwrap();
        (root, DiskIo::start(Arc::new(set)).unwrap())
    }

    /// More runs than a disk thread keeps open: the least recently used
    /// descriptors are closed and reopened on demand, reads and writes
    /// interleaved across runs.
    #[test]
    fn descriptor_cache_evicts_and_reopens() {
        let (_root, io) = io(2, 16);
        let c = io.client();
        let n = MAX_OPEN_FILES as u64 * 2 + 3;
        let run = |id| StripedRun { id, start_disk: (id % 2) as usize, bytes: 40, disks: 2, block: 16 };
        // Block j of every run in turn, so each run's file is reopened.
        for j in 0..3 {
            for id in 0..n {
                let mut b = Block::new(16);
                let len = run(id).block_len(j);
                b.as_mut_slice()[..len].fill((id * 3 + j) as u8);
                c.write(&run(id), j, b, len, id);
                if c.in_flight() > 8 {
                    c.wait().unwrap();
                }
            }
        }
        while c.in_flight() > 0 {
            c.wait().unwrap();
        }
        for id in (0..n).rev() {
            for j in 0..3 {
                c.read(&run(id), j, Block::new(16), j);
                let d = c.wait().unwrap();
                assert_eq!(d.len, run(id).block_len(j));
                assert!(
                    d.buf.as_slice()[..d.len].iter().all(|&x| x == (id * 3 + j) as u8),
                    "run {id} block {j}"
                );
            }
        }
        let cnt = io.counters();
        assert_eq!(cnt.iter().map(|c| c.writes).sum::<u64>(), 3 * n);
        assert_eq!(cnt.iter().map(|c| c.bytes_read).sum::<u64>(), 40 * n);
    }

    /// Every request is answered, even one no disk thread serves.
    #[test]
    fn unserved_requests_are_answered_closed() {
        let (tx, rx) = mpsc::channel();
        let reply = Reply { tx: Some(tx), dir: Arc::from(Path::new("/x")), id: 3 };
        drop(reply);
        let e = rx.recv().unwrap().unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Closed);
        assert_eq!(e.path(), Path::new("/x/run-000003.s"));
    }

    #[test]
    fn threads_are_named_per_disk() {
        let (_root, io) = io(3, 16);
        let names: Vec<_> = io.threads.iter().map(|t| t.thread().name().map(str::to_owned)).collect();
        assert_eq!(
            names,
            [Some("emsort-disk-0".into()), Some("emsort-disk-1".into()), Some("emsort-disk-2".into())]
        );
    }
}
