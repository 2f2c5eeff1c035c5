//! `emsort gen` and `emsort verify` against oracles (`slice::sort`,
//! `LC_ALL=C sort`), and their error paths.

use std::process::Command;

use crate::{emsort, entries, p, run, stderr, stdout};

#[test]
fn gen_is_deterministic_and_sized() {
    let d = tempfile::tempdir().unwrap();
    let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
    for (f, seed) in [(&a, "1"), (&b, "1"), (&c, "2")] {
        let o = run(&["gen", "--format", "u64", "--count", "1e5", "--seed", seed, "-q", "-o", p(f)]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (a, b, c) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), std::fs::read(c).unwrap());
    assert_eq!(a.len(), 800_000);
    assert_eq!(a, b);
    assert_ne!(a, c);
    let l = d.path().join("l");
    let o = run(&["gen", "--format", "lines", "--bytes", "100K", "--line-len", "0..20", "-q", "-o", p(&l)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(&l).unwrap().len(), 102_400);
}

/// `--format csv`: deterministic typed lines, by count or about a size;
/// `verify --format csv` is refused with a pointer to `lines`.
#[test]
fn gen_csv_makes_typed_lines_and_verify_refuses_csv() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.csv"), d.path().join("b.csv"));
    for f in [&a, &b] {
        let o = run(&["gen", "--format", "csv", "--count", "1000", "-q", "-o", p(f)]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let text = std::fs::read_to_string(&a).unwrap();
    assert_eq!(text, std::fs::read_to_string(&b).unwrap());
    assert_eq!(text.lines().count(), 1000);
    assert!(text.lines().all(|l| l.split(',').count() == 4), "{text}");
    let c = d.path().join("c.csv");
    let o = run(&["gen", "-f", "csv", "--bytes", "1M", "-q", "-o", p(&c)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let len = std::fs::metadata(&c).unwrap().len() as f64;
    assert!((len / (1 << 20) as f64 - 1.0).abs() < 0.01, "{len}");
    let o = run(&["gen", "-f", "csv", "-o", p(&c)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--count LINES or --bytes SIZE"), "{}", stderr(&o));
    let o = run(&["gen", "-f", "csv", "--count", "10", "--dist", "zipf", "-o", p(&c)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--dist zipf does not apply"), "{}", stderr(&o));
    let o = run(&["verify", "--format", "csv", p(&a)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("check whole-line order with --format lines"), "{}", stderr(&o));
    let o = run(&["verify", "--format", "lines", "-q", p(&a)]);
    assert_eq!(o.status.code(), Some(1), "unsorted csv lines are lines out of order");
}

#[test]
fn verify_accepts_a_sorted_permutation_and_names_the_first_disorder() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.u32");
    let o = run(&["gen", "--count", "50000", "-q", "-o", p(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&input).unwrap();
    let mut v: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap())).collect();
    v.sort_unstable(); // the oracle
    let sorted = d.path().join("sorted.u32");
    std::fs::write(&sorted, v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>()).unwrap();
    let o = run(&["verify", p(&sorted), "--input", p(&input)]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("OK, 50000 items"), "{}", stdout(&o));
    // Reversed order fails the ascending check and passes --reverse.
    v.reverse();
    let rev = d.path().join("rev.u32");
    std::fs::write(&rev, v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>()).unwrap();
    assert!(run(&["verify", "-r", p(&rev), "--input", p(&input)]).status.success());
    let o = run(&["verify", p(&rev)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("NOT in ascending order: item 1"), "{}", stdout(&o));
    // A changed value keeps the order but breaks the multiset.
    v.reverse();
    v[0] = 0;
    let changed = d.path().join("changed.u32");
    std::fs::write(&changed, v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>()).unwrap();
    let o = run(&["verify", p(&changed), "--input", p(&input)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("does NOT hold the same items"), "{}", stdout(&o));
}

#[test]
fn every_format_and_distribution_round_trips_through_an_oracle_sort() {
    let d = tempfile::tempdir().unwrap();
    for f in ["u32", "i32", "u64", "i64", "f32", "f64", "rec:100:0:10", "rec:12:2:3"] {
        for dist in ["uniform", "sorted", "reverse", "few-distinct", "zipf"] {
            let input = d.path().join("in");
            let o = run(&["gen", "-f", f, "-n", "3000", "--dist", dist, "-q", "-o", p(&input)]);
            assert!(o.status.success(), "{f} {dist}: {}", stderr(&o));
            let format: emsort_sort::Format = f.parse().unwrap();
            let size = format.item_size().unwrap();
            let bytes = std::fs::read(&input).unwrap();
            let mut items: Vec<&[u8]> = bytes.chunks_exact(size).collect();
            items.sort_by(|a, b| format.compare(a, b));
            let out = d.path().join("out");
            std::fs::write(&out, items.concat()).unwrap();
            let o = run(&["verify", "-f", f, p(&out), "--input", p(&input)]);
            assert!(o.status.success(), "{f} {dist}: {}", stdout(&o));
        }
    }
}

#[test]
fn lines_verify_against_gnu_sort() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.txt");
    let o = run(&["gen", "-f", "lines", "--bytes", "200K", "--dist", "zipf", "-q", "-o", p(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sorted = d.path().join("sorted.txt");
    let s = Command::new("sort").env("LC_ALL", "C").arg(&input).arg("-o").arg(&sorted).status().unwrap();
    assert!(s.success());
    let o = run(&["verify", "-f", "lines", p(&sorted), "--input", p(&input)]);
    assert!(o.status.success(), "{}", stdout(&o));
    // GNU sort's reverse too, and the ascending check must reject it.
    let s = Command::new("sort")
        .env("LC_ALL", "C")
        .arg("-r")
        .arg(&input)
        .arg("-o")
        .arg(&sorted)
        .status()
        .unwrap();
    assert!(s.success());
    assert!(run(&["verify", "-f", "lines", "-r", p(&sorted), "--input", p(&input)]).status.success());
    assert_eq!(run(&["verify", "-f", "lines", p(&sorted)]).status.code(), Some(1));
}

#[test]
fn bad_input_gets_a_clear_message_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let odd = d.path().join("odd.bin");
    std::fs::write(&odd, [0u8; 10]).unwrap();
    let o = run(&["verify", "-f", "u64", p(&odd)]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("odd.bin") && e.contains("size 10 bytes") && e.contains("element size 8"), "{e}");
    let o = run(&["verify", p(&d.path().join("missing"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing: no such file"), "{}", stderr(&o));
    let o = run(&["verify", p(d.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let o = run(&["gen", "-f", "lines", "--count", "5", "-o", p(&odd)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--bytes"), "{}", stderr(&o));
    let o = run(&["gen", "-f", "rec:10:5:6", "--count", "5", "-o", p(&odd)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("KEY_OFFSET + KEY_LEN"), "{}", stderr(&o));
}

#[test]
fn gen_into_an_unwritable_place_fails_clearly() {
    let o = run(&["gen", "--count", "10", "-o", "/proc/emsort-cannot-write-here"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("/proc/"), "{}", stderr(&o));
    let d = tempfile::tempdir().unwrap();
    let o = run(&["gen", "--count", "10", "-o", p(d.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

#[test]
fn full_disk_leaves_no_partial_output() {
    // RLIMIT_FSIZE stands in for a full disk: writes past it fail with EFBIG.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("big.u32");
    let mut cmd = emsort();
    cmd.args(["gen", "--count", "10M", "-q", "-o", p(&out)]);
    crate::file_size_limit(&mut cmd, 1 << 20);
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("file size limit exceeded"), "{}", stderr(&o));
    assert!(entries(d.path()).is_empty(), "left behind: {:?}", entries(d.path()));
}

#[test]
fn ctrl_c_removes_the_temporary_output() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("huge.u64");
    // 2^31 u64 = 16 GiB: far more than can be written before the signal.
    let mut child =
        emsort().args(["gen", "-f", "u64", "--count", "2147483648", "-q", "-o", p(&out)]).spawn().unwrap();
    // The output is written unnamed (O_TMPFILE) where the file system
    // allows, so nothing may show in the directory: wait for the process
    // to write (its write count grows).
    let written = || {
        std::fs::read_to_string(format!("/proc/{}/io", child.id()))
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix("wchar: ")?.parse::<u64>().ok()))
            .unwrap_or(0)
    };
    let t = std::time::Instant::now();
    while written() < 1 << 20 && t.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(crate::died_of(&status, libc::SIGINT), "{status:?}");
    assert!(entries(d.path()).is_empty(), "left behind: {:?}", entries(d.path()));
}
