//! fio in the sort campaign (issue 38): the I/O bound measured by fio at
//! emsort's block size, and a profile's device facts.
//!
//! **The I/O bound** ([`IoBound`]): a sort reads and writes its data at
//! least twice; the bound is one read of the input plus one write of as
//! many bytes, doubled in the summary (`io_bound_s`). Without fio it is
//! the O_DIRECT copy of [`super::fio::io_bound`] (8 MiB blocks, one
//! request at a time). With fio ([`IoBound::Fio`]) it is the device's
//! best at emsort's block size, two fio jobs on a cold cache:
//!
//! ```text
//! fio --name=read --filename=INPUT --readonly --rw=read --bs=1M --direct=1
//!     --ioengine=io_uring --iodepth=32 --size=N --output-format=json
//! fio --name=write --filename=OUTPUT --rw=write --bs=1M --direct=1
//!     --ioengine=io_uring --iodepth=32 --size=N --end_fsync=1 --output-format=json
//! ```
//!
//! Each job's time is fio's own (`io_bytes / bw_bytes`, the I/O alone):
//! starting fio costs about half a second here, which the bound must not
//! count. `N` is rounded down to whole blocks; an input smaller than 1 MiB
//! uses the largest power of two that fits (at least 4 KiB).
//!
//! **Device facts** ([`device_facts`]): on a directory, one fio run of
//! four jobs in turn (`--stonewall`) over a probe file of 64–256 MiB, 1 MiB
//! requests with O_DIRECT: sequential writes and reads at queue depth 32
//! (bandwidth), then reads and writes at queue depth 1 (mean latency per
//! request). The probe file is removed afterwards.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::{create_output, open_input, InputStream, OutputStream, StreamConfig, StreamKind};
use emsort_sort::stats::{MigrationCounter, Rusage};
use serde::Serialize;

use super::peers::{self, put_usage, PeakRss};
use super::record::RawRow;
use crate::{Error, Result};

/// fio's block size for the I/O bound and the device facts: emsort's
/// largest default block, 1 MiB.
pub const FIO_BLOCK: u64 = 1 << 20;

/// fio's queue depth for the I/O bound and the bandwidth facts.
pub const FIO_DEPTH: u32 = 32;

/// The fio binary and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fio {
    /// The binary (`/usr/bin/fio` or `fio` on the `PATH`).
    pub exe: String,
    /// `fio --version` (`fio-3.33`).
    pub version: String,
}

impl Fio {
    /// fio when installed; `Err` says why not.
    pub fn find() -> std::result::Result<Fio, String> {
        crate::readers::fio::find_fio().map(|(exe, version)| Fio { exe, version })
    }

    /// Runs fio with `args` (`--output-format=json` added) and returns its
    /// JSON report; `cancel` stops it.
    fn run(
        &self,
        args: &[String],
        what: &str,
        cancel: &AtomicBool,
        work: &Path,
    ) -> Result<serde_json::Value> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args).arg("--output-format=json");
        let c = peers::run_child(cmd, what, cancel, work)?;
        if !c.status.success() {
            let msg =
                if c.stderr.trim().is_empty() { peers::tail(&c.stdout) } else { peers::tail(&c.stderr) };
            return Err(Error::Campaign(format!("{what}: fio failed ({}): {msg}", c.status)));
        }
        parse_report(&c.stdout).map_err(|m| Error::Campaign(format!("{what}: fio's report: {m}")))
    }
}

/// fio's JSON report from its standard output (notes may come before it).
fn parse_report(text: &str) -> std::result::Result<serde_json::Value, String> {
    let start = text.find('{').ok_or("no JSON object in fio's output")?;
    let end = text.rfind('}').ok_or("no JSON object in fio's output")?;
    serde_json::from_str(&text[start..=end]).map_err(|e| e.to_string())
}

/// One direction of one fio job: bytes moved, seconds of I/O (`io_bytes /
/// bw_bytes`) and the mean latency per request in seconds.
fn job_side(
    report: &serde_json::Value,
    job: usize,
    side: &str,
) -> std::result::Result<(u64, f64, f64), String> {
    let j = &report["jobs"][job][side];
    let bytes = j["io_bytes"].as_u64().ok_or_else(|| format!("no jobs[{job}].{side}.io_bytes"))?;
    let bw = j["bw_bytes"].as_f64().ok_or_else(|| format!("no jobs[{job}].{side}.bw_bytes"))?;
    if bytes == 0 || bw <= 0.0 {
        return Err(format!("jobs[{job}].{side} moved no data"));
    }
    let lat = j["lat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e9;
    Ok((bytes, bytes as f64 / bw, lat))
}

/// How the campaign measures the I/O bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IoBound {
    /// The O_DIRECT copy of [`super::fio::io_bound`] (8 MiB blocks, one
    /// request at a time).
    #[default]
    Copy,
    /// fio at [`FIO_BLOCK`] and [`FIO_DEPTH`] (see the module docs).
    Fio(Fio),
}

