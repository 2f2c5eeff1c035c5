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
//!    the chunk's last line terminator ([`SortPlan::eol`]: `\n`, or NUL
//!    under `-z`) are carried to the next one. A last line without its
//!    terminator gets one (as GNU `sort` does). The reads land on a page
//!    boundary (the carried bytes are put just before one), so an
//!    `O_DIRECT` input reads straight into the chunk, without a copy
//!    through its own buffer. A line longer than the whole buffer
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
//!      too);
//!    - lines with GNU keys by their normalised keys ([`crate::keys`]), 8
//!      bytes at a time: the index holds each key's first 8 bytes, and each
//!      group of equal windows is sorted by the next 8 (computed again,
//!      with the group's lines prefetched), until the keys end; lines with
//!      equal keys then by the rest of GNU's comparison (`-V`/`-R` keys,
//!      the last resort) and their input position. `-u` keeps the first of
//!      each group of equal lines. When every key of the chunk fits in 8
//!      bytes (`-k3,3n` on amounts, `-k1,1n` on ids), the index holds the
//!      whole keys, and the run carries each line's key before it
//!      ([`Order::KeyedLines`]): the merge reads the keys and parses no
//!      line again (a keyed `-t, -k3,3n` sort of 1 GiB used a quarter less
//!      CPU).
//! 3. A **run writer thread** writes the sorted chunk as a run through an
//!    output stream of the plan's kind: numbers in one piece; records and
//!    lines *gathered* in index order, on all the pool's threads, into
//!    write-behind blocks that one more thread writes through a stream of
//!    2B (B/2 in a small budget: [`SortPlan::run_write_block`]; module
//!    `write_behind`). It then hands the buffer back to the
//!    reader.
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
//! merge pass at all). There is only one, too, when runs of all the memory
//! instead of half of it save a whole level of merging
//! ([`Derived::chunk_buffers`](crate::Derived::chunk_buffers)): the stages
//! then take turns, which costs less than a pass over the data. A chunk's
//! index lives until its run is written; the plan's split of M counts each
//! buffer's index within that buffer's share, so two indexes at once still
//! fit.
//!
//! The cancel flag is polled after every block read and every 64 Ki items
//! gathered; an interrupt stops every thread and returns
//! [`ErrorKind::Interrupted`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use emsort_io::{Error, ErrorKind, Progress, Result};
use rayon::prelude::*;

use crate::byte_stream::AlignedBuf;
use crate::key::{prefix, NumKey};
use crate::keys::Scratch;
use crate::output::Output;
use crate::plain::run_block;
use crate::plan::{Derived, SortPlan};
use crate::radix;
use crate::run_store::{Order, RunStore, SortedChunk, KEY_BYTES};
use crate::source::Input;
use crate::Format;

/// What run formation did.
#[derive(Debug, Default)]
pub(crate) struct Formed {
    /// Runs formed (a single one may have gone to the output).
    pub runs: u64,
    /// Whether the single run went straight to the output.
    pub wrote_output: bool,
    /// Bytes read from the input.
    pub bytes_read: u64,
    /// Bytes written to runs (or the output), with any side data.
    pub bytes_written: u64,
    /// Bytes of the runs' items (the output's size).
    pub run_bytes: u64,
}

/// A chunk of input in a buffer.
struct Chunk {
    buf: AlignedBuf,
    /// Where the chunk's data starts in `buf` (see [`DATA_ALIGN`]).
    start: usize,
    len: usize,
    /// Lines in the chunk (`lines`).
    lines: u64,
    index: usize,
    last: bool,
}

/// A sorted chunk on its way to the run writer.
struct Sorted {
    buf: AlignedBuf,
    start: usize,
    len: usize,
    order: Order,
    /// The only run: it goes to the output.
    single: bool,
}

/// Everything run formation needs.
pub(crate) struct RunFormation<'a, 'o> {
    pub plan: &'a SortPlan,
    pub derived: &'a Derived,
    pub pool: &'a rayon::ThreadPool,
    pub progress: &'a dyn Progress,
    pub cancel: &'a AtomicBool,
    /// Where the runs go.
    pub store: &'a dyn RunStore,
    /// Where a single run (the whole input) goes.
    pub output: &'a Output<'o>,
}

