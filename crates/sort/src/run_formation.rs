//! Run formation: cut the input into chunks that fit in memory, sort each
//! chunk on all cores, write it as a run.
//!
//! # Algorithm
//!
//! 1. A **reader thread** fills a chunk buffer from the input stream, B
//!    bytes per read, until the buffer's data share is full (for `lines`,
//!    also until the index share is full: at most
//!    [`Derived::max_lines_per_run`](crate::Derived::max_lines_per_run)
//!    lines), or the input ends. Lines never straddle chunks: the bytes after
//!    the chunk's last `\n` are carried to the next one. A last line without
//!    `\n` gets one (as GNU `sort` does). A line longer than the whole buffer
//!    grows the buffer until it fits (the sort then uses more than M, by
//!    about that line's length).
//! 2. The **sorting thread** (the caller's) sorts the chunk in the sort's
//!    own rayon pool:
//!    - numbers in place by their normalised key ([`crate::key`]) with a
//!      parallel in-place radix sort (module `radix`: 2.3x faster than
//!      `par_sort_unstable` on 2 cores, no extra memory);
//!    - records and lines through an index of (8-byte big-endian key prefix,
//!      position) pairs, radix-sorted by prefix, then groups of equal
//!      prefixes by the full key (for lines the index is built in parallel
//!      too).
//! 3. A **run writer thread** writes the sorted chunk as a run through an
//!    output stream of the plan's kind: numbers in one piece; records and
//!    lines *gathered* in index order into blocks of B/4 that one more
//!    thread writes through a stream of B/2 (module `write_behind`). It then
//!    hands the buffer back to the reader.
//!
//! ```text
//!             chunk buffer A      chunk buffer B
//!  reader:  [ read A0 ][ read B1 ]          [ read A2 ]          …
//!  sorter:             [ sort A0 ][ sort B1 ]          [ sort A2 ] …
//!  writer:                        [ write A0 ][ write B1 ]          …
//!                                    run 0       run 1
//! ```
//!
//! With two buffers, each stage overlaps another: a buffer goes round
//! read → sort → write → read. When the whole input fits in one buffer there
//! is only one, and that single run is written straight to the output (no
//! merge pass at all). A chunk's index lives until its run is written; the
//! plan's split of M counts each buffer's index within that buffer's share,
//! so two indexes at once still fit.
//!
//! The cancel flag is polled after every block read and every 64 Ki items
//! gathered; an interrupt stops every thread and returns
//! [`ErrorKind::Interrupted`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use emsort_io::{Error, ErrorKind, Progress, Result};
use rayon::prelude::*;

use crate::byte_stream::{AlignedBuf, ByteInput, ByteOutput};
use crate::key::{prefix, NumKey};
use crate::plan::{Derived, SortPlan};
use crate::radix;
use crate::write_behind::WriteBehind;
use crate::Format;

/// A run on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// What run formation did.
#[derive(Debug, Default)]
pub(crate) struct Formed {
    /// The runs in creation order.
    pub runs: Vec<Run>,
    /// Whether the single run went straight to the output.
    pub wrote_output: bool,
    /// Bytes read from the input.
    pub bytes_read: u64,
    /// Bytes written to runs (or the output).
    pub bytes_written: u64,
}

/// A chunk of input in a buffer.
struct Chunk {
    buf: AlignedBuf,
    len: usize,
    /// Lines in the chunk (`lines`).
    lines: u64,
    index: usize,
    last: bool,
}

/// The order of a sorted chunk's items.
enum Order {
    /// The chunk itself is sorted (numbers).
    InPlace,
    /// Record numbers in order (with their key prefixes).
    Records(Vec<(u64, u32)>),
    /// Lines in order: (key prefix, offset, length without the `\n`).
    Lines(Vec<(u64, u32, u32)>),
}

/// A sorted chunk on its way to the run writer.
struct Sorted {
    buf: AlignedBuf,
    len: usize,
    order: Order,
    path: PathBuf,
    /// The only run: `path` is the output.
    single: bool,
}