impl IoBound {
    /// fio when installed, else the copy with why not.
    pub fn best_available() -> (IoBound, Option<String>) {
        match Fio::find() {
            Ok(f) => (IoBound::Fio(f), None),
            Err(why) => (IoBound::Copy, Some(why)),
        }
    }

    /// What `machine.json` and the README say about it.
    pub fn describe(&self) -> String {
        match self {
            IoBound::Copy => format!(
                "O_DIRECT copy: read once, write once, {} MiB blocks, one request at a time",
                IO_BOUND_BLOCK >> 20
            ),
            IoBound::Fio(f) => format!(
                "{}: sequential read, then write, {} MiB blocks, O_DIRECT, io_uring, queue depth {FIO_DEPTH}, \
                 fio's own I/O time",
                f.version,
                FIO_BLOCK >> 20
            ),
        }
    }

    /// Measures the bound on `input` (`bytes` long), writing `output`;
    /// fills `row` (`seconds` = read + write, `run_formation_s` = the
    /// read, `merge_s` = the write; `io` and `note` say which bound).
    pub fn measure(
        &self,
        input: &Path,
        output: &Path,
        bytes: u64,
        cancel: &AtomicBool,
        row: &mut RawRow,
    ) -> Result<()> {
        match self {
            IoBound::Copy => {
                io_bound(input, output, row)?;
                row.note = "O_DIRECT copy".into();
                Ok(())
            }
            IoBound::Fio(f) => fio_bound(f, input, output, bytes, cancel, row),
        }
    }
}

/// fio's block for an input of `bytes`: [`FIO_BLOCK`], or the largest
/// power of two below a smaller input (at least 4 KiB; `None` below that).
pub fn fio_block(bytes: u64) -> Option<u64> {
    if bytes >= FIO_BLOCK {
        return Some(FIO_BLOCK);
    }
    (bytes >= 4096).then(|| 1u64 << (63 - bytes.leading_zeros()))
}

fn fio_bound(
    fio: &Fio,
    input: &Path,
    output: &Path,
    bytes: u64,
    cancel: &AtomicBool,
    row: &mut RawRow,
) -> Result<()> {
    let Some(block) = fio_block(bytes) else {
        // Too small for a block: the copy, which says so.
        return IoBound::Copy.measure(input, output, bytes, cancel, row);
    };
    let size = bytes / block * block;
    let work = output.parent().unwrap_or(Path::new("."));
    let common = |name: &str, rw: &str, file: &Path| -> Vec<String> {
        vec![
            format!("--name={name}"),
            format!("--filename={}", file.display()),
            format!("--rw={rw}"),
            format!("--bs={block}"),
            "--direct=1".into(),
            "--ioengine=io_uring".into(),
            format!("--iodepth={FIO_DEPTH}"),
            format!("--size={size}"),
        ]
    };
    let mut read = common("read", "read", input);
    read.push("--readonly".into());
    let r = fio.run(&read, "the I/O bound's read", cancel, work)?;
    let (rb, rs, _) = job_side(&r, 0, "read").map_err(|m| Error::Campaign(format!("fio's read: {m}")))?;
    let _ = std::fs::remove_file(output);
    let mut write = common("write", "write", output);
    write.push("--end_fsync=1".into());
    let w = fio.run(&write, "the I/O bound's write", cancel, work);
    let _ = std::fs::remove_file(output);
    let (wb, ws, _) = job_side(&w?, 0, "write").map_err(|m| Error::Campaign(format!("fio's write: {m}")))?;
    row.seconds = rs + ws;
    row.run_formation_s = Some(rs);
    row.merge_s = Some(ws);
    row.bytes_read = Some(rb);
    row.bytes_written = Some(wb);
    row.block_size = Some(block);
    row.io = "fio".into();
    row.note = format!("{} io_uring QD {FIO_DEPTH} O_DIRECT", fio.version);
    Ok(())
}

