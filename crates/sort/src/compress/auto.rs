//! `--compress=auto`: whether, and with which codec, one sort compresses
//! its temporary runs — decided at its first run, from measurements.
//!
//! A sample of the first sorted run (at most [`SAMPLE`] bytes, in order,
//! as the run stores it) is compressed and decompressed in frames by each
//! codec, giving its ratio q (stored/raw) and its speeds c and u (raw bytes
//! per second). With the device's measured write and read bandwidths w and
//! r (the plan's [`DeviceCost`]) and the CPU the sort has needed so far per
//! byte over its T threads (a, seconds per byte), each of the two passes
//! costs what its slower side costs, per byte of input:
//!
//! ```text
//!  uncompressed   2 · max(a, 1/r + 1/w)                   (read input, write runs; read runs, write output)
//!  with a codec   max(a + 1/(cT), 1/c, 1/r + q/w)         (one writer thread compresses)
//!               + max(a + 1/(uT), 1/u, q/r + 1/w)         (the read-ahead thread decodes)
//! ```
//!
//! The codec with the least estimate is used when it beats the uncompressed
//! estimate by [`GAIN`]; else none. Where not even an ideal codec (no time,
//! no bytes) would, the sort is bound by its CPU and no codec is tried. No measured device (tmpfs, where the
//! probe finds no `O_DIRECT`; memory) or a method other than the plain
//! merge: none. The estimate takes the merge's CPU per byte to be run
//! formation's (a merge of lines needs less): it leans towards none.

use std::time::Instant;

use emsort_io::device::DeviceCost;

use super::frames::{self, Codec};
use super::Compression;

/// The most bytes of the first run compressed to decide.
pub const SAMPLE: usize = 1 << 20;

/// The share of the uncompressed estimate a codec's must stay under.
const GAIN: f64 = 0.9;

/// What `auto` chose, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    /// `none`, `lz4` or `zstd:1`.
    pub compression: Compression,
    /// The measurements and the estimates, in a sentence.
    pub why: String,
    /// The sample's stored/raw ratio with the chosen codec (or the best
    /// one's, when none was chosen).
    pub ratio: Option<f64>,
}

/// A codec measured on the sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Trial {
    pub compression: Codec,
    /// Stored bytes over raw bytes.
    pub ratio: f64,
    /// Raw bytes per second compressed, and decompressed.
    pub pack: f64,
    pub unpack: f64,
}

/// The codecs `auto` weighs.
const CANDIDATES: [Codec; 2] = [Codec::Lz4, Codec::Zstd(Compression::ZSTD_LEVEL)];

/// Decides for a sort whose first run `sample` comes from, with frames of
/// `frame` bytes, on `device` (the runs' directory's), having needed
/// `cpu_per_byte` CPU seconds per byte on `threads` threads so far.
pub(crate) fn choose(
    sample: &[u8],
    frame: usize,
    device: Option<DeviceCost>,
    cpu_per_byte: f64,
    threads: usize,
) -> Choice {
    let Some(device) = device.filter(|d| !d.is_memory()) else {
        return none(
            "none: the runs' directory has no measured device (memory such as tmpfs, or no O_DIRECT there)",
        );
    };
    if sample.is_empty() {
        return none("none: the first run is empty");
    }
    // Even a codec that took no time and left no bytes would not save
    // enough (a sort bound by its CPU, as on a fast disk): no trial.
    if let Some(m) = Model::new(device, cpu_per_byte, threads) {
        let ideal = Trial { compression: Codec::Lz4, ratio: 0.0, pack: f64::INFINITY, unpack: f64::INFINITY };
        if m.estimate(&ideal) >= GAIN * m.plain() {
            return none(&format!(
                "none: the sort is bound by its CPU here, not by the device ({})",
                m.figures()
            ));
        }
    }
    let trials: Vec<Trial> = CANDIDATES.iter().map(|&c| trial(c, frame, sample)).collect();
    decide(&trials, device, cpu_per_byte, threads)
}

/// No compression, for `why` (a sentence starting "none:").
fn none(why: &str) -> Choice {
    Choice { compression: Compression::None, why: why.into(), ratio: None }
}

/// Compresses and decompresses `sample` in frames with `codec`, each twice,
/// keeping the faster times.
fn trial(codec: Codec, frame: usize, sample: &[u8]) -> Trial {
    let (mut pack, mut unpack, mut stored) = (f64::MAX, f64::MAX, 0);
    for _ in 0..2 {
        let t = Instant::now();
        let packed = frames::pack_all(codec, frame, sample);
        pack = pack.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        frames::unpack_all(codec, frame, &packed);
        unpack = unpack.min(t.elapsed().as_secs_f64());
        stored = packed.iter().map(|(_, p)| p.len()).sum::<usize>();
    }
    let n = sample.len() as f64;
    Trial {
        compression: codec,
        ratio: stored as f64 / n,
        pack: n / pack.max(1e-9),
        unpack: n / unpack.max(1e-9),
    }
}

/// The module's model of a two-pass sort, per byte of input.
struct Model {
    /// Write and read bandwidths, bytes per second.
    w: f64,
    r: f64,
    /// The sort's own seconds per byte on its threads, and the threads.
    a: f64,
    cpu_per_byte: f64,
    threads: usize,
}

