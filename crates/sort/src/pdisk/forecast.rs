//! Forecasting data (Barve & Vitter 4.1): each run's *forecasting data
//! run*, the keys that predict when each of its blocks begins
//! participating in a merge, and the *forecasting heap* that merges them.
//!
//! # The forecasting key of a block
//!
//! Block j ≥ 1 of a run is forecast by the key of the item that contains
//! the block's first byte: the item the merge needs when it first needs
//! block j. For fixed-size items aligned to B that is the first item of
//! block j, the one just after the last item of block j − 1; for an item
//! straddling blocks j − 1 and j (104-byte records with B = 256 KiB, lines)
//! it is that item, and a line spanning several blocks forecasts each of
//! them. Block 0 needs no forecast: every merge reads the first block of
//! each run at its start (4.4 step 1). A run of n blocks thus has n − 1
//! keys, in block order, which is sorted order.
//!
//! SRM's original layout (section 3) implants in block i the key of the
//! last item of block i + D − 1, so that the block read from a disk
//! forecasts the next block of the same run on the same disk. Section 4
//! keeps the keys apart instead, one forecasting data run per run, read
//! through the forecasting heap: every key of the run is there, in order,
//! and the heap's incremental merge of them yields every block in
//! participation order — which is what the lookahead queue needs. The keys
//! are recorded while the run is written, during run formation and by the
//! merge that writes an intermediate run ([`ForecastWriter`]).
//!
//! # Where the keys live
//!
//! - **In memory** (4.1.1, 4.1.3, the usual case): the keys of a run are a
//!   byte vector beside its [`StripedRun`](emsort_io::disks::StripedRun);
//!   they never go to disk.
//! - **Blocked** (4.1.2, when they would take too much memory, or forced by
//!   [`SortPlan::forecast_in_memory`](crate::SortPlan::forecast_in_memory)):
//!   each run's keys are a file `fc-{id}` on the run's starting disk,
//!   written and read sequentially through emsort-io streams of the plan's
//!   kinds with blocks of B_f bytes ([`ForecastCursor`]), so emulated
//!   stream kinds and their counts cover them like every other file.
//!
//! Keys are stored as [`Codec::forecast`] makes them; for lines (whose
//! keys vary in length), each with a 4-byte length before it.

use std::path::{Path, PathBuf};

use emsort_io::{
    create_output, open_input, AnyInput, AnyOutput, Error, ErrorKind, InputStream, OutputStream, Result,
    StreamConfig, StreamKind,
};

use crate::codec::{cmp_heads, Codec, HeadKey, SharedCodec};
use crate::tree::LoserTree;

/// Where forecasting keys are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No forecasting data (DSM).
    None,
    /// In memory (4.1.1).
    Memory,
    /// Forecasting data runs on disk, read and written through streams of
    /// blocks of B_f bytes (4.1.2).
    Blocked {
        /// B_f.
        block: usize,
        /// The stream kind that reads them (the plan's input kind).
        input: StreamKind,
        /// The stream kind that writes them (the plan's output kind).
        output: StreamKind,
    },
}

/// The stored keys of one run.
#[derive(Debug)]
enum Data {
    None,
    Memory(Vec<u8>),
    /// A file, and the stream kind that reads it.
    File(PathBuf, StreamKind),
}

/// A run's forecasting data run: the keys of its blocks 1, 2, ….
#[derive(Debug)]
pub(crate) struct ForecastRun {
    data: Data,
    /// Keys stored.
    keys: u64,
    /// Bytes stored.
    bytes: u64,
}

