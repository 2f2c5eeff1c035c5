//! Byte-level access to emsort-io's element streams, and aligned buffers.
//!
//! The I/O layer's streams carry fixed-size elements whose size is a power of
//! two. The sort moves bytes: numbers, records of any size, text. A
//! [`ByteInput`] / [`ByteOutput`] wraps a stream of the format's *unit*
//! ([`SortPlan::unit`](crate::SortPlan::unit): 8, 4 or 1 bytes) and moves
//! whole units between it and a byte slice, so a `syscall` stream still makes
//! one system call per element of the format's natural size. [`AlignedBuf`]
//! (emsort-io's) from `AlignedBuf::new` is a byte buffer aligned to 8, so any
//! of its unit-aligned parts can be viewed as units.
//!
//! A temporary run written through a compress program is a
//! [`CompressedWriter`] (a [`BlockSink`]) and read back as
//! [`ByteInput::Decompressed`] (module `compress`).

use std::path::Path;

use emsort_io::{
    create_output_in, open_input, AnyInput, AnyOutput, Dest, InputStream, OutputStream, Result, StreamConfig,
};

use crate::compress::{CompressedWriter, DecompressedReader};

/// The sort's byte buffers: emsort-io's, with `AlignedBuf::new(bytes)`
/// aligned to 8.
pub(crate) use emsort_io::AlignedBuf;

/// An input stream read as bytes, a whole unit at a time.
pub(crate) enum ByteInput {
    U8(AnyInput<u8>),
    U32(AnyInput<u32>),
    U64(AnyInput<u64>),
    /// A compressed run read through `PROG -d` (module `compress`): every
    /// read fills the buffer but the last, so units stay whole.
    Decompressed(Box<DecompressedReader>),
}

/// An output stream written as bytes, a whole unit at a time.
pub(crate) enum ByteOutput {
    U8(AnyOutput<u8>),
    U32(AnyOutput<u32>),
    U64(AnyOutput<u64>),
}

impl ByteInput {
    /// Opens `path` as a stream of `unit`-byte elements.
    pub fn open(path: &Path, unit: usize, cfg: &StreamConfig) -> Result<ByteInput> {
        Ok(match unit {
            8 => ByteInput::U64(open_input(path, cfg)?),
            4 => ByteInput::U32(open_input(path, cfg)?),
            _ => ByteInput::U8(open_input(path, cfg)?),
        })
    }

    /// Reads into `buf` (whose length is a multiple of the unit and whose
    /// start is unit-aligned); returns the bytes read, 0 only at the end.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        Ok(match self {
            ByteInput::U8(s) => s.read_into(buf)?,
            ByteInput::U32(s) => s.read_into(bytemuck::cast_slice_mut(buf))? * 4,
            ByteInput::U64(s) => s.read_into(bytemuck::cast_slice_mut(buf))? * 8,
            ByteInput::Decompressed(r) => r.read(buf)?,
        })
    }

    /// Closes the stream.
    pub fn close(&mut self) -> Result<()> {
        match self {
            ByteInput::U8(s) => s.close(),
            ByteInput::U32(s) => s.close(),
            ByteInput::U64(s) => s.close(),
            ByteInput::Decompressed(r) => r.close(),
        }
    }
}

/// Where blocks of output bytes go: an element stream ([`ByteOutput`]),
/// standard output, a device or FIFO, or a channel to a reader of the
/// sorted data. Writes are whole stream units except perhaps the last.
pub(crate) trait BlockSink: Send {
    /// Writes all of `bytes`.
    fn write(&mut self, bytes: &[u8]) -> Result<()>;
    /// Flushes and closes; errors (a full disk) show here at the latest.
    fn close(&mut self) -> Result<()>;
}

impl BlockSink for CompressedWriter {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        CompressedWriter::write(self, bytes)
    }
    fn close(&mut self) -> Result<()> {
        CompressedWriter::close(self)
    }
}

impl ByteOutput {
    /// Creates `path` as a stream of `unit`-byte elements.
    pub fn create(path: &Path, unit: usize, cfg: &StreamConfig) -> Result<ByteOutput> {
        ByteOutput::create_in(Dest::Path(path), unit, cfg)
    }

    /// [`ByteOutput::create`] into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, unit: usize, cfg: &StreamConfig) -> Result<ByteOutput> {
        Ok(match unit {
            8 => ByteOutput::U64(create_output_in(dest, cfg)?),
            4 => ByteOutput::U32(create_output_in(dest, cfg)?),
            _ => ByteOutput::U8(create_output_in(dest, cfg)?),
        })
    }
}

/// Writes `bytes` (a whole number of units) to the element stream.
impl BlockSink for ByteOutput {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            ByteOutput::U8(s) => s.write_all(bytes),
            ByteOutput::U32(s) => s.write_all(bytemuck::cast_slice(bytes)),
            ByteOutput::U64(s) => s.write_all(bytemuck::cast_slice(bytes)),
        }
    }

    fn close(&mut self) -> Result<()> {
        match self {
            ByteOutput::U8(s) => s.close(),
            ByteOutput::U32(s) => s.close(),
            ByteOutput::U64(s) => s.close(),
        }
    }
}