/// A directory's device, as fio measures it in a few seconds (see the
/// module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceFacts {
    /// `fio-3.33 io_uring O_DIRECT`.
    pub tool: String,
    /// The probe file's size in bytes (each job moves at most this).
    pub probe_bytes: u64,
    /// Request size in bytes (1 MiB).
    pub block_bytes: u64,
    /// Sequential reads at queue depth 32, bytes per second.
    pub read_bandwidth_qd32: f64,
    /// Sequential writes at queue depth 32 (over the probe file), bytes per second.
    pub write_bandwidth_qd32: f64,
    /// Mean latency of a 1 MiB read at queue depth 1, milliseconds.
    pub read_latency_qd1_ms: f64,
    /// Mean latency of a 1 MiB write at queue depth 1, milliseconds.
    pub write_latency_qd1_ms: f64,
}

/// The probe file's size for inputs of at most `largest` bytes: the
/// input's size within 64–256 MiB.
pub fn probe_bytes(largest: u64) -> u64 {
    largest.clamp(64 << 20, 256 << 20) / FIO_BLOCK * FIO_BLOCK
}

/// Measures the device under `dir` with fio (see the module docs): a
/// probe file `.emsort-fio-probe` of `probe` bytes in `dir`, removed
/// afterwards. Each job stops after 5 s if the probe is not done by then.
pub fn device_facts(fio: &Fio, dir: &Path, probe: u64, cancel: &AtomicBool) -> Result<DeviceFacts> {
    let file = dir.join(".emsort-fio-probe");
    let mut args = vec![
        format!("--filename={}", file.display()),
        format!("--bs={FIO_BLOCK}"),
        "--direct=1".into(),
        "--ioengine=io_uring".into(),
        format!("--size={probe}"),
        "--runtime=5".into(),
    ];
    for (i, (name, rw, depth)) in [
        ("write_qd32", "write", FIO_DEPTH),
        ("read_qd32", "read", FIO_DEPTH),
        ("read_qd1", "read", 1),
        ("write_qd1", "write", 1),
    ]
    .into_iter()
    .enumerate()
    {
        args.push(format!("--name={name}"));
        if i > 0 {
            args.push("--stonewall".into());
        }
        args.push(format!("--rw={rw}"));
        args.push(format!("--iodepth={depth}"));
    }
    let res = fio.run(&args, &format!("fio on {}", dir.display()), cancel, dir);
    let _ = std::fs::remove_file(&file);
    let r = res?;
    let bad = |m: String| Error::Campaign(format!("fio on {}: {m}", dir.display()));
    let (wb, ws, _) = job_side(&r, 0, "write").map_err(bad)?;
    let (rb, rs, _) = job_side(&r, 1, "read").map_err(bad)?;
    let (_, _, read_lat) = job_side(&r, 2, "read").map_err(bad)?;
    let (_, _, write_lat) = job_side(&r, 3, "write").map_err(bad)?;
    Ok(DeviceFacts {
        tool: format!("{} io_uring O_DIRECT", fio.version),
        probe_bytes: probe,
        block_bytes: FIO_BLOCK,
        read_bandwidth_qd32: rb as f64 / rs,
        write_bandwidth_qd32: wb as f64 / ws,
        read_latency_qd1_ms: read_lat * 1e3,
        write_latency_qd1_ms: write_lat * 1e3,
    })
}

/// Block size of the I/O bound's O_DIRECT streams.
pub const IO_BOUND_BLOCK: usize = 8 << 20;

