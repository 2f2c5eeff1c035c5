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
//!    about that line's length). For `lines`, every [`INDEX_STEP`] bytes of
//!    whole lines read go to a task of the sort's pool that writes their
//!    index entries (the line's place and its key's first 8 bytes: keys are
//!    parsed here), so that parsing overlaps the reads of the rest of the
//!    chunk instead of following them: a buffer goes round read → sort →
//!    write, and on a 1 GiB `-t, -k3,3n` sort parsing had been half of each
//!    chunk's sorting time (run formation 4.3-5.0 s against 5.1-5.7 s).
//! 2. The **sorting thread** (the caller's) sorts the chunk in the sort's
//!    own rayon pool, as the plan's item codec does
//!    ([`Codec::sort_chunk`], module `chunk_sort`): numbers in place,
//!    records and lines through an index (for lines the reader built it);
//!    lines with GNU keys by their normalised keys, carried in the run
//!    before each line when every key of the chunk fits in 8 bytes
//!    ([`Order::KeyedLines`]).
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
//! instead of half of it save a whole level of merging or 0.4 of a pass
//! over the data
//! ([`Derived::chunk_buffers`](crate::Derived::chunk_buffers)): the stages
//! then take turns, which costs less than the merging saved. So that
//! they take fewer turns, one buffer of numbers is read in *segments*
//! ([`Derived::segments`](crate::Derived::segments), 8 by default): each
//! segment read goes to a task of the pool that sorts it while the next is
//! read, and the run writer merges the sorted segments
//! ([`Order::Segments`]) into write-behind blocks while the block before is
//! written:
//!
//! ```text
//!  reader:  [ s0 ][ s1 ][ s2 ]…[ s7 ]                 [ s0 ][ s1 ] …
//!  pool:          [sort s0][sort s1]…[sort s7]              [sort s0] …
//!  writer:                                   [merge s0..s7 → run 0]
//! ```
//!
//! Reading the next chunk while one buffer's run is written would need the
//! memory the write frees: batched replacement selection (Larson 2003) was
//! tried (git branch `tried/replacement-selection`): reads go into the gaps
//! the run's merge frees, each read sorted by a task and split at the last
//! key written. Its runs were 1.1-1.3 M (1 GiB and 8 GiB of u32, M =
//! 256 MiB), but on two cores it is CPU-bound — the merge of about 30
//! sorted pieces costs five SIMD merge passes and a selection over 30
//! slices per block — and formed runs slower than one buffer (8 GiB: 22.6 s
//! against 17.4 s; 37.5 s against 35.9 s in all).
//!
//! A chunk's index lives until its run is written; the plan's split of M counts each
//! buffer's index within that buffer's share, so two indexes at once still
//! fit.
//!
//! The cancel flag is polled after every block read and every 64 Ki items
//! gathered; an interrupt stops every thread and returns
//! [`ErrorKind::Interrupted`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use emsort_io::{Error, ErrorKind, Progress, Result};

use crate::byte_stream::AlignedBuf;
use crate::chunk_sort::{Entry, KeyRoom};
use crate::codec::{self, each_end, Codec};
use crate::keys::LineOrder;
use crate::output::Output;
use crate::plain::run_block;
use crate::plan::{Derived, SortPlan};
use crate::run_store::{Order, RunStore, SortedChunk};
use crate::source::Input;

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
}

