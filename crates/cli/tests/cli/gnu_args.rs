//! The command line against GNU `sort` (issue 39): seeded random argument
//! lists — valid and invalid, options repeated, clustered, abbreviated and
//! combined, the obsolete `+POS1 -POS2` keys, missing operands and files,
//! `-o` into `/dev/stdout`, `/dev/stderr`, `/dev/fd/2`, `/proc/self/fd/1` —
//! each run by `LC_ALL=C /usr/bin/sort` and by emsort started as `sort` (a
//! link of that name: GNU's program name in its messages) in directories
//! holding the same files; the exit status, standard output, standard error
//! and the `-o` file compared byte for byte.
//!
//! `EMSORT_ARGS_CASES` (default 400) and `EMSORT_ARGS_SEED` (default 1)
//! choose the cases; a failure names its seed, case and argument list.

use std::path::Path;
use std::process::{Command, Stdio};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::emsort_path;

/// Inputs every case finds in its directory: unsorted, sorted, numbers.
const FILES: [(&str, &[u8]); 3] = [
    ("a", b"b 2\na 10\nc 1\na 10\n 5 x\n"),
    ("s", b"a 1\nb 2\nb 2\nc 3\n"),
    ("n", b"10\n9\n-1\n1e3\n0x10\n"),
];

/// Options that take no value (GNU's and the same long forms).
const FLAGS: &[&str] = &[
    "-b",
    "-d",
    "-f",
    "-g",
    "-h",
    "-i",
    "-M",
    "-n",
    "-r",
    "-s",
    "-u",
    "-V",
    "-m",
    "-c",
    "-C",
    "--reverse",
    "--numeric-sort",
    "--rev",
    "--num",
    "--uniq",
    "--stab",
    "--ignore-c",
    "--dictionary",
    "--month",
    "--human",
    "--general",
    "--version-s",
    "--merge",
    "--check",
    "--check=quiet",
    "--check=silent",
    "--check=d",
    "--check=q",
    "--check=x",
    "--debug",
    "--debug=1",
    "--s",
    "--nope",
    "-x",
    "-y",
    "-nr",
    "-rn",
    "-un",
    "-cC",
    "-nu",
    "-bf",
    "-Mr",
];

/// Options with a value, and values for them.
const VALUED: &[(&str, &[&str])] = &[
    (
        "-k",
        &["1", "2", "2,2", "2n", "1.2,2", "2,2nr", "1b,1", "0", "1.0", "2x", "1,0", "3", "1.1,1.1", "2,2g"],
    ),
    ("--key=", &["2", "1,1", "2n"]),
    ("--ke=", &["2"]),
    ("-t", &[" ", ",", "x", "ab", "\\0"]),
    ("--field-separator=", &[" ", ""]),
    ("-S", &["1", "10b", "1K", "0", "x", "1x", "200%", "0%", "1M", "32b", "1b"]),
    ("--buffer-size=", &["2", "1G"]),
    ("--batch-size=", &["1", "2", "16", "x", "99999999999999999999"]),
    ("--parallel=", &["0", "1", "2", "x"]),
    ("--p=", &["1"]),
    ("--sort=", &["numeric", "n", "mon", "h", "x", "version", "general-numeric", ""]),
    ("-o", &["out", "out2", "/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/dev/fd/2"]),
    ("--output=", &["out"]),
];

/// Operands: files, standard input, a missing file, obsolete keys.
const OPERANDS: &[&[&str]] = &[
    &["a"],
    &["s"],
    &["n"],
    &["-"],
    &["missing"],
    &["+1"],
    &["+1", "-2"],
    &["+0.1n", "-2b"],
    &["+1", "-2x"],
    &["+x", "-2"],
    &["--", "-n"],
];

/// One seeded argument list.
fn case(r: &mut Xoshiro256PlusPlus) -> Vec<String> {
    let mut args = Vec::new();
    for _ in 0..r.random_range(0..5) {
        match r.random_range(0..3) {
            0 => args.push(FLAGS.choose(r).unwrap().to_string()),
            1 => {
                let (opt, values) = VALUED.choose(r).unwrap();
                let v = values.choose(r).unwrap();
                if opt.ends_with('=') || r.random_bool(0.5) {
                    args.push(format!("{opt}{v}"));
                } else {
                    args.push(opt.to_string());
                    args.push(v.to_string());
                }
            }
            _ => args.extend(OPERANDS.choose(r).unwrap().iter().map(|s| s.to_string())),
        }
    }
    // A file most of the time, so that the sorts have something to read.
    if r.random_bool(0.7) {
        args.push(["a", "s", "n"].choose(r).unwrap().to_string());
    }
    args
}

/// What a program did: exit status, standard output, standard error, `-o`'s files.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    outputs: Vec<Option<String>>,
}

fn sorted_lines(o: &Outcome) -> Vec<&str> {
    let mut v: Vec<&str> = o.stdout.lines().collect();
    v.sort_unstable();
    v
}

fn run_in(dir: &Path, program: &Path, args: &[String]) -> Outcome {
    for (name, data) in FILES {
        std::fs::write(dir.join(name), data).unwrap();
    }
    for o in ["out", "out2"] {
        let _ = std::fs::remove_file(dir.join(o));
    }
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(program);
    // Both under the name `sort`, which begins their messages.
    c.arg0("sort");
    crate::default_signals(&mut c);
    let mut child = c
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env_remove("POSIXLY_CORRECT")
        .env_remove("_POSIX2_VERSION")
        .env("TMPDIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut sin = child.stdin.take().unwrap();
        let _ = sin.write_all(b"z\ny 3\nx 2\n");
    }
    let o = child.wait_with_output().unwrap();
    Outcome {
        status: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        outputs: ["out", "out2"].iter().map(|f| std::fs::read_to_string(dir.join(f)).ok()).collect(),
    }
}

#[test]
fn argument_lists_as_gnu_sort() {
    let d = tempfile::tempdir().unwrap();
    let (gnu_dir, ours_dir) = (d.path().join("gnu"), d.path().join("emsort"));
    std::fs::create_dir(&gnu_dir).unwrap();
    std::fs::create_dir(&ours_dir).unwrap();
    // emsort under the name `sort`.
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(emsort_path(), bin.join("sort")).unwrap();
    let gnu = Path::new("/usr/bin/sort");
    let cases: u64 = std::env::var("EMSORT_ARGS_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let seed: u64 = std::env::var("EMSORT_ARGS_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut failures = Vec::new();
    let mut statuses = [0usize; 3];
    for i in 0..cases {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(i));
        let args = case(&mut r);
        let expect = run_in(&gnu_dir, gnu, &args);
        let got = run_in(&ours_dir, &bin.join("sort"), &args);
        statuses[expect.status.unwrap_or(2).clamp(0, 2) as usize] += 1;
        // -m of unsorted inputs: the order is the merge's, not defined;
        // the same lines then.
        let merge = args.iter().any(|a| a == "-m" || a == "--merge");
        let same = if merge && got.status == Some(0) {
            (got.status, &got.stderr, sorted_lines(&got))
                == (expect.status, &expect.stderr, sorted_lines(&expect))
        } else {
            got == expect
        };
        if !same {
            failures.push(format!(
                "seed {seed} case {i}: sort {args:?}\n  GNU:    {expect:?}\n  emsort: {got:?}"
            ));
        }
    }
    // The generator reaches every outcome: success, disorder, errors.
    assert!(statuses.iter().all(|&n| n > cases as usize / 20), "outcomes by status 0/1/2: {statuses:?}");
    assert!(
        failures.is_empty(),
        "{} of {cases} argument lists differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