impl RunFormation<'_, '_> {
    /// Forms the runs of `input`.
    pub fn form(&self, input: Input<'_>) -> Result<Formed> {
        let (empty_tx, empty_rx) = channel::<AlignedBuf>();
        for _ in 0..self.derived.chunk_buffers {
            // Allocated lazily by the reader, only as large as needed.
            let _ = empty_tx.send(AlignedBuf::default());
        }
        let (full_tx, full_rx) = sync_channel::<Chunk>(1);
        let unit = self.plan.unit();
        let reader = Reader {
            input,
            format: self.plan.format(),
            eol: self.plan.eol(),
            unit,
            block: self.plan.block_size().max(unit) / unit * unit,
            data_cap: self.derived.run_bytes as usize,
            max_lines: self.derived.max_lines_per_run.unwrap_or(u64::MAX),
        };
        std::thread::scope(|s| {
            let handle = s.spawn(|| reader.run(empty_rx, full_tx, self.progress, self.cancel));
            let mut formed = Formed::default();
            let result = self.consume(&full_rx, &empty_tx, &mut formed);
            // Unblock the reader whatever happened, then collect its result.
            drop(full_rx);
            drop(empty_tx);
            let read = handle
                .join()
                .map_err(|_| Error::new(ErrorKind::Io("reader thread panicked"), self.output.name()))?;
            // The reader's error first: a bad input explains a failed sort.
            formed.bytes_read = read?;
            result?;
            Ok(formed)
        })
    }

