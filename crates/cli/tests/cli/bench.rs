//! `emsort bench streams` and `emsort demo` wiring: a tiny campaign end to
//! end, `--plot-only`, and bad parameter files.

use crate::{p, run, stderr, stdout};

#[test]
fn tiny_campaign_writes_csv_machine_facts_and_plots() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("res");
    let o = run(&[
        "bench",
        "streams",
        "--kinds",
        "syscall,buffered,mmap,uring",
        "-k",
        "1,2",
        "-n",
        "1e3,1e4",
        "-B",
        "4K,64K",
        "--reps",
        "1",
        "--cache",
        "none",
        "-q",
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let raw = std::fs::read_to_string(out.join("raw.csv")).unwrap();
    // syscall: 2 ops × 2 k × 2 N; the three others also × 2 B.
    assert_eq!(raw.lines().count(), 1 + 8 + 3 * 16, "{raw}");
    assert!(raw.lines().next().unwrap().starts_with("kind,op,k,n,b_requested,b_effective,rep,seconds"));
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    for key in ["cpu_model", "cores", "kernel", "fs_type", "read_ahead_kb", "command_line", "cache_method"] {
        assert!(machine.get(key).is_some(), "machine.json lacks {key}");
    }
    assert!(out.join("summary.csv").exists());
    let svgs = std::fs::read_dir(out.join("plots")).unwrap().count();
    assert!(svgs > 0);
    assert!(stdout(&o).contains("buffered"), "{}", stdout(&o));
    // The README: the files, then the results and the published conclusions
    // set beside them (the syscall ratio, mmap's windows against buffers
    // of 4K and 64K, B from 4K up): one repetition, so no verdict.
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    let (_, results) = readme.split_once("## Results").expect("results in the README");
    let (_, claims) = results.split_once("## Beside the published conclusions").expect("claims");
    for want in [
        "100× slower than an own buffer (read)",
        "mmap with tiny windows",
        "window and buffer 64K",
        "(write)",
    ] {
        assert!(claims.contains(want), "{want}: {claims}");
    }
    let rows: Vec<&str> = claims.lines().filter(|l| l.starts_with("| INFO-H-417")).collect();
    assert!(!rows.is_empty() && rows.iter().all(|l| l.ends_with("| one run: no verdict |")), "{claims}");
    // The work directory is gone; redrawing from raw.csv works.
    assert!(std::fs::read_dir(&out).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".emsort-work")));
    std::fs::remove_dir_all(out.join("plots")).unwrap();
    let o = run(&["bench", "streams", "--plot-only", p(&out), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(out.join("plots")).unwrap().count(), svgs);
}

#[test]
fn a_bad_params_file_is_named_with_its_line() {
    let d = tempfile::tempdir().unwrap();
    let params = d.path().join("camp.csv");
    std::fs::write(&params, "kind;ops;N list;k list;B range;reps\nbuffered;read;1e3;1;4..3;1\n").unwrap();
    let o = run(&["bench", "streams", "--params", p(&params), "-o", p(&d.path().join("r")), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("camp.csv:2"), "{e}");
    let o = run(&["bench", "streams", "--params", p(&d.path().join("missing.csv")), "-q"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("missing.csv"), "{}", stderr(&o));
}