/// Everything run formation needs.
pub(crate) struct RunFormation<'a> {
    pub plan: &'a SortPlan,
    pub derived: &'a Derived,
    pub pool: &'a rayon::ThreadPool,
    pub progress: &'a dyn Progress,
    pub cancel: &'a AtomicBool,
    /// DSM and SRM: runs (all but a single one, which goes to the output)
    /// are written striped over the D disks through this sink, which also
    /// records their forecasting keys.
    pub striped: Option<&'a crate::pdisk::FormationSink<'a>>,
}

impl RunFormation<'_> {
    /// Forms the runs of `input`. `target(index, last)` names the file for
    /// run `index`; `last` is true when it is the only run (the caller then
    /// gives the output's path).
    pub fn form(&self, input: &Path, mut target: impl FnMut(usize, bool) -> PathBuf) -> Result<Formed> {
        let unit = self.plan.unit();
        let stream = ByteInput::open(input, unit, &self.plan.stream_config(true))?;
        let (empty_tx, empty_rx) = channel::<AlignedBuf>();
        for _ in 0..self.derived.chunk_buffers {
            // Allocated lazily by the reader, only as large as needed.
            let _ = empty_tx.send(AlignedBuf::default());
        }
        let (full_tx, full_rx) = sync_channel::<Chunk>(1);
        let reader = Reader {
            stream,
            path: input.to_path_buf(),
            format: self.plan.format,
            unit,
            block: self.plan.block_size.max(unit) / unit * unit,
            data_cap: self.derived.run_bytes as usize,
            max_lines: self.derived.max_lines_per_run.unwrap_or(u64::MAX),
        };
        std::thread::scope(|s| {
            let handle = s.spawn(|| reader.run(empty_rx, full_tx, self.progress, self.cancel));
            let mut formed = Formed::default();
            let result = self.consume(&full_rx, &empty_tx, &mut target, &mut formed);
            // Unblock the reader whatever happened, then collect its result.
            drop(full_rx);
            drop(empty_tx);
            let read =
                handle.join().map_err(|_| Error::new(ErrorKind::Io("reader thread panicked"), input))?;
            result?;
            formed.bytes_read = read?;
            Ok(formed)
        })
    }

    /// Sorts each chunk here and hands it to a run writer thread, so the
    /// next chunk is sorted while this one is written.
    fn consume(
        &self,
        full_rx: &Receiver<Chunk>,
        empty_tx: &Sender<AlignedBuf>,
        target: &mut impl FnMut(usize, bool) -> PathBuf,
        formed: &mut Formed,
    ) -> Result<()> {
        std::thread::scope(|scope| {
            let (job_tx, job_rx) = sync_channel::<Sorted>(0);
            let empty = empty_tx.clone();
            let writer = scope.spawn(move || -> Result<Formed> {
                let mut done = Formed::default();
                for job in job_rx {
                    let bytes = self.write_sorted(&job)?;
                    done.runs.push(Run { path: job.path, bytes });
                    done.bytes_written += bytes;
                    done.wrote_output = job.single;
                    let _ = empty.send(job.buf);
                }
                Ok(done)
            });
            let sorting = (|| -> Result<()> {
                for chunk in full_rx.iter() {
                    let single = chunk.index == 0 && chunk.last;
                    let path = target(chunk.index, single);
                    self.check_cancel(&path)?;
                    let mut buf = chunk.buf;
                    let order = self.sort_chunk(&mut buf.bytes_mut()[..chunk.len], chunk.lines);
                    let job = Sorted { buf, len: chunk.len, order, path, single };
                    if job_tx.send(job).is_err() {
                        break; // the writer failed: its error comes from join
                    }
                }
                Ok(())
            })();
            drop(job_tx);
            let written = writer.join().map_err(|_| {
                Error::new(ErrorKind::Io("run writer thread panicked"), &self.plan.temp_dirs[0])
            })?;
            sorting?;
            *formed = written?;
            Ok(())
        })
    }

    /// Sorts `data` in place (numbers) or returns the order of its items
    /// (an index, for records and lines).
    fn sort_chunk(&self, data: &mut [u8], lines: u64) -> Order {
        let rev = self.plan.reverse;
        match self.plan.format {
            Format::U32 => self.sort_numbers::<u32>(data, rev),
            Format::I32 => self.sort_numbers::<i32>(data, rev),
            Format::U64 => self.sort_numbers::<u64>(data, rev),
            Format::I64 => self.sort_numbers::<i64>(data, rev),
            Format::F32 => self.sort_numbers::<f32>(data, rev),
            Format::F64 => self.sort_numbers::<f64>(data, rev),
            Format::Rec(r) => {
                let (size, k0, k1) = (r.size, r.key_offset, r.key_offset + r.key_len);
                let mut index: Vec<(u64, u32)> = Vec::new();
                let data = &*data;
                self.pool.install(|| {
                    (0..data.len() / size)
                        .into_par_iter()
                        .map(|i| (prefix(&data[i * size + k0..i * size + k1]), i as u32))
                        .collect_into_vec(&mut index);
                    let key = |i: u32| &data[i as usize * size + k0..i as usize * size + k1];
                    radix::sort_index(&mut index, rev, |a, b| key(a.1).cmp(key(b.1)));
                });
                return Order::Records(index);
            }
            Format::Lines => {
                // Every chunk ends with '\n' (the reader sees to it).
                let text = &*data;
                let mut index = self.pool.install(|| line_index(text, lines as usize, self.plan.threads));
                let line = |e: &(u64, u32, u32)| &text[e.1 as usize..(e.1 + e.2) as usize];
                self.pool.install(|| radix::sort_index(&mut index, rev, |a, b| line(a).cmp(line(b))));
                return Order::Lines(index);
            }
        }
        Order::InPlace
    }

    /// Writes a sorted chunk as its run; returns the bytes written.
    fn write_sorted(&self, job: &Sorted) -> Result<u64> {
        let data = &job.buf.bytes()[..job.len];
        if let (Some(sink), false) = (self.striped, job.single) {
            return match (&job.order, self.plan.format) {
                (Order::Records(index), Format::Rec(r)) => {
                    let size = r.size;
                    sink.write_items(
                        index.iter().map(|&(_, i)| &data[i as usize * size..(i as usize + 1) * size]),
                    )
                }
                (Order::Lines(index), _) => {
                    sink.write_items(index.iter().map(|e| &data[e.1 as usize..(e.1 + e.2) as usize + 1]))
                }
                (_, format) => sink.write_fixed(data, format.item_size().expect("fixed-size format")),
            };
        }
        match (&job.order, self.plan.format) {
            (Order::Records(index), Format::Rec(r)) => {
                let size = r.size;
                let item = |&(_, i): &(u64, u32)| &data[i as usize * size..(i as usize + 1) * size];
                self.gather(&job.path, index, item)
            }
            (Order::Lines(index), _) => {
                self.gather(&job.path, index, |e| &data[e.1 as usize..(e.1 + e.2) as usize + 1])
            }
            _ => {
                let mut out =
                    ByteOutput::create(&job.path, self.plan.unit(), &self.plan.stream_config(false))?;
                out.write(data)?;
                out.close()?;
                Ok(data.len() as u64)
            }
        }
    }

    /// Writes the items of `index` in order to a new run at `path` through
    /// a writer thread (module `write_behind`): the gathering copies here
    /// while the stream's copies and system calls run on another core.
    /// Returns the bytes written.
    ///
    /// The items sit at random places in the chunk, so each copy would wait
    /// for a cache miss: the item [`PREFETCH`] places ahead is prefetched
    /// while this one is copied (perf showed the gather's copies as a third
    /// of a `lines` sort's time without it).
    fn gather<'d, E>(&self, path: &Path, index: &[E], item: impl Fn(&E) -> &'d [u8]) -> Result<u64> {
        let unit = self.plan.unit();
        let b = self.plan.block_size;
        let cfg = self.plan.stream_config(false).block_size((b / 2).max(unit));
        let out = ByteOutput::create(path, unit, &cfg)?;
        std::thread::scope(|scope| {
            let mut out = WriteBehind::new(scope, out, b / 4, path);
            for (n, e) in index.iter().enumerate() {
                if let Some(ahead) = index.get(n + PREFETCH) {
                    prefetch(item(ahead));
                }
                out.push(item(e))?;
                if n % 65536 == 65535 {
                    self.check_cancel(path)?;
                }
            }
            out.finish()
        })
    }

    fn sort_numbers<T: NumKey>(&self, data: &mut [u8], rev: bool) {
        let items: &mut [T] = bytemuck::cast_slice_mut(data);
        self.pool.install(|| radix::sort_numbers(items, rev));
    }

    fn check_cancel(&self, path: &Path) -> Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, path));
        }
        Ok(())
    }
}