/// A chunk of input in a buffer.
struct Chunk {
    buf: AlignedBuf,
    /// Where the chunk's data starts in `buf` (see [`DATA_ALIGN`]).
    start: usize,
    len: usize,
    /// The index of its lines, in text order (`lines`).
    entries: Vec<Entry>,
    /// Some line's key is longer than its prefix (`lines` with keys).
    long: bool,
    /// Where each of its sorted segments ends (numbers read in segments:
    /// the reader had each sorted as soon as it was read).
    ends: Vec<usize>,
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
        let codec = &*codec::for_plan(self.plan);
        let unit = self.plan.unit();
        let reader = Reader {
            input,
            unit,
            block: self.plan.block_size().max(unit) / unit * unit,
            data_cap: self.derived.run_bytes as usize,
            max_lines: self.derived.max_lines_per_run.unwrap_or(u64::MAX),
            indexer: Indexer { pool: self.pool, codec, keys: self.plan.line_order() },
            index_step: INDEX_STEP,
            segments: self.derived.segments,
            in_segments: (codec.in_place() && self.derived.segments > 1).then_some(codec),
            carry: Vec::new(),
            eof: false,
        };
        std::thread::scope(|s| {
            let handle = emsort_io::spawn_scoped(s, "emsort-read", self.output.name(), || {
                reader.run(empty_rx, full_tx, self.progress, self.cancel)
            })?;
            let mut formed = Formed::default();
            let result = self.consume(codec, &full_rx, &empty_tx, &mut formed);
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
        codec: &dyn Codec,
        full_rx: &Receiver<Chunk>,
        empty_tx: &Sender<AlignedBuf>,
        formed: &mut Formed,
    ) -> Result<()> {
        // Set when the writer fails: the sorter stops at its next chunk.
        let failed = &AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (job_tx, job_rx) = sync_channel::<Sorted>(0);
            let empty = empty_tx.clone();
            let writer = emsort_io::spawn_scoped(
                scope,
                "emsort-runs",
                self.output.name(),
                move || -> Result<Formed> {
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
                        done.bytes_written += written;
                        done.wrote_output = job.single;
                    }
                    Ok(done)
                },
            )?;
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
                    let data = &mut buf.bytes_mut()[start..start + len];
                    let order = match chunk.ends.len() {
                        // Sorted as it was read.
                        1 => Order::InPlace,
                        2.. => Order::Segments { ends: chunk.ends, merge: codec.segment_merge() },
                        0 => self.pool.install(|| codec.sort_chunk(data, chunk.entries, chunk.long, keyed)),
                    };
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
}

/// Bytes of whole lines the reader reads between two indexing tasks (about
/// 60,000 lines of a CSV: a few milliseconds of parsing each).
const INDEX_STEP: usize = 2 << 20;

/// The reader thread's state.
struct Reader<'i, 'p> {
    input: Input<'i>,
    unit: usize,
    block: usize,
    /// Data bytes per chunk (a whole number of items).
    data_cap: usize,
    /// Lines per chunk (`lines`).
    max_lines: u64,
    /// What indexes a lines chunk's lines as they arrive.
    indexer: Indexer<'p>,
    /// Bytes of whole lines read between two indexing tasks.
    index_step: usize,
    /// Segments per chunk of numbers, each sorted by a task of the pool as
    /// soon as it is read (1: the sorting thread sorts the whole chunk).
    segments: usize,
    /// What sorts each segment in place (numbers read in segments; `None`:
    /// the chunk is sorted whole).
    in_segments: Option<&'p dyn Codec>,
    /// The bytes after the last chunk's last line, for the next chunk.
    carry: Vec<u8>,
    /// The input has ended.
    eof: bool,
}

/// Indexes a lines chunk while it is read: every `index_step` bytes of
/// whole lines read, a task of the sort's pool writes their index entries
/// (the key's first 8 bytes, the line's place), so that parsing the keys
/// overlaps the reads of the rest of the chunk instead of following them
/// (it took half of a `-t, -k3,3n` chunk's sorting time).
#[derive(Clone, Copy)]
struct Indexer<'p> {
    pool: &'p rayon::ThreadPool,
    /// What the items are (the reader's too): where lines end.
    codec: &'p dyn Codec,
    /// The lines' order with keys; `None` (or plain): the line's first 8
    /// bytes are the prefix.
    keys: Option<&'p LineOrder>,
}

