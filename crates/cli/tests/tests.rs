//! Integration tests of the `emsort` binary: one test binary, modules per
//! subcommand, helpers here.

mod cli {
    mod bench;
    mod bench_ray;
    mod bench_readers;
    mod bench_sort;
    mod bench_srm;
    mod calibrate;
    mod crash;
    mod gen_verify;
    mod gnu_args;
    mod gnu_sort;
    mod nothing_lost;
    mod replay;
    mod sort;
    mod sort_compress;
    mod sort_csv;
    mod sort_jsonl;
    mod sort_locale;
    mod sort_pdisk;
    mod sort_table;
    mod trust;
}

use std::path::Path;
use std::process::{Command, Output};

/// The `emsort` binary under test: the one built for these tests, or
/// `EMSORT_TEST_BIN` (to show that a regression test fails on an older
/// build).
pub fn emsort_path() -> std::path::PathBuf {
    std::env::var_os("EMSORT_TEST_BIN").map_or_else(|| env!("CARGO_BIN_EXE_emsort").into(), Into::into)
}

/// The signals GNU sort catches, which the binary keeps ignored when it
/// starts with them ignored.
pub const CAUGHT_SIGNALS: [i32; 7] =
    [libc::SIGHUP, libc::SIGQUIT, libc::SIGTERM, libc::SIGINT, libc::SIGPIPE, libc::SIGALRM, libc::SIGXCPU];

/// The `emsort` binary under test ([`emsort_path`]), started with
/// [`CAUGHT_SIGNALS`] at their default disposition whatever the test run
/// inherited: a background job of a shell has SIGINT and SIGQUIT ignored,
/// `nohup` SIGHUP, and the binary rightly keeps an ignored signal ignored,
/// so a test that sends one would wait for a sort that never stops.
///
/// `LC_ALL=C` unless a test sets another: emsort sorts text in the
/// environment's locale as GNU sort does, and the tests compare it with
/// `LC_ALL=C sort` (`sort_locale.rs` sets the locales it tests).
pub fn emsort() -> Command {
    let mut c = Command::new(emsort_path());
    c.env("LC_ALL", "C");
    default_signals(&mut c);
    c
}

/// Starts `cmd` with [`CAUGHT_SIGNALS`] at their default disposition.
pub fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in CAUGHT_SIGNALS {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// A path as the `&str` an argument list takes.
pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A test directory with an (inspected) temp dir `tmp` inside.
pub fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    (d, tmp)
}

/// Runs `emsort args…` and returns its output.
pub fn run(args: &[&str]) -> Output {
    emsort().args(args).output().expect("run emsort")
}

/// Runs `emsort args…` with `input` on its standard input.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = emsort()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run emsort");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feed = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("run emsort");
    feed.join().unwrap().expect("emsort reads its standard input");
    out
}

/// Sets `RLIMIT_FSIZE` to `bytes` for `cmd`, with SIGXFSZ at its default
/// action (kill): the binary must ignore it itself to report the limit.
pub fn file_size_limit(cmd: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// Whether `status` is death by signal `sig`, as GNU sort ends once it has
/// removed its temporary files (a shell shows 128 + `sig`).
pub fn died_of(status: &std::process::ExitStatus, sig: i32) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(sig)
}

/// A decimal or `0x` hexadecimal number from the environment.
pub fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(n.unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Names of the entries of `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Waits (at most 30 s) until the sorts' temporary directories inside
/// `tmp` hold at least `n` files in all (runs written); returns how many
/// they hold.
pub fn wait_for_runs(tmp: &Path, n: usize) -> usize {
    let runs = || -> usize {
        entries(tmp).iter().map(|e| std::fs::read_dir(tmp.join(e)).map_or(0, |r| r.count())).sum()
    };
    let t = std::time::Instant::now();
    while runs() < n && t.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    runs()
}

/// The bytes the binary under test maps from its file (the memory sizes of
/// its ELF `PT_LOAD` segments): the address space it takes before `main`.
pub fn image_bytes() -> u64 {
    let b = std::fs::read(emsort_path()).expect("read the binary");
    let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    assert_eq!(&b[..5], b"\x7fELF\x02", "a 64-bit ELF binary");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    (0..phnum)
        .map(|i| phoff + i * phentsize)
        .filter(|&h| u32::from_le_bytes(b[h..h + 4].try_into().unwrap()) == 1)
        .map(|h| u64_at(h + 0x28))
        .sum()
}