    /// Sorts each chunk here and hands it to a run writer thread, so the
    /// next chunk is sorted while this one is written.
    fn consume(
        &self,
        full_rx: &Receiver<Chunk>,
        empty_tx: &Sender<AlignedBuf>,
        formed: &mut Formed,
    ) -> Result<()> {
        // Set when the writer fails: the sorter stops at its next chunk.
        let failed = &AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (job_tx, job_rx) = sync_channel::<Sorted>(0);
            let empty = empty_tx.clone();
            let writer = scope.spawn(move || -> Result<Formed> {
                let mut done = Formed::default();
                for job in job_rx {
                    let chunk = SortedChunk {
                        data: &job.buf.bytes()[job.start..job.start + job.len],
                        order: &job.order,
                        format: self.plan.format(),
                        pool: self.pool,
                    };
                    let written = if job.single {
                        let block = run_block(self.plan, &job.order);
                        self.output
                            .open(block)
                            .and_then(|out| chunk.write(out, block, self.output.name(), self.cancel))
                    } else {
                        self.store.write_run(&chunk, self.cancel)
                    };
                    // The buffer goes back even after a failure: with one
                    // chunk buffer the reader waits for it, and the sorter
                    // for the reader.
                    if written.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    let _ = empty.send(job.buf);
                    let written = written?;
                    done.runs += 1;
                    done.run_bytes += job.len as u64;
                    done.bytes_written += written;
                    done.wrote_output = job.single;
                }
                Ok(done)
            });
            let sorting = (|| -> Result<()> {
                for chunk in full_rx.iter() {
                    let single = chunk.index == 0 && chunk.last;
                    if self.cancel.load(Ordering::Relaxed) {
                        return Err(Error::new(ErrorKind::Interrupted, self.output.name()));
                    }
                    if failed.load(Ordering::Relaxed) {
                        break; // its error comes from join
                    }
                    let (mut buf, start, len) = (chunk.buf, chunk.start, chunk.len);
                    // A run (not the output) may carry its lines' keys.
                    let keyed = !single && self.store.takes_keyed_runs();
                    let order = self.sort_chunk(&mut buf.bytes_mut()[start..start + len], chunk.lines, keyed);
                    let job = Sorted { buf, start, len, order, single };
                    if job_tx.send(job).is_err() {
                        break; // the writer failed: its error comes from join
                    }
                }
                Ok(())
            })();
            drop(job_tx);
            let written = writer
                .join()
                .map_err(|_| Error::new(ErrorKind::Io("run writer thread panicked"), self.output.name()))?;
            sorting?;
            *formed = written?;
            Ok(())
        })
    }

    /// Sorts `data` in place (numbers) or returns the order of its items
    /// (an index, for records and lines). `keyed`: lines with GNU keys may
    /// be written with their keys ([`Order::KeyedLines`], when every key
    /// of the chunk is at most 8 bytes).
    fn sort_chunk(&self, data: &mut [u8], lines: u64, keyed: bool) -> Order {
        let rev = self.plan.reverse();
        match self.plan.format() {
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
                // Every chunk ends with the line terminator (the reader
                // sees to it).
                let (text, eol) = (&*data, self.plan.eol());
                let line = |e: &(u64, u32, u32)| &text[e.1 as usize..(e.1 + e.2) as usize];
                let threads = self.plan.threads();
                let plain = |rev: bool| {
                    let mut index = self.pool.install(|| {
                        line_index(text, eol, lines as usize, threads, |l, _: &mut ()| prefix(l))
                    });
                    self.pool.install(|| radix::sort_index(&mut index, rev, |a, b| line(a).cmp(line(b))));
                    index
                };
                let Some(lo) = self.plan.line_order() else {
                    return Order::Lines(plain(rev));
                };
                if lo.is_plain() {
                    // Plain `sort -u`: bytewise, then one line per group of
                    // equal lines.
                    let mut index = plain(lo.reverse());
                    index.dedup_by(|b, a| a.0 == b.0 && line(a) == line(b));
                    return Order::Lines(index);
                }
                // By the normalised keys, 8 bytes at a time (computed again
                // for each window a line's group reaches); lines with equal
                // keys by the rest of GNU's comparison, then by input
                // position (for -s, -u).
                let encode = |l: &[u8], s: &mut KeyRoom| {
                    s.key.clear();
                    lo.encode(l, &mut s.key, &mut s.scratch);
                };
                // Whether some key is longer than a prefix: else no group
                // of equal prefixes has a second window to sort by (and
                // its first line need not be encoded again to learn so),
                // and the run may carry the keys as its index holds them.
                let long = AtomicBool::new(false);
                let first = |l: &[u8], s: &mut KeyRoom| {
                    encode(l, s);
                    // Stored once: a store per line from every thread made
                    // the flag's cache line bounce between the cores.
                    if s.key.len() > KEY_BYTES && !long.load(Ordering::Relaxed) {
                        long.store(true, Ordering::Relaxed);
                    }
                    prefix(&s.key)
                };
                let mut index = self.pool.install(|| line_index(text, eol, lines as usize, threads, first));
                let long = long.into_inner();
                let window = |e: &(u64, u32, u32), w: usize, s: &mut KeyRoom| {
                    if !long {
                        return None;
                    }
                    encode(line(e), s);
                    (s.key.len() > 8 * w).then(|| prefix(&s.key[8 * w..]))
                };
                // -u: the first of each group of equal lines, as GNU keeps;
                // the others are marked (a length no line has) and dropped
                // after. Equal lines are neighbours in a group of equal keys.
                const REPEAT: u32 = u32::MAX;
                let mark_repeats = |g: &mut [(u64, u32, u32)], same: &dyn Fn(&[u8], &[u8]) -> bool| {
                    if lo.unique() {
                        // Backwards, so both lines compared are unmarked.
                        for i in (1..g.len()).rev() {
                            if same(line(&g[i - 1]), line(&g[i])) {
                                g[i].2 = REPEAT;
                            }
                        }
                    }
                };
                // Equal keys that only the last resort tells apart (no
                // -V/-R key, no -s/-u): whole lines bytewise, by their first
                // 8 bytes before the rest, each line read once and fetched
                // ahead (the group's lines lie all over the chunk; `-t,
                // -k3,3n` on a CSV puts half its lines in such groups).
                let last_resort_only = lo.complete() && !lo.keeps_input_order();
                let ties = |g: &mut [(u64, u32, u32)]| {
                    if last_resort_only {
                        // The group's key (its prefix: keys of at most 8
                        // bytes end in the first window), put back after
                        // for a run that will carry it.
                        let key = g[0].0;
                        let rev = lo.reverse();
                        for i in 0..g.len() {
                            if let Some(ahead) = g.get(i + 8) {
                                radix::prefetch(text[ahead.1 as usize..].as_ptr());
                            }
                            let p = prefix(line(&g[i]));
                            g[i].0 = if rev { !p } else { p };
                        }
                        g.sort_unstable_by(|a, b| {
                            a.0.cmp(&b.0).then_with(|| lo.last_resort(line(a), line(b))).then(a.1.cmp(&b.1))
                        });
                        if keyed && !long {
                            g.iter_mut().for_each(|e| e.0 = key);
                        }
                        return;
                    }
                    g.sort_unstable_by(|a, b| lo.compare_equal_forms(line(a), line(b)).then(a.1.cmp(&b.1)));
                    // Equal normalised keys: equal lines unless a -V/-R key
                    // tells them apart.
                    mark_repeats(g, &|a, b| lo.complete() || lo.compare_equal_forms(a, b).is_eq());
                };
                let deep = |g: &mut [(u64, u32, u32)]| {
                    g.sort_unstable_by(|a, b| lo.compare(line(a), line(b)).then(a.1.cmp(&b.1)));
                    mark_repeats(g, &|a, b| lo.same(a, b));
                };
                self.pool.install(|| {
                    radix::sort_index_deep(&mut index, window, ties, deep, |e| text[e.1 as usize..].as_ptr())
                });
                if lo.unique() {
                    index.retain(|e| e.2 != REPEAT);
                }
                // Keys of at most 8 bytes are whole in the entries' prefixes
                // (each group's restored after its ties were sorted).
                if keyed && !long {
                    return Order::KeyedLines(index);
                }
                return Order::Lines(index);
            }
        }
        Order::InPlace
    }

    fn sort_numbers<T: NumKey>(&self, data: &mut [u8], rev: bool) {
        let items: &mut [T] = bytemuck::cast_slice_mut(data);
        self.pool.install(|| radix::sort_numbers(items, rev));
    }
}