impl Indexer<'_> {
    /// The prefix of `line`'s key ([`KeyRoom::line_prefix`]); sets `long`
    /// when the key is longer than a prefix.
    #[inline]
    fn key(&self, line: &[u8], room: &mut KeyRoom, long: &AtomicBool) -> u64 {
        let (p, l) = room.line_prefix(self.keys, line);
        // Stored once: a store per line from every thread made the flag's
        // cache line bounce between the cores.
        if l && !long.load(Ordering::Relaxed) {
            long.store(true, Ordering::Relaxed);
        }
        p
    }

    /// Fills `out` with the entries of `text`'s lines (whole lines, as
    /// many as `out` has, the first at an item's start), `text` being at
    /// `base` in the chunk.
    fn fill(&self, text: &[u8], base: usize, out: &mut [Entry], long: &AtomicBool) {
        let mut room = KeyRoom::default();
        let (mut start, mut slots) = (0, out.iter_mut());
        each_end(self.codec, text, &mut 0, |nl| {
            let Some(slot) = slots.next() else { return false };
            *slot = (self.key(&text[start..nl], &mut room, long), (base + start) as u32, (nl - start) as u32);
            start = nl + 1;
            true
        });
        debug_assert_eq!(start, text.len());
    }
}

/// Hands the first `n` bytes of `tail` (whole lines, `lines` of them, at
/// `at` in the chunk) to a task of `s` that writes their entries into the
/// first `lines` of `rest`; `tail`, `at` and `rest` move past them.
#[allow(clippy::too_many_arguments)]
fn index_lines<'s>(
    s: &rayon::Scope<'s>,
    indexer: Indexer<'s>,
    long: &'s AtomicBool,
    tail: &mut &'s mut [u8],
    at: &mut usize,
    rest: &mut &'s mut [Entry],
    (n, lines): (usize, usize),
) {
    let (text, t) = std::mem::take(tail).split_at_mut(n);
    *tail = t;
    let (out, r) = std::mem::take(rest).split_at_mut(lines);
    *rest = r;
    let (text, base) = (&*text, *at);
    *at += n;
    s.spawn(move |_| indexer.fill(text, base, out, long));
}