/// How many items ahead [`RunFormation::gather`] prefetches.
const PREFETCH: usize = 16;

/// Asks the CPU to bring the start of `item` into the cache.
#[inline]
fn prefetch(item: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, and the pointer is
    // the start of a live slice.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(item.as_ptr().cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// The reader thread's state.
struct Reader {
    stream: ByteInput,
    path: PathBuf,
    format: Format,
    unit: usize,
    block: usize,
    /// Data bytes per chunk (a whole number of items).
    data_cap: usize,
    /// Lines per chunk (`lines`).
    max_lines: u64,
}

impl Reader {
    /// Fills chunks until the input ends; returns the bytes read. Stops
    /// quietly when the consumer hangs up (it had an error of its own).
    fn run(
        mut self,
        empty_rx: Receiver<AlignedBuf>,
        full_tx: SyncSender<Chunk>,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<u64> {
        let lines = self.format == Format::Lines;
        let total = self.stream.len_bytes();
        let mut read = 0u64;
        let mut carry: Vec<u8> = Vec::new();
        let mut index = 0usize;
        while read < total || !carry.is_empty() {
            let Ok(mut buf) = empty_rx.recv() else { return Ok(read) };
            let mut len = carry.len();
            let mut cap = self.data_cap.max(self.unit).max(len);
            // Only as large as this chunk can get (+1 for a final newline).
            let want = (cap as u64).min(total - read + len as u64 + 1) as usize;
            buf.grow_to(want.max(len));
            buf.bytes_mut()[..len].copy_from_slice(&carry);
            carry.clear();
            let mut nlines = 0u64;
            let mut cut =
                if lines { count_until(buf.bytes(), 0, len, &mut nlines, self.max_lines) } else { None };
            while cut.is_none() {
                if len == cap {
                    if !lines || nlines > 0 {
                        break;
                    }
                    // One line longer than the whole buffer: grow for it.
                    if cap as u64 >= crate::plan::MAX_CHUNK_ITEMS {
                        return Err(Error::new(ErrorKind::Io("read (a line of 4 GiB or more)"), &self.path));
                    }
                    cap = (cap * 2).min(crate::plan::MAX_CHUNK_ITEMS as usize);
                }
                let ask = self.block.min(cap - len) / self.unit * self.unit;
                buf.grow_to(len + ask + 1);
                let n = self.stream.read(&mut buf.bytes_mut()[len..len + ask])?;
                if n == 0 {
                    if read < total {
                        return Err(Error::new(
                            ErrorKind::Io("read (the input shrank during the sort)"),
                            &self.path,
                        ));
                    }
                    break;
                }
                if lines {
                    cut = count_until(buf.bytes(), len, len + n, &mut nlines, self.max_lines);
                }
                len += n;
                read += n as u64;
                progress.advance(n as u64);
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, &self.path));
                }
            }
            if lines {
                let at_end = read == total;
                let keep = match cut {
                    Some(c) => c,
                    None if !at_end => memchr::memrchr(b'\n', &buf.bytes()[..len]).map_or(len, |p| p + 1),
                    None => len,
                };
                carry.extend_from_slice(&buf.bytes()[keep..len]);
                len = keep;
                if at_end && carry.is_empty() && len > 0 && buf.bytes()[len - 1] != b'\n' {
                    buf.grow_to(len + 1);
                    buf.bytes_mut()[len] = b'\n';
                    len += 1;
                    nlines += 1;
                }
            } else if len % self.item_size() != 0 {
                // The file changed size while we read it.
                return Err(Error::new(
                    ErrorKind::BadSize { size: read, element_size: self.item_size() },
                    &self.path,
                ));
            }
            let last = read == total && carry.is_empty();
            if full_tx.send(Chunk { buf, len, lines: nlines, index, last }).is_err() {
                return Ok(read);
            }
            index += 1;
        }
        self.stream.close()?;
        Ok(read)
    }

    fn item_size(&self) -> usize {
        self.format.item_size().unwrap_or(1)
    }
}