/// The reader thread's state.
struct Reader<'i> {
    input: Input<'i>,
    format: Format,
    /// The line terminator (`lines`).
    eol: u8,
    unit: usize,
    block: usize,
    /// Data bytes per chunk (a whole number of items).
    data_cap: usize,
    /// Lines per chunk (`lines`).
    max_lines: u64,
}

impl Reader<'_> {
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
        let mut carry: Vec<u8> = Vec::new();
        let mut index = 0usize;
        let mut eof = false;
        while !eof || !carry.is_empty() {
            let Ok(mut buf) = empty_rx.recv() else { return Ok(self.input.bytes_read()) };
            let mut len = carry.len();
            let mut cap = self.data_cap.max(self.unit).max(len);
            // Only as large as this chunk can get (+1 for a final newline),
            // and room to align its reads; pages are touched only as data
            // arrives.
            let want = match self.input.remaining() {
                Some(r) => (cap as u64).min(r + len as u64 + 1) as usize,
                None => cap + 1,
            }
            .max(len)
                + DATA_ALIGN;
            if buf.capacity() == 0 {
                buf = AlignedBuf::new(want);
            } else {
                buf.grow_to(want);
            }
            // The data starts where the reads after the carried bytes land
            // on a page: an O_DIRECT input reads into them without a copy
            // (a multiple of 8 from the 8-aligned buffer: numbers stay
            // aligned).
            let start = {
                let at = buf.bytes().as_ptr() as usize + len;
                (DATA_ALIGN - at % DATA_ALIGN) % DATA_ALIGN
            };
            buf.bytes_mut()[start..start + len].copy_from_slice(&carry);
            carry.clear();
            let mut nlines = 0u64;
            let mut cut = if lines {
                count_until(buf.bytes(), start, start + len, self.eol, &mut nlines, self.max_lines)
                    .map(|c| c - start)
            } else {
                None
            };
            while cut.is_none() && !eof {
                if len == cap {
                    if !lines || nlines > 0 {
                        break;
                    }
                    // One line longer than the whole buffer: grow for it.
                    if cap as u64 >= crate::plan::MAX_CHUNK_ITEMS {
                        return Err(Error::new(
                            ErrorKind::Io("read (a line of 4 GiB or more)"),
                            self.input.name(),
                        ));
                    }
                    cap = (cap * 2).min(crate::plan::MAX_CHUNK_ITEMS as usize);
                }
                // Whole units from files (len stays a multiple there);
                // streams may return any count.
                let ask = self.block.min(cap - len);
                buf.grow_to(start + len + ask + 1);
                let at = start + len;
                let n = self.input.read(&mut buf.bytes_mut()[at..at + ask])?;
                if n == 0 {
                    eof = true;
                    break;
                }
                if lines {
                    cut = count_until(buf.bytes(), at, at + n, self.eol, &mut nlines, self.max_lines)
                        .map(|c| c - start);
                }
                len += n;
                progress.advance(n as u64);
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, self.input.name()));
                }
                // A file's end is known without another read.
                eof = self.input.remaining() == Some(0) && cut.is_none();
            }
            if lines {
                let data = &buf.bytes()[start..start + len];
                let keep = match cut {
                    Some(c) => c,
                    None if !eof => memchr::memrchr(self.eol, data).map_or(len, |p| p + 1),
                    None => len,
                };
                carry.extend_from_slice(&data[keep..]);
                len = keep;
                if eof && carry.is_empty() && len > 0 && buf.bytes()[start + len - 1] != self.eol {
                    buf.grow_to(start + len + 1);
                    buf.bytes_mut()[start + len] = self.eol;
                    len += 1;
                    nlines += 1;
                }
            } else if len % self.item_size() != 0 {
                // A source that is not whole items (checked per source by
                // the input; here only if a file changed size).
                let size = self.input.bytes_read();
                return Err(Error::new(
                    ErrorKind::BadSize { size, element_size: self.item_size() },
                    self.input.name(),
                ));
            }
            if len == 0 {
                // The input ended just after a full chunk, or was empty.
                break;
            }
            let last = eof && carry.is_empty();
            if full_tx.send(Chunk { buf, start, len, lines: nlines, index, last }).is_err() {
                return Ok(self.input.bytes_read());
            }
            index += 1;
        }
        Ok(self.input.bytes_read())
    }

    fn item_size(&self) -> usize {
        self.format.item_size().unwrap_or(1)
    }
}

