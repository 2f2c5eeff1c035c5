//! Compressed temporary runs: what the user asks for ([`Compression`],
//! `--compress` and GNU's `--compress-program`) and how one run is stored
//! ([`RunCodec`]).
//!
//! - `lz4`, `zstd[:LEVEL]` (module `frames`): each run a sequence of
//!   checksummed frames compressed in-process, written and read through
//!   the plan's streams (`O_DIRECT` and io_uring included), decoded by the
//!   merge's read-ahead thread; the free-behind still gives the space back
//!   as the merge reads (the frames' file bytes it is done with).
//! - a program (module `program`, GNU's `--compress-program=PROG`): each
//!   run through a child `PROG`, read back through `PROG -d`.
//! - `auto` (module `auto`): decided by the plain store at the sort's first
//!   run, from a sample of that sorted run compressed by each codec, the
//!   device's measured bandwidths and the CPU the sort has used so far.
//!
//! Only the plain method's temporary runs are compressed: never the input,
//! the output, nor the sorted files of `-m`. DSM and SRM stripe fixed
//! blocks over their disks: they refuse a codec, and `auto` is `none` there.

mod auto;
mod frames;
mod program;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use emsort_io::{Result, StreamConfig};

use crate::byte_stream::{BlockSink, ByteInput, ByteOutput};

pub(crate) use auto::{choose, Choice, SAMPLE};
pub(crate) use frames::{frame_bytes, frame_memory, FrameReader};
pub(crate) use program::{CompressedWriter, DecompressedReader};

/// How temporary runs are stored: the plan's
/// [`compression`](crate::SortPlanBuilder::compression).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Compression {
    /// Decided for each sort at its first run: on where the sample's ratio
    /// and speed make the sort faster on the measured device, else off
    /// (the command line's and Python's default).
    Auto,
    /// Runs as they are (the library's default).
    #[default]
    None,
    /// LZ4 frames.
    Lz4,
    /// Zstandard frames at a level (1–22, or negative: faster).
    Zstd(i32),
    /// Through a program and back through `PROG -d` (GNU sort's
    /// `--compress-program`).
    Program(PathBuf),
}

impl Compression {
    /// The default Zstandard level (`zstd` alone).
    pub const ZSTD_LEVEL: i32 = 1;

    /// Parses `auto`, `none`, `lz4`, `zstd` or `zstd:LEVEL`; `None` for
    /// anything else (the command line takes that as a program's name, as
    /// GNU sort's `--compress=PROG` abbreviates `--compress-program`).
    pub fn parse(s: &str) -> Option<std::result::Result<Compression, String>> {
        Some(Ok(match s {
            "auto" => Compression::Auto,
            "none" => Compression::None,
            "lz4" => Compression::Lz4,
            "zstd" => Compression::Zstd(Self::ZSTD_LEVEL),
            _ => {
                let level = s.strip_prefix("zstd:")?;
                let range = zstd::compression_level_range();
                return Some(match level.parse::<i32>() {
                    Ok(l) if l != 0 && range.contains(&l) => Ok(Compression::Zstd(l)),
                    _ => Err(format!(
                        "invalid zstd level '{level}': a level from {} to {} other than 0",
                        range.start(),
                        range.end()
                    )),
                });
            }
        }))
    }

    /// Whether runs may be compressed in-process (a codec or `auto`):
    /// the plan then counts the frames' buffers in each stream's memory.
    pub(crate) fn may_use_frames(&self) -> bool {
        matches!(self, Compression::Auto | Compression::Lz4 | Compression::Zstd(_))
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::Auto => write!(f, "auto"),
            Compression::None => write!(f, "none"),
            Compression::Lz4 => write!(f, "lz4"),
            Compression::Zstd(l) => write!(f, "zstd:{l}"),
            Compression::Program(p) => write!(f, "program {}", p.display()),
        }
    }
}

/// Bytes through one sort's compressed runs: raw (the items) and stored
/// (what the temporary files hold), each way.
#[derive(Debug, Default)]
pub(crate) struct Traffic {
    pub raw_written: AtomicU64,
    pub stored_written: AtomicU64,
    pub raw_read: AtomicU64,
    pub stored_read: AtomicU64,
}

/// How one run is stored.
#[derive(Debug, Clone)]
pub(crate) enum RunCodec {
    /// As it is.
    Plain,
    /// Through a program.
    Program(PathBuf),
    /// In frames of at most `frame` raw bytes, counted in `traffic`.
    Frames { codec: frames::Codec, frame: usize, traffic: Arc<Traffic> },
}

impl RunCodec {
    /// The codec of runs stored as `c` asks (not `auto`), counting in
    /// `traffic`, with frames of `frame` raw bytes.
    pub fn of(c: &Compression, frame: usize, traffic: &Arc<Traffic>) -> RunCodec {
        let frames = |codec| RunCodec::Frames { codec, frame, traffic: traffic.clone() };
        match c {
            Compression::Auto | Compression::None => RunCodec::Plain,
            Compression::Lz4 => frames(frames::Codec::Lz4),
            Compression::Zstd(l) => frames(frames::Codec::Zstd(*l)),
            Compression::Program(p) => RunCodec::Program(p.clone()),
        }
    }

    /// Creates the run file `path` (a new file), written through a stream
    /// of `unit`-byte elements of `cfg` when not compressed.
    pub fn create(&self, path: &Path, unit: usize, cfg: &StreamConfig) -> Result<Box<dyn BlockSink>> {
        Ok(match self {
            RunCodec::Plain => Box::new(ByteOutput::create(path, unit, cfg)?),
            RunCodec::Program(p) => Box::new(CompressedWriter::create(p, path)?),
            RunCodec::Frames { codec, frame, traffic } => {
                Box::new(frames::FrameWriter::create(*codec, *frame, path, cfg, traffic.clone())?)
            }
        })
    }

    /// Opens the run `path` for reading through a stream of `cfg`.
    pub fn open(&self, path: &Path, unit: usize, cfg: &StreamConfig) -> Result<ByteInput> {
        Ok(match self {
            RunCodec::Plain => ByteInput::open(path, unit, cfg)?,
            RunCodec::Program(p) => ByteInput::Decoded(Box::new(DecompressedReader::open(p, path)?)),
            RunCodec::Frames { codec, frame, traffic } => {
                ByteInput::Decoded(Box::new(FrameReader::open(*codec, *frame, path, cfg, traffic.clone())?))
            }
        })
    }

    /// Whether runs are stored in frames (their buffers count in the
    /// merge's memory).
    pub fn in_frames(&self) -> bool {
        matches!(self, RunCodec::Frames { .. })
    }

    /// Whether the merge may give a run's space back as it reads it (not
    /// through a program, which reads the file on its own).
    pub fn frees_behind(&self) -> bool {
        !matches!(self, RunCodec::Program(_))
    }
}
