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
    // The README: the command, the best points and the thesis' findings
    // judged from this run (blocks, mmap for small and large random
    // requests, a second thread).
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("Command: `") && readme.contains("## Best point per experiment and reader"),
        "{readme}"
    );
    let (_, claims) = readme.split_once("## Beside the Chalmers thesis").expect("the thesis' findings");
    for want in ["§4.2", "small random requests", "large random requests", "§4.6"] {
        assert!(claims.contains(want), "{want}: {claims}");
    }
    // --quick runs each point once: no verdict.
    let rows: Vec<&str> = claims.lines().filter(|l| l.starts_with("| Chalmers thesis §")).collect();
    assert_eq!(rows.len(), 4, "{claims}");
    assert!(rows.iter().all(|l| l.ends_with("| one run: no verdict |")), "{claims}");
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

/// Whether io_uring and O_DIRECT work in `dir` (the trace campaign's
/// `uring` reader and the adaptive reader's direct read-ahead need them);
/// says so on stderr when not, for the tests that skip.
fn uring_and_direct(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let f = dir.join("probe.bin");
    std::fs::write(&f, vec![7u8; 8192]).unwrap();
    let direct = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&f).is_ok();
    let cfg = emsort_io::ReaderConfig::new(emsort_io::ReaderKind::Uring);
    let uring = match emsort_io::open_reader(&f, &cfg) {
        Ok(_) => true,
        Err(e) => *e.kind() != emsort_io::ErrorKind::UringUnavailable,
    };
    std::fs::remove_file(&f).unwrap();
    if !(direct && uring) {
        eprintln!(
            "note: io_uring ({uring}) or O_DIRECT ({direct}) unavailable here: trace campaign test skipped"
        );
    }
    direct && uring
}

/// Rows of a CSV as header → value maps, quoted fields and all.
fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| header.iter().cloned().zip(rec.unwrap().iter().map(str::to_string)).collect())
        .collect()
}

/// Requests and bytes of a trace file, counted from its text.
fn trace_totals(trace: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(trace).unwrap();
    let sizes: Vec<u64> = text
        .lines()
        .filter(|l| !l.starts_with('#') && *l != "file,offset,size")
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    (sizes.len() as u64, sizes.iter().sum())
}

/// Every file under `dir` (relative name → bytes).
fn files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut m = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            for (k, v) in files(&p) {
                m.insert(format!("{name}/{k}"), v);
            }
        } else {
            m.insert(name, std::fs::read(&p).unwrap());
        }
    }
    m
}

const TRACES: [&str; 4] = ["ct", "am", "im", "mixed"];
const READERS: [&str; 5] = ["stream", "mmap", "pread", "uring", "adaptive"];