/// Where a chunk's reads land in its buffer: page-aligned (see
/// [`Reader::run`]).
const DATA_ALIGN: usize = 4096;

/// Room to write one line's normalised key in, per thread.
#[derive(Default)]
struct KeyRoom {
    key: Vec<u8>,
    scratch: Scratch,
}

/// The index of `text` (whole lines, each ending with `eol`, `lines` of
/// them): (key prefix, offset, length without `eol`) per line, in text
/// order. Built in parallel: the text is cut at line ends into one piece
/// per thread, each piece's lines are counted, and each piece fills its own
/// part of the index.
fn line_index<F, S>(text: &[u8], eol: u8, lines: usize, threads: usize, key: F) -> Vec<(u64, u32, u32)>
where
    F: Fn(&[u8], &mut S) -> u64 + Sync,
    S: Default,
{
    // Piece boundaries, each just after a line's end.
    let pieces = threads.max(1) * 4;
    let mut bounds = vec![0usize];
    for k in 1..pieces {
        let at = (text.len() * k / pieces).max(*bounds.last().expect("non-empty"));
        let end = match memchr::memchr(eol, &text[at..]) {
            Some(p) => at + p + 1,
            None => text.len(),
        };
        bounds.push(end);
    }
    bounds.push(text.len());
    bounds.dedup();
    let counts: Vec<usize> =
        bounds.par_windows(2).map(|w| memchr::memchr_iter(eol, &text[w[0]..w[1]]).count()).collect();
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
        let mut scratch = S::default();
        for (slot, nl) in part.iter_mut().zip(memchr::memchr_iter(eol, &text[w[0]..w[1]])) {
            let nl = w[0] + nl;
            *slot = (key(&text[start..nl], &mut scratch), start as u32, (nl - start) as u32);
            start = nl + 1;
        }
    });
    index
}

