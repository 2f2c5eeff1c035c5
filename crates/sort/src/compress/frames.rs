//! Built-in run compression (`--compress=lz4|zstd[:LEVEL]`): a temporary run
//! stored as a sequence of independently compressed *frames*, so the merge
//! still streams each run with bounded memory, its read-ahead reading the
//! stored bytes and the reader thread decoding them.
//!
//! ```text
//!  run   := frame* end
//!  frame := raw_len:u32 stored_len:u32 crc:u32 0:u32  stored bytes, zero-padded to 8
//!  end   := 0:u32 8:u32 crc:u32 0:u32  total raw bytes:u64
//! ```
//!
//! All integers little-endian. A frame holds at most [`frame_bytes`] raw
//! bytes (from the plan's block size, at most [`MAX_FRAME`]), compressed by
//! LZ4 (`lz4_flex`'s block format) or Zstandard (`zstd`'s bulk API, one
//! frame each); a frame that does not shrink is stored as it is (the top
//! bit of `stored_len`), so random data costs 16 bytes per frame, never a
//! second copy's CPU at read. `crc` is the CRC-32 (`crc32fast`) of the
//! header's first 8 bytes and the stored bytes. Every length is a multiple
//! of 8, so the file is a stream of 8-byte units for any stream kind
//! (`O_DIRECT` and io_uring included). A run read back checks each frame's
//! CRC before decoding it, each frame's decoded length, the end mark and the
//! total: a truncated or damaged run is an error naming the file
//! ([`ErrorKind::Corrupt`]), never wrong output.
//!
//! Memory: a writer holds one raw frame and one stored frame; a reader one
//! stored frame, and one raw frame only when the caller's buffer has less
//! room than a frame ([`frame_memory`], counted in the plan's per-stream
//! memory).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use emsort_io::{AlignedBuf, Error, ErrorKind, Result, StreamConfig};

use super::Traffic;
use crate::byte_stream::{BlockSink, ByteInput, ByteOutput, RunReader};

/// Bytes of a frame's header.
const HEADER: usize = 16;

/// The top bit of `stored_len`: the frame's bytes are stored uncompressed.
const STORED: u32 = 1 << 31;

/// The most raw bytes in one frame.
pub const MAX_FRAME: usize = 256 << 10;

/// The smallest frame (tiny block sizes).
const MIN_FRAME: usize = 512;

/// A built-in codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// LZ4 (`lz4_flex`'s block format).
    Lz4,
    /// Zstandard at a level (`zstd`'s bulk API).
    Zstd(i32),
}

/// Raw bytes per frame with stream blocks of `block` bytes: the block,
/// within [512 bytes, [`MAX_FRAME`]], a multiple of 8.
pub fn frame_bytes(block: usize) -> usize {
    block.clamp(MIN_FRAME, MAX_FRAME) / 8 * 8
}

/// Memory one compressed stream holds beside its stream buffers, with
/// frames of [`frame_bytes`]`(block)`: a raw frame and a stored one.
pub fn frame_memory(block: usize) -> u64 {
    let f = frame_bytes(block);
    (f + stored_room(f)) as u64
}

/// Room for one stored frame of `raw` bytes: its header, the codecs'
/// worst case (LZ4's and Zstandard's bounds), the padding and an end mark.
fn stored_room(raw: usize) -> usize {
    let bound = lz4_flex::block::get_maximum_output_size(raw).max(zstd::zstd_safe::compress_bound(raw));
    HEADER + bound.div_ceil(8) * 8 + 8
}

/// The compressing half of a codec, with its reusable state.
enum Packer {
    Lz4(Box<lz4_flex::block::CompressTable>),
    Zstd(Box<zstd::bulk::Compressor<'static>>),
}

impl Packer {
    fn new(codec: Codec, path: &Path) -> Result<Packer> {
        Ok(match codec {
            Codec::Lz4 => Packer::Lz4(Box::new(lz4_flex::block::CompressTable::large())),
            Codec::Zstd(level) => Packer::Zstd(Box::new(
                zstd::bulk::Compressor::new(level).map_err(|e| Error::from_io("start zstd on", path, e))?,
            )),
        })
    }

