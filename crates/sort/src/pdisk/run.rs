//! Striped runs with their forecasting data, and the D disks they live on.
//!
//! [`Disks`] owns the I/O layer's disk threads ([`DiskIo`]) over one
//! temporary directory per disk, draws each new run's starting disk (DSM:
//! disk 0; SRM: uniformly at random from a generator seeded by the plan),
//! and makes [`RunWriter`]s: a [`StripedWriter`] with two logical blocks of
//! D·B (one filling, one being written, so writes go out at full D-disk
//! parallelism) and a [`ForecastWriter`] recording the forecasting keys.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use emsort_io::disks::{DiskIo, StripedRun, StripedWriter};
use emsort_io::Result;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::forecast::{ForecastRun, ForecastWriter, Mode};
use super::merger::Out;
use crate::codec::SharedCodec;

/// A sorted run striped over the D disks, with its forecasting data run.
#[derive(Debug)]
pub(crate) struct PdRun {
    /// Where its blocks are.
    pub striped: StripedRun,
    /// Its forecasting keys (none for DSM).
    pub forecast: ForecastRun,
}

impl PdRun {
    /// Its length in bytes.
    pub fn bytes(&self) -> u64 {
        self.striped.bytes
    }
}

/// The disks of one sort and the runs' starting disks.
pub(crate) struct Disks {
    /// The disk threads.
    pub io: DiskIo,
    /// What an item is and how items compare.
    pub codec: SharedCodec,
    /// Where forecasting keys go.
    pub mode: Mode,
    /// Whether starting disks are drawn at random (SRM).
    pub random_start: bool,
    rng: Mutex<Xoshiro256PlusPlus>,
    next_id: AtomicU64,
    /// Bytes written to forecasting files.
    pub forecast_written: AtomicU64,
}

impl Disks {
    /// The disks served by `io`.
    pub fn new(io: DiskIo, codec: SharedCodec, mode: Mode, random_start: bool, seed: u64) -> Disks {
        Disks {
            io,
            codec,
            mode,
            random_start,
            rng: Mutex::new(Xoshiro256PlusPlus::seed_from_u64(seed)),
            next_id: AtomicU64::new(0),
            forecast_written: AtomicU64::new(0),
        }
    }

    /// D.
    pub fn d(&self) -> usize {
        self.io.set().disks()
    }

    /// B.
    pub fn block(&self) -> usize {
        self.io.set().block()
    }

    /// A directory to name in errors.
    pub fn dir(&self) -> &Path {
        self.io.set().dir(0)
    }

    /// Starts a new run on its starting disk.
    pub fn create(&self) -> Result<RunWriter> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let d = self.d();
        let start = if self.random_start {
            self.rng.lock().unwrap_or_else(|e| e.into_inner()).random_range(0..d)
        } else {
            0
        };
        let fc_path: PathBuf = self.io.set().dir(start).join(format!("fc-{id:06}"));
        Ok(RunWriter {
            stage: Vec::with_capacity(STAGE),
            writer: StripedWriter::new(&self.io, id, start, 2 * d - 1),
            forecast: ForecastWriter::new(self.mode, self.codec.clone(), self.block(), &fc_path)?,
        })
    }

    /// Deletes a run's files.
    pub fn remove(&self, run: &PdRun) -> Result<()> {
        self.io.remove_run(&run.striped)?;
        run.forecast.remove()
    }
}

/// Bytes a [`RunWriter`] gathers before handing them to the striped
/// writer (items one by one would cost a call each).
const STAGE: usize = 64 << 10;

/// A run being written.
pub(crate) struct RunWriter {
    /// Items not yet handed to `writer`.
    stage: Vec<u8>,
    writer: StripedWriter,
    forecast: ForecastWriter,
}

impl RunWriter {
    /// Appends fixed-size items of `size` bytes, all of `data`.
    pub fn push_items(&mut self, data: &[u8], size: usize) -> Result<()> {
        self.forecast.items(data, size)?;
        self.flush_stage()?;
        self.writer.write_all(data)
    }

    fn flush_stage(&mut self) -> Result<()> {
        if !self.stage.is_empty() {
            self.writer.write_all(&self.stage)?;
            self.stage.clear();
        }
        Ok(())
    }

    /// Waits for its writes; the run and the bytes of forecasting data
    /// written to a file.
    pub fn finish(mut self) -> Result<(PdRun, u64)> {
        self.flush_stage()?;
        let fc_bytes = self.forecast.file_bytes();
        let forecast = self.forecast.finish()?;
        let striped = self.writer.finish()?;
        Ok((PdRun { striped, forecast }, fc_bytes))
    }
}

impl Out for RunWriter {
    #[inline]
    fn push(&mut self, item: &[u8]) -> Result<()> {
        self.forecast.item(item)?;
        if self.stage.len() + item.len() > STAGE {
            self.flush_stage()?;
            if item.len() > STAGE {
                return self.writer.write_all(item);
            }
        }
        self.stage.extend_from_slice(item);
        Ok(())
    }
}