/// Counts the line terminators `eol` of `buf[from..to]` into `lines`; when
/// `lines` reaches `max`, returns the position just after that terminator
/// (where the chunk must end).
fn count_until(buf: &[u8], from: usize, to: usize, eol: u8, lines: &mut u64, max: u64) -> Option<usize> {
    for p in memchr::memchr_iter(eol, &buf[from..to]) {
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
    use crate::source::Source;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parallel_line_index_is_the_sequential_one(
            lines in prop::collection::vec(
                prop::collection::vec(prop::sample::select(vec![b'a', 0u8, b'\n', 0xff]), 0..30), 0..60),
            threads in 1usize..5,
            eol in prop::sample::select(vec![b'\n', 0u8]),
        ) {
            // Lines hold every byte but their terminator.
            let lines: Vec<Vec<u8>> = lines
                .into_iter()
                .map(|l| l.into_iter().map(|b| if b == eol { b'b' } else { b }).collect())
                .collect();
            let text: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([eol])).collect();
            let mut expect = Vec::new();
            let mut start = 0;
            for l in &lines {
                expect.push((prefix(l), start as u32, l.len() as u32));
                start += l.len() + 1;
            }
            prop_assert_eq!(line_index(&text, eol, lines.len(), threads, |l, _: &mut ()| prefix(l)), expect);
        }
    }

    /// The reader cuts chunks at the plan's terminator only (NUL under
    /// `-z`, where newlines are bytes of a line), carries the rest across
    /// chunk boundaries, counts each chunk's lines, and ends a last line
    /// that lacks its terminator with one.
    #[test]
    fn the_reader_cuts_chunks_at_the_terminator() {
        for eol in [b'\n', 0u8] {
            let other = if eol == 0 { b'\n' } else { 0 };
            let mut text = Vec::new();
            for i in 0..200usize {
                text.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, i % 13));
                if i % 3 == 0 {
                    text.push(other);
                }
                text.push(eol);
            }
            text.extend_from_slice(b"last");
            text.push(other);
            let plan = SortPlan::builder(Format::Lines).eol(eol).build().unwrap();
            let mut src: &[u8] = &text;
            let input = Input::open(&plan, vec![Source::Reader(&mut src)]).unwrap();
            // Reads of 7 bytes, chunks of at most 40 bytes or 5 lines.
            let reader =
                Reader { input, format: Format::Lines, eol, unit: 1, block: 7, data_cap: 40, max_lines: 5 };
            let (empty_tx, empty_rx) = channel::<AlignedBuf>();
            for _ in 0..2 {
                empty_tx.send(AlignedBuf::default()).unwrap();
            }
            let (full_tx, full_rx) = sync_channel::<Chunk>(1);
            let cancel = AtomicBool::new(false);
            let mut got = Vec::new();
            let mut chunks = 0;
            std::thread::scope(|s| {
                let h = s.spawn(|| reader.run(empty_rx, full_tx, &emsort_io::NoProgress, &cancel));
                for c in full_rx.iter() {
                    let data = &c.buf.bytes()[c.start..c.start + c.len];
                    assert_eq!(data.last(), Some(&eol), "chunk {} ends inside a line", c.index);
                    assert_eq!(memchr::memchr_iter(eol, data).count() as u64, c.lines);
                    assert!(
                        c.lines <= 5 && c.len <= 40,
                        "chunk {}: {} lines, {} bytes",
                        c.index,
                        c.lines,
                        c.len
                    );
                    got.extend_from_slice(data);
                    chunks += 1;
                    let _ = empty_tx.send(c.buf); // the reader may be done
                }
                assert_eq!(h.join().unwrap().unwrap(), text.len() as u64);
            });
            text.push(eol);
            assert_eq!(got, text, "eol {eol:#04x}");
            assert!(chunks > 40, "{chunks} chunks");
        }
    }
}
