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
//! A compressed temporary run (module `compress`) is written through its
//! codec's [`BlockSink`] and read back as [`ByteInput::Decoded`], through
//! the codec's [`RunReader`].

use std::path::Path;

use emsort_io::{
    create_output_in, open_input, AnyInput, AnyOutput, Dest, InputStream, OutputStream, Result, StreamConfig,
};

/// The sort's byte buffers: emsort-io's, with `AlignedBuf::new(bytes)`
/// aligned to 8.
pub(crate) use emsort_io::AlignedBuf;

/// An input stream read as bytes, a whole unit at a time.
pub(crate) enum ByteInput {
    U8(AnyInput<u8>),
    U32(AnyInput<u32>),
    U64(AnyInput<u64>),
    /// A compressed run read through its codec (module `compress`).
    Decoded(Box<dyn RunReader>),
}

/// A compressed run read back (module `compress`): every read fills the
/// buffer but the last, so units stay whole.
pub(crate) trait RunReader: Send {
    /// Fills `buf` (less only at the end); returns the bytes read, 0 at the end.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
    /// Stops reading.
    fn close(&mut self) -> Result<()>;
    /// Bytes of the file the reads so far are done with, where the file
    /// is read in-process (see [`ByteInput::file_bytes_used`]).
    fn file_bytes_used(&self) -> Option<u64> {
        None
    }
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
            ByteInput::Decoded(r) => r.read(buf)?,
        })
    }

    /// Closes the stream.
    pub fn close(&mut self) -> Result<()> {
        match self {
            ByteInput::U8(s) => s.close(),
            ByteInput::U32(s) => s.close(),
            ByteInput::U64(s) => s.close(),
            ByteInput::Decoded(r) => r.close(),
        }
    }

    /// Bytes of the file the reads so far are done with, where that is not
    /// the bytes they returned (a compressed run's frames read and
    /// decoded); `None` for a file read as it is.
    pub fn file_bytes_used(&self) -> Option<u64> {
        match self {
            ByteInput::Decoded(r) => r.file_bytes_used(),
            _ => None,
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
    /// Writes the first `len` bytes of `buf` and gives `buf` back for
    /// reuse, or keeps it (a reader's channel lends it on, and it comes
    /// back through `back` once read); [`BlockSink::write`] unless the
    /// sink [keeps blocks](BlockSink::keeps_blocks).
    fn write_block(
        &mut self,
        buf: AlignedBuf,
        len: usize,
        back: &std::sync::mpsc::Sender<AlignedBuf>,
    ) -> Result<Option<AlignedBuf>> {
        let _ = back;
        self.write(&buf.bytes()[..len])?;
        Ok(Some(buf))
    }
    /// Whether [`BlockSink::write_block`] may keep the blocks it is given
    /// (their writer then takes new ones when none has come back).
    fn keeps_blocks(&self) -> bool {
        false
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
