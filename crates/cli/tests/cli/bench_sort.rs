//! `emsort bench sort`: a tiny grid end to end (raw.csv rows, GNU sort rows
//! for text, machine facts, plots, emsort measured as a child process),
//! `--plot-only`, the STXXL peer (skipped cleanly when not installed; run
//! when it is, in an ignored test), and bad parameter files.

use std::path::Path;

use crate::{p, run, stderr, stdout};

/// Whether /dev/shm is tmpfs (where the CPU bound runs by default).
fn shm_is_tmpfs() -> bool {
    std::process::Command::new("stat")
        .args(["-f", "-c", "%T", "/dev/shm"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "tmpfs")
        .unwrap_or(false)
}

fn gnu_sort_available() -> bool {
    std::process::Command::new("sort").arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn tiny_grid_writes_rows_peers_machine_facts_and_plots() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let o = run(&[
        "bench",
        "sort",
        "--formats",
        "u32,lines",
        "--sizes",
        "2M",
        "-M",
        "256K,1M",
        "--fan-in",
        "2,8",
        "--threads",
        "1",
        "--reps",
        "1",
        "--cache",
        "none",
        "--no-stxxl",
        "-q",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    let header = raw.lines().next().unwrap();
    for col in [
        "tool",
        "seconds",
        "run_formation_s",
        "merge_s",
        "runs",
        "passes",
        "predicted_blocks",
        "peak_rss_bytes",
        "voluntary_cs",
        "involuntary_cs",
        "minor_faults",
        "cpu_migrations",
        "threads",
    ] {
        assert!(header.split(',').any(|c| c == col), "raw.csv lacks {col}: {header}");
    }
    let tool = |line: &str| line.split(',').next().unwrap().to_string();
    let tools: Vec<String> = raw.lines().skip(1).map(tool).collect();
    // 2 formats × 2 M × 2 d emsort runs; an I/O bound per input.
    assert_eq!(tools.iter().filter(|t| *t == "emsort").count(), 8, "{raw}");
    assert_eq!(tools.iter().filter(|t| *t == "io-bound").count(), 2, "{raw}");
    // The CPU bound at each (M, threads) of each input, on tmpfs.
    let cpu = if shm_is_tmpfs() { 4 } else { 0 };
    assert_eq!(tools.iter().filter(|t| *t == "cpu-bound").count(), cpu, "{raw}");
    if gnu_sort_available() {
        let gnu: Vec<&str> = raw.lines().filter(|l| l.starts_with("gnu-sort,lines,")).collect();
        assert_eq!(gnu.len(), 2, "{raw}");
    }
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    for key in [
        "cpu_model",
        "cores",
        "kernel",
        "fs_type",
        "command_line",
        "cache_method",
        "gnu_sort_version",
        "stxxl",
        "stxxl_driver",
        "stxxl_errors",
        "emsort_runs",
        "cpu_bound",
    ] {
        assert!(machine.get(key).is_some(), "machine.json lacks {key}");
    }
    assert_eq!(machine["stxxl_driver"], "not used: turned off");
    // emsort ran as a child process of this binary: its rows carry the
    // sort's own counts, and no harness baseline.
    let runs = machine["emsort_runs"].as_str().unwrap();
    assert!(runs.starts_with("child process: ") && runs.contains("emsort"), "{runs}");
    let header: Vec<&str> = header.split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    for line in raw.lines().skip(1).filter(|l| l.starts_with("emsort,") || l.starts_with("cpu-bound,")) {
        let f: Vec<&str> = line.split(',').collect();
        let cpu_s = f[col("user_s")].parse::<f64>().unwrap() + f[col("system_s")].parse::<f64>().unwrap();
        assert!(cpu_s > 0.0, "{line}");
        assert!(f[col("rss_before_bytes")].is_empty(), "{line}");
        assert!(f[col("peak_rss_bytes")].parse::<u64>().unwrap() > 0, "{line}");
        assert!(f[col("minor_faults")].parse::<u64>().unwrap() > 0, "{line}");
        assert!(f[col("runs")].parse::<u64>().unwrap() >= 1, "{line}");
        assert!(f[col("bytes_written")].parse::<u64>().unwrap() >= 2 << 20, "{line}");
    }
    for line in raw.lines().skip(1).filter(|l| l.starts_with("cpu-bound,")) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!((f[col("io")], f[col("cache")]), ("buffered", "none (tmpfs)"), "{line}");
    }
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let s_header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    for c in ["ratio_to_io_bound", "cpu_bound_s", "ratio_to_cpu_bound", "bound", "ratio_to_bound"] {
        assert!(s_header.contains(&c), "summary.csv lacks {c}: {summary}");
    }
    let s_col = |name: &str| s_header.iter().position(|c| *c == name).unwrap();
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("predicted_blocks = ceil(2 · N · p / B)"), "{readme}");
    assert!(readme.contains("tmpfs is not a pure CPU bound"), "{readme}");
    // Two M and two d per input: the published M-against-d conclusion, set
    // beside them; one repetition, so no verdict.
    let (_, claims) = readme.split_once("## Beside the published conclusions").expect("claims");
    assert_eq!(claims.matches("the memory M matters far more").count(), 2, "{claims}");
    assert_eq!(claims.matches("| one run: no verdict |").count(), 2, "{claims}");
    if cpu > 0 {
        assert!(machine["cpu_bound"].as_str().unwrap().starts_with("tmpfs /dev/shm"), "{machine}");
        for line in summary.lines().skip(1).filter(|l| l.starts_with("emsort,")) {
            let f: Vec<&str> = line.split(',').collect();
            let ratio: f64 = f[s_col("ratio_to_cpu_bound")].parse().unwrap();
            let (em, cb): (f64, f64) =
                (f[s_col("median_s")].parse().unwrap(), f[s_col("cpu_bound_s")].parse().unwrap());
            assert!((ratio - em / cb).abs() < 1e-9 * ratio, "{line}");
            assert!(["io-bound", "cpu-bound"].contains(&f[s_col("bound")]), "{line}");
        }
        assert!(readme.contains("## Bounds: which one binds"), "{readme}");
        assert!(readme.contains("| u32 N=2M M=256K d=2 optimal buffered t=1 |"), "{readme}");
    }
    let svgs = std::fs::read_dir(out.join("plots")).unwrap().count();
    assert!(svgs > 0);
    let text = stdout(&o);
    assert!(text.contains("I/O bound") && text.contains("lines") && text.contains("u32"), "{text}");
    assert!(std::fs::read_dir(&out).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".emsort-work")));
    std::fs::remove_dir_all(out.join("plots")).unwrap();
    let o = run(&["bench", "sort", "--plot-only", p(&out), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(out.join("plots")).unwrap().count(), svgs);
}

