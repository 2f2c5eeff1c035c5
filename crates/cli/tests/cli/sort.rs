//! `emsort sort` against oracles (`emsort verify`, `LC_ALL=C sort`) and its
//! promises: no partial output, no temporary files left, clear refusals.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{emsort, entries, p, run, setup, stderr, stdout, wait_for_runs};

fn gen(args: &[&str], out: &Path) {
    let mut a = vec!["gen", "-q", "-o", p(out)];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `LC_ALL=C sort [-r] file` as bytes.
fn gnu_sort(file: &Path, reverse: bool) -> Vec<u8> {
    let mut c = Command::new("sort");
    c.env("LC_ALL", "C").arg(file);
    if reverse {
        c.arg("-r");
    }
    let o = c.output().unwrap();
    assert!(o.status.success());
    o.stdout
}

#[test]
fn sorts_numbers_and_records_that_verify() {
    let (d, tmp) = setup();
    for (f, extra) in
        [("u32", "-r"), ("f64", "--policy=fifo"), ("rec:100:0:10", "--fan-in=2"), ("i64", "--io=mmap")]
    {
        let input = d.path().join("in");
        let out = d.path().join("out");
        gen(&["--format", f, "-n", "60000", "--dist", "zipf"], &input);
        let stats = d.path().join("stats.json");
        let o = run(&[
            "sort",
            "-q",
            "--format",
            f,
            "-S",
            "256K",
            "-T",
            p(&tmp),
            extra,
            p(&input),
            "-o",
            p(&out),
            "--stats",
            p(&stats),
        ]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let mut v = vec!["verify", "-f", f, p(&out), "--input", p(&input)];
        if extra == "-r" {
            v.push("-r");
        }
        let o = run(&v);
        assert!(o.status.success(), "{f}: {}", stdout(&o));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        assert!(json["runs"].as_u64().unwrap() > 2, "{f}: {json}");
        assert_eq!(json["runs"], json["plan"]["expected_runs"], "{f}");
        for key in
            ["passes", "merge_order", "peak_rss_bytes", "voluntary_context_switches", "minor_page_faults"]
        {
            assert!(json[key].is_number(), "{key} missing: {json}");
        }
        assert_eq!(json["run_formation"]["bytes_read"], json["input_bytes"]);
        // A number where perf events can be read, else null; never missing.
        assert!(json.get("cpu_migrations").is_some_and(|m| m.is_number() || m.is_null()), "{json}");
        assert!(entries(&tmp).is_empty(), "{f}: left behind {:?}", entries(&tmp));
    }
}

#[test]
fn output_may_name_the_input_with_two_temp_dirs() {
    let (d, tmp) = setup();
    let f = d.path().join("data");
    let orig = d.path().join("orig");
    gen(&["-f", "u64", "-n", "50000"], &orig);
    std::fs::copy(&orig, &f).unwrap();
    // Two temp dirs: runs go round-robin across them.
    let tmp2 = d.path().join("tmp2");
    std::fs::create_dir(&tmp2).unwrap();
    let o = run(&[
        "sort",
        "-q",
        "--format",
        "u64",
        "-S",
        "128K",
        "-T",
        p(&tmp),
        "-T",
        p(&tmp2),
        p(&f),
        "-o",
        p(&f),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["verify", "-f", "u64", p(&f), "--input", p(&orig)]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert_eq!(entries(d.path()), ["data", "orig", "tmp", "tmp2"]);
    assert!(entries(&tmp).is_empty() && entries(&tmp2).is_empty());
}

#[test]
fn stdin_to_stdout_like_gnu_sort() {
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    gen(&["-f", "lines", "--bytes", "300K", "--line-len", "0..40"], &input);
    for reverse in [false, true] {
        let mut c = emsort();
        // `-` and a device named as a file both read standard input.
        c.args(["sort", "-q", "--format", "lines", "-S", "64K", "-T", p(&tmp)]);
        if reverse {
            c.args(["-r", "/dev/stdin"]);
        } else {
            c.arg("-");
        }
        let mut child =
            c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let data = std::fs::read(&input).unwrap();
        let mut sin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || sin.write_all(&data).unwrap());
        let o = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(o.stdout == gnu_sort(&input, reverse), "differs from LC_ALL=C sort (reverse: {reverse})");
        assert!(entries(&tmp).is_empty(), "left behind {:?}", entries(&tmp));
    }
}

/// `emsort sort a b - c` and `LC_ALL=C sort a b - c`, standard input fed
/// from a pipe: the files and the stream are one input, each source's last
/// line ended, as GNU sort does.
#[test]
fn several_files_and_standard_input_like_gnu_sort() {
    let (d, tmp) = setup();
    let mut files = Vec::new();
    for (i, (bytes, tail)) in [("200K", ""), ("0", ""), ("90K", "no newline"), ("1K", "x")].iter().enumerate()
    {
        let f = d.path().join(format!("part{i}.txt"));
        if *bytes == "0" {
            std::fs::write(&f, b"").unwrap();
        } else {
            gen(
                &["--format", "lines", "--bytes", bytes, "--line-len", "0..30", "--seed", &i.to_string()],
                &f,
            );
        }
        if !tail.is_empty() {
            // A last line without its newline.
            let mut data = std::fs::read(&f).unwrap();
            data.extend_from_slice(tail.as_bytes());
            std::fs::write(&f, data).unwrap();
        }
        files.push(f);
    }
    let piped = d.path().join("piped.txt");
    gen(&["--format", "lines", "--bytes", "100K", "--seed", "9"], &piped);
    let mut piped_data = std::fs::read(&piped).unwrap();
    piped_data.extend_from_slice(b"tail without newline");
    let names: Vec<&str> = vec![p(&files[0]), p(&files[1]), "-", p(&files[2]), p(&files[3])];
    let with_stdin = |mut c: Command| {
        let mut child =
            c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut sin = child.stdin.take().unwrap();
        let data = piped_data.clone();
        let writer = std::thread::spawn(move || sin.write_all(&data).unwrap());
        let o = child.wait_with_output().unwrap();
        writer.join().unwrap();
        o
    };
    let mut gnu = Command::new("sort");
    gnu.env("LC_ALL", "C").args(&names);
    let expect = with_stdin(gnu);
    assert!(expect.status.success());
    // To standard output, and to a file with -o, with a budget that makes runs.
    let mut c = emsort();
    c.args(["sort", "-q", "-S", "64K", "-T", p(&tmp)]).args(&names);
    let o = with_stdin(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout == expect.stdout, "differs from LC_ALL=C sort");
    let out = d.path().join("out.txt");
    let mut c = emsort();
    c.args(["sort", "-q", "-S", "64K", "-T", p(&tmp), "-o", p(&out)]).args(&names);
    let o = with_stdin(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&out).unwrap() == expect.stdout, "-o differs from LC_ALL=C sort");
    assert!(entries(&tmp).is_empty(), "left behind {:?}", entries(&tmp));
    // A missing file among them: refused before anything is written.
    let o = run(&["sort", "-q", "-T", p(&tmp), p(&files[0]), p(&d.path().join("nope")), "-o", p(&out)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    assert!(std::fs::read(&out).unwrap() == expect.stdout, "the old output was touched");
}

#[test]
fn lines_are_byte_identical_to_gnu_sort_on_adversarial_text() {
    let (d, tmp) = setup();
    let mut text: Vec<u8> = Vec::new();
    for i in 0..3000u32 {
        match i % 11 {
            0 => text.extend_from_slice(b"\n"),
            1 => text.extend_from_slice(b"dup line\n"),
            2 => text.extend_from_slice(format!("a\0b{}\n", i % 7).as_bytes()),
            3 => text.extend_from_slice(&[0xff, 0x80, b'x', b'\n']),
            4 => text.extend_from_slice(format!("\u{e9}t\u{e9} {i}\n").as_bytes()),
            5 => text.extend_from_slice(b"A\n"),
            6 => text.extend_from_slice(b"a\n"),
            7 => text.extend_from_slice(b" \t leading blanks\n"),
            8 => text.extend_from_slice(format!("{}\n", i * 7919 % 1000).as_bytes()),
            9 => text.extend_from_slice(b"dup line\0\n"),
            _ => text.extend_from_slice(format!("zz{i:x}\n").as_bytes()),
        }
        if i == 1500 {
            // A line far longer than the block size (and than a run buffer).
            text.extend(std::iter::repeat_n(b'm', 100_000));
            text.push(b'\n');
        }
    }
    text.extend_from_slice(b"no final newline \x80");
    let input = d.path().join("adv.txt");
    std::fs::write(&input, &text).unwrap();
    for reverse in [false, true] {
        let out = d.path().join("out.txt");
        let mut args =
            vec!["sort", "-q", "--format", "lines", "-S", "48K", "--block-size", "4K", "--fan-in", "3"];
        args.extend(["-T", p(&tmp), p(&input), "-o", p(&out)]);
        if reverse {
            args.push("-r");
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            std::fs::read(&out).unwrap() == gnu_sort(&input, reverse),
            "differs from LC_ALL=C sort (reverse: {reverse})"
        );
        assert!(entries(&tmp).is_empty());
    }
}

#[test]
fn refusals_are_clear() {
    let (d, tmp) = setup();
    let input = d.path().join("in");
    gen(&["-n", "1000"], &input);
    // M too small for d + 1 buffers: the message names the minimum.
    let o = run(&[
        "sort",
        "-S",
        "100K",
        "--fan-in",
        "64",
        "--block-size",
        "64K",
        "-T",
        p(&tmp),
        p(&input),
        "-o",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("needs at least 4160K"), "{}", stderr(&o));
    // A binary file that is not a whole number of items names the file.
    let odd = d.path().join("odd.bin");
    std::fs::write(&odd, [1u8; 10]).unwrap();
    let o = run(&["sort", "--format", "u64", "-T", p(&tmp), p(&odd), "-o", p(&d.path().join("o"))]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("odd.bin") && e.contains("size 10 bytes"), "{e}");
    let o = run(&["sort", "-T", p(&tmp), p(&d.path().join("missing")), "-o", p(&d.path().join("o"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).ends_with("missing: No such file or directory\n"), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("emsort: cannot read: "), "{}", stderr(&o));
    // A temp dir that does not exist: checked only when a temporary file
    // is needed, as GNU does (an input that fits in M needs none).
    let o = run(&["sort", "-T", p(&d.path().join("nodir")), p(&input), "-o", p(&d.path().join("o"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let big = d.path().join("big");
    std::fs::write(&big, "b\na\n".repeat(50_000)).unwrap();
    std::fs::remove_file(d.path().join("o")).unwrap();
    let o =
        run(&["sort", "-S", "16K", "-T", p(&d.path().join("nodir")), p(&big), "-o", p(&d.path().join("o"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot create temporary file in '")
            && stderr(&o).contains("nodir': No such file or directory"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("o").exists());
    assert!(entries(&tmp).is_empty());
    // Sorted segments are for binary numbers, 1 to 64 of them.
    for (format, s, why) in [("lines", "4", "binary numbers"), ("u32", "65", "1 to 64")] {
        let o = run(&["sort", "--format", format, "--segments", s, p(&input), "-o", p(&d.path().join("o"))]);
        assert_eq!(o.status.code(), Some(2), "{format} {s}");
        assert!(stderr(&o).contains(why), "{format} {s}: {}", stderr(&o));
    }
    assert!(!d.path().join("o").exists());
}

/// Sets `RLIMIT_NOFILE` to `n` (soft and hard, as `ulimit -n`) for `cmd`,
/// with the descriptors `held` open on its standard input.
fn descriptor_limit(cmd: &mut Command, n: u64, held: std::ops::Range<i32>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for fd in held.clone() {
                libc::dup2(0, fd);
            }
            let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
}

/// Under `ulimit -n 6` (three descriptors beside 0, 1 and 2) GNU sort still
/// merges, two runs at a time; so does emsort: its temporary directory's
/// lock, its migration counter, io_uring's rings and the output's
/// directory give their descriptors up (GNU's sort-continue.sh and
/// sort-merge-fdlimit.sh), and nothing is left behind.
#[test]
fn sorts_and_merges_with_three_free_descriptors() {
    let (d, tmp) = setup();
    let files: Vec<std::path::PathBuf> = (1..=31).map(|i| d.path().join(format!("in{i:02}"))).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(f, format!("{}\n", i + 1)).unwrap();
    }
    let expected: String = (1..=31).map(|i| format!("{i}\n")).collect();
    let limited_to = |n: u64, held: std::ops::Range<i32>, args: &[&str]| {
        let mut cmd = emsort();
        cmd.args(["sort", "-q", "-T", p(&tmp)]).args(args);
        descriptor_limit(&mut cmd, n, held);
        cmd.output().unwrap()
    };
    let limited = |args: &[&str]| limited_to(6, 0..0, args);
    let mut args = vec!["-n", "-m"];
    args.extend(files.iter().map(|f| p(f)));
    let o = limited(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), expected);
    // The output names two of the inputs (replaced when complete); 6 to 9
    // held, as GNU's test holds them.
    let out = d.path().join("out");
    std::fs::write(&out, b"6\n").unwrap();
    let mut args = vec!["-n", "-m", "--batch-size=7", "-o", p(&out), p(&out)];
    args.extend(files[..5].iter().map(|f| p(f)));
    args.push(p(&out));
    let o = limited_to(10, 6..10, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"1\n2\n3\n4\n5\n6\n6\n");
    // A sort whose runs are merged two at a time.
    let big = d.path().join("big");
    let lines: String =
        (0..200_000u64).map(|i| format!("{}\n", i.wrapping_mul(0x9E37_79B9) % 1_000_003)).collect();
    std::fs::write(&big, &lines).unwrap();
    let sorted = d.path().join("sorted");
    let o = limited(&["-S", "1M", p(&big), "-o", p(&sorted)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&sorted).unwrap(), gnu_sort(&big, false));
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

#[test]
fn full_disk_gives_exit_2_and_leaves_nothing() {
    // RLIMIT_FSIZE = 1 MiB stands in for a full disk. With -S 600K the runs
    // (256K) fit and the 4 MiB output does not; with -S 3M the first run
    // (1.4M, in the temp dir) does not, nor in one chunk buffer (2.8M,
    // written as the merge of its sorted segments). Under the default I/O
    // (one request at a time at this M) and the kinds `--io auto` chooses
    // on a device (issue 38): the page cache through io_uring, whose writes
    // io_uring's workers make, and O_DIRECT through io_uring.
    for io in [None, Some("uring"), Some("uring-direct")] {
        for (memory, buffers) in [("600K", "2"), ("3M", "2"), ("3M", "1")] {
            let (d, tmp) = setup();
            let input = d.path().join("in.u32");
            gen(&["-n", "1M"], &input);
            let out_dir = d.path().join("out");
            std::fs::create_dir(&out_dir).unwrap();
            let out = out_dir.join("sorted.u32");
            let mut cmd = emsort();
            cmd.args(["sort", "-q", "--format", "u32", "-S", memory, "--chunk-buffers", buffers]);
            cmd.args(["-T", p(&tmp)]);
            if let Some(io) = io {
                cmd.args(["--io", io]);
            }
            cmd.args([p(&input), "-o", p(&out)]);
            crate::file_size_limit(&mut cmd, 1 << 20);
            let o = cmd.output().unwrap();
            let case = format!("{io:?} -S {memory}");
            assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
            let e = stderr(&o);
            assert!(e.contains("file size limit exceeded"), "{case}: {e}");
            let culprit = if memory == "3M" { "run-000000" } else { "sorted.u32" };
            assert!(e.contains(culprit), "{case}: {e}");
            assert!(entries(&out_dir).is_empty(), "{case}: partial output: {:?}", entries(&out_dir));
            assert!(entries(&tmp).is_empty(), "{case}: left behind: {:?}", entries(&tmp));
        }
    }
}

#[test]
fn ctrl_c_or_sigterm_mid_sort_dies_of_the_signal_and_leaves_nothing() {
    let (d, tmp) = setup();
    let input = d.path().join("big.u32");
    gen(&["-n", "32M"], &input); // 128 MiB
    let out = d.path().join("sorted.u32");
    // Two chunk buffers, and one read in sorted segments; the default I/O
    // and the kinds `--io auto` chooses on a device (issue 38).
    for (signal, code, buffers, io) in [
        (libc::SIGINT, 130, "2", "auto"),
        (libc::SIGTERM, 143, "2", "auto"),
        (libc::SIGINT, 130, "1", "auto"),
        (libc::SIGINT, 130, "2", "uring"),
        (libc::SIGTERM, 143, "2", "uring-direct"),
    ] {
        let child = emsort()
            .args(["sort", "-q", "--format", "u32", "-S", "4M", "--chunk-buffers", buffers, "-T", p(&tmp)])
            .args(["--io", io, p(&input), "-o", p(&out)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until run formation has written a run.
        assert!(wait_for_runs(&tmp, 2) >= 2, "no run appeared");
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert!(
            crate::died_of(&o.status, signal) && code == 128 + signal,
            "signal {signal}, --io {io}: {:?} {}",
            o.status,
            stderr(&o)
        );
        assert!(entries(&tmp).is_empty(), "signal {signal}, --io {io}: left behind: {:?}", entries(&tmp));
        assert_eq!(entries(d.path()), ["big.u32", "tmp"]);
    }
}

#[test]
fn peak_rss_stays_within_memory_plus_overhead() {
    // The documented overhead above M (SortPlan docs): the process's own
    // baseline (binary, libc, thread stacks), a few MiB, and the index
    // radix sort's scratch, about 1 MiB per thread (2 here).
    const OVERHEAD: u64 = (8 << 20) + 2 * (1 << 20);
    const M: u64 = 12 << 20;
    let (d, tmp) = setup();
    // The binary's own resident pages beyond a few MiB (its relocated
    // tables grew with arrow and parquet): measured on a sort of two lines.
    let tiny = d.path().join("tiny");
    std::fs::write(&tiny, "b\na\n").unwrap();
    let tiny_stats = d.path().join("tiny.json");
    let o = run(&["sort", "-q", p(&tiny), "-o", p(&d.path().join("tiny.out")), "--stats", p(&tiny_stats)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tiny_json: serde_json::Value = serde_json::from_slice(&std::fs::read(&tiny_stats).unwrap()).unwrap();
    let image = tiny_json["peak_rss_bytes"].as_u64().unwrap().saturating_sub(4 << 20);

    // u32 in one chunk buffer too: sorted in segments, its runs merged
    // from them through the merge's scratch.
    let cases =
        [("u32", "-n", "2"), ("u32", "-n", "1"), ("rec:100:0:10", "-n", "2"), ("lines", "--bytes", "2")];
    for (f, size, buffers) in cases {
        let input = d.path().join("in");
        let amount = match f {
            "u32" => "12M",             // 48 MiB
            "rec:100:0:10" => "400000", // 38 MiB
            _ => "40M",
        };
        gen(&["--format", f, size, amount], &input);
        let stats = d.path().join("stats.json");
        let out = d.path().join("out");
        let o = run(&[
            "sort",
            "-q",
            "--format",
            f,
            "-S",
            "12M",
            "--parallel",
            "2",
            "--chunk-buffers",
            buffers,
            "-T",
            p(&tmp),
            p(&input),
            "-o",
            p(&out),
            "--stats",
            p(&stats),
        ]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let segments = if buffers == "1" && f == "u32" { 8 } else { 1 };
        assert_eq!(json["plan"]["segments"], segments, "{f}, {buffers} buffer(s)");
        let rss = json["peak_rss_bytes"].as_u64().unwrap();
        assert!(json["runs"].as_u64().unwrap() > 2, "{f}: {json}");
        assert!(
            rss <= M + OVERHEAD + image,
            "{f}, {buffers} buffer(s): peak RSS {rss} > M {M} + {OVERHEAD} + the binary's {image}"
        );
        // And the budget is really used: more than half of M is resident.
        assert!(rss > M / 2, "{f}: peak RSS {rss}");
        // Blocks of 128 KiB make merge rounds of thousands of items: the
        // merge of numbers is split across both threads here, so check it.
        let v = run(&["verify", "-f", f, p(&out), "--input", p(&input)]);
        assert!(v.status.success(), "{f}: {}", String::from_utf8_lossy(&v.stdout));
    }
}

/// GNU sort's keys, orders, -u, -s, -m and -c on text built from the
/// pieces that make them differ (signs, blanks, units, months, versions,
/// NUL, bytes ≥ 0x80, CR), through runs on disk and several merge passes:
/// byte for byte and exit status as `LC_ALL=C sort` with the same options.
/// (The seeded generator of option sets is `gnu_sort.rs`.)
#[test]
fn keys_and_orders_like_gnu_sort() {
    let (d, tmp) = setup();
    let pieces: [&[u8]; 34] = [
        b"",
        b" ",
        b"\t",
        b",",
        b"-",
        b"+",
        b"0",
        b"00",
        b"1",
        b"9",
        b"12",
        b".",
        b"5.",
        b".5",
        b"-0",
        b"1e3",
        b"0x1F",
        b"inf",
        b"K",
        b"2M",
        b"1.5G",
        b"jan",
        b" Feb",
        b"DEC",
        b"1.10",
        b"1.9",
        b"1.0a",
        b"~",
        b"a",
        b"B",
        b"\0",
        b"\x80",
        b"\xc3\xa9",
        b"\r",
    ];
    let text = random_lines(&pieces, 0x2545_f491_4f6c_dd1d, 3000, 9, b'\n');
    let input = d.path().join("in.txt");
    std::fs::write(&input, &text).unwrap();
    let sorted = d.path().join("sorted.txt");
    let cases = [
        "",
        "-r",
        "-n",
        "-k2,2",
        "-t, -k2,2n",
        "-t, -k1,1 -k2,2nr",
        "-u",
        "-k1,1 -u",
        "-nu",
        "-s -k1,1",
        "-h",
        "-M",
        "-V",
        "-f",
        "-d",
        "-i",
        "-b -k2",
        "-k1.2,1.3",
        "-t, -k3n -s",
        "-fu",
        "-k2b,2 -r",
        "-rn -k1,1",
        "-k1,1V -k2,2",
        "-t, -k2.2b,2.4 -u",
        "-dfu",
        "-gs",
        "--sort=month -r",
        "-k1,1M -k2,2h",
        "-t: -k2",
        "-k3,3 -k1.2b,1.4f",
    ];
    for case in cases {
        let args: Vec<&str> = case.split_whitespace().collect();
        let gnu = Command::new("sort").env("LC_ALL", "C").args(&args).arg(&input).output().unwrap();
        // -g's order of NaNs is not defined in GNU sort 9.1: leave NaN out.
        let mut cmd = emsort();
        cmd.args(["sort", "-q", "-S", "48K", "--block-size", "4K", "--fan-in", "3", "-T", p(&tmp)])
            .args(&args);
        let ours = cmd.arg(&input).output().unwrap();
        assert_eq!(ours.status.code(), gnu.status.code(), "{case}: {}", stderr(&ours));
        assert!(ours.stdout == gnu.stdout, "sort {case}: output differs from GNU sort's");
        // The result is in order for -c and merges with -m into itself twice.
        std::fs::write(&sorted, &gnu.stdout).unwrap();
        let mut c = emsort();
        let check = c.args(["sort", "-c"]).args(&args).arg(&sorted).output().unwrap();
        assert!(check.status.success(), "sort -c {case}: {}", stderr(&check));
        let gnu_m = Command::new("sort")
            .env("LC_ALL", "C")
            .arg("-m")
            .args(&args)
            .arg(&sorted)
            .arg(&sorted)
            .output()
            .unwrap();
        let mut m = emsort();
        m.args(["sort", "-q", "-m", "-S", "48K", "--block-size", "4K", "-T", p(&tmp)]).args(&args);
        let ours_m = m.arg(&sorted).arg(&sorted).output().unwrap();
        assert!(ours_m.stdout == gnu_m.stdout, "sort -m {case}: output differs from GNU sort's");
        assert!(entries(&tmp).is_empty(), "{case}: left behind: {:?}", entries(&tmp));
    }
    // -c on unsorted input: GNU's message and exit status 1; -C: silent.
    let o = emsort().env("LC_ALL", "C").args(["sort", "-c", "-n", p(&input)]).output().unwrap();
    let g = Command::new("sort").env("LC_ALL", "C").args(["-c", "-n"]).arg(&input).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_start_matches("emsort"),
        String::from_utf8_lossy(&g.stderr).trim_start_matches("sort")
    );
    let o = run(&["sort", "-C", p(&input)]);
    assert_eq!((o.status.code(), o.stderr.len()), (Some(1), 0));
    // A locale the C library cannot load leaves the sort in C, silently
    // (GNU's --debug alone says so); locales proper: tests/cli/sort_locale.rs.
    let o = emsort().env("LC_ALL", "xx_NONE.UTF-8").args(["sort", "-n", p(&sorted)]).output().unwrap();
    assert!(o.status.success() && o.stderr.is_empty(), "{}", stderr(&o));
    let o = emsort().env("LC_ALL", "xx_NONE.UTF-8").args(["sort", "--debug", p(&sorted)]).output().unwrap();
    assert!(stderr(&o).starts_with("emsort: failed to set locale\n"), "{}", stderr(&o));
    // GNU's refusals, with exit status 2.
    for bad in [&["-k0"][..], &["-k1.0"], &["-k1,1gn"], &["-t", "ab"], &["-c", "-o", "x"]] {
        let o = run(&[&["sort"][..], bad, &[p(&input)]].concat());
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
}

/// A `--compress-program` in `dir`: gzip behind a shell script that logs
/// each call (`calls`: its arguments, one line per call) and keeps a copy
/// of every run it compresses (`copy-PID.gz`), so a test can see that the
/// temporary runs really were gzip files.
fn logging_gzip(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("logz");
    let d = dir.display();
    let body = format!(
        "#!/bin/sh\necho \"x $*\" >> {d}/calls\nif [ \"$1\" = -d ]; then exec gzip -d; fi\n\
         gzip | tee {d}/copy-$$.gz\n"
    );
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Lines with repeated keys in two comma-separated columns.
fn key_lines(n: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut text = Vec::new();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.extend_from_slice(format!("{},k{},{}\n", x % 1000, x % 37, i).as_bytes());
    }
    text
}

#[test]
fn compress_program_writes_runs_through_it_and_matches_gnu() {
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    std::fs::write(&input, key_lines(60_000)).unwrap();
    let logs = d.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let prog = logging_gzip(&logs);
    let stats = d.path().join("stats.json");
    for keys in [&["-t,", "-k2,2", "-k1,1nr"][..], &["-u", "-n"][..], &[][..]] {
        let out = d.path().join("out.txt");
        let mut args = vec!["sort", "-S", "64K", "--fan-in", "4", "-T", p(&tmp), "--stats", p(&stats)];
        args.extend_from_slice(keys);
        let opt = format!("--compress-program={}", p(&prog));
        args.extend([opt.as_str(), p(&input), "-o", p(&out)]);
        let o = run(&args);
        assert!(o.status.success(), "{keys:?}: {}", stderr(&o));
        let gnu = Command::new("sort").env("LC_ALL", "C").args(keys).arg(&input).output().unwrap();
        assert!(std::fs::read(&out).unwrap() == gnu.stdout, "{keys:?}: not GNU's output");
        assert!(entries(&tmp).is_empty(), "{keys:?}: left behind {:?}", entries(&tmp));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let (runs, merges) = (json["runs"].as_u64().unwrap(), json["merges"].as_u64().unwrap());
        assert!(runs > 4 && merges > 1, "{keys:?}: {json}");
        // What reached the output (-u keeps 1000 of the 60000 lines).
        assert_eq!(json["output_bytes"].as_u64(), Some(std::fs::metadata(&out).unwrap().len()), "{keys:?}");
        // Every temporary run went through the program, and was read back
        // through `PROG -d` once: the runs of run formation and of every
        // merge but the last (which writes the output).
        let calls = std::fs::read_to_string(logs.join("calls")).unwrap();
        let writes = calls.lines().filter(|l| l.trim_end() == "x").count();
        let reads = calls.lines().filter(|l| l.trim_end() == "x -d").count();
        assert_eq!(writes as u64, runs + merges - 1, "{keys:?}: {calls}");
        assert_eq!(reads, writes, "{keys:?}: {calls}");
        // What was stored is gzip: smaller than the runs, and the runs back.
        let mut stored = 0;
        for copy in entries(&logs).iter().filter(|e| e.starts_with("copy-")) {
            let gz = std::fs::read(logs.join(copy)).unwrap();
            assert_eq!(&gz[..2], b"\x1f\x8b", "{copy} is not gzip");
            stored += gz.len();
            std::fs::remove_file(logs.join(copy)).unwrap();
        }
        // The runs' bytes: run formation's (keyed runs carry 8 more bytes a
        // line) and the merges' but the output.
        let runs_bytes = json["run_formation"]["bytes_written"].as_u64().unwrap()
            + json["merge"]["bytes_written"].as_u64().unwrap()
            - json["output_bytes"].as_u64().unwrap();
        assert!(stored > 0 && (stored as u64) < runs_bytes, "{keys:?}: {stored} of {runs_bytes}");
        std::fs::remove_file(logs.join("calls")).unwrap();
    }
}

/// `-S 1k`, `-S 10b`, `-S1`: too small for the plan's buffers, M grows
/// to a merge of GNU's 16 runs while runs stay as small as asked, so GNU's
/// sort-compress.sh (2000 lines, 10 KB) still makes temporary files, and
/// its sort-compress-hang.sh (200,000 lines) does not make a run per line
/// merged 2 at a time (it ran past 10 minutes so).
#[test]
fn a_tiny_buffer_grows_for_the_merge_and_keeps_runs_small() {
    let (d, tmp) = setup();
    let input = d.path().join("in");
    let lines: String = (1..=20_000).rev().map(|i| format!("{i:05}\n")).collect();
    std::fs::write(&input, &lines).unwrap();
    let stats = d.path().join("stats.json");
    for s in ["1k", "10b", "1"] {
        let out = d.path().join("out");
        let o = run(&["sort", "-S", s, "-T", p(&tmp), "--stats", p(&stats), p(&input), "-o", p(&out)]);
        assert!(o.status.success() && stderr(&o).is_empty(), "-S {s}: {}", stderr(&o));
        assert!(std::fs::read(&out).unwrap() == gnu_sort(&input, false), "-S {s}");
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let runs = json["runs"].as_u64().unwrap();
        // 120 KB in runs of at most 1 KiB; at least 8 lines a run (GNU's
        // least buffer, 544 bytes, holds 13 lines of 6 bytes).
        assert!((120..=20_000 / 8).contains(&runs), "-S {s}: {runs} runs");
        assert_eq!(json["plan"]["fan_in"], 16, "-S {s}: {json}");
        assert!(entries(&tmp).is_empty());
    }
}

#[test]
fn compress_program_with_merge_leaves_the_given_files_alone() {
    let (d, tmp) = setup();
    let logs = d.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let prog = logging_gzip(&logs);
    // Seven sorted files, merged 3 at a time: temporary runs in between.
    let mut files = Vec::new();
    for i in 0..7u64 {
        let f = d.path().join(format!("part{i}"));
        let mut lines: Vec<String> = (0..2000).map(|j| format!("{:05}", (j * 7 + i * 3) % 9973)).collect();
        lines.sort();
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
        files.push(f);
    }
    let out = d.path().join("out");
    let opt = format!("--compress-program={}", p(&prog));
    let mut args = vec!["sort", "-m", "--batch-size", "3", "-T", p(&tmp), opt.as_str(), "-o", p(&out)];
    args.extend(files.iter().map(|f| p(f)));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let gnu = Command::new("sort").env("LC_ALL", "C").arg("-m").args(&files).output().unwrap();
    assert!(std::fs::read(&out).unwrap() == gnu.stdout);
    let calls = std::fs::read_to_string(logs.join("calls")).unwrap();
    let writes = calls.lines().filter(|l| l.trim_end() == "x").count();
    let reads = calls.lines().filter(|l| l.trim_end() == "x -d").count();
    assert!(writes >= 2 && reads == writes, "only the temporary runs go through it: {calls}");
    assert!(entries(&tmp).is_empty());
}

#[test]
fn compress_program_missing_or_failing_is_exit_2_naming_it_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    std::fs::write(&input, key_lines(40_000)).unwrap();
    let script = |name: &str, body: &str| {
        let s = d.path().join(name);
        std::fs::write(&s, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).unwrap();
        s
    };
    let fails = script("fails", "cat > /dev/null; exit 3");
    let fails_d = script("fails-d", "if [ \"$1\" = -d ]; then exit 4; fi; exec gzip");
    let no_such = d.path().join("no-such-program");
    for (prog, says) in [
        (&no_such, "cannot run the compress program"),
        (&fails, "the compress program failed (exit status: 3)"),
        (&fails_d, "the compress program -d failed (exit status: 4)"),
    ] {
        let out = d.path().join("out.txt");
        std::fs::write(&out, "old\n").unwrap();
        let opt = format!("--compress-program={}", p(prog));
        let o = run(&["sort", "-S", "64K", "-T", p(&tmp), &opt, p(&input), "-o", p(&out)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&format!("{}: {says}", p(prog))), "{e}");
        assert_eq!(std::fs::read(&out).unwrap(), b"old\n", "the output is untouched");
        assert!(entries(&tmp).is_empty(), "left behind {:?}", entries(&tmp));
    }
    // As GNU: a sort that makes no temporary run never starts the program.
    let o = run(&["sort", "-T", p(&tmp), "--compress-program=emsort-no-such-program", p(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Not with the striped methods (their runs are blocks over the disks).
    let o = run(&["sort", "--method", "srm", "-T", p(&tmp), "--compress-program=gzip", p(&input)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("plain merge"), "{}", stderr(&o));
    assert!(entries(&tmp).is_empty());
}

#[test]
fn compress_program_ctrl_c_stops_the_programs_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    std::fs::write(&input, key_lines(300_000)).unwrap();
    // A slow compressor: the sort waits on it while the signal comes.
    let slow = d.path().join("slow");
    std::fs::write(&slow, "#!/bin/sh\nsleep 0.2\nexec gzip \"$@\"\n").unwrap();
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = d.path().join("out.txt");
    let opt = format!("--compress-program={}", p(&slow));
    let child = emsort()
        .args(["sort", "-q", "-S", "256K", "-T", p(&tmp), &opt, p(&input), "-o", p(&out)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for_runs(&tmp, 3) >= 3, "no run appeared");
    // SAFETY: our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert!(crate::died_of(&o.status, libc::SIGINT), "{:?}: {}", o.status, stderr(&o));
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
    assert!(!out.exists());
}

/// `lines` seeded random lines of fewer than `max` of `pieces` each, ended
/// by `eol`, the last without it.
fn random_lines(pieces: &[&[u8]], seed: u64, lines: usize, max: usize, eol: u8) -> Vec<u8> {
    let mut x = seed;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let mut text = Vec::new();
    for _ in 0..lines {
        for _ in 0..next(max) {
            text.extend_from_slice(pieces[next(pieces.len())]);
        }
        text.push(eol);
    }
    text.pop();
    text
}

/// Runs `cmd` with `data` on standard input.
fn with_stdin(mut cmd: Command, data: &[u8]) -> std::process::Output {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut sin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&data); // a sort that refuses its options reads nothing
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    o
}

/// `-z`: NUL-terminated lines holding newlines (a blank between fields),
/// the last without its NUL, through runs on disk and several merge
/// passes: byte for byte as `LC_ALL=C sort -z` with the same options, for
/// plain and keyed sorts, -u, -s, -c and -C, -m, and standard input.
#[test]
fn zero_terminated_like_gnu_sort() {
    let (d, tmp) = setup();
    let pieces: [&[u8]; 16] = [
        b"", b" ", b"\t", b"\n", b"\n\n", b",", b"-", b"0", b"1", b"12", b".5", b"a", b"B", b"jan", b"\x80",
        b"\r",
    ];
    let text = random_lines(&pieces, 0x9e37_79b9_7f4a_7c15, 2000, 8, 0);
    assert!(text.contains(&b'\n'));
    let input = d.path().join("in.z");
    std::fs::write(&input, &text).unwrap();
    let sorted = d.path().join("sorted.z");
    let tiny = ["-q", "-S", "16K", "--block-size", "1K", "--fan-in", "3", "-T", p(&tmp)];
    for case in ["", "-r", "-k2,2", "-t, -k2,2n", "-b -k2", "-u", "-k1,1 -u", "-n -u", "-s -k1,1", "-f -k3"] {
        let args: Vec<&str> = ["-z"].into_iter().chain(case.split_whitespace()).collect();
        let gnu = Command::new("sort").env("LC_ALL", "C").args(&args).arg(&input).output().unwrap();
        assert!(gnu.status.success());
        let stats = d.path().join("stats.json");
        let ours = emsort()
            .args(["sort", "--stats", p(&stats)])
            .args(tiny)
            .args(&args)
            .arg(&input)
            .output()
            .unwrap();
        assert!(ours.status.success(), "-z {case}: {}", stderr(&ours));
        assert!(ours.stdout == gnu.stdout, "sort -z {case}: output differs from GNU sort's");
        let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let (runs, levels) = (s["runs"].as_u64().unwrap(), s["merge_levels"].as_u64().unwrap());
        assert!(
            runs > 3 && levels > 1,
            "-z {case}: {runs} runs merged in {levels} level(s): no merge of merges"
        );
        // Standard input, and the sorted result: in order for -c, merged
        // with itself and standard input by -m.
        let mut c = emsort();
        c.args(["sort"]).args(tiny).args(&args);
        let o = with_stdin(c, &text);
        assert!(o.stdout == gnu.stdout, "sort -z {case} < input: differs from GNU sort's");
        std::fs::write(&sorted, &gnu.stdout).unwrap();
        let check = emsort().args(["sort", "-c"]).args(&args).arg(&sorted).output().unwrap();
        assert!(check.status.success(), "sort -c -z {case}: {}", stderr(&check));
        let mut gnu_m = Command::new("sort");
        gnu_m.env("LC_ALL", "C").arg("-m").args(&args).arg(&sorted).arg("-").arg(&sorted);
        let gnu_m = with_stdin(gnu_m, &gnu.stdout);
        let mut m = emsort();
        m.args(["sort", "-m"]).args(tiny).args(&args).arg(&sorted).arg("-").arg(&sorted);
        let ours_m = with_stdin(m, &gnu.stdout);
        assert!(ours_m.status.success(), "sort -m -z {case}: {}", stderr(&ours_m));
        assert!(ours_m.stdout == gnu_m.stdout, "sort -m -z {case}: output differs from GNU sort's");
        assert!(entries(&tmp).is_empty(), "-z {case}: left behind: {:?}", entries(&tmp));
    }
    // -c: GNU's message, its line ended by NUL as GNU writes it; -C silent.
    let o = run(&["sort", "-c", "-z", "-k2,2", p(&input)]);
    let g = Command::new("sort").env("LC_ALL", "C").args(["-c", "-z", "-k2,2"]).arg(&input).output().unwrap();
    assert_eq!((o.status.code(), g.status.code()), (Some(1), Some(1)));
    assert!(g.stderr.ends_with(b"\0"));
    assert_eq!(o.stderr.strip_prefix(b"emsort"), g.stderr.strip_prefix(b"sort"));
    let o = run(&["sort", "-C", "-z", p(&input)]);
    assert_eq!((o.status.code(), o.stderr.len()), (Some(1), 0));
    // Newline-terminated text is one line under -z: it checks as in order.
    std::fs::write(&sorted, b"b\na\n").unwrap();
    assert!(run(&["sort", "-c", "-z", p(&sorted)]).status.success());
    // No lines in a binary format: refused, saying why.
    let o = run(&["sort", "-z", "--format", "u32", "-T", p(&tmp), p(&input)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-z") && stderr(&o).contains("no lines"), "{}", stderr(&o));
}

/// `-m` with standard input (`-`, or no file at all) among sorted files,
/// as GNU merges it: standard input is spooled into the temp dir, merged
/// (here by a merge before the last: fan-in 2), and the spool is gone
/// afterwards — on success, on an error, and on Ctrl-C while it is read.
#[test]
fn merge_of_standard_input_like_gnu_sort() {
    let (d, tmp) = setup();
    let mut files = Vec::new();
    for i in 0..3 {
        let raw = d.path().join(format!("raw{i}"));
        gen(
            &["--format", "lines", "--bytes", "40K", "--line-len", "0..20", "--seed", &(i + 3).to_string()],
            &raw,
        );
        let f = d.path().join(format!("sorted{i}"));
        std::fs::write(&f, gnu_sort(&raw, false)).unwrap();
        files.push(f);
    }
    let mut piped = std::fs::read(&files[2]).unwrap();
    piped.pop(); // a last line without its newline
    let tiny = ["-q", "-S", "16K", "--block-size", "1K", "--fan-in", "2", "-T", p(&tmp)];
    for names in [vec![p(&files[0]), "-", p(&files[1])], vec!["-"], vec![p(&files[0]), p(&files[1]), "-"]] {
        let mut gnu = Command::new("sort");
        gnu.env("LC_ALL", "C").arg("-m").args(&names);
        let expect = with_stdin(gnu, &piped);
        assert!(expect.status.success());
        let mut c = emsort();
        c.args(["sort", "-m"]).args(tiny).args(&names);
        let o = with_stdin(c, &piped);
        assert!(o.status.success(), "-m {names:?}: {}", stderr(&o));
        assert!(o.stdout == expect.stdout, "-m {names:?}: differs from GNU sort's");
        assert!(entries(&tmp).is_empty(), "-m {names:?}: left behind: {:?}", entries(&tmp));
        // -o to a file, named as its own input too.
        let out = d.path().join("merged");
        std::fs::copy(&files[0], &out).unwrap();
        let renamed: Vec<&str> = names.iter().map(|&n| if n == p(&files[0]) { p(&out) } else { n }).collect();
        let mut c = emsort();
        c.args(["sort", "-m", "-o", p(&out)]).args(tiny).args(&renamed);
        let o = with_stdin(c, &piped);
        assert!(o.status.success(), "-m -o {names:?}: {}", stderr(&o));
        assert!(std::fs::read(&out).unwrap() == expect.stdout, "-m -o {names:?}: differs from GNU sort's");
        assert!(entries(&tmp).is_empty(), "-m -o {names:?}: left behind: {:?}", entries(&tmp));
    }
    // No file at all: standard input alone; standard input named twice is
    // read once (the second finds it at its end).
    let mut c = emsort();
    c.args(["sort", "-m"]).args(tiny);
    assert!(with_stdin(c, &piped).stdout == gnu_sort(&files[2], false));
    let mut c = emsort();
    c.args(["sort", "-m"]).args(tiny).args(["-", "-"]);
    assert!(with_stdin(c, &piped).stdout == gnu_sort(&files[2], false));
    // GNU 9.1 lets no --files0-from list name standard input (`-`), even
    // one read from a file: both refuse, with GNU's message.
    let list = d.path().join("list");
    std::fs::write(&list, format!("{}\0-\0", p(&files[0]))).unwrap();
    let mut gnu = Command::new("sort");
    gnu.env("LC_ALL", "C").args(["-m", "--files0-from", p(&list)]);
    let expect = with_stdin(gnu, &piped);
    let mut c = emsort();
    c.args(["sort", "-m", "--files0-from", p(&list)]).args(tiny);
    let o = with_stdin(c, &piped);
    assert_eq!((o.status.code(), expect.status.code()), (Some(2), Some(2)), "{}", stderr(&o));
    assert!(stderr(&o).contains("no file name of '-' allowed"), "{}", stderr(&o));
    // An error after the spool (a missing file is found first; a binary
    // stream that is not whole items only once read): nothing left.
    let out = d.path().join("never");
    let mut c = emsort();
    c.args(["sort", "-m", "--format", "u32", "-o", p(&out)]).args(tiny).arg("-");
    let o = with_stdin(c, b"12345");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
    assert!(!out.exists() && entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
    // Ctrl-C while standard input is spooled (the pipe still open): exit 130,
    // the spool and its directory removed.
    let mut child = emsort()
        .args(["sort", "-m", "-o", p(&out)])
        .args(tiny)
        .args([p(&files[0]), "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sin = child.stdin.take().unwrap();
    sin.write_all(&piped[..4096]).unwrap();
    let spooled = || -> u64 {
        entries(&tmp)
            .iter()
            .filter_map(|e| std::fs::read_dir(tmp.join(e)).ok())
            .flatten()
            .filter_map(|f| f.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    };
    let t = Instant::now();
    while spooled() < 4096 && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(spooled() >= 4096, "no spool appeared: {:?}", entries(&tmp));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    drop(sin);
    assert!(crate::died_of(&o.status, libc::SIGINT), "{:?}: {}", o.status, stderr(&o));
    assert!(!out.exists() && entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

/// Every SIMD level the CPU has (forced lower with `EMSORT_SIMD`) gives the
/// same output, for every number format (floats with NaNs, ±0 and ±∞),
/// ascending and descending, through runs
/// and merges (issue 38); `--show-plan` says which level ran.
#[test]
fn every_simd_level_sorts_numbers_alike() {
    let (d, tmp) = setup();
    let formats = ["u32", "i32", "u64", "i64", "f32", "f64"];
    for (format, reverse) in formats.iter().flat_map(|&f| [(f, false), (f, true)]) {
        let input = d.path().join(format!("in.{format}"));
        gen(&["-f", format, "-n", "200000", "--seed", "38"], &input);
        if format.starts_with('f') {
            // Every 97th item an edge of the order: NaNs of both signs and
            // two payloads, ±0, ±∞, subnormals.
            let edges: [u64; 10] = [
                f64::NAN.to_bits(),
                (-f64::NAN).to_bits(),
                0x7FF0_0000_0000_0001,
                0.0f64.to_bits(),
                (-0.0f64).to_bits(),
                f64::INFINITY.to_bits(),
                f64::NEG_INFINITY.to_bits(),
                1,
                1 << 63 | 1,
                0xFFF8_0000_0000_0007,
            ];
            let mut bytes = std::fs::read(&input).unwrap();
            let w = if format == "f32" { 4 } else { 8 };
            for (j, item) in bytes.chunks_exact_mut(w).enumerate().filter(|(j, _)| j % 97 == 0) {
                let e = edges[j / 97 % edges.len()];
                if w == 4 {
                    let narrow = if f64::from_bits(e).is_nan() {
                        (e >> 32) as u32 | 0x7FC0_0000
                    } else {
                        (f64::from_bits(e) as f32).to_bits()
                    };
                    item.copy_from_slice(&narrow.to_ne_bytes());
                } else {
                    item.copy_from_slice(&e.to_ne_bytes());
                }
            }
            std::fs::write(&input, bytes).unwrap();
        }
        let mut outputs = Vec::new();
        for level in ["scalar", "avx2", "avx512"] {
            let out = d.path().join(format!("out-{level}"));
            let mut args = vec!["sort", "-q", "--format", format, "-S", "256K", "--show-plan", "-T", p(&tmp)];
            if reverse {
                args.push("-r");
            }
            args.extend([p(&input), "-o", p(&out)]);
            let o = emsort().env("EMSORT_SIMD", level).args(&args).output().unwrap();
            assert!(o.status.success(), "{level}: {}", stderr(&o));
            assert!(stderr(&o).contains("SIMD kernels"), "{}", stderr(&o));
            let mut verify = vec!["verify", "-f", format, p(&out), "--input", p(&input)];
            if reverse {
                verify.push("-r");
            }
            let v = run(&verify);
            assert!(v.status.success(), "{level} {format} -r {reverse}: {}", stdout(&v));
            outputs.push(std::fs::read(&out).unwrap());
        }
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "{format} -r {reverse}: the levels' outputs differ"
        );
        assert!(entries(&tmp).is_empty());
    }
}

/// Issue 38: without `--io` the sort probes its temp dir and uses
/// `uring-direct` (O_DIRECT with Q requests in flight) or `direct` on a
/// device (`uring`, the page cache, for runs it keeps until they are
/// deleted, on a device slower than the page cache),
/// `direct` on memory, and says which, and why, in `--show-plan` and
/// `--stats`; a kind asked for is used as asked, with no reason given;
/// every kind gives the same bytes (lines against `LC_ALL=C sort`).
#[test]
fn the_default_io_kind_is_chosen_said_and_sorts_alike() {
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    gen(&["-f", "lines", "--bytes", "3M", "--seed", "38"], &input);
    let want = gnu_sort(&input, false);
    // Below 128 MiB: direct, said so (no probe).
    let o = run(&[
        "sort",
        "-q",
        "-S",
        "512K",
        "--show-plan",
        "-T",
        p(&tmp),
        p(&input),
        "-o",
        p(&d.path().join("o")),
    ]);
    assert!(o.status.success() && stderr(&o).contains("input direct,"), "{}", stderr(&o));
    assert!(stderr(&o).contains("default: M below 128 MiB"), "{}", stderr(&o));
    assert!(std::fs::read(d.path().join("o")).unwrap() == want);
    for io in [None, Some("auto"), Some("direct"), Some("uring"), Some("uring-direct"), Some("buffered")] {
        let out = d.path().join("out.txt");
        let stats = d.path().join("stats.json");
        let mut args = vec!["sort", "-q", "-S", "128M", "--show-plan", "-T", p(&tmp), "--stats", p(&stats)];
        if let Some(k) = io {
            args.extend(["--io", k]);
        }
        args.extend([p(&input), "-o", p(&out)]);
        let o = run(&args);
        assert!(o.status.success(), "{io:?}: {}", stderr(&o));
        assert!(std::fs::read(&out).unwrap() == want, "{io:?}: output differs from LC_ALL=C sort");
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let plan = &json["plan"];
        let err = stderr(&o);
        match io {
            None | Some("auto") => {
                // This machine allows io_uring (ARCHITECTURE.md); the probe
                // of the temp dir finds a device (uring-direct) or memory
                // (direct), and says which.
                let why = plan["io_choice"].as_str().unwrap_or_default();
                // (3 MB in 128 MiB: no runs, so no probe.)
                let kind = if why.contains("a device to keep busy") || why.contains("no probe") {
                    "uring-direct"
                } else if why.contains("write-back threshold") {
                    "uring"
                } else {
                    "direct"
                };
                assert!(why.starts_with("default: "), "{why}");
                assert!(kind != "direct" || why.contains("on the CPU"), "{why}");
                assert_eq!(plan["input_kind"], kind, "{io:?}: {why}");
                assert_eq!(plan["output_kind"], kind, "{io:?}");
                assert!(err.contains(&format!("input {kind},")) && err.contains(why), "{err}");
            }
            Some(k) => {
                assert_eq!(plan["input_kind"], k);
                assert!(plan["io_choice"].is_null(), "{k}: {}", plan["io_choice"]);
                assert!(!err.contains("(default:"), "{err}");
            }
        }
        // The bounds: the CPU time over the threads, the I/O bound where
        // the device was measured, the larger one binding.
        let b = &json["bounds"];
        let (cpu, ratio) = (b["cpu_seconds"].as_f64().unwrap(), b["ratio"].as_f64().unwrap());
        assert!(cpu > 0.0 && ratio > 0.0, "{b}");
        let binds = if b["io_seconds"].as_f64().is_some_and(|io| io > cpu) { "io" } else { "cpu" };
        assert_eq!(b["binds"], binds, "{b}");
        assert!(entries(&tmp).is_empty(), "{io:?}");
    }
    // --queue-depth sets Q of the queued kinds.
    let o =
        run(&["sort", "-S", "128M", "--io", "uring-direct", "--queue-depth", "5", "--show-plan", p(&input)]);
    assert!(o.status.success() && stderr(&o).contains(", Q = 5)"), "{}", stderr(&o));
    let o = run(&["sort", "--io", "fast", p(&input)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("uring-direct") && stderr(&o).contains("or auto"), "{}", stderr(&o));
}

/// `--io syscall` (a system call per byte of lines, per item of numbers)
/// sorts as every kind does, with a warning that it is slow.
#[test]
fn io_syscall_sorts_with_a_warning() {
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    gen(&["-f", "lines", "--bytes", "20K", "--seed", "9"], &input);
    let out = d.path().join("out.txt");
    let o = run(&["sort", "--io", "syscall", "-T", p(&tmp), p(&input), "-o", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: --io syscall makes a system call for every byte"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), gnu_sort(&input, false));
    let o = run(&["sort", "--io", "direct", "-T", p(&tmp), p(&input), "-o", p(&out)]);
    assert!(o.status.success() && !stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// A config directory in `dir` whose `emsort calibrate` devices file says
/// the device under `tmp` is issue 38's slow disk (2.5 ms a 1 MiB write,
/// 870 MB/s written and 1780 MB/s read with 8 in flight); `None` when
/// `tmp` has no device of its own (tmpfs).
fn slow_disk_config(dir: &Path, tmp: &Path) -> Option<std::path::PathBuf> {
    let config = dir.join("config");
    let slow = emsort_io::device::DeviceCost {
        latency: Duration::from_micros(2500),
        on_cpu: 0.02,
        write_bandwidth: Some(870e6),
        read_bandwidth: Some(1780e6),
    };
    let mut devices = emsort_io::device::DeviceCache::default();
    if !devices.insert(tmp, slow) {
        return None;
    }
    devices.save(&config.join("emsort").join("devices")).unwrap();
    Some(config)
}

/// Issue 38, end to end past the page cache's room: with `emsort
/// calibrate`'s devices file saying the temp dir's device is the issue's
/// slow disk (2.5 ms a 1 MiB write, 870 MB/s written and 1780 MB/s read
/// with 8 in flight: slower than the page cache's copies), the
/// default kind is the page cache (`uring`) while the runs fit under the
/// kernel's background write-back threshold (the input and output files
/// `uring-direct`), and O_DIRECT with a queue
/// (`uring-direct`, Q by Little's law) once they outgrow it. The inputs are
/// sparse files (zeros, no disk); each sort is stopped by SIGTERM once its
/// plan is out and leaves nothing behind.
#[test]
fn the_default_io_kind_leaves_the_page_cache_when_the_runs_outgrow_it() {
    use std::io::BufRead;
    let (d, tmp) = setup();
    let config = slow_disk_config(d.path(), &tmp).expect("the temp dir has a device of its own");
    let room = emsort_io::device::cache_room().expect("/proc tells the background write-back threshold");
    let input = d.path().join("in.u32");
    let out = d.path().join("out.u32");
    for (bytes, kind, why) in [
        (256u64 << 20, "uring", "fit under the kernel's background write-back threshold"),
        ((room + (512 << 20)) / 4 * 4, "uring-direct", "a device to keep busy"),
    ] {
        std::fs::File::create(&input).unwrap().set_len(bytes).unwrap();
        let mut child = emsort()
            .env("XDG_CONFIG_HOME", &config)
            .args([
                "sort",
                "--format",
                "u32",
                "-S",
                "128M",
                "--show-plan",
                "-T",
                p(&tmp),
                p(&input),
                "-o",
                p(&out),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut plan = String::new();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        while !plan.contains("passes over the data") {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap() == 0 {
                break;
            }
            plan.push_str(&line);
        }
        // SAFETY: kill sends a signal to our own child, not yet reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        assert!(plan.contains(&format!("input {kind}, output {kind}")), "{bytes} bytes: {plan}");
        // Runs in the page cache; the files, which reach the device in any
        // case, with O_DIRECT.
        let files = plan.contains("; the input and output files uring-direct (");
        assert_eq!(files, kind == "uring", "{bytes} bytes: {plan}");
        assert!(plan.contains("emsort calibrate measured") && plan.contains(why), "{bytes} bytes: {plan}");
        if kind == "uring-direct" {
            // 870 MB/s × 2.5 ms = 2.2 MB in flight: three 1 MiB requests, and one more.
            assert!(plan.contains("Q = 4"), "{plan}");
            assert_eq!(status.code(), None, "stopped by the signal: {plan}");
        }
        assert!(entries(&tmp).is_empty(), "{bytes} bytes: temporary files left");
        std::fs::remove_file(&input).unwrap();
        let _ = std::fs::remove_file(&out);
    }
}

/// Runs the default put in the page cache (a devices file says the temp
/// dir is a slow disk) are weighed again at the first run against the CPU
/// the sort needed: the statistics say which kind they got and why, and
/// the output is `LC_ALL=C sort`'s either way, the runs written and read
/// with the kind chosen, the files with O_DIRECT.
#[test]
fn the_first_run_weighs_the_page_cache_against_the_cpu() {
    let (d, tmp) = setup();
    let Some(config) = slow_disk_config(d.path(), &tmp) else {
        return; // a temp dir without a device of its own (tmpfs): no page cache to weigh
    };
    if emsort_io::uring_unavailable().is_some() {
        return;
    }
    let (input, out, stats) = (d.path().join("in.txt"), d.path().join("out.txt"), d.path().join("s.json"));
    gen(&["--format", "lines", "--bytes", "150M"], &input);
    let o = emsort()
        .env("XDG_CONFIG_HOME", &config)
        .args(["sort", "-S", "128M", "-T", p(&tmp), "--stats", p(&stats), p(&input), "-o", p(&out)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["plan"]["files_kind"], "uring-direct", "{s}");
    let why = s["runs_io"].as_str().unwrap_or_else(|| panic!("runs_io: {s}"));
    assert!(
        why.starts_with("uring: the runs stay") || why.starts_with("uring-direct: the runs go to the device"),
        "{why}"
    );
    assert!(why.contains("CPU s/GiB") && why.contains("870 MB/s"), "{why}");
    assert!(std::fs::read(&out).unwrap() == gnu_sort(&input, false), "output differs from LC_ALL=C sort");
    assert!(entries(&tmp).is_empty(), "temporary files left");
}

/// `--stats FILE` never replaces what the sort reads or writes: FILE an
/// input or the output is refused before the sort (exit 2, the file named),
/// and both files keep their bytes; another FILE is written as asked.
#[test]
fn stats_never_replace_an_input_or_the_output() {
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    gen(&["-f", "lines", "--bytes", "20K", "--seed", "7"], &input);
    let before = std::fs::read(&input).unwrap();
    let out = d.path().join("out.txt");
    std::fs::write(&out, b"kept\n").unwrap();
    for (stats, role) in [(&input, "an input"), (&out, "the output")] {
        let o = run(&["sort", "-T", p(&tmp), "--stats", p(stats), p(&input), "-o", p(&out)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(p(stats)) && stderr(&o).contains(role), "{}", stderr(&o));
        assert_eq!(std::fs::read(&input).unwrap(), before);
        assert_eq!(std::fs::read(&out).unwrap(), b"kept\n");
    }
    let stats = d.path().join("stats.json");
    let o = run(&["sort", "-T", p(&tmp), "--stats", p(&stats), p(&input), "-o", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), gnu_sort(&input, false));
    assert!(std::fs::read_to_string(&stats).unwrap().starts_with('{'));
    assert!(entries(&tmp).is_empty());
}

#[test]
fn stats_dash_is_standard_output_when_the_output_is_a_file() {
    let (d, tmp) = setup();
    let input = d.path().join("in.txt");
    std::fs::write(&input, "b\na\nc\n").unwrap();
    let out = d.path().join("out.txt");
    let o = run(&["sort", "-q", "-T", p(&tmp), p(&input), "-o", p(&out), "--stats", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["input_bytes"], 6);
    assert_eq!(std::fs::read(&out).unwrap(), b"a\nb\nc\n");
    // The sorted output on standard output too: refused before sorting,
    // GNU's exit status for bad usage, nothing written, no file "-".
    let o = run(&["sort", "-T", p(&tmp), p(&input), "--stats", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).contains("--stats -"), "{}", stderr(&o));
    let mut names: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["in.txt", "out.txt", "tmp"]);
}