impl Reader<'_, '_> {
    /// Fills chunks until the input ends; returns the bytes read. Stops
    /// quietly when the consumer hangs up (it had an error of its own).
    fn run(
        mut self,
        empty_rx: Receiver<AlignedBuf>,
        full_tx: SyncSender<Chunk>,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<u64> {
        let lines = self.indexer.codec.fixed().is_none();
        let mut index = 0usize;
        while !self.eof || !self.carry.is_empty() {
            let Ok(mut buf) = empty_rx.recv() else { return Ok(self.input.bytes_read()) };
            let len = self.carry.len();
            let mut cap = self.data_cap.max(self.unit).max(len);
            // Only as large as this chunk can get (+1 for a final newline),
            // and room to align its reads; pages are touched only as data
            // arrives.
            let want = match self.input.remaining() {
                Some(r) => (cap as u64).min(r + len as u64 + 1) as usize,
                None => cap + 1,
            }
            .max(len + 1)
                + DATA_ALIGN;
            if buf.capacity() == 0 {
                buf = AlignedBuf::new(want);
            } else {
                buf.grow_to(want);
            }
            // The data starts where each byte after the carried ones lands
            // at an address congruent to its offset in its file, modulo a
            // page: an O_DIRECT input's reads of whole blocks (at aligned
            // offsets) then land on aligned addresses and go into the chunk
            // without a copy through the stream's own buffer, even after a
            // chunk that ended inside a block. (Placed on a page boundary
            // instead, every chunk after the first was misaligned by the
            // part of a block the chunk before had left in the stream, and
            // 91 % of a 1 GiB input was copied on the reader thread, which
            // bound run formation.) Numbers stay aligned: each one's
            // address is congruent to its offset, a multiple of the unit.
            let start = data_start(buf.bytes().as_ptr() as usize, len, self.input.offset_in_file());
            buf.bytes_mut()[start..start + len].copy_from_slice(&self.carry);
            self.carry.clear();
            // Segments of about an S-th of what this chunk will hold.
            let segment = match self.in_segments {
                Some(_) => {
                    let most = self.input.remaining().map_or(cap, |r| (cap as u64).min(r) as usize);
                    let size = self.item_size();
                    most.div_ceil(self.segments).div_ceil(size).max(1) * size
                }
                None => 0,
            };
            let mut fill = Fill {
                len,
                nlines: 0,
                cut: None,
                complete: 0,
                scan: 0,
                entries: Vec::new(),
                long: AtomicBool::new(false),
                segment,
                ends: Vec::new(),
            };
            if lines {
                let data = &buf.bytes()[start..start + len];
                let (cut, complete) =
                    count_until(self.indexer.codec, data, &mut fill.nlines, &mut fill.scan, self.max_lines);
                fill.cut = cut;
                fill.complete = complete.unwrap_or(0);
            }
            // A line longer than the whole buffer grows the buffer (before
            // any line of the chunk is indexed: it has none yet).
            while self.fill_chunk(&mut buf, start, cap, &mut fill, progress, cancel)? {
                if cap as u64 >= crate::plan::MAX_CHUNK_ITEMS {
                    return Err(Error::new(
                        ErrorKind::Io("read (a line of 4 GiB or more)"),
                        self.input.name(),
                    ));
                }
                cap = (cap * 2).min(crate::plan::MAX_CHUNK_ITEMS as usize);
                buf.grow_to(start + cap + 1);
            }
            if fill.len == 0 {
                // The input ended just after a full chunk, or was empty.
                break;
            }
            let Fill { len, nlines, mut entries, long, ends, .. } = fill;
            entries.truncate(nlines as usize);
            let last = self.eof && self.carry.is_empty();
            let chunk = Chunk { buf, start, len, entries, long: long.into_inner(), ends, index, last };
            if full_tx.send(chunk).is_err() {
                return Ok(self.input.bytes_read());
            }
            index += 1;
        }
        Ok(self.input.bytes_read())
    }

    /// Reads the rest of a chunk into `buf` (its data at `start`, up to
    /// `cap` bytes; `fill` says what it holds so far), indexing whole lines
    /// as they arrive into `fill`; at the end, puts the bytes after its
    /// last line into `self.carry` and ends a last line without its
    /// terminator with one. Returns true, having indexed nothing, when the
    /// chunk is one line that does not fit: the buffer must grow.
    fn fill_chunk(
        &mut self,
        buf: &mut AlignedBuf,
        start: usize,
        cap: usize,
        fill: &mut Fill,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<bool> {
        let lines = self.indexer.codec.fixed().is_none();
        let eol = self.indexer.codec.terminator();
        if lines {
            // Lines are at least their terminator.
            // Zeroed by the allocator: pages are touched only as lines
            // arrive.
            let most = self.max_lines.min(cap as u64 + 1) as usize;
            if fill.entries.len() != most {
                fill.entries = vec![(0, 0, 0); most];
            }
        }
        let indexer = self.indexer;
        let sort = self.in_segments;
        indexer.pool.in_place_scope(|s| -> Result<bool> {
            // One byte kept for a final terminator.
            let data = &mut buf.bytes_mut()[start..];
            let room = cap.min(data.len() - 1) / self.unit * self.unit;
            // The bytes not handed to an indexing task yet, from `at` on.
            let (mut tail, mut at, mut rest) = (data, 0usize, fill.entries.as_mut_slice());
            let long = &fill.long;
            let mut sent_lines = 0u64;
            while fill.cut.is_none() && !self.eof {
                if fill.len == room {
                    if !lines || fill.nlines > 0 {
                        break;
                    }
                    return Ok(true);
                }
                // Whole units from files (len stays a multiple there);
                // streams may return any count. Reads end where the file's
                // blocks do, so that an `O_DIRECT` input reads whole blocks
                // straight into the chunk (see `start` in `run`).
                let ask = read_len(self.input.offset_in_file(), self.block, self.unit, room - fill.len);
                let from = fill.len - at;
                let n = self.input.read(&mut tail[from..from + ask])?;
                if n == 0 {
                    self.eof = true;
                    break;
                }
                if lines {
                    let (cut, complete) = count_until(
                        self.indexer.codec,
                        &tail[from..from + n],
                        &mut fill.nlines,
                        &mut fill.scan,
                        self.max_lines,
                    );
                    fill.cut = cut.map(|c| c + at + from);
                    fill.complete = complete.map_or(fill.complete, |c| c + at + from);
                    if fill.complete - at >= self.index_step {
                        let n = (fill.complete - at, (fill.nlines - sent_lines) as usize);
                        index_lines(s, indexer, long, &mut tail, &mut at, &mut rest, n);
                        sent_lines = fill.nlines;
                    }
                }
                fill.len += n;
                if let Some(sort) = sort {
                    // Each segment read is sorted while the next is read.
                    while fill.len - at >= fill.segment {
                        let (part, t) = std::mem::take(&mut tail).split_at_mut(fill.segment);
                        tail = t;
                        at += fill.segment;
                        fill.ends.push(at);
                        s.spawn(move |_| sort.sort_segment(part));
                    }
                }
                progress.advance(n as u64);
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, self.input.name()));
                }
                // A file's end is known without another read.
                self.eof = self.input.remaining() == Some(0) && fill.cut.is_none();
            }
            if lines {
                let keep = match fill.cut {
                    Some(c) => c,
                    None if !self.eof && fill.complete > 0 => fill.complete,
                    None => fill.len,
                };
                self.carry.extend_from_slice(&tail[keep - at..fill.len - at]);
                fill.len = keep;
                if self.eof && self.carry.is_empty() && keep > at && tail[keep - at - 1] != eol {
                    tail[keep - at] = eol;
                    fill.len += 1;
                    fill.nlines += 1;
                }
                if fill.len > at {
                    let n = (fill.len - at, (fill.nlines - sent_lines) as usize);
                    index_lines(s, indexer, long, &mut tail, &mut at, &mut rest, n);
                }
            } else if !fill.len.is_multiple_of(self.item_size()) {
                // A source that is not whole items (checked per source by
                // the input; here only if a file changed size).
                let size = self.input.bytes_read();
                return Err(Error::new(
                    ErrorKind::BadSize { size, element_size: self.item_size() },
                    self.input.name(),
                ));
            } else if let Some(sort) = sort.filter(|_| fill.len > at) {
                let part = &mut std::mem::take(&mut tail)[..fill.len - at];
                fill.ends.push(fill.len);
                s.spawn(move |_| sort.sort_segment(part));
            }
            Ok(false)
        })
    }

    fn item_size(&self) -> usize {
        self.indexer.codec.fixed().unwrap_or(1)
    }
}