/// Reads `input` once and writes as many bytes to `output` once, both with
/// O_DIRECT streams of [`IO_BOUND_BLOCK`] bytes (the write synced on
/// close); fills `row`: `seconds` = read + write, `run_formation_s` = the
/// read, `merge_s` = the write.
pub fn io_bound(input: &Path, output: &Path, row: &mut RawRow) -> Result<()> {
    let cfg = StreamConfig::new(StreamKind::Direct).block_size(IO_BOUND_BLOCK);
    let migrations = MigrationCounter::start();
    let usage0 = Rusage::now();
    let before = PeakRss::start();
    let mut buf = vec![0u8; IO_BOUND_BLOCK];
    let t0 = Instant::now();
    let mut inp = open_input::<u8>(input, &cfg)?;
    let mut total = 0u64;
    loop {
        let n = inp.read_into(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    inp.close()?;
    let t_read = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut out = create_output::<u8>(output, &cfg.sync_on_close(true))?;
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        out.write_all(&buf[..n])?;
        left -= n as u64;
    }
    out.close()?;
    let t_write = t1.elapsed().as_secs_f64();
    row.seconds = t_read + t_write;
    row.run_formation_s = Some(t_read);
    row.merge_s = Some(t_write);
    row.bytes_read = Some(total);
    row.bytes_written = Some(total);
    row.block_size = Some(IO_BOUND_BLOCK as u64);
    row.io = "direct".into();
    row.cpu_migrations = migrations.and_then(|m| m.read());
    row.rss_before_bytes = before;
    row.peak_rss_bytes = before.and_then(|_| PeakRss::read());
    put_usage(row, &Rusage::now().since(&usage0));
    Ok(())
}

/// The I/O bound's run on one input, as every campaign that measures it
/// makes it: the page cache emptied of the input with `cache` first (the
/// cold cache every tool starts from), then the bound `how` measures
/// ([`io_bound`], or fio: [`IoBound`]) into `output`; the row
/// of tool `io-bound` (format `format`, N = `bytes`, `items` items, one
/// thread, repetition `rep`).
pub(crate) fn io_bound_run(
    (cache, how, cancel): (CacheMethod, &IoBound, &AtomicBool),
    input: &Path,
    output: &Path,
    format: &str,
    (bytes, items, rep): (u64, u64, u32),
) -> Result<RawRow> {
    cache.apply(&[input])?;
    let mut row = RawRow::new("io-bound", format, bytes, items, 1, rep);
    row.cache = cache.name().into();
    how.measure(input, output, bytes, cancel, &mut row)?;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_probe_sizes() {
        assert_eq!(fio_block(1 << 30), Some(1 << 20));
        assert_eq!(fio_block(300 << 10), Some(256 << 10));
        assert_eq!(fio_block(4096), Some(4096));
        assert_eq!(fio_block(4095), None);
        assert_eq!(probe_bytes(1 << 20), 64 << 20);
        assert_eq!(probe_bytes(1 << 30), 256 << 20);
        assert_eq!(probe_bytes(100 << 20), 100 << 20);
    }

    #[test]
    fn reads_a_report() {
        let text = r#"note: something
{"fio version":"fio-3.33","jobs":[{"jobname":"w","write":{"io_bytes":2097152,"bw_bytes":1048576,"lat_ns":{"mean":2000000.0}},
"read":{"io_bytes":0,"bw_bytes":0}}]}
"#;
        let r = parse_report(text).unwrap();
        let (b, s, lat) = job_side(&r, 0, "write").unwrap();
        assert_eq!(b, 2 << 20);
        assert!((s - 2.0).abs() < 1e-9 && (lat - 0.002).abs() < 1e-12);
        assert!(job_side(&r, 0, "read").unwrap_err().contains("no data"));
        assert!(job_side(&r, 1, "read").is_err());
        assert!(parse_report("nothing").is_err());
    }

    /// fio, where installed, on a disk directory: the bound's row and the
    /// device facts, the files removed.
    #[test]
    fn fio_measures_a_bound_and_a_device() {
        let Ok(fio) = Fio::find() else {
            eprintln!("no fio: skipped");
            return;
        };
        let dir = crate::scratch::disk_tempdir("emsort-fio-").unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, vec![7u8; 3 << 20]).unwrap();
        let out = dir.path().join("out");
        let mut row = RawRow::new("io-bound", "u32", 3 << 20, 1, 1, 1);
        let cancel = AtomicBool::new(false);
        IoBound::Fio(fio.clone()).measure(&input, &out, 3 << 20, &cancel, &mut row).unwrap();
        assert_eq!(
            (row.bytes_read, row.bytes_written, row.block_size),
            (Some(3 << 20), Some(3 << 20), Some(1 << 20))
        );
        assert!(row.seconds > 0.0 && row.io == "fio" && row.note.starts_with("fio"), "{row:?}");
        assert!(!out.exists());
        let f = device_facts(&fio, dir.path(), 16 << 20, &cancel).unwrap();
        assert!(f.read_bandwidth_qd32 > 0.0 && f.write_bandwidth_qd32 > 0.0, "{f:?}");
        assert!(f.read_latency_qd1_ms > 0.0 && f.write_latency_qd1_ms > 0.0, "{f:?}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
