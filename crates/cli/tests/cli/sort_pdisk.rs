//! `emsort sort --method dsm|srm --disks …`: the same output as the plain
//! sort, the parallel-disk statistics, no file left on the disks, and clear
//! refusals (disks without a method, a bad emulated disk, a missing disk).

use std::path::PathBuf;

use crate::{entries, p, run, stderr};

const REC: &str = "rec:104:0:8";

/// A test directory with three disk directories `a`, `b`, `c` and an input
/// of 20 000 records of 104 bytes (about 2 MiB: 8 runs and more at -S 256K).
fn setup() -> (tempfile::TempDir, Vec<PathBuf>, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let disks: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| d.path().join(n)).collect();
    for x in &disks {
        std::fs::create_dir(x).unwrap();
    }
    let input = d.path().join("in");
    let o = run(&["gen", "-q", "-f", REC, "-n", "20000", "-o", p(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    (d, disks, input)
}

fn disk_list(disks: &[PathBuf]) -> String {
    disks.iter().map(|d| p(d)).collect::<Vec<_>>().join(",")
}

#[test]
fn dsm_and_srm_sort_exactly_like_the_plain_sort() {
    let (d, disks, input) = setup();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let plain = d.path().join("plain");
    let o = run(&[
        "sort",
        "-q",
        "--format",
        REC,
        "-S",
        "256K",
        "--block-size",
        "4K",
        "-T",
        p(&tmp),
        p(&input),
        "-o",
        p(&plain),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = std::fs::read(&plain).unwrap();
    let list = disk_list(&disks);
    for (method, extra) in [("srm", None), ("dsm", None), ("srm", Some("400M,50us"))] {
        let out = d.path().join(format!("out-{method}"));
        let stats = d.path().join(format!("{method}.json"));
        let mut args =
            vec!["sort", "-q", "--method", method, "--disks", &list, "-S", "256K", "--block-size", "4K"];
        if let Some(e) = extra {
            args.extend(["--emulate-disk", e]);
        }
        args.extend(["--format", REC, "--stats", p(&stats), p(&input), "-o", p(&out)]);
        let o = run(&args);
        assert!(o.status.success(), "{method}: {}", stderr(&o));
        assert!(
            std::fs::read(&out).unwrap() == expected,
            "{method} {extra:?}: output differs from the plain sort's"
        );
        for x in &disks {
            assert!(entries(x).is_empty(), "{method}: left behind in {}: {:?}", x.display(), entries(x));
        }
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let pd = &json["parallel_disks"];
        for key in [
            "method",
            "disks",
            "block_size",
            "seed",
            "start_disks_drawn",
            "runs",
            "passes",
            "merge_orders",
            "parallel_reads",
            "nu",
            "flushes",
            "merge_seconds",
            "merge_bytes_read",
            "merge_bytes_written",
            "merge_rate",
            "forecast_in_memory",
            "emulated_disk",
        ] {
            assert!(pd.get(key).is_some(), "{method}: parallel_disks lacks {key}: {json}");
        }
        assert_eq!(pd["method"], method);
        assert_eq!(pd["disks"], 3);
        assert_eq!(pd["block_size"], 4096);
        assert_eq!(pd["seed"], 42, "the documented default seed");
        assert!(pd["runs"].as_u64().unwrap() > 2, "{json}");
        let passes = pd["passes"].as_u64().unwrap() as usize;
        for per_pass in ["merge_orders", "parallel_reads", "nu", "flushes"] {
            assert_eq!(pd[per_pass].as_array().unwrap().len(), passes, "{per_pass}: {json}");
        }
        assert!(pd["merge_rate"].as_f64().unwrap() > 0.0);
        match extra {
            Some(e) => assert_eq!(pd["emulated_disk"], *e),
            None => assert!(pd["emulated_disk"].is_null()),
        }
    }
    // The plain sort reports no parallel disks.
    let stats = d.path().join("plain.json");
    let o = run(&[
        "sort",
        "-q",
        "--format",
        REC,
        "-S",
        "256K",
        "-T",
        p(&tmp),
        "--stats",
        p(&stats),
        p(&input),
        "-o",
        p(&plain),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert!(json.get("parallel_disks").is_none_or(|v| v.is_null()), "{json}");
}

#[test]
fn the_seed_draws_the_same_start_disks() {
    let (d, disks, input) = setup();
    let list = disk_list(&disks);
    let mut reads = Vec::new();
    for (i, seed) in ["7", "7"].iter().enumerate() {
        let stats = d.path().join(format!("{i}.json"));
        let out = d.path().join("out");
        let o = run(&[
            "sort",
            "-q",
            "--method",
            "srm",
            "--disks",
            &list,
            "--seed",
            seed,
            "-S",
            "256K",
            "--block-size",
            "4K",
            "--format",
            REC,
            "--stats",
            p(&stats),
            p(&input),
            "-o",
            p(&out),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        assert_eq!(json["parallel_disks"]["seed"], 7);
        reads.push(json["parallel_disks"]["parallel_reads"].clone());
    }
    assert_eq!(reads[0], reads[1], "same seed, same start disks, same parallel reads");
}

#[test]
fn disk_options_without_a_disk_method_are_refused() {
    let (d, disks, input) = setup();
    let out = d.path().join("out");
    for extra in
        [vec!["--disks", p(&disks[0])], vec!["--emulate-disk", "60M,1ms"], vec!["--srm-max-order", "4"]]
    {
        let mut args = vec!["sort", "--format", REC];
        args.extend(&extra);
        args.extend([p(&input), "-o", p(&out)]);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let e = stderr(&o);
        assert!(e.contains(extra[0]) && e.contains("--method"), "{extra:?}: {e}");
        assert!(!out.exists());
    }
    let o =
        run(&["sort", "--method", "dsm", "--srm-max-order", "4", "--format", REC, p(&input), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--srm-max-order needs --method srm"), "{}", stderr(&o));
}

#[test]
fn an_srm_merge_order_cap_below_two_is_refused() {
    let (d, disks, input) = setup();
    let out = d.path().join("out");
    for cap in ["0", "1"] {
        let list = disk_list(&disks);
        let o = run(&[
            "sort",
            "--method",
            "srm",
            "--disks",
            &list,
            "--srm-max-order",
            cap,
            "--format",
            REC,
            p(&input),
            "-o",
            p(&out),
        ]);
        assert_eq!(o.status.code(), Some(2), "{cap}");
        assert!(stderr(&o).contains("must be at least 2"), "{cap}: {}", stderr(&o));
        assert!(!out.exists());
        assert!(disks.iter().all(|x| entries(x).is_empty()));
    }
}

#[test]
fn a_bad_emulated_disk_is_named() {
    let (d, disks, input) = setup();
    let out = d.path().join("out");
    for bad in ["60M", "fast,1ms", "60M,soon", "0,1ms"] {
        let o = run(&[
            "sort",
            "--method",
            "srm",
            "--disks",
            &disk_list(&disks),
            "--emulate-disk",
            bad,
            "--format",
            REC,
            p(&input),
            "-o",
            p(&out),
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains(&format!("'{bad}'")), "{bad}: {}", stderr(&o));
        assert!(!out.exists());
    }
}

#[test]
fn a_missing_disk_is_named_and_no_output_appears() {
    let (d, disks, input) = setup();
    let out = d.path().join("out");
    let missing = d.path().join("no-such-disk");
    let file = d.path().join("in");
    for (bad, what) in [(&missing, "No such file"), (&file, "not a directory")] {
        let list = format!("{},{}", p(&disks[0]), p(bad));
        let o =
            run(&["sort", "--method", "dsm", "--disks", &list, "--format", REC, p(&input), "-o", p(&out)]);
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert!(e.contains(p(bad)) && e.contains(what), "{e}");
        assert!(!out.exists());
        assert!(entries(&disks[0]).is_empty());
    }
    // Repeated --disks add up, like the comma-separated list.
    let o = run(&[
        "sort",
        "-q",
        "--method",
        "srm",
        "--disks",
        p(&disks[0]),
        "--disks",
        &format!("{},{}", p(&disks[1]), p(&disks[2])),
        "-S",
        "256K",
        "--block-size",
        "4K",
        "--format",
        REC,
        "--stats",
        p(&d.path().join("s.json")),
        p(&input),
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(json["parallel_disks"]["disks"], 3);
}
