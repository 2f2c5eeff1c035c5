//! `emsort bench srm`: the quick grid end to end (every file, both methods
//! in the table, every output verified, the work files gone), `--plot-only`,
//! and a bad parameter file.

use crate::{entries, p, run, stderr, stdout};

/// The fields of a CSV line (quoted fields may hold commas: `"60M,1ms"`).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn quick_grid_writes_the_tables_plots_and_verified_rows() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let work = d.path().join("work");
    let o = run(&["bench", "srm", "--quick", "--cache", "none", "-q", "-o", p(&out), "--dir", p(&work)]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["raw.csv", "summary.csv", "table.md", "machine.json", "merge-time-vs-n.svg", "d-sweep.svg"] {
        assert!(out.join(f).is_file(), "{f} missing: {:?}", entries(&out));
    }
    assert!(entries(&work).is_empty(), "work files left: {:?}", entries(&work));

    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    let mut lines = raw.lines();
    let header = fields(lines.next().unwrap());
    let col = |name: &str| {
        header.iter().position(|c| *c == name).unwrap_or_else(|| panic!("no {name}: {header:?}"))
    };
    let rows: Vec<Vec<String>> = lines.map(fields).collect();
    assert!(rows.len() >= 8, "{raw}");
    let (method, verified, nu, runs) = (col("method"), col("verified"), col("nu"), col("runs"));
    assert!(rows.iter().all(|r| r[verified] == "true"), "every output verified: {raw}");
    assert!(rows.iter().any(|r| r[method] == "dsm") && rows.iter().any(|r| r[method] == "srm"), "{raw}");
    assert!(rows.iter().filter(|r| r[method] == "srm").all(|r| !r[nu].is_empty()), "SRM's ν: {raw}");
    assert!(rows.iter().all(|r| r[runs].parse::<u64>().unwrap() >= 2), "more than one run: {raw}");
    for c in [
        "passes",
        "merge_orders",
        "merge_s",
        "merge_mib_s",
        "parallel_reads",
        "flushes",
        "total_s",
        "peak_rss_bytes",
        "emulate",
        "disks",
    ] {
        col(c);
    }

    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(table.contains("| N | U | DSM passes | DSM R | DSM merge s | DSM MiB/s | SRM passes"), "{table}");
    assert!(table.contains("SRM ν") && table.contains("SRM/DSM"), "{table}");
    assert!(table.contains("## M = 1M, D = 3, B = 16K, rec:104:0:8, disks as they are"), "{table}");
    assert!(
        table
            .contains("## D sweep: N = 2e4, M = 1M, B = 16K, rec:104:0:8, emulated disks of 200M,100us each"),
        "{table}"
    );
    // Both methods measured in every row: no empty cell.
    let (tables, claims) = table.split_once("## Beside Barve & Vitter's conclusions").expect("claims");
    assert!(!tables.contains('–'), "{table}");
    assert!(
        claims.contains("SRM merges in fewer passes than DSM") && claims.contains("of 5 settings both ran"),
        "{claims}"
    );
    // One repetition: the merge times give no verdict (the passes, counts, do).
    let times = claims.lines().find(|l| l.contains("SRM's merge takes less time")).expect("{claims}");
    assert!(times.ends_with("| one run: no verdict |"), "{claims}");
    // The README: the command, the files, the tables and the claims.
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.starts_with(
            "# emsort SRM vs DSM campaign (experiment 3: Barve & Vitter's SRM against DSM)\n\nCommand: `"
        ),
        "{readme}"
    );
    assert!(readme.contains(claims), "{readme}");

    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    for key in [
        "cpu_model",
        "kernel",
        "fs_type",
        "read_ahead_kb",
        "cache_method",
        "command_line",
        "disk_dirs",
        "seed",
    ] {
        assert!(machine.get(key).is_some(), "machine.json lacks {key}: {machine}");
    }
    assert!(machine["emsort_runs"].as_str().unwrap().starts_with("child process: "));
    // Recorded paths name no absolute path of the machine (issue 19).
    for d in machine["disk_dirs"].as_array().unwrap() {
        assert!(!d.as_str().unwrap().starts_with('/'), "an absolute disk directory: {machine}");
    }

    let text = stdout(&o);
    assert!(text.contains("SRM campaign:") && text.contains("outputs verified"), "{text}");
    assert!(text.contains("SRM merge s") && text.contains("D sweep"), "{text}");

    // The reports again from raw.csv alone.
    std::fs::remove_file(out.join("table.md")).unwrap();
    let o = run(&["bench", "srm", "--plot-only", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("table.md").is_file());
    assert!(stdout(&o).contains("Rewrote"), "{}", stdout(&o));

    // The output directory is not reused.
    let o = run(&["bench", "srm", "--quick", "--cache", "none", "-q", "-o", p(&out), "--dir", p(&work)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already holds"), "{}", stderr(&o));
}

#[test]
fn a_bad_parameter_file_names_its_line() {
    let d = tempfile::tempdir().unwrap();
    let params = d.path().join("p.csv");
    std::fs::write(
        &params,
        "format;n;memory;block;disks;methods;emulate;reps\nrec:104:0:8;1e4;1M;16K;3;dsm,srm;60M;1\n",
    )
    .unwrap();
    let o = run(&["bench", "srm", "--params", p(&params), "-o", p(&d.path().join("o"))]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("p.csv:2: emulate: invalid disk model '60M'"), "{e}");
}