impl Model {
    fn new(device: DeviceCost, cpu_per_byte: f64, threads: usize) -> Option<Model> {
        let (w, r) = (device.write_bandwidth?, device.read_bandwidth?);
        Some(Model { w, r, a: cpu_per_byte / threads.max(1) as f64, cpu_per_byte, threads: threads.max(1) })
    }

    /// Seconds per byte without compression.
    fn plain(&self) -> f64 {
        2.0 * self.a.max(1.0 / self.r + 1.0 / self.w)
    }

    /// Seconds per byte with the codec of `x`.
    fn estimate(&self, x: &Trial) -> f64 {
        let (a, t) = (self.a, self.threads as f64);
        let formation = (a + 1.0 / (x.pack * t)).max(1.0 / x.pack).max(1.0 / self.r + x.ratio / self.w);
        let merge = (a + 1.0 / (x.unpack * t)).max(1.0 / x.unpack).max(x.ratio / self.r + 1.0 / self.w);
        formation + merge
    }

    /// The device's and the sort's figures, and the uncompressed estimate.
    fn figures(&self) -> String {
        let gib = (1u64 << 30) as f64;
        format!(
            "the device writes {:.0} MB/s and reads {:.0} MB/s, the sort needed {:.2} CPU s/GiB on {} thread(s): \
             est. {:.2} s/GiB uncompressed",
            self.w / 1e6,
            self.r / 1e6,
            self.cpu_per_byte * gib,
            self.threads,
            self.plain() * gib
        )
    }
}

/// The decision from measured codecs, device and CPU (the module's model).
pub(crate) fn decide(trials: &[Trial], device: DeviceCost, cpu_per_byte: f64, threads: usize) -> Choice {
    let Some(m) = Model::new(device, cpu_per_byte, threads) else {
        return none("none: the device's bandwidths are not known (no io_uring for the probe)");
    };
    let Some(best) = trials.iter().min_by(|x, y| m.estimate(x).total_cmp(&m.estimate(y))) else {
        return none("none: no codec to weigh");
    };
    let codec = match best.compression {
        Codec::Lz4 => Compression::Lz4,
        Codec::Zstd(l) => Compression::Zstd(l),
    };
    let on = m.estimate(best) < GAIN * m.plain();
    let why = format!(
        "{}: the first run's sample {} to {:.0} % with {codec} ({:.0} MB/s packing, {:.0} MB/s unpacking); {}, \
         {:.2} with {codec}{}",
        if on { codec.to_string() } else { "none".into() },
        if best.ratio < 1.0 { "shrank" } else { "grew" },
        best.ratio * 100.0,
        best.pack / 1e6,
        best.unpack / 1e6,
        m.figures(),
        m.estimate(best) * (1u64 << 30) as f64,
        if on { "" } else { " (not 10 % less)" },
    );
    Choice { compression: if on { codec } else { Compression::None }, why, ratio: Some(best.ratio) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn device(write: f64, read: f64) -> DeviceCost {
        DeviceCost {
            latency: Duration::from_micros(300),
            on_cpu: 0.05,
            write_bandwidth: Some(write),
            read_bandwidth: Some(read),
        }
    }

    const LZ4: Trial = Trial { compression: Codec::Lz4, ratio: 0.35, pack: 600e6, unpack: 3e9 };
    const ZSTD: Trial = Trial { compression: Codec::Zstd(1), ratio: 0.25, pack: 350e6, unpack: 1.2e9 };
    const RANDOM: Trial = Trial { compression: Codec::Lz4, ratio: 1.0, pack: 2e9, unpack: 8e9 };

    /// A slow disk (the Zen 3's 100 MB/s each way in a sort) and text that
    /// shrinks: on; a fast one with a CPU-bound sort: off; data that does
    /// not shrink: off; memory: off.
    #[test]
    fn compression_goes_where_it_saves_time() {
        let cpu = 2.0 / (1u64 << 30) as f64; // 2 CPU s/GiB
        let slow = decide(&[LZ4, ZSTD], device(100e6, 100e6), cpu, 2);
        assert_ne!(slow.compression, Compression::None, "{}", slow.why);
        let fast = decide(&[LZ4, ZSTD], device(2e9, 3e9), 4.0 * cpu, 2);
        assert_eq!(fast.compression, Compression::None, "{}", fast.why);
        assert!(fast.why.contains("not 10 % less"), "{}", fast.why);
        let random = decide(&[RANDOM], device(100e6, 100e6), cpu, 2);
        assert_eq!(random.compression, Compression::None, "{}", random.why);
        let mut memory = device(5e9, 5e9);
        memory.on_cpu = 0.9;
        let text = crate::compress::frames::tests_text(200_000);
        assert_eq!(choose(&text, 1 << 17, Some(memory), cpu, 2).compression, Compression::None);
        assert_eq!(choose(&text, 1 << 17, None, cpu, 2).compression, Compression::None);
        // Measured on real text against a slow disk: on, and the sample shrank.
        let c = choose(&text, 1 << 17, Some(device(50e6, 50e6)), cpu, 2);
        assert_ne!(c.compression, Compression::None, "{}", c.why);
        assert!(c.ratio.unwrap() < 0.6, "{}", c.why);
    }
}