    /// Compresses `raw` into `out`: its length, or `None` when it would not
    /// fit (the frame is then stored as it is).
    fn pack(&mut self, raw: &[u8], out: &mut [u8]) -> Option<usize> {
        match self {
            Packer::Lz4(table) => lz4_flex::block::compress_into_with_table(raw, out, table).ok(),
            Packer::Zstd(z) => z.compress_to_buffer(raw, out).ok(),
        }
    }
}

/// The decompressing half of a codec.
enum Unpacker {
    Lz4,
    Zstd(Box<zstd::bulk::Decompressor<'static>>),
}

impl Unpacker {
    fn new(codec: Codec, path: &Path) -> Result<Unpacker> {
        Ok(match codec {
            Codec::Lz4 => Unpacker::Lz4,
            Codec::Zstd(_) => Unpacker::Zstd(Box::new(
                zstd::bulk::Decompressor::new().map_err(|e| Error::from_io("start zstd on", path, e))?,
            )),
        })
    }

    /// Decodes `stored` into `out`: the bytes decoded, or `None` when the
    /// bytes are not a frame of the codec.
    fn unpack(&mut self, stored: &[u8], out: &mut [u8]) -> Option<usize> {
        match self {
            Unpacker::Lz4 => lz4_flex::block::decompress_into(stored, out).ok(),
            Unpacker::Zstd(z) => z.decompress_to_buffer(stored, out).ok(),
        }
    }
}

/// `raw` compressed frame by frame (`frame` bytes each) with `codec`, as a
/// run would store it: each frame's raw length and stored bytes (module
/// `auto`'s trials).
pub(crate) fn pack_all(codec: Codec, frame: usize, raw: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let Ok(mut packer) = Packer::new(codec, Path::new("")) else { return Vec::new() };
    let mut out = vec![0u8; stored_room(frame)];
    raw.chunks(frame)
        .map(|piece| match packer.pack(piece, &mut out) {
            Some(n) if n < piece.len() => (piece.len(), out[..n].to_vec()),
            _ => (piece.len(), piece.to_vec()),
        })
        .collect()
}

/// Decodes what [`pack_all`] made; returns the raw bytes decoded.
pub(crate) fn unpack_all(codec: Codec, frame: usize, packed: &[(usize, Vec<u8>)]) -> usize {
    let Ok(mut unpacker) = Unpacker::new(codec, Path::new("")) else { return 0 };
    let mut out = vec![0u8; frame];
    packed
        .iter()
        .map(|(raw, stored)| match raw == &stored.len() {
            true => *raw,
            false => unpacker.unpack(stored, &mut out[..*raw]).unwrap_or(0),
        })
        .sum()
}

/// The CRC of a frame: of its header's lengths and its stored bytes.
fn crc(lengths: &[u8], stored: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(lengths);
    h.update(stored);
    h.finalize()
}

fn put(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

/// A run being written as compressed frames (a [`BlockSink`]).
pub(crate) struct FrameWriter {
    out: ByteOutput,
    packer: Packer,
    /// Raw bytes per frame.
    frame: usize,
    /// Raw bytes waiting for a whole frame (fewer than `frame`).
    pending: Vec<u8>,
    /// A frame as stored: header, bytes, padding.
    stored: AlignedBuf,
    /// Raw bytes written so far.
    total: u64,
    traffic: Arc<Traffic>,
}

impl FrameWriter {
    /// Creates the run file `path` (a new file) through a stream of
    /// `cfg`'s kind, its frames holding `frame` raw bytes ([`frame_bytes`]).
    pub fn create(
        codec: Codec,
        frame: usize,
        path: &Path,
        cfg: &StreamConfig,
        traffic: Arc<Traffic>,
    ) -> Result<FrameWriter> {
        let packer = Packer::new(codec, path)?;
        let out = ByteOutput::create(path, 8, cfg)?;
        Ok(FrameWriter {
            out,
            packer,
            frame,
            pending: Vec::with_capacity(frame),
            stored: AlignedBuf::new(stored_room(frame)),
            total: 0,
            traffic,
        })
    }

    /// Compresses `raw` (at most a frame) and writes it as one frame.
    fn emit(&mut self, raw: &[u8]) -> Result<()> {
        let buf = self.stored.bytes_mut();
        let room = buf.len() - HEADER - 8;
        let (len, flag) = match self.packer.pack(raw, &mut buf[HEADER..HEADER + room]) {
            Some(n) if n < raw.len() => (n, 0),
            _ => {
                buf[HEADER..HEADER + raw.len()].copy_from_slice(raw);
                (raw.len(), STORED)
            }
        };
        let padded = len.div_ceil(8) * 8;
        buf[HEADER + len..HEADER + padded].fill(0);
        put(buf, 0, raw.len() as u32);
        put(buf, 4, len as u32 | flag);
        let sum = crc(&buf[..8], &buf[HEADER..HEADER + len]);
        put(buf, 8, sum);
        put(buf, 12, 0);
        self.out.write(&buf[..HEADER + padded])?;
        self.total += raw.len() as u64;
        self.traffic.raw_written.fetch_add(raw.len() as u64, Ordering::Relaxed);
        self.traffic.stored_written.fetch_add((HEADER + padded) as u64, Ordering::Relaxed);
        Ok(())
    }
}

impl BlockSink for FrameWriter {
    fn write(&mut self, mut bytes: &[u8]) -> Result<()> {
        if !self.pending.is_empty() {
            let take = (self.frame - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < self.frame {
                return Ok(());
            }
            let full = std::mem::take(&mut self.pending);
            let r = self.emit(&full);
            self.pending = full;
            self.pending.clear();
            r?;
        }
        while bytes.len() >= self.frame {
            let (head, rest) = bytes.split_at(self.frame);
            self.emit(head)?;
            bytes = rest;
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let last = std::mem::take(&mut self.pending);
            self.emit(&last)?;
        }
        let buf = self.stored.bytes_mut();
        put(buf, 0, 0);
        put(buf, 4, 8);
        buf[HEADER..HEADER + 8].copy_from_slice(&self.total.to_le_bytes());
        let sum = crc(&buf[..8], &buf[HEADER..HEADER + 8]);
        put(buf, 8, sum);
        put(buf, 12, 0);
        self.out.write(&buf[..HEADER + 8])?;
        self.traffic.stored_written.fetch_add((HEADER + 8) as u64, Ordering::Relaxed);
        self.out.close()
    }
}

/// A run written by a [`FrameWriter`], read back: every read fills the
/// buffer but the last (so units stay whole).
pub(crate) struct FrameReader {
    input: ByteInput,
    path: PathBuf,
    unpacker: Unpacker,
    /// The most raw bytes a frame may hold.
    frame: usize,
    /// One stored frame (header and bytes).
    stored: AlignedBuf,
    /// A decoded frame the caller's buffer had no room for, and how much
    /// of it was handed out.
    carry: Vec<u8>,
    carried: usize,
    /// Raw bytes decoded so far.
    total: u64,
    /// Bytes of the file up to the end of the last frame decoded.
    used: u64,
    /// The end mark was read and checked.
    ended: bool,
    traffic: Arc<Traffic>,
}

impl FrameReader {
    /// Opens the run `path` written with `codec` and frames of at most
    /// `frame` raw bytes, through a stream of `cfg`'s kind.
    pub fn open(
        codec: Codec,
        frame: usize,
        path: &Path,
        cfg: &StreamConfig,
        traffic: Arc<Traffic>,
    ) -> Result<FrameReader> {
        Ok(FrameReader {
            input: ByteInput::open(path, 8, cfg)?,
            path: path.into(),
            unpacker: Unpacker::new(codec, path)?,
            frame,
            stored: AlignedBuf::new(stored_room(frame)),
            carry: Vec::new(),
            carried: 0,
            total: 0,
            used: 0,
            ended: false,
            traffic,
        })
    }

    fn corrupt(&self, what: String) -> Error {
        Error::new(ErrorKind::Corrupt(format!("the compressed temporary run is damaged: {what}")), &self.path)
    }

    /// Reads exactly `len` bytes (a multiple of 8) at `at` of the stored
    /// frame: how many came before the end of the file.
    fn fill(&mut self, at: usize, len: usize) -> Result<usize> {
        let mut n = 0;
        while n < len {
            let got = self.input.read(&mut self.stored.bytes_mut()[at + n..at + len])?;
            if got == 0 {
                break;
            }
            n += got;
        }
        Ok(n)
    }

    /// Reads the next frame's header and stored bytes, checked: its raw
    /// length, whether it is stored as it is, and its stored length; `None`
    /// at the end mark (checked, and the file's end after it).
    fn next_frame(&mut self) -> Result<Option<(usize, bool, usize)>> {
        let got = self.fill(0, HEADER)?;
        if got < HEADER {
            return Err(
                self.corrupt(format!("it ends after {} bytes, without its end mark", self.used + got as u64))
            );
        }
        let buf = self.stored.bytes();
        let (raw, word, sum) = (get(buf, 0) as usize, get(buf, 4), get(buf, 8));
        let (plain, len) = (word & STORED != 0, (word & !STORED) as usize);
        let end = raw == 0;
        let fits = if end {
            len == 8 && !plain
        } else if plain {
            len == raw && raw <= self.frame
        } else {
            raw <= self.frame && len + HEADER + 8 <= self.stored.capacity() && len > 0
        };
        if !fits || get(buf, 12) != 0 {
            return Err(self.corrupt(format!("a bad frame header at byte {}", self.used)));
        }
        let padded = len.div_ceil(8) * 8;
        if self.fill(HEADER, padded)? < padded {
            return Err(self.corrupt(format!("it ends inside the frame at byte {}", self.used)));
        }
        let buf = self.stored.bytes();
        if crc(&buf[..8], &buf[HEADER..HEADER + len]) != sum
            || buf[HEADER + len..HEADER + padded].iter().any(|&b| b != 0)
        {
            return Err(self.corrupt(format!("the frame at byte {} fails its checksum", self.used)));
        }
        self.used += (HEADER + padded) as u64;
        self.traffic.stored_read.fetch_add((HEADER + padded) as u64, Ordering::Relaxed);
        if !end {
            return Ok(Some((raw, plain, len)));
        }
        let total = u64::from_le_bytes(buf[HEADER..HEADER + 8].try_into().expect("8 bytes"));
        if total != self.total {
            return Err(self.corrupt(format!("its end mark counts {total} bytes, its frames {}", self.total)));
        }
        if self.fill(0, 8)? != 0 {
            return Err(self.corrupt(format!("bytes follow its end mark at byte {}", self.used)));
        }
        Ok(None)
    }

    /// Decodes the frame in `stored` (`len` stored bytes, `raw` raw) into `out`.
    fn decode(&mut self, raw: usize, plain: bool, len: usize, out: &mut [u8]) -> Result<()> {
        let stored = &self.stored.bytes()[HEADER..HEADER + len];
        let ok = if plain {
            out[..raw].copy_from_slice(stored);
            true
        } else {
            self.unpacker.unpack(stored, &mut out[..raw]) == Some(raw)
        };
        if !ok {
            let at = self.used - (HEADER + len.div_ceil(8) * 8) as u64;
            return Err(self.corrupt(format!("the frame at byte {at} does not decode to its {raw} bytes")));
        }
        self.total += raw as u64;
        self.traffic.raw_read.fetch_add(raw as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Fills `buf` (less only at the end of the run); returns the bytes
    /// read, 0 at the end.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            if self.carried < self.carry.len() {
                let k = (self.carry.len() - self.carried).min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&self.carry[self.carried..self.carried + k]);
                (self.carried, n) = (self.carried + k, n + k);
                continue;
            }
            if self.ended {
                break;
            }
            let Some((raw, plain, len)) = self.next_frame()? else {
                self.ended = true;
                break;
            };
            if buf.len() - n >= raw {
                self.decode(raw, plain, len, &mut buf[n..])?;
                n += raw;
            } else {
                let mut carry = std::mem::take(&mut self.carry);
                carry.resize(raw, 0);
                let r = self.decode(raw, plain, len, &mut carry);
                (self.carry, self.carried) = (carry, 0);
                r?;
            }
        }
        Ok(n)
    }

    /// Closes the stream.
    pub fn close(&mut self) -> Result<()> {
        self.input.close()
    }
}

/// `n` lines of sorted-looking CSV text (tests).
impl RunReader for FrameReader {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        FrameReader::read(self, buf)
    }
    fn close(&mut self) -> Result<()> {
        FrameReader::close(self)
    }
    fn file_bytes_used(&self) -> Option<u64> {
        Some(self.used)
    }
}

#[cfg(test)]
pub(crate) fn tests_text(n: usize) -> Vec<u8> {
    (0..n as u64)
        .flat_map(|i| format!("{:08},{},{}\n", i * 7919 % 100_003, i % 17, i / 3).into_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use emsort_io::StreamKind;

    fn cfg(kind: StreamKind, block: usize) -> StreamConfig {
        StreamConfig::new(kind).block_size(block)
    }

    fn text(n: usize) -> Vec<u8> {
        super::tests_text(n)
    }

    fn write(codec: Codec, path: &Path, data: &[u8], piece: usize, block: usize) -> Arc<Traffic> {
        let t = Arc::new(Traffic::default());
        let frame = frame_bytes(block);
        let mut w =
            FrameWriter::create(codec, frame, path, &cfg(StreamKind::Buffered, 1 << 16), t.clone()).unwrap();
        for p in data.chunks(piece.max(1)) {
            w.write(p).unwrap();
        }
        w.close().unwrap();
        t
    }

    fn read_all(codec: Codec, path: &Path, block: usize, buf: usize, kind: StreamKind) -> Result<Vec<u8>> {
        let t = Arc::new(Traffic::default());
        let mut r = FrameReader::open(codec, frame_bytes(block), path, &cfg(kind, 64 << 10), t)?;
        let (mut back, mut b) = (Vec::new(), vec![0u8; buf]);
        loop {
            let n = r.read(&mut b)?;
            if n == 0 {
                break;
            }
            assert!(n == b.len() || r.ended, "full buffers until the end");
            back.extend_from_slice(&b[..n]);
        }
        r.close()?;
        Ok(back)
    }

    /// Every codec, piece size, frame size and reader buffer (smaller and
    /// larger than a frame) gives the bytes back; text shrinks; random
    /// bytes are stored as they are, 16 bytes a frame more.
    #[test]
    fn runs_come_back_byte_for_byte() {
        let d = tempfile::tempdir().unwrap();
        let data = text(60_000);
        let mut random = vec![0u8; 300_000];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for b in random.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        for codec in [Codec::Lz4, Codec::Zstd(1), Codec::Zstd(9)] {
            for (piece, block, buf) in
                [(1000, 4096, 4096), (70_000, 64 << 10, 1 << 20), (1 << 20, 1 << 20, 24)]
            {
                let p = d.path().join(format!("{codec:?}-{piece}-{block}"));
                let t = write(codec, &p, &data, piece, block);
                let stored = std::fs::metadata(&p).unwrap().len();
                assert_eq!(t.stored_written.load(Ordering::Relaxed), stored);
                assert!(stored * 5 < data.len() as u64 * 4, "{codec:?}: {stored} of {}", data.len());
                for kind in [StreamKind::Buffered, StreamKind::Syscall] {
                    assert_eq!(
                        read_all(codec, &p, block, buf, kind).unwrap(),
                        data,
                        "{codec:?} {piece} {block}"
                    );
                }
            }
            let p = d.path().join(format!("{codec:?}-random"));
            write(codec, &p, &random, 50_000, 64 << 10);
            let frames = random.len().div_ceil(64 << 10) as u64;
            assert_eq!(std::fs::metadata(&p).unwrap().len(), random.len() as u64 + 16 * frames + 24);
            assert_eq!(read_all(codec, &p, 64 << 10, 8192, StreamKind::Buffered).unwrap(), random);
            let p = d.path().join(format!("{codec:?}-empty"));
            write(codec, &p, &[], 1, 4096);
            assert!(read_all(codec, &p, 4096, 64, StreamKind::Buffered).unwrap().is_empty());
        }
    }

    /// A run cut anywhere, or with any byte changed, is an error naming
    /// the file — never other bytes.
    #[test]
    fn a_cut_or_damaged_run_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let data = text(3000);
        for codec in [Codec::Lz4, Codec::Zstd(3)] {
            let p = d.path().join("run");
            write(codec, &p, &data, 5000, 4096);
            let whole = std::fs::read(&p).unwrap();
            let mut cases: Vec<Vec<u8>> = (0..whole.len()).step_by(8).map(|n| whole[..n].to_vec()).collect();
            for at in (0..whole.len()).step_by(whole.len() / 97 + 1).chain([whole.len() - 1, 3, 13]) {
                let mut bad = whole.clone();
                bad[at] ^= 0x20;
                cases.push(bad);
            }
            let mut longer = whole.clone();
            longer.extend_from_slice(&[0; 8]);
            cases.push(longer);
            for bad in cases {
                std::fs::write(&p, &bad).unwrap();
                let e = read_all(codec, &p, 4096, 1000, StreamKind::Buffered).unwrap_err();
                assert!(matches!(e.kind(), ErrorKind::Corrupt(_)), "{e}");
                assert!(
                    e.to_string().starts_with(&format!("{}: the compressed temporary run", p.display())),
                    "{e}"
                );
            }
            // Cut inside a unit: still an error about the file.
            for n in [5, whole.len() - 3] {
                std::fs::write(&p, &whole[..n]).unwrap();
                let e = read_all(codec, &p, 4096, 1000, StreamKind::Buffered).unwrap_err();
                assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
            }
        }
    }
}