fn stxxl_installed() -> bool {
    Path::new("/usr/include/stxxl.h").exists() || Path::new("/usr/include/stxxl").is_dir()
}

/// Where STXXL is not installed (as in CI) the campaign says so and runs
/// everything else.
#[test]
fn stxxl_is_skipped_cleanly_when_not_installed() {
    if stxxl_installed() {
        eprintln!("STXXL is installed: see the ignored test stxxl_peer_in_a_tiny_campaign");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let o = run(&[
        "bench",
        "sort",
        "--formats",
        "u32",
        "--sizes",
        "1M",
        "-M",
        "256K",
        "--fan-in",
        "8",
        "--threads",
        "1",
        "--reps",
        "1",
        "--cache",
        "none",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no STXXL peer: not built: STXXL is not installed"), "{}", stderr(&o));
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    assert_eq!(machine["stxxl"], "not installed");
    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    assert!(!raw.contains("\nstxxl,"), "{raw}");
}

/// The STXXL peer end to end (needs libstxxl-dev and g++: `bench/setup.sh`;
/// compiling the driver takes ~20 s): STXXL rows at each (M, threads), byte
/// for byte emsort's output, the ratio in the summary and the table.
#[test]
#[ignore = "needs libstxxl-dev and g++ (bench/setup.sh); compiling the driver takes ~20 s"]
fn stxxl_peer_in_a_tiny_campaign() {
    assert!(stxxl_installed(), "run bench/setup.sh first");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let o = run(&[
        "bench",
        "sort",
        "--formats",
        "u32",
        "--sizes",
        "1M",
        "-M",
        "256K,1M",
        "--fan-in",
        "8",
        "--threads",
        "1,2",
        "--reps",
        "1",
        "--cache",
        "none",
        "-q",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    assert!(machine["stxxl_driver"].as_str().unwrap().starts_with("built: g++ -O3"), "{machine}");
    assert_eq!(machine["stxxl_errors"], serde_json::json!([]), "{machine}");
    assert!(machine["stxxl_version"].as_str().unwrap().starts_with("1."), "{machine}");
    assert!(machine["cxx_version"].as_str().unwrap().contains("g++"), "{machine}");
    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    assert_eq!(raw.lines().filter(|l| l.starts_with("stxxl,u32,")).count(), 4, "{raw}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|c| *c == "speedup_vs_stxxl").unwrap();
    let emsort: Vec<&str> = summary.lines().filter(|l| l.starts_with("emsort,")).collect();
    assert!(emsort.iter().all(|l| !l.split(',').nth(col).unwrap().is_empty()), "{summary}");
    assert!(stdout(&o).contains("STXXL"), "{}", stdout(&o));
}

#[test]
fn bad_parameter_files_and_lists_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let params = d.path().join("p.csv");
    std::fs::write(&params, "format;sizes;M;d;policies;io;reps\nu32;1M;1M;1;optimal;buffered;1\n").unwrap();
    let o = run(&["bench", "sort", "--params", p(&params), "-o", p(&d.path().join("o"))]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("p.csv:2: field 4 (d list)"), "{}", stderr(&o));
    let o = run(&["bench", "sort", "--sizes", "1Q", "-o", p(&d.path().join("o2"))]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--sizes"), "{}", stderr(&o));
    let o = run(&["bench", "sort", "--help"]);
    assert!(stdout(&o).contains("Cost model") && stdout(&o).contains("gnu-sort"), "{}", stdout(&o));
}

#[test]
fn stdio_and_baseline_runs_sit_beside_each_emsort_run() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let exe = env!("CARGO_BIN_EXE_emsort");
    let o = run(&[
        "bench",
        "sort",
        "--formats",
        "u32,lines",
        "--sizes",
        "2M",
        // Runs of M/2 merged in one pass: a file's plan (its size known)
        // and a stream's (unknown) both keep two chunk buffers.
        "-M",
        "1M",
        "--fan-in",
        "8",
        "--threads",
        "1",
        "--reps",
        "1",
        "--cache",
        "none",
        "--no-stxxl",
        "--stdio",
        "--baseline",
        exe,
        "-q",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    let header: Vec<&str> = raw.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let rows: Vec<Vec<&str>> = raw.lines().skip(1).map(|l| l.split(',').collect()).collect();
    for tool in ["emsort", "emsort-stdio", "emsort-baseline"] {
        assert_eq!(rows.iter().filter(|r| r[0] == tool).count(), 2, "{tool}: {raw}");
    }
    // From standard input to standard output the sort moves the same bytes
    // as file to file: no spool copy on either side.
    for format in ["u32", "lines"] {
        let get = |tool: &str, c: &str| -> u64 {
            let r = rows.iter().find(|r| r[0] == tool && r[1] == format).unwrap();
            r[col(c)].parse().unwrap()
        };
        for c in ["bytes_read", "bytes_written", "runs"] {
            assert_eq!(get("emsort-stdio", c), get("emsort", c), "{format} {c}: {raw}");
        }
    }
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("emsort-stdio") && readme.contains("emsort-baseline"), "{readme}");
}

/// The keys experiment on a tiny csv input: every key sort at one M, two
/// repetitions, with emsort, this binary again as the baseline, GNU sort,
/// (when installed) uutils sort and DuckDB, the CPU bound (on tmpfs) and
/// the input's I/O bound; rows with the key options, outputs checked
/// against GNU sort's; the summary's bounds and ratio to the baseline; the
/// table with the bar and the binding bound in the README and on the
/// terminal; the chart of the key sorts, listed in the README and redrawn
/// by --plot-only.
#[test]
fn keys_experiment_on_a_tiny_csv() {
    if !gnu_sort_available() {
        eprintln!("GNU sort is not installed: skipped");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let exe = env!("CARGO_BIN_EXE_emsort");
    let o = run(&[
        "bench",
        "sort",
        "--formats",
        "csv",
        "--keys",
        "all,plain",
        "--sizes",
        "300K",
        "-M",
        "16M",
        "--threads",
        "2",
        "--reps",
        "2",
        "--cache",
        "none",
        "--baseline",
        exe,
        "-q",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    let installed = |key: &str| !machine[key].as_str().unwrap().starts_with("not ");
    let (uutils, duckdb) = (installed("uutils_sort_version"), installed("duckdb_version"));
    let mut rdr = csv::Reader::from_path(out.join("raw.csv")).unwrap();
    let header = rdr.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    let labels = ["-t, -k3,3n", "-t, -k2,2 -k3,3nr", "-u", "-t, -k1,1n -u", "plain"];
    let mut tools = vec!["emsort", "emsort-baseline", "gnu-sort"];
    if uutils {
        tools.push("uutils-sort");
    }
    if duckdb {
        tools.push("duckdb");
    }
    if shm_is_tmpfs() {
        tools.push("cpu-bound");
    }
    // Per key sort, tool and repetition; the input's I/O bound per repetition.
    assert_eq!(rows.len(), 2 * labels.len() * tools.len() + 2, "{rows:?}");
    let io: Vec<&csv::StringRecord> = rows.iter().filter(|r| &r[0] == "io-bound").collect();
    assert_eq!(io.len(), 2, "{rows:?}");
    for (r, rep) in io.iter().zip(["1", "2"]) {
        assert_eq!((&r[col("format")], &r[col("experiment")], &r[col("keys")]), ("csv", "keys", ""), "{r:?}");
        assert_eq!((&r[col("rep")], &r[col("cache")], &r[col("io")]), (rep, "none", "direct"), "{r:?}");
        assert!(r[col("bytes_read")].parse::<u64>().unwrap() >= 300 << 10, "{r:?}");
    }
    for keys in labels {
        for (tool, rep) in tools.iter().flat_map(|t| [(t, "1"), (t, "2")]) {
            let r = rows
                .iter()
                .find(|r| &r[0] == *tool && &r[col("keys")] == keys && &r[col("rep")] == rep)
                .unwrap();
            assert_eq!((&r[col("format")], &r[col("experiment")]), ("csv", "keys"), "{r:?}");
            let verified = &r[col("verified")];
            let want = match *tool {
                "gnu-sort" => "reference",
                "duckdb" => "rows",
                _ => "identical",
            };
            assert_eq!(verified, want, "{tool} {keys}: {r:?}");
            assert!(r[col("seconds")].parse::<f64>().unwrap() > 0.0, "{r:?}");
            assert!(r[col("peak_rss_bytes")].parse::<u64>().unwrap() > 0, "{r:?}");
            assert_eq!(&r[col("memory")], "16777216");
        }
    }
    // emsort's summary rows: the I/O bound, the binding bound, the baseline.
    let mut rdr = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let s_header = rdr.headers().unwrap().clone();
    let s_col = |name: &str| s_header.iter().position(|c| c == name).unwrap();
    let summary: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    let num = |r: &csv::StringRecord, c: &str| -> f64 { r[s_col(c)].parse().unwrap() };
    assert!(s_header.iter().any(|c| c == "speedup_vs_duckdb"), "{s_header:?}");
    let io_median = summary.iter().find(|r| &r[0] == "io-bound").map(|r| num(r, "median_s")).unwrap();
    let emsort: Vec<&csv::StringRecord> = summary.iter().filter(|r| &r[0] == "emsort").collect();
    assert_eq!(emsort.len(), labels.len(), "{summary:?}");
    for r in emsort {
        let median = num(r, "median_s");
        assert_eq!(num(r, "io_bound_s"), 2.0 * io_median, "{r:?}");
        assert!((num(r, "ratio_to_io_bound") - median / (2.0 * io_median)).abs() < 1e-9, "{r:?}");
        let bound = &r[s_col("bound")];
        let binding = if bound == "cpu-bound" { num(r, "cpu_bound_s") } else { 2.0 * io_median };
        assert!(bound == "io-bound" || (bound == "cpu-bound" && shm_is_tmpfs()), "{r:?}");
        assert!((num(r, "ratio_to_bound") - median / binding).abs() < 1e-9, "{r:?}");
        assert!((num(r, "ratio_to_baseline") - median / num(r, "baseline_s")).abs() < 1e-9, "{r:?}");
    }
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("## Keys experiment: results"), "{readme}");
    assert!(readme.contains("### `-t, -k2,2 -k3,3nr` — csv N = 300K, M = 16M, 2 thread(s)"), "{readme}");
    assert!(readme.contains("Bar: >= 4x GNU sort: "), "{readme}");
    assert!(
        readme.contains("binds: 2 × I/O bound ") && readme.contains("Baseline: emsort-baseline "),
        "{readme}"
    );
    let text = stdout(&o);
    assert!(text.contains("Keys experiment") && text.contains("| gnu-sort |"), "{text}");
    assert!(text.contains("| emsort-baseline |") && text.contains(" binds: 2 × I/O bound "), "{text}");
    // One chart, the one the README lists.
    let svgs = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(out.join("plots"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(svgs(), ["keys_csv_300K_M16M_t2.svg"]);
    let listed: Vec<&str> =
        readme.lines().filter(|l| l.trim_start().starts_with("- `") && l.contains(".svg`")).collect();
    assert_eq!(listed.len(), 1, "{readme}");
    assert!(listed[0].contains("`keys_csv_300K_M16M_t2.svg`: keys experiment"), "{readme}");
    let svg = std::fs::read_to_string(out.join("plots/keys_csv_300K_M16M_t2.svg")).unwrap();
    for label in ["emsort", "emsort-baseline", "gnu-sort", "2 × I/O bound", "-t, -k2,2 -k3,3nr", "plain"] {
        assert!(svg.lines().any(|l| l.trim() == label), "{label} not in the chart");
    }
    std::fs::remove_dir_all(out.join("plots")).unwrap();
    let o = run(&["bench", "sort", "--plot-only", p(&out), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(svgs(), ["keys_csv_300K_M16M_t2.svg"]);
    assert!(std::fs::read_dir(&out).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".emsort-work")));
}

/// `--no-cpu-bound` leaves the CPU bound out; a `--cpu-bound-dir` that is
/// not tmpfs is refused before any run.
#[test]
fn cpu_bound_can_be_left_out_and_needs_tmpfs() {
    let d = tempfile::tempdir().unwrap();
    let args = |out: &Path| -> Vec<String> {
        let v = ["bench", "sort", "--formats", "u32", "--sizes", "256K", "-M", "64K", "--fan-in", "2"];
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        for a in ["--threads", "1", "--reps", "1", "--cache", "none", "--no-stxxl", "-q", "-o", p(out)] {
            v.push(a.to_string());
        }
        v
    };
    let mut a = args(&d.path().join("o"));
    a.push("--no-cpu-bound".into());
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let raw = std::fs::read_to_string(d.path().join("o/raw.csv")).unwrap();
    assert!(!raw.contains("\ncpu-bound,"), "{raw}");
    let machine = std::fs::read_to_string(d.path().join("o/machine.json")).unwrap();
    assert!(machine.contains("\"cpu_bound\": \"not used: turned off\""), "{machine}");
    let mut a = args(&d.path().join("o2"));
    a.extend(["--cpu-bound-dir".to_string(), p(d.path()).to_string()]);
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    if std::process::Command::new("stat")
        .args(["-f", "-c", "%T", p(d.path())])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "tmpfs")
    {
        return; // the test's temporary directory is itself on tmpfs
    }
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the CPU bound's directory:") && stderr(&o).contains("not tmpfs"),
        "{}",
        stderr(&o)
    );
}

/// Key sorts without the csv format, and unknown key sorts, are refused.
#[test]
fn keys_need_the_csv_format() {
    let d = tempfile::tempdir().unwrap();
    let o = run(&["bench", "sort", "--formats", "lines", "--keys", "u", "-o", p(&d.path().join("o"))]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("key sorts need a data set"), "{}", stderr(&o));
    let o = run(&["bench", "sort", "--formats", "csv", "--keys", "k9", "-o", p(&d.path().join("o2"))]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown key sort 'k9'"), "{}", stderr(&o));
}

/// The machine-profile matrix end to end at a tiny size: root, tmpfs, xfs,
/// btrfs and the lowest SIMD level in one command; each profile measured
/// (or, without root, loop devices or mkfs, skipped with the reason), the
/// emsort runs without a tuning flag beside `--io` kinds, the peers and
/// both bounds as rows of the merged raw.csv with their profile, outputs
/// verified, each profile's facts recorded, the bars judged in the README,
/// and nothing left mounted or attached.
#[test]
fn machine_profile_matrix_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let params = d.path().join("profiles.csv");
    std::fs::write(
        &params,
        "format;sizes;M list;d list;policies;io kinds;reps;threads;keys\n\
         u32,lines;1M;256K;default;default;default,direct,buffered;1;1\n\
         csv;512K;256K;default;default;default,direct;1;1;k3n\n",
    )
    .unwrap();
    let scalar_profile = emsort_sort::simd::detected() > emsort_sort::simd::Level::Scalar;
    let profiles = if scalar_profile { "root,tmpfs,xfs,btrfs,simd-scalar" } else { "root,tmpfs,xfs,btrfs" };
    let o = run(&[
        "bench",
        "sort",
        "--params",
        p(&params),
        "--profiles",
        profiles,
        "--cache",
        "none",
        "--no-stxxl",
        "--no-uutils",
        "--no-duckdb",
        "-q",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Machine-profile matrix:") && text.contains("Issue 38's bars"), "{text}");
    let profiles_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("profiles.json")).unwrap()).unwrap();
    let records = profiles_json.as_array().unwrap();
    let status = |name: &str| -> String {
        records.iter().find(|r| r["name"] == name).unwrap()["status"].as_str().unwrap().to_string()
    };
    let mut measured = vec!["root"];
    if scalar_profile {
        measured.push("simd-scalar");
    }
    let root_user = rustix::process::geteuid().is_root();
    for (name, fs) in [("tmpfs", "tmpfs"), ("xfs", "xfs"), ("btrfs", "btrfs")] {
        let s = status(name);
        let can = root_user
            && (name == "tmpfs"
                || std::process::Command::new(format!("mkfs.{name}"))
                    .arg(if name == "xfs" { "-V" } else { "--version" })
                    .output()
                    .is_ok_and(|o| o.status.success()));
        if can {
            assert_eq!(s, "measured", "{name}: {profiles_json}");
            let m: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join(name).join("machine.json")).unwrap())
                    .unwrap();
            assert_eq!(m["profile"]["mount"]["fs_type"], fs, "{name}: {m}");
            assert!(!m["profile"]["mount"]["mount_options"].as_str().unwrap().is_empty(), "{m}");
            measured.push(name);
        } else {
            assert!(s.starts_with("skipped: "), "{name}: {s}");
        }
    }
    // The merged raw.csv: a profile column, every tool's rows per measured profile.
    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    let mut lines = raw.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..2], ["profile", "tool"], "{raw}");
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let rows: Vec<Vec<String>> = {
        let mut r = csv::Reader::from_path(out.join("raw.csv")).unwrap();
        r.records().map(|x| x.unwrap().iter().map(String::from).collect()).collect()
    };
    let fio = std::process::Command::new("fio").arg("--version").output().is_ok_and(|o| o.status.success());
    for &profile in &measured {
        let of =
            |tool: &str| rows.iter().filter(move |r| r[0] == profile && r[1] == tool).collect::<Vec<_>>();
        let emsort = of("emsort");
        // A forced SIMD level changes only the number formats: its profile runs only them.
        let simd = profile.starts_with("simd-");
        if simd {
            assert!(emsort.iter().all(|r| r[col("format")] == "u32"), "{profile}: {raw}");
            assert!(of("gnu-sort").is_empty() && of("io-bound").len() == 1, "{profile}: {raw}");
            if shm_is_tmpfs() {
                assert_eq!(of("cpu-bound").len(), 1, "{profile}: {raw}");
            }
        }
        let formats: &[&str] = if simd { &["u32"] } else { &["u32", "lines"] };
        for &format in formats {
            let mut io: Vec<&str> =
                emsort.iter().filter(|r| r[col("format")] == format).map(|r| r[col("io")].as_str()).collect();
            io.sort_unstable();
            assert_eq!(io, ["buffered", "default", "direct"], "{profile} {format}: {raw}");
        }
        // The run without a tuning flag says what it chose; the SIMD level is the profile's.
        for r in emsort.iter().filter(|r| r[col("io")] == "default") {
            let note = &r[col("note")];
            assert!(note.contains("streams "), "{profile}: {note}");
            if profile == "simd-scalar" {
                assert!(note.contains("simd scalar"), "{profile}: {note}");
            }
        }
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(profile).join("machine.json")).unwrap())
                .unwrap();
        assert!(m["profile"]["cpu_model"].is_string() || m["profile"]["cpu_model"].is_null(), "{m}");
        if fio {
            let dev = &m["profile"]["device"];
            assert!(dev["read_latency_qd1_ms"].as_f64().unwrap() > 0.0, "{profile}: {m}");
            assert!(dev["write_bandwidth_qd32"].as_f64().unwrap() > 0.0, "{profile}: {m}");
        }
        if simd {
            continue;
        }
        // The keys experiment: emsort as a user runs it (io empty), and with --io direct.
        let keys: Vec<_> = emsort.iter().filter(|r| r[col("experiment")] == "keys").collect();
        let mut io: Vec<&str> = keys.iter().map(|r| r[col("io")].as_str()).collect();
        io.sort_unstable();
        assert_eq!(io, ["", "direct"], "{profile}: {raw}");
        if gnu_sort_available() {
            assert!(keys.iter().all(|k| k[col("verified")] == "identical"), "{profile}: {raw}");
            assert_eq!(of("gnu-sort").len(), 2, "lines and csv -k3,3n on {profile}: {raw}");
        }
        let io_bound = of("io-bound");
        assert_eq!(io_bound.len(), 3, "u32, lines and csv on {profile}: {raw}");
        let want = if fio { "fio" } else { "direct" };
        assert!(io_bound.iter().all(|r| r[col("io")] == want), "{profile}: {raw}");
        if shm_is_tmpfs() {
            assert_eq!(of("cpu-bound").len(), 3, "{profile}: {raw}");
        }
    }
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.starts_with("profile,tool,"), "{summary}");
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    for profile in &measured {
        assert!(readme.contains(&format!("\n### {profile}\n")), "{readme}");
        assert!(out.join("plots").join(format!("matrix_{profile}.svg")).exists(), "{profile}");
    }
    assert!(
        readme.contains("default / fastest --io kind")
            && readme.contains("default / max(2 × I/O, CPU bound)")
    );
    // Nothing left: no mount, no loop device on an image, no work directory.
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mountinfo.contains(p(d.path())) && !mountinfo.contains("emsort-matrix"), "{mountinfo}");
    let losetup = std::process::Command::new("losetup").args(["--list", "--noheadings"]).output();
    if let Ok(l) = losetup {
        assert!(!String::from_utf8_lossy(&l.stdout).contains(p(d.path())));
    }
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".emsort-matrix")), "{left:?}");
}
