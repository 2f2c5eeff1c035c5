//! fio, the peer of the queue-depth experiment (issue 5 §5: `uring` at its
//! best queue depth should reach 90 % of fio's throughput for the same
//! block size and depth).
//!
//! On the same file, in the same run, after the same cache emptying, fio
//! reads with the same engine, block size, depth and bytes:
//!
//! ```text
//! fio --name=emsort --filename=FILE --readonly --ioengine=io_uring --direct=0
//!     --rw=read|randread --bs=R --iodepth=Q --size=FILE_BYTES --io_size=TOTAL
//!     --invalidate=1 --fadvise_hint=0 --lat_percentiles=1 --output-format=json
//! ```
//!
//! `--fadvise_hint=0`: fio gives the kernel no access hint (by default it
//! would `posix_fadvise(RANDOM)` a random job, turning readahead off), as
//! emsort's readers give none. `randread` keeps fio's random map (on by default), so no block is read
//! twice, as the `rand` pattern does. Throughput is fio's `bw_bytes`; the
//! latency percentiles are its total latencies (`lat_ns`, submission to
//! completion), comparable with ours.

use std::path::Path;
use std::process::Command;

use super::measure::Measured;
use super::point::{Pattern, Point};
use crate::{Error, Result};

/// The fio binary looked for first (Debian's, which `bench/setup.sh` installs).
pub const FIO: &str = "/usr/bin/fio";

/// The fio to run: `/usr/bin/fio`, else `fio` from `PATH`, with its version;
/// `Err` says why fio is left out.
pub fn find_fio() -> std::result::Result<(String, String), String> {
    for exe in [FIO, "fio"] {
        if let Ok(o) = Command::new(exe).arg("--version").output() {
            if o.status.success() {
                return Ok((exe.to_string(), String::from_utf8_lossy(&o.stdout).trim().to_string()));
            }
        }
    }
    Err("fio not found (neither /usr/bin/fio nor fio on PATH; bench/setup.sh installs it)".to_string())
}

/// The arguments fio gets for `point` on `file` (see the module docs).
pub fn fio_args(point: &Point, file: &Path) -> Vec<String> {
    let rw = match point.pattern {
        Pattern::Seq => "read",
        _ => "randread",
    };
    vec![
        "--name=emsort".into(),
        format!("--filename={}", file.display()),
        "--readonly".into(),
        "--ioengine=io_uring".into(),
        "--direct=0".into(),
        format!("--rw={rw}"),
        format!("--bs={}", point.request_bytes),
        format!("--iodepth={}", point.queue_depth),
        format!("--size={}", point.file_bytes),
        format!("--io_size={}", point.total_bytes),
        "--invalidate=1".into(),
        "--fadvise_hint=0".into(),
        "--lat_percentiles=1".into(),
        "--output-format=json".into(),
    ]
}

/// Runs fio for `point` on `file` and reads its JSON report.
pub fn run_fio(exe: &str, point: &Point, file: &Path) -> Result<Measured> {
    let args = fio_args(point, file);
    let o = Command::new(exe)
        .args(&args)
        .output()
        .map_err(|e| Error::Campaign(format!("{}: cannot start {exe}: {e}", point.label())))?;
    if !o.status.success() {
        return Err(Error::Campaign(format!(
            "{}: fio failed ({}): {}",
            point.label(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    parse_fio_json(&String::from_utf8_lossy(&o.stdout), point.request_count())
        .map_err(|m| Error::Campaign(format!("{}: fio's report: {m}", point.label())))
}

/// The measurement in fio's JSON output (the first job's reads).
pub fn parse_fio_json(text: &str, requests: u64) -> std::result::Result<Measured, String> {
    // fio may print notes before the JSON object.
    let start = text.find('{').ok_or("no JSON object in fio's output")?;
    let v: serde_json::Value = serde_json::from_str(&text[start..]).map_err(|e| e.to_string())?;
    let read = &v["jobs"][0]["read"];
    let num = |x: &serde_json::Value, what: &str| x.as_f64().ok_or_else(|| format!("no {what}"));
    let bytes = num(&read["io_bytes"], "read.io_bytes")? as u64;
    let bw = num(&read["bw_bytes"], "read.bw_bytes")?;
    let lat = &read["lat_ns"];
    let pct = |p: &str| lat["percentile"][p].as_f64().unwrap_or(0.0) / 1e3;
    Ok(Measured {
        seconds: if bw > 0.0 { bytes as f64 / bw } else { 0.0 },
        open_seconds: 0.0,
        requests,
        bytes_requested: bytes,
        bytes_read: bytes,
        p50_us: pct("50.000000"),
        p99_us: pct("99.000000"),
        max_us: lat["max"].as_f64().unwrap_or(0.0) / 1e3,
        minor_faults: v["jobs"][0]["minf"].as_u64().unwrap_or(0),
        major_faults: v["jobs"][0]["majf"].as_u64().unwrap_or(0),
        resident_bytes: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fio_json() {
        let text = r#"note: both iodepth >= 1 and synchronous I/O engine
{"fio version":"fio-3.33","jobs":[{"jobname":"emsort","read":{"io_bytes":1048576,"bw_bytes":524288,
 "lat_ns":{"min":1,"max":9000,"mean":5,"percentile":{"50.000000":2000,"99.000000":8000}}},"minf":3,"majf":1}]}"#;
        let m = parse_fio_json(text, 16).unwrap();
        assert_eq!((m.bytes_read, m.requests, m.major_faults), (1 << 20, 16, 1));
        assert!(
            (m.seconds - 2.0).abs() < 1e-9 && (m.p50_us - 2.0).abs() < 1e-9 && (m.p99_us - 8.0).abs() < 1e-9
        );
        assert!(parse_fio_json("garbage", 1).is_err());
        assert!(parse_fio_json("{\"jobs\":[]}", 1).unwrap_err().contains("io_bytes"));
    }
}
