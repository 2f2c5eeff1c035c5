//! `emsort bench readers`: the quick campaign end to end (every experiment,
//! every point, bytes read equal bytes asked for, plots, machine facts),
//! the memory experiment's child processes, and clear errors for bad flags.

use std::collections::HashMap;
use std::path::Path;

use crate::{entries, p, run, stderr, stdout};

fn fio_available() -> bool {
    std::process::Command::new("/usr/bin/fio").arg("--version").output().is_ok_and(|o| o.status.success())
        || std::process::Command::new("fio").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Rows of a CSV as header → value maps.
fn rows(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
    lines.map(|l| header.iter().cloned().zip(l.split(',').map(str::to_string)).collect()).collect()
}

const RAW_HEADER: &str =
    "experiment,sweep,reader,api,pattern,file_bytes,request_bytes,block_size,queue_depth,\
madvise,threads,limit,rep,requests,bytes_requested,bytes_read,seconds,mib_s,p50_us,p99_us,max_us,open_ms,\
minor_faults,major_faults,resident_bytes,cache";

#[test]
fn quick_campaign_writes_every_point_csvs_plots_and_facts() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let o = run(&["bench", "readers", "--quick", "--cache", "fadvise", "-q", "-o", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fio = fio_available();
    // Points of bench/params/readers-quick.csv (one repetition each).
    let expected = [
        ("blocksize", 2 * 3 * 2),
        ("queue-depth", 3 * 2 * if fio { 2 } else { 1 }),
        ("mmap", 2 * 3),
        ("sequential", 5 * 3),
        ("random", 5 * 6),
        // --quick leaves memory alone: only the series without a limit.
        ("memory", 5 * 2),
        ("threads", 5 * 2 * 3),
    ];
    for (exp, n) in expected {
        let path = out.join(format!("raw-{exp}.csv"));
        let header = std::fs::read_to_string(&path).unwrap().lines().next().unwrap().to_string();
        assert_eq!(header, RAW_HEADER);
        let rs = rows(&path);
        assert_eq!(rs.len(), n, "{exp}");
        for r in &rs {
            assert_eq!(r["experiment"], exp);
            assert_eq!(r["bytes_read"], r["bytes_requested"], "{exp}: {r:?}");
            let bytes: u64 = r["bytes_read"].parse().unwrap();
            assert!(bytes > 0);
            let mib: f64 = r["mib_s"].parse().unwrap();
            let (p50, p99): (f64, f64) = (r["p50_us"].parse().unwrap(), r["p99_us"].parse().unwrap());
            assert!(mib > 0.0 && mib.is_finite(), "{exp}: {r:?}");
            assert!(p50 > 0.0 && p50 <= p99, "{exp}: {r:?}");
            assert_eq!(r["cache"], "fadvise");
            if exp == "memory" {
                assert_eq!(r["limit"], "none");
            }
        }
        if exp == "queue-depth" && fio {
            assert!(rs.iter().any(|r| r["reader"] == "fio" && r["api"] == "fio"));
        }
        if exp == "threads" {
            assert!(rs.iter().any(|r| r["threads"] == "2"));
        }
    }
    let summary = rows(&out.join("summary.csv"));
    assert!(summary.len() >= 100, "{}", summary.len());
    if fio {
        assert!(summary.iter().any(|r| r["reader"] == "uring" && !r["uring_to_fio"].is_empty()));
        assert!(stdout(&o).contains("beside fio"), "{}", stdout(&o));
    }
    let plots = entries(&out.join("plots"));
    for name in [
        "blocksize_throughput.svg",
        "blocksize_latency.svg",
        "mmap_latency.svg",
        "mmap_pagein.svg",
        "sequential_file.svg",
        "random_request.svg",
        "memory.svg",
        "threads_seq.svg",
        "queue-depth_rand.svg",
    ] {
        assert!(plots.contains(&name.to_string()), "{name} missing: {plots:?}");
    }
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    for key in [
        "read_ahead_kb",
        "fault_around_bytes",
        "cache_method",
        "device",
        "memory_limit",
        "fio",
        "command_line",
        "cgroup_v2",
        "kernel",
    ] {
        assert!(m.get(key).is_some(), "machine.json lacks {key}");
    }
    assert_eq!(m["cache_method"], "fadvise");
    let text = stdout(&o);
    assert!(text.contains("Memory limit:") && text.contains("blocksize"), "{text}");
    // The data files are gone.
    assert!(entries(&out).iter().all(|n| !n.starts_with(".emsort-readers")), "{:?}", entries(&out));
    // A second campaign into the same directory is refused.
    let o = run(&[
        "bench",
        "readers",
        "--quick",
        "--experiments",
        "mmap",
        "--cache",
        "fadvise",
        "-q",
        "-o",
        p(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already holds"), "{}", stderr(&o));
}

#[test]
fn cgroup2_limit_is_used_or_its_absence_said() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let o = run(&[
        "bench",
        "readers",
        "--quick",
        "--experiments",
        "memory",
        "--memory-limit",
        "cgroup2",
        "--cache",
        "fadvise",
        "--dir",
        p(d.path()),
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rs = rows(&out.join("raw-memory.csv"));
    if stderr(&o).contains("memory experiment: no memory limit (cgroup2:") {
        // No memory controller for our cgroup v2 group (as on the hybrid
        // hierarchy here): said, and only the series without a limit runs.
        assert_eq!(rs.len(), 10);
        assert!(rs.iter().all(|r| r["limit"] == "none"));
    } else {
        assert_eq!(rs.len(), 20, "{}", stderr(&o));
        assert_eq!(rs.iter().filter(|r| r["limit"] == "cgroup2:4194304").count(), 10);
    }
    assert!(stdout(&o).contains("Memory limit:"), "{}", stdout(&o));
    // --dir is kept, its data file removed.
    assert!(d.path().is_dir() && !d.path().join("readers-16M.bin").exists());
}

#[test]
fn bad_flags_are_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    let o = run(&["bench", "readers", "--quick", "--experiments", "disks", "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--experiments: unknown experiment 'disks'"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--quick", "--dir", "/nonexistent/emsort", "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--dir /nonexistent/emsort: no such directory"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--quick", "--cache", "none", "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cold cache"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--quick", "--size", "12Q", "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--size"), "{}", stderr(&o));
    let params = d.path().join("p.csv");
    std::fs::write(&params, "key;value\nblocksize.blocks;4K,huge\n").unwrap();
    let o = run(&["bench", "readers", "--params", p(&params), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("p.csv:2: blocksize.blocks: invalid size 'huge'"), "{}", stderr(&o));
    assert!(!out.join("raw-blocksize.csv").exists());
}