/// What a chunk being read holds so far.
struct Fill {
    /// Bytes.
    len: usize,
    /// Line terminators among them (`lines`).
    nlines: u64,
    /// Where the chunk must end: after its `max_lines`-th line.
    cut: Option<usize>,
    /// Just after the last item end read (0: none yet).
    complete: usize,
    /// What the codec's parse of item ends remembers between two reads
    /// ([`Codec::scan_ends`]).
    scan: u64,
    /// The index of its whole lines (`lines`), written by the indexing
    /// tasks.
    entries: Vec<Entry>,
    /// Some line's key is longer than its prefix.
    long: AtomicBool,
    /// Bytes per sorted segment (numbers; 0: the chunk is sorted whole).
    segment: usize,
    /// Where each segment handed to a sorting task ends.
    ends: Vec<usize>,
}

/// Where a chunk's reads land in its buffer: at addresses congruent to
/// their file offsets modulo this (see [`Reader::run`]).
const DATA_ALIGN: usize = crate::plan::DATA_ALIGN as usize;

/// Where the data of a chunk whose buffer starts at address `addr` begins
/// (`carried` bytes of the chunk before first), so that the byte after
/// them, at `offset` in its file, lies at an address congruent to that
/// offset modulo [`DATA_ALIGN`].
fn data_start(addr: usize, carried: usize, offset: u64) -> usize {
    let at = addr + carried;
    ((offset % DATA_ALIGN as u64) as usize + DATA_ALIGN - at % DATA_ALIGN) % DATA_ALIGN
}