impl ForecastRun {
    /// The number of keys (blocks − 1 of the run).
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Bytes of keys.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Deletes the file of a blocked forecasting data run.
    pub fn remove(&self) -> Result<()> {
        match &self.data {
            Data::File(p, _) => match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::from_io("remove", p, e)),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

enum Sink {
    None,
    Memory(Vec<u8>),
    File { w: Box<AnyOutput<u8>>, path: PathBuf, read_with: StreamKind },
}

/// Records the forecasting keys of a run while it is written: fed every
/// item in order, it stores the key of each item that holds the first byte
/// of a block j ≥ 1.
pub(crate) struct ForecastWriter {
    codec: SharedCodec,
    block: u64,
    /// Bytes of the run so far.
    offset: u64,
    /// The first byte of the next block to forecast (u64::MAX: none).
    boundary: u64,
    keys: u64,
    bytes: u64,
    sink: Sink,
    scratch: Vec<u8>,
}

impl ForecastWriter {
    /// A writer for a run of blocks of `block` bytes; a blocked one
    /// creates `path`.
    pub fn new(mode: Mode, codec: SharedCodec, block: usize, path: &Path) -> Result<ForecastWriter> {
        let sink = match mode {
            Mode::None => Sink::None,
            Mode::Memory => Sink::Memory(Vec::new()),
            Mode::Blocked { block: bf, input, output } => {
                let w = create_output::<u8>(path, &StreamConfig::new(output).block_size(bf))?;
                Sink::File { w: Box::new(w), path: path.to_path_buf(), read_with: input }
            }
        };
        let boundary = if matches!(sink, Sink::None) { u64::MAX } else { block as u64 };
        Ok(ForecastWriter {
            codec,
            block: block as u64,
            offset: 0,
            boundary,
            keys: 0,
            bytes: 0,
            sink,
            scratch: Vec::new(),
        })
    }

    /// The next item of the run.
    #[inline]
    pub fn item(&mut self, item: &[u8]) -> Result<()> {
        let end = self.offset + item.len() as u64;
        while self.boundary < end {
            self.put(item)?;
            self.boundary += self.block;
        }
        self.offset = end;
        Ok(())
    }

    /// The next items of the run: `data`, items of `size` bytes each.
    pub fn items(&mut self, data: &[u8], size: usize) -> Result<()> {
        let end = self.offset + data.len() as u64;
        while self.boundary < end {
            let i = ((self.boundary - self.offset) / size as u64) as usize;
            self.put(&data[i * size..(i + 1) * size])?;
            self.boundary += self.block;
        }
        self.offset = end;
        Ok(())
    }

    fn put(&mut self, item: &[u8]) -> Result<()> {
        self.scratch.clear();
        if self.codec.forecast_len().is_none() {
            self.scratch.extend_from_slice(&[0; 4]);
            self.codec.forecast(item, &mut self.scratch);
            let n = (self.scratch.len() - 4) as u32;
            self.scratch[..4].copy_from_slice(&n.to_le_bytes());
        } else {
            self.codec.forecast(item, &mut self.scratch);
        }
        self.keys += 1;
        self.bytes += self.scratch.len() as u64;
        match &mut self.sink {
            Sink::None => {}
            Sink::Memory(v) => v.extend_from_slice(&self.scratch),
            Sink::File { w, .. } => w.write_all(&self.scratch)?,
        }
        Ok(())
    }

    /// Bytes of keys written to a file so far (0 in memory).
    pub fn file_bytes(&self) -> u64 {
        if matches!(self.sink, Sink::File { .. }) {
            self.bytes
        } else {
            0
        }
    }

    /// The finished forecasting data run.
    pub fn finish(self) -> Result<ForecastRun> {
        let data = match self.sink {
            Sink::None => Data::None,
            Sink::Memory(v) => Data::Memory(v),
            Sink::File { mut w, path, read_with } => {
                w.close()?;
                Data::File(path, read_with)
            }
        };
        Ok(ForecastRun { data, keys: self.keys, bytes: self.bytes })
    }
}

enum Source<'a> {
    Memory(&'a [u8]),
    File { r: Box<AnyInput<u8>>, path: &'a Path },
}

/// Reads a run's forecasting keys in order (sequentially through a buffer
/// of B_f bytes when they are on disk).
pub(crate) struct ForecastCursor<'a> {
    /// The length of every key (`None`: each has its own, stored before it).
    key_len: Option<usize>,
    src: Source<'a>,
    left: u64,
    /// Bytes read from a file.
    pub file_bytes: u64,
}

impl<'a> ForecastCursor<'a> {
    /// Opens `run`'s keys, through a stream (of the kind the run was made
    /// to be read with) with blocks of `buf` bytes if on disk.
    pub fn open(run: &'a ForecastRun, codec: &dyn Codec, buf: usize) -> Result<ForecastCursor<'a>> {
        let src = match &run.data {
            Data::None => Source::Memory(&[]),
            Data::Memory(v) => Source::Memory(v),
            Data::File(path, kind) => {
                let r = open_input::<u8>(path, &StreamConfig::new(*kind).block_size(buf.max(64)))?;
                Source::File { r: Box::new(r), path }
            }
        };
        let left = if matches!(run.data, Data::None) { 0 } else { run.keys };
        Ok(ForecastCursor { key_len: codec.forecast_len(), src, left, file_bytes: 0 })
    }

    /// The next key into `out`; false when none is left.
    pub fn next(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        self.left -= 1;
        let n = match self.key_len {
            Some(n) => n,
            None => {
                let mut len = [0u8; 4];
                self.read(&mut len)?;
                u32::from_le_bytes(len) as usize
            }
        };
        out.clear();
        out.resize(n, 0);
        self.read(out)?;
        Ok(true)
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<()> {
        match &mut self.src {
            Source::Memory(s) => {
                let (head, rest) = s.split_at(buf.len());
                buf.copy_from_slice(head);
                *s = rest;
            }
            Source::File { r, path } => {
                let mut at = 0;
                while at < buf.len() {
                    let n = r.read_into(&mut buf[at..])?;
                    if n == 0 {
                        return Err(Error::new(
                            ErrorKind::Io("read (a forecasting data run ended early)"),
                            *path,
                        ));
                    }
                    at += n;
                }
                self.file_bytes += buf.len() as u64;
            }
        }
        Ok(())
    }
}

/// The forecasting heap (4.1.1): an incremental merge of the R forecasting
/// data runs that yields one forecast at a time, in participation order.
///
/// It is a priority queue holding the leading key of each forecasting data
/// run (here the crate's tournament tree, [`LoserTree`]); [`ForecastHeap::pop`] outputs
/// the smallest and replaces it with the next key of the same run. The
/// paper's R counters, "the index of the first block of the r-th run whose
/// participation has not been predicted", are `next_block`. Keys order as
/// the merge orders its heads — prefix, key bytes, then run index — so the
/// order of the forecasts is exactly the order in which the merge's
/// placeholder heads win (see [`super::srm`]).
pub(crate) struct ForecastHeap<'a> {
    codec: &'a dyn Codec,
    cursors: Vec<ForecastCursor<'a>>,
    keys: Vec<Vec<u8>>,
    /// Each leading key's prefix and normalised key.
    hks: Vec<HeadKey>,
    rank: Vec<u128>,
    next_block: Vec<u64>,
    tree: LoserTree<usize>,
}

/// The rank of an exhausted source.
pub(crate) const DONE: u128 = u128::MAX;

impl<'a> ForecastHeap<'a> {
    /// Inserts the first key of each forecasting data run (4.4 step 2).
    pub fn new(codec: &'a dyn Codec, mut cursors: Vec<ForecastCursor<'a>>) -> Result<ForecastHeap<'a>> {
        let r = cursors.len();
        let mut keys = vec![Vec::new(); r];
        let mut hks: Vec<HeadKey> = (0..r).map(|_| HeadKey::default()).collect();
        let mut rank = vec![DONE; r];
        for (i, c) in cursors.iter_mut().enumerate() {
            if c.next(&mut keys[i])? {
                hks[i].forecast(codec, &keys[i]);
                rank[i] = (hks[i].prefix as u128) << 64 | i as u128;
            }
        }
        let tree = {
            let head = |s: usize| (&hks[s], &keys[s][..]);
            LoserTree::new(&(0..r).collect::<Vec<_>>(), 0, |a, b| beats(codec, &rank, head, a, b))
        };
        Ok(ForecastHeap { codec, cursors, keys, hks, rank, next_block: vec![1; r], tree })
    }

    /// Whether every forecast has been output.
    pub fn is_empty(&self) -> bool {
        self.rank.is_empty() || self.rank[self.tree.winner()] == DONE
    }

    /// The next forecast: (run, block) of the block that begins
    /// participating next among those not yet forecast.
    pub fn pop(&mut self) -> Result<Option<(usize, u64)>> {
        if self.is_empty() {
            return Ok(None);
        }
        let w = self.tree.winner();
        let j = self.next_block[w];
        self.next_block[w] += 1;
        self.rank[w] = if self.cursors[w].next(&mut self.keys[w])? {
            self.hks[w].forecast(self.codec, &self.keys[w]);
            (self.hks[w].prefix as u128) << 64 | w as u128
        } else {
            DONE
        };
        let (keys, hks) = (&self.keys, &self.hks);
        let head = |s: usize| (&hks[s], &keys[s][..]);
        self.tree.replace(w, w, |a, b| beats(self.codec, &self.rank, head, a, b));
        Ok(Some((w, j)))
    }

    /// Bytes read from forecasting files.
    pub fn file_bytes(&self) -> u64 {
        self.cursors.iter().map(|c| c.file_bytes).sum()
    }
}

/// Whether source `a` goes before `b`: rank (prefix, index), with equal
/// prefixes of records and lines settled by [`cmp_heads`] on each source's
/// head key and raw key, `head(source)`, then by index. The forecasting
/// heap and the merge ([`super::merger`]) share it, so forecasts come out
/// in the order in which the merge's heads win.
#[inline]
pub(crate) fn beats<'h>(
    c: &dyn Codec,
    rank: &[u128],
    head: impl Fn(usize) -> (&'h HeadKey, &'h [u8]),
    a: usize,
    b: usize,
) -> bool {
    let (ra, rb) = (rank[a], rank[b]);
    if c.ties() && ra >> 64 == rb >> 64 && ra != DONE && rb != DONE {
        let ((ha, ka), (hb, kb)) = (head(a), head(b));
        cmp_heads(c, ha, ka, hb, kb).then(a.cmp(&b)).is_lt()
    } else {
        ra < rb
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    #[test]
    fn keys_of_the_items_holding_each_block_start() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [
            Mode::Memory,
            Mode::Blocked { block: 64, input: StreamKind::Buffered, output: StreamKind::Buffered },
        ] {
            // Lines of 3..7 bytes, blocks of 8 bytes.
            let fmt = crate::codec::of(Format::Lines, false, b'\n', None);
            let lines: Vec<&[u8]> = vec![b"aa\n", b"bbbbbb\n", b"c\n", b"dddd\n", b"eeeeee\n"];
            let mut w = ForecastWriter::new(mode, fmt.clone(), 8, &dir.path().join("fc")).unwrap();
            for l in &lines {
                w.item(l).unwrap();
            }
            // Bytes: aa\n 0..3, bbbbbb\n 3..10, c\n 10..12, dddd\n 12..17, eeeeee\n 17..24.
            // Blocks start at 8 (in "bbbbbb"), 16 (in "dddd").
            let run = w.finish().unwrap();
            assert_eq!(run.keys(), 2);
            let mut c = ForecastCursor::open(&run, &*fmt, 16).unwrap();
            let mut k = Vec::new();
            assert!(c.next(&mut k).unwrap());
            assert_eq!(k, b"bbbbbb");
            assert!(c.next(&mut k).unwrap());
            assert_eq!(k, b"dddd");
            assert!(!c.next(&mut k).unwrap());
            run.remove().unwrap();
        }
        // Fixed-size items given in one piece: u32, blocks of 8 bytes.
        let fmt = crate::codec::of(Format::U32, false, b'\n', None);
        let data: Vec<u8> = (10u32..15).flat_map(|x| x.to_ne_bytes()).collect();
        let mut w = ForecastWriter::new(Mode::Memory, fmt.clone(), 8, Path::new("")).unwrap();
        w.items(&data[..12], 4).unwrap();
        w.items(&data[12..], 4).unwrap();
        let run = w.finish().unwrap();
        let mut c = ForecastCursor::open(&run, &*fmt, 0).unwrap();
        let mut k = Vec::new();
        let mut got = vec![];
        while c.next(&mut k).unwrap() {
            got.push(fmt.key_prefix(&k));
        }
        assert_eq!(got, [12, 14]);
    }

    #[test]
    fn the_heap_yields_forecasts_in_order() {
        let fmt = crate::codec::of(Format::U64, true, b'\n', None);
        let runs: Vec<ForecastRun> = [vec![9u64, 5, 1], vec![8, 8, 0], vec![]]
            .iter()
            .map(|keys| {
                let mut w = ForecastWriter::new(Mode::Memory, fmt.clone(), 8, Path::new("")).unwrap();
                w.item(&[0; 8]).unwrap();
                for k in keys {
                    w.item(&k.to_ne_bytes()).unwrap();
                }
                w.finish().unwrap()
            })
            .collect();
        let cursors = runs.iter().map(|r| ForecastCursor::open(r, &*fmt, 0).unwrap()).collect();
        let mut h = ForecastHeap::new(&*fmt, cursors).unwrap();
        let mut got = vec![];
        while let Some(f) = h.pop().unwrap() {
            got.push(f);
        }
        // Descending: 9, 8 (run 1), 8 (run 1), 5, 1, 0.
        assert_eq!(got, [(0, 1), (1, 1), (1, 2), (0, 2), (0, 3), (1, 3)]);
    }
}