/// The index of `text` (whole lines, each ending with `\n`, `lines` of
/// them): (key prefix, offset, length) per line, in text order. Built in
/// parallel: the text is cut at newlines into one piece per thread, each
/// piece's lines are counted, and each piece fills its own part of the index.
fn line_index(text: &[u8], lines: usize, threads: usize) -> Vec<(u64, u32, u32)> {
    // Piece boundaries, each just after a newline.
    let pieces = threads.max(1) * 4;
    let mut bounds = vec![0usize];
    for k in 1..pieces {
        let at = (text.len() * k / pieces).max(*bounds.last().expect("non-empty"));
        let end = match memchr::memchr(b'\n', &text[at..]) {
            Some(p) => at + p + 1,
            None => text.len(),
        };
        bounds.push(end);
    }
    bounds.push(text.len());
    bounds.dedup();
    let counts: Vec<usize> =
        bounds.par_windows(2).map(|w| memchr::memchr_iter(b'\n', &text[w[0]..w[1]]).count()).collect();
    debug_assert_eq!(counts.iter().sum::<usize>(), lines);
    let mut index = vec![(0u64, 0u32, 0u32); lines];
    let mut parts = Vec::with_capacity(counts.len());
    let mut rest = index.as_mut_slice();
    for &c in &counts {
        let (part, tail) = rest.split_at_mut(c);
        parts.push(part);
        rest = tail;
    }
    parts.into_par_iter().zip(bounds.par_windows(2)).for_each(|(part, w)| {
        let mut start = w[0];
        for (slot, nl) in part.iter_mut().zip(memchr::memchr_iter(b'\n', &text[w[0]..w[1]])) {
            let nl = w[0] + nl;
            *slot = (prefix(&text[start..nl]), start as u32, (nl - start) as u32);
            start = nl + 1;
        }
    });
    index
}

/// Counts the newlines of `buf[from..to]` into `lines`; when `lines` reaches
/// `max`, returns the position just after that newline (where the chunk
/// must end).
fn count_until(buf: &[u8], from: usize, to: usize, lines: &mut u64, max: u64) -> Option<usize> {
    for p in memchr::memchr_iter(b'\n', &buf[from..to]) {
        *lines += 1;
        if *lines >= max {
            return Some(from + p + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parallel_line_index_is_the_sequential_one(
            lines in prop::collection::vec(prop::collection::vec(prop::sample::select(vec![b'a', 0u8, 0xff]), 0..30), 0..60),
            threads in 1usize..5,
        ) {
            let text: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
            let mut expect = Vec::new();
            let mut start = 0;
            for l in &lines {
                expect.push((prefix(l), start as u32, l.len() as u32));
                start += l.len() + 1;
            }
            prop_assert_eq!(line_index(&text, lines.len(), threads), expect);
        }
    }
}
