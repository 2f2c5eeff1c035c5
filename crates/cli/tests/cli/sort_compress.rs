//! `emsort sort --compress`: runs compressed in-process give GNU sort's
//! output, the choice is reported, and a damaged run is an error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{emsort, entries, p, run, setup, stderr, wait_for_runs};

/// `n` CSV lines: a number, a word, a line number.
fn csv_lines(n: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut text = Vec::new();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.extend_from_slice(
            format!("{},w{},{}.{}\n", x % 1000, x % 37, (x >> 24) % 100_000, i % 10).as_bytes(),
        );
    }
    text
}

fn gnu(args: &[&str], input: &Path) -> Vec<u8> {
    let o = Command::new("sort").env("LC_ALL", "C").args(args).arg(input).output().unwrap();
    assert!(o.status.success());
    o.stdout
}

fn stats_of(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every codec, forced, and `auto` (whatever it decides here), with keys,
/// `-u`, `-s` and `-r`, in a budget that makes many runs and several
/// merge levels: GNU sort's output byte for byte; `--stats` says what the
/// runs got and the bytes their files took; nothing is left in `-T`.
#[test]
fn compressed_runs_give_gnu_sorts_output() {
    let (d, tmp) = setup();
    let input = d.path().join("in.csv");
    std::fs::write(&input, csv_lines(60_000, 5)).unwrap();
    let out = d.path().join("out");
    let stats = d.path().join("stats.json");
    for keys in [&["-t,", "-k3,3n"][..], &["-t,", "-k2,2", "-u"], &["-t,", "-s", "-k1,1n"], &["-r"]] {
        let want = gnu(keys, &input);
        for c in ["lz4", "zstd", "zstd:5", "auto", "none"] {
            let opt = format!("--compress={c}");
            let mut args = vec!["sort", "-q", "-S", "200K", "--batch-size=3", "-T", p(&tmp), &opt];
            args.extend_from_slice(keys);
            args.extend_from_slice(&["--stats", p(&stats), p(&input), "-o", p(&out)]);
            let o = run(&args);
            assert!(o.status.success(), "{c} {keys:?}: {}", stderr(&o));
            assert!(std::fs::read(&out).unwrap() == want, "{c} {keys:?}: differs from GNU sort");
            assert!(entries(&tmp).is_empty(), "{c}: left behind {:?}", entries(&tmp));
            let s = stats_of(&stats);
            assert!(s["merge_levels"].as_u64().unwrap() >= 2, "{c}: {s}");
            let comp = &s["compression"];
            match c {
                "none" => assert!(comp.is_null(), "{comp}"),
                "auto" => {
                    assert!(["none", "lz4", "zstd:1"].contains(&comp["chosen"].as_str().unwrap()), "{comp}")
                }
                _ => {
                    let chosen = if c == "zstd" { "zstd:1" } else { c };
                    assert_eq!(comp["chosen"], chosen, "{comp}");
                    let (raw, stored) =
                        (comp["raw_written"].as_u64().unwrap(), comp["stored_written"].as_u64().unwrap());
                    assert!(stored < raw && raw > 0, "{comp}");
                    assert_eq!(comp["stored_read"], comp["stored_written"]);
                }
            }
        }
    }
}

/// A budget below what the plan needs grows, as GNU's `-S` does, with
/// the frames counted: `-S 1K` with a codec still gives GNU's output.
#[test]
fn a_tiny_budget_grows_for_compressed_runs() {
    let (d, tmp) = setup();
    let input = d.path().join("in.csv");
    std::fs::write(&input, csv_lines(30_000, 17)).unwrap();
    let (out, stats) = (d.path().join("out"), d.path().join("stats.json"));
    for c in ["lz4", "zstd:2"] {
        let opt = format!("--compress={c}");
        let o = run(&[
            "sort",
            "-q",
            "-S",
            "1K",
            "-t,",
            "-k2,2",
            "-k1,1n",
            "-T",
            p(&tmp),
            &opt,
            "--stats",
            p(&stats),
            p(&input),
            "-o",
            p(&out),
        ]);
        assert!(o.status.success(), "{c}: {}", stderr(&o));
        assert!(
            std::fs::read(&out).unwrap() == gnu(&["-t,", "-k2,2", "-k1,1n"], &input),
            "{c}: differs from GNU sort"
        );
        let s = stats_of(&stats);
        assert!(s["runs"].as_u64().unwrap() > 10, "{s}");
        assert_eq!(s["compression"]["chosen"], c);
        assert!(entries(&tmp).is_empty());
    }
}

/// `--compress=gzip` is GNU's abbreviation of `--compress-program=gzip`;
/// a codec beside a different program, a bad level, and a codec with
/// DSM/SRM are refused with exit 2 before anything is written.
#[test]
fn compress_words_programs_and_refusals() {
    let (d, tmp) = setup();
    let input = d.path().join("in.csv");
    std::fs::write(&input, csv_lines(20_000, 9)).unwrap();
    let (out, stats) = (d.path().join("out"), d.path().join("stats.json"));
    let o = run(&[
        "sort",
        "-q",
        "-S",
        "100K",
        "-T",
        p(&tmp),
        "--compress=gzip",
        "--stats",
        p(&stats),
        p(&input),
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), gnu(&[], &input));
    assert_eq!(stats_of(&stats)["compression"]["chosen"], "program gzip");
    std::fs::remove_file(&out).unwrap();
    for (args, says) in [
        (&["--compress=lz4", "--compress-program=gzip"][..], "--compress=lz4 and --compress-program=gzip"),
        (&["--compress=zstd:99"], "invalid zstd level '99'"),
        (&["--compress=zstd:x"], "invalid zstd level 'x'"),
        (
            &["--compress=lz4", "--method=srm", "--disks", p(&tmp)],
            "compressed runs (--compress=lz4) need the plain merge",
        ),
    ] {
        let mut a = vec!["sort", "-q", "-T", p(&tmp)];
        a.extend_from_slice(args);
        a.extend_from_slice(&[p(&input), "-o", p(&out)]);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!out.exists());
    }
}