/// Bytes to ask of the input at `offset` in its file, reading blocks of
/// `block` bytes, with `room` bytes left in the chunk: up to the end of the
/// file's block (a whole block when the offset is at one), unless that is
/// less than a unit.
fn read_len(offset: u64, block: usize, unit: usize, room: usize) -> usize {
    let to_end = block - (offset % block as u64) as usize;
    if to_end >= unit { to_end } else { block }.min(room)
}

/// Counts the item ends of `read` (the chunk's next bytes; `scan`: the
/// parse's state before them) into `lines`; returns, within `read`, where
/// the chunk must end when `lines` reaches `max` (just after that item),
/// and just after the last item end counted.
fn count_until(
    codec: &dyn Codec,
    read: &[u8],
    lines: &mut u64,
    scan: &mut u64,
    max: u64,
) -> (Option<usize>, Option<usize>) {
    let (mut cut, mut last) = (None, None);
    each_end(codec, read, scan, |p| {
        *lines += 1;
        last = Some(p + 1);
        if *lines >= max {
            cut = last;
        }
        cut.is_none()
    });
    (cut, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::prefix;
    use crate::keys::Scratch;
    use crate::run_store::KEY_BYTES;
    use crate::source::Source;
    use crate::Format;

    /// After the first read of each chunk (the rest of the block the
    /// chunk before left in the stream), every read of a chunk asks for
    /// a whole block at an offset that is a multiple of the block, and
    /// lands at an address congruent to that offset: what an `O_DIRECT`
    /// stream reads straight into the chunk. Chunks of any size, carried
    /// bytes of any length, a buffer at any address.
    #[test]
    fn chunk_reads_line_up_with_the_files_blocks() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        for _ in 0..2000 {
            let block = [4096usize, 65536, 1 << 20][rng.random_range(0..3)];
            let unit = [1usize, 4, 8][rng.random_range(0..3)];
            let room = rng.random_range(1..20 * block);
            let mut offset = rng.random_range(0..1u64 << 34) / unit as u64 * unit as u64;
            let addr = rng.random_range(0..1usize << 40) / 8 * 8;
            let carried = rng.random_range(0..block);
            let mut at = addr + data_start(addr, carried, offset) + carried;
            assert_eq!(at % DATA_ALIGN, (offset % DATA_ALIGN as u64) as usize);
            let mut left = room;
            let mut reads = 0;
            while left > 0 {
                let ask = read_len(offset, block, unit, left);
                assert!(ask > 0 && ask <= left);
                if reads > 0 && ask == block {
                    assert_eq!(offset % block as u64, 0, "a whole block at a block's start");
                    assert_eq!(at % DATA_ALIGN, 0, "landing on an aligned address");
                }
                if reads > 0 && ask < left {
                    assert_eq!(ask, block, "only the first and the last read are partial");
                }
                let got = ask / unit * unit;
                if got == 0 {
                    break;
                }
                (offset, at, left, reads) = (offset + got as u64, at + got, left - got, reads + 1);
            }
        }
    }

    /// The reader cuts chunks at the plan's terminator only (NUL under
    /// `-z`, where newlines are bytes of a line), or where the codec's
    /// parse says an item ends (not at a quoted newline), carries the rest
    /// across chunk boundaries, ends a last line that lacks its terminator
    /// with one, grows the buffer for a line longer than a chunk, and
    /// indexes each chunk's lines as they arrive — whatever the indexing
    /// step — exactly as one pass over the chunk would (by the lines'
    /// first 8 bytes, or their keys').
    #[test]
    fn the_reader_cuts_chunks_at_the_terminator_and_indexes_them() {
        use crate::keys::{Key, OrderOptions};
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut o = OrderOptions::default();
        o.keys.push(Key::parse("1.2").unwrap());
        let keyed = LineOrder::new(o).unwrap();
        for (eol, step, keys, quoted) in [
            (b'\n', 1 << 20, None, false),
            (0u8, 1 << 20, None, false),
            (b'\n', 1, None, false),
            (0u8, 5, Some(&keyed), false),
            (b'\n', 12, Some(&keyed), false),
            (b'\n', 1 << 20, None, true),
            (b'\n', 9, Some(&keyed), true),
        ] {
            let (lines, quote) = (codec::of(Format::Lines, false, eol, None), crate::codec::Quoted);
            let codec: &dyn Codec = if quoted { &quote } else { &*lines };
            let ends = |data: &[u8]| match quoted {
                true => crate::codec::Quoted::ends(data),
                false => memchr::memchr_iter(eol, data).collect::<Vec<_>>(),
            };
            // Quoted: a newline inside quotes in every fourth line.
            let other = if eol == 0 { b'\n' } else { 0 };
            let mut text = Vec::new();
            for i in 0..200usize {
                // One line longer than a whole chunk.
                let n = if i == 100 { 100 } else { i % 13 };
                text.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, n));
                if i % 3 == 0 {
                    text.push(other);
                }
                if quoted && i % 4 == 1 {
                    text.extend_from_slice(b"x\"y\nz\"");
                }
                text.push(eol);
            }
            text.extend_from_slice(b"last");
            text.push(other);
            let plan = SortPlan::builder(Format::Lines).eol(eol).build().unwrap();
            let mut src: &[u8] = &text;
            let input = Input::open(&plan, vec![Source::Reader(&mut src)]).unwrap();
            // Reads of 7 bytes, chunks of at most 40 bytes or 5 lines.
            let reader = Reader {
                input,
                unit: 1,
                block: 7,
                data_cap: 40,
                max_lines: 5,
                indexer: Indexer { pool: &pool, codec, keys },
                index_step: step,
                segments: 1,
                in_segments: None,
                carry: Vec::new(),
                eof: false,
            };
            let (empty_tx, empty_rx) = channel::<AlignedBuf>();
            for _ in 0..2 {
                empty_tx.send(AlignedBuf::default()).unwrap();
            }
            let (full_tx, full_rx) = sync_channel::<Chunk>(1);
            let cancel = AtomicBool::new(false);
            let mut got = Vec::new();
            let (mut chunks, mut cuts) = (0, Vec::new());
            std::thread::scope(|s| {
                let h = s.spawn(|| reader.run(empty_rx, full_tx, &emsort_io::NoProgress, &cancel));
                // Dropped if an assertion fails: the reader stops.
                let empty_tx = empty_tx;
                for c in full_rx.iter() {
                    let data = &c.buf.bytes()[c.start..c.start + c.len];
                    let nls = ends(data);
                    assert_eq!(nls.last(), Some(&(c.len - 1)), "chunk {} ends inside a line", c.index);
                    let (mut expect, mut long, mut at) = (Vec::new(), false, 0);
                    for nl in nls {
                        let line = &data[at..nl];
                        let key = match keys {
                            Some(lo) => {
                                let mut k = Vec::new();
                                lo.encode(line, &mut k, &mut Scratch::default());
                                long |= k.len() > KEY_BYTES;
                                prefix(&k)
                            }
                            None => prefix(line),
                        };
                        expect.push((key, at as u32, line.len() as u32));
                        at = nl + 1;
                    }
                    assert!(c.entries == expect, "chunk {}, step {step}: {:?}", c.index, c.entries);
                    assert_eq!(c.long, long, "chunk {}", c.index);
                    let longest = c.entries.iter().map(|e| e.2 as usize + 1).max().unwrap_or(0);
                    assert!(
                        c.entries.len() <= 5 && (c.len <= 40 || longest > 40),
                        "chunk {}: {} lines, {} bytes",
                        c.index,
                        c.entries.len(),
                        c.len
                    );
                    got.extend_from_slice(data);
                    cuts.push(got.len() - 1);
                    chunks += 1;
                    let _ = empty_tx.send(c.buf); // the reader may be done
                }
                assert_eq!(h.join().unwrap().unwrap(), text.len() as u64);
            });
            text.push(eol);
            assert_eq!(got, text, "eol {eol:#04x}");
            let ends_of_all = ends(&text);
            assert!(cuts.iter().all(|c| ends_of_all.binary_search(c).is_ok()), "a chunk ends inside an item");
            assert!(chunks > 40, "{chunks} chunks");
        }
    }
}