#[test]
fn traces_quick_replays_every_trace_with_every_reader_and_redraws_the_same() {
    let d = tempfile::tempdir().unwrap();
    if !uring_and_direct(d.path()) {
        return;
    }
    let (work, out) = (d.path().join("work"), d.path().join("res"));
    std::fs::create_dir(&work).unwrap();
    // Absolute paths on the command line, the campaign run from d: every
    // path it writes must be relative to d.
    let o = crate::emsort()
        .current_dir(d.path())
        .args(["bench", "readers", "--traces", "--quick", "--cache", "fadvise"])
        .args(["--dir", p(&work), "--keep-files", "-q", "-o", p(&out)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Trace campaign: 20 replays") && text.contains("The thesis' claims"), "{text}");

    // raw.csv: a row per trace × reader × round (--quick: one round), each
    // replay reading exactly the trace's bytes, counted from trace.csv.
    let raw = csv_rows(&out.join("raw.csv"));
    assert_eq!(raw.len(), TRACES.len() * READERS.len(), "{raw:?}");
    let mut totals = HashMap::new();
    // --keep-files: the traces stay in the campaign's own directory inside --dir.
    let kept = entries(&work);
    assert!(kept.len() == 1 && kept[0].starts_with(".emsort-traces-"), "{kept:?}");
    let kept = work.join(&kept[0]);
    for t in TRACES {
        let (requests, bytes) = trace_totals(&kept.join(t).join("trace.csv"));
        assert!(requests > 0 && bytes >= 1 << 19, "{t}: {requests} {bytes}");
        totals.insert(t, (requests, bytes));
        let of: Vec<&HashMap<String, String>> = raw.iter().filter(|r| r["trace"] == t).collect();
        let mut readers: Vec<&str> = of.iter().map(|r| r["reader"].as_str()).collect();
        readers.sort_unstable();
        let mut want = READERS.to_vec();
        want.sort_unstable();
        assert_eq!(readers, want, "{t}");
        let mut positions: Vec<&str> = of.iter().map(|r| r["position"].as_str()).collect();
        positions.sort_unstable();
        assert_eq!(positions, ["1", "2", "3", "4", "5"], "{t}: each reader once per round");
        for r in of {
            let n = |c: &str| r[c].parse::<f64>().unwrap_or_else(|_| panic!("{c}: {r:?}"));
            assert_eq!((n("requests") as u64, n("bytes_requested") as u64), (requests, bytes), "{r:?}");
            assert_eq!(n("bytes_read") as u64, bytes, "{r:?}");
            assert_eq!(
                (r["short_reads"].as_str(), r["round"].as_str(), r["scale"].as_str()),
                ("0", "1", "0.01")
            );
            assert_eq!(r["cache"], "fadvise");
            let mib = bytes as f64 / n("seconds") / 1048576.0;
            assert!(n("seconds") > 0.0 && (n("mib_s") / mib - 1.0).abs() < 1e-9, "{r:?}");
            if r["reader"] == "adaptive" {
                // The adaptive reader's choices cover every request and byte.
                let sum = |kind: &str| -> u64 {
                    ["mmap", "pread", "uring", "direct"]
                        .iter()
                        .map(|t| n(&format!("{t}_{kind}")) as u64)
                        .sum()
                };
                assert_eq!((sum("requests"), sum("bytes")), (requests, bytes), "{r:?}");
            } else {
                assert_eq!(r["mmap_requests"], "", "{r:?}");
            }
        }
    }

    // summary.csv: per trace × reader, the ratios to the best fixed reader and mmap.
    let summary = csv_rows(&out.join("summary.csv"));
    assert_eq!(summary.len(), 20);
    for t in TRACES {
        let of: Vec<&HashMap<String, String>> = summary.iter().filter(|r| r["trace"] == t).collect();
        let secs =
            |r: &str| -> f64 { of.iter().find(|x| x["reader"] == r).unwrap()["median_s"].parse().unwrap() };
        let best = of[0]["best_fixed"].clone();
        assert!(of.iter().all(|r| r["best_fixed"] == best));
        let fastest_fixed = READERS[..4].iter().copied().min_by(|a, b| secs(a).total_cmp(&secs(b))).unwrap();
        assert_eq!(best, fastest_fixed, "{t}");
        for r in &of {
            let f = |c: &str| r[c].parse::<f64>().unwrap();
            assert!((f("ratio_to_best_fixed") - f("median_s") / secs(&best)).abs() < 1e-9, "{r:?}");
            assert!((f("ratio_to_mmap") - f("median_s") / secs("mmap")).abs() < 1e-9, "{r:?}");
            assert_eq!(f("bytes_read") as u64, totals[t].1);
        }
    }

    // machine.json: the device's read_ahead_kb (a number, and the sysfs file it comes
    // from) and the VM facts, the command.
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    for key in [
        "read_ahead_kb",
        "read_ahead_kb_file",
        "device",
        "page_reporting_order",
        "fault_around_bytes",
        "cpu_model",
        "kernel",
    ] {
        assert!(m.get(key).is_some(), "machine.json lacks {key}: {m}");
    }
    if let Some(file) = m["read_ahead_kb_file"].as_str() {
        let kb: u64 = std::fs::read_to_string(file).unwrap().trim().parse().unwrap();
        assert_eq!(m["read_ahead_kb"].as_u64(), Some(kb), "{m}");
        // The disk of the device (a partition's is its whole disk's).
        let disk = file.strip_prefix("/sys/block/").unwrap().strip_suffix("/queue/read_ahead_kb").unwrap();
        assert!(m["device"].as_str().unwrap().starts_with(disk), "{m}");
    }
    assert_eq!(
        m["command_line"],
        "emsort bench readers --traces --quick --cache fadvise --dir work --keep-files -q -o res"
    );
    assert_eq!((m["reps"].as_u64(), m["quick"].as_bool()), (Some(1), Some(true)));
    let traces = m["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 4);
    for t in traces {
        let name = t["trace"].as_str().unwrap();
        assert_eq!(t["bytes"].as_u64(), Some(totals[name].1), "{t}");
    }
    // The calibration the replays used: in OUTDIR, and it loads.
    emsort_io::Calibration::load(&out.join("calibration")).unwrap();
    // README: the command, a headline row per trace, the thesis' claims
    // (one round: no verdict).
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("emsort bench readers --traces --quick"), "{readme}");
    for t in TRACES {
        assert!(readme.contains(&format!("\n| {t} | {} | ", totals[t].0)), "{t}:\n{readme}");
    }
    assert!(readme.contains("| published claim | our measurement | verdict |"), "{readme}");
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| §5.")).collect();
    assert!(!rows.is_empty() && rows.iter().all(|l| l.ends_with("| one run: no verdict |")), "{readme}");
    assert!(readme.contains("at least as fast as the best fixed reader — `mixed`"), "{readme}");
    // Plots: a series per reader.
    assert_eq!(entries(&out.join("plots")), ["traces_ratio.svg", "traces_time.svg"]);
    let svg = std::fs::read_to_string(out.join("plots/traces_time.svg")).unwrap();
    let texts: Vec<&str> = svg.lines().map(str::trim).collect();
    for label in READERS.iter().chain(&TRACES) {
        assert!(texts.contains(label), "{label} missing from the chart");
    }
    // No file names this machine's directories.
    let dir = d.path().to_string_lossy().into_owned();
    for (name, bytes) in files(&out) {
        assert!(!String::from_utf8_lossy(&bytes).contains(&dir), "{name} names {dir}");
    }

    // --plot-only: the same files from raw.csv, twice (the second time
    // with --traces, which names the campaign DIR holds).
    let made = files(&out);
    for extra in [&[][..], &["--traces"]] {
        std::fs::remove_dir_all(out.join("plots")).unwrap();
        std::fs::remove_file(out.join("README.md")).unwrap();
        let o = crate::emsort()
            .current_dir(d.path())
            .args(["bench", "readers", "--plot-only", "res"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("Rewrote res/summary.csv, res/README.md and 2 plots"), "{}", stdout(&o));
        assert_eq!(files(&out), made);
    }
    // The directory holds a campaign: a second one is refused.
    let o = run(&["bench", "readers", "--traces", "--quick", "--cache", "fadvise", "-q", "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already holds"), "{}", stderr(&o));
}

#[test]
fn plot_only_redraws_the_experiments_the_same() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
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
    assert!(o.status.success(), "{}", stderr(&o));
    let made = files(&out);
    assert!(
        made.contains_key("plots/mmap_latency.svg") && made.contains_key("summary.csv"),
        "{:?}",
        made.keys()
    );
    for _ in 0..2 {
        std::fs::remove_dir_all(out.join("plots")).unwrap();
        std::fs::remove_file(out.join("summary.csv")).unwrap();
        let o = run(&["bench", "readers", "--plot-only", p(&out)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("mmap") && stdout(&o).contains("Rewrote"), "{}", stdout(&o));
        assert_eq!(files(&out), made);
    }
    // Nothing to redraw, and flags that measure, are clear errors.
    let o = run(&["bench", "readers", "--plot-only", p(d.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds no readers campaign"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--plot-only", p(&out), "--traces"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a --traces campaign"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--scale", "0.1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--traces"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--traces", "--scale", "0", "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid scale '0'"), "{}", stderr(&o));
    let o = run(&["bench", "readers", "--help"]);
    for want in ["--traces", "--plot-only <DIR>", "--scale <F>", "raw.csv", "README.md", "read_ahead_kb"] {
        assert!(stdout(&o).contains(want), "{want} missing from --help");
    }
}