/// The sort's temporary directory in `tmp` and its runs, in order.
fn runs_in(tmp: &Path) -> Vec<PathBuf> {
    let dir = tmp.join(&entries(tmp)[0]);
    entries(&dir).iter().filter(|r| r.starts_with("run-")).map(|r| dir.join(r)).collect()
}

/// A compressed run damaged (one byte changed) or cut short on disk while
/// the sort waits for the rest of its input — fed through a FIFO — makes
/// the sort fail with exit 2 and a message naming the run, writing no
/// output and leaving nothing in `-T`: never a wrong result.
#[test]
fn a_damaged_or_cut_run_is_an_error_naming_it() {
    use std::os::unix::fs::FileExt;
    for (codec, damage) in [("lz4", "flip"), ("zstd", "flip"), ("lz4", "cut"), ("zstd:3", "cut")] {
        let (d, tmp) = setup();
        let fifo = d.path().join("in.fifo");
        let c = std::ffi::CString::new(p(&fifo)).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let out = d.path().join("out");
        let opt = format!("--compress={codec}");
        let child = emsort()
            .args(["sort", "-q", "-S", "256K", "-T", p(&tmp), &opt, "-t,", "-k3,3n", p(&fifo), "-o", p(&out)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        w.write_all(&csv_lines(60_000, 3)).unwrap();
        // Runs are written one after the other: the third begun, the first is whole
        // (the directory holds its marker file besides).
        assert!(wait_for_runs(&tmp, 4) >= 4, "{codec}: no runs");
        let first = runs_in(&tmp)[0].clone();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&first).unwrap();
        let len = f.metadata().unwrap().len();
        if damage == "flip" {
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, len / 2).unwrap();
            f.write_all_at(&[b[0] ^ 0x10], len / 2).unwrap();
        } else {
            f.set_len(len / 2 + 3).unwrap();
        }
        drop(f);
        drop(w);
        let o = child.wait_with_output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{codec} {damage}: {e}");
        assert!(e.contains(p(&first)), "{codec} {damage}: {e}");
        if damage == "flip" {
            assert!(e.contains("the compressed temporary run is damaged"), "{codec}: {e}");
        }
        assert!(!out.exists(), "{codec} {damage}: an output was written");
        assert!(entries(&tmp).is_empty(), "{codec} {damage}: left behind {:?}", entries(&tmp));
    }
}
