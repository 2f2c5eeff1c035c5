//! The seeded crash-test campaign (after SQLite's crash tests): many sorts,
//! each drawn from a seed (format, size, memory, mode, fault), each checked
//! against the promises of "Nothing lost" (docs/safety.md):
//!
//! - the input is byte-identical to before;
//! - the output holds its previous content (or does not exist, if it did
//!   not), or the complete result (`LC_ALL=C sort` for lines, `emsort verify
//!   --input` for binary formats), never a partial file; standard output
//!   holds the complete result or, when the sort was stopped, a prefix of it;
//! - the exit status: 0 only with a complete output, 130 / 143 after SIGINT /
//!   SIGTERM, 3 with a message naming the file and the cause when a disk is
//!   full or the file size limit is reached, death by the signal for SIGKILL;
//! - nothing left in a temp dir, a disk dir or the output dir after any fault
//!   but SIGKILL; after SIGKILL, nothing of the dead sort left once the next
//!   sort has used the same directories.
//!
//! Some outcomes are races, not faults, and are accepted and counted: a
//! signal that finds the sort finished (exit 0, complete output), a SIGINT
//! or SIGTERM that arrives before `main` installs its handler (the process
//! dies of it, with nothing created yet), a stop after the output was
//! renamed (the complete result, exit 130 / 143).
//!
//! A violation is recorded (seed, case, command line, what was found) and
//! the campaign goes on; the test fails at the end, listing them all.
//! `EMSORT_CRASH_SEED` overrides the seed, `EMSORT_CRASH_CASES` the number of
//! cases and `EMSORT_CRASH_CASE` runs one case of a campaign alone (each case
//! draws from its own generator, seeded by the campaign's seed and its
//! number, so a case replays alone exactly as it ran in the campaign).
//! Full disks are small tmpfs mounts in the test's own directory: they need
//! root, and are left out (the report says so) without it.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::{emsort, entries, p};

/// The default suite's seed (`EMSORT_CRASH_SEED` overrides it).
const SMALL_SEED: u64 = 0xC0FF_EE00_2025;
/// The opt-in tier's default seed.
const FULL_SEED: u64 = 0x5EED_F011;
/// A sort that has not ended after this long is killed and reported.
const HANG: Duration = Duration::from_secs(90);
/// The longest a sort may take to stop after SIGINT / SIGTERM: its watchdog
/// ends it 3 s after the signal; the rest is slack for a loaded machine.
const STOP_LIMIT: Duration = Duration::from_secs(8);

#[test]
fn crash_campaign_small() {
    let seed = env_u64("EMSORT_CRASH_SEED").unwrap_or(SMALL_SEED);
    let cases = env_u64("EMSORT_CRASH_CASES").map_or(40, |n| n as usize);
    campaign("crash_campaign_small", seed, cases, 4);
}

#[test]
#[ignore = "opt-in tier: 200 cases, several minutes; cargo test -p emsort --test tests crash_campaign_full -- --ignored"]
fn crash_campaign_full() {
    let seed = env_u64("EMSORT_CRASH_SEED").unwrap_or(FULL_SEED);
    let cases = env_u64("EMSORT_CRASH_CASES").map_or(200, |n| n as usize);
    campaign("crash_campaign_full", seed, cases, 8);
}

/// A decimal or `0x` hexadecimal number from the environment.
fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(n.unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

// ---------------------------------------------------------------------------
// Drawing the cases

/// SplitMix64: small, seedable, good enough to draw test cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.range(0, xs.len() as u64) as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    U32,
    F64,
    I64,
    Rec100,
    Rec104,
    Lines,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::U32 => "u32",
            Format::F64 => "f64",
            Format::I64 => "i64",
            Format::Rec100 => "rec:100:0:10",
            Format::Rec104 => "rec:104:0:8",
            Format::Lines => "lines",
        }
    }

    /// Bytes per item (1 for lines, which are generated by size).
    fn item(self) -> u64 {
        match self {
            Format::U32 => 4,
            Format::F64 | Format::I64 => 8,
            Format::Rec100 => 100,
            Format::Rec104 => 104,
            Format::Lines => 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Plain,
    Dsm,
    Srm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    File,
    /// Standard input, named as `-`, `/dev/stdin` or not at all.
    Stdin(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// `-o out/sorted`, pre-filled with a previous content or not.
    File {
        previous: bool,
    },
    /// `-o` names the input itself.
    InPlace,
    Stdout,
}

/// When a signal is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    /// This fraction of the same sort's undisturbed duration after spawn.
    Fraction(f64),
    /// As soon as a run file appears in a temp or disk dir.
    FirstRun,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    Signal(i32, At),
    /// A tmpfs of this many bytes as the first temp dir (plain) or the first
    /// disk (dsm, srm).
    FullTemp(u64),
    /// A tmpfs of this many bytes as the output's directory.
    FullOut(u64),
    /// RLIMIT_FSIZE of this many bytes.
    Fsize(u64),
}

impl Fault {
    fn kind(&self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Signal(libc::SIGINT, _) => "SIGINT",
            Fault::Signal(libc::SIGTERM, _) => "SIGTERM",
            Fault::Signal(_, _) => "SIGKILL",
            Fault::FullTemp(_) => "full -T",
            Fault::FullOut(_) => "full output dir",
            Fault::Fsize(_) => "RLIMIT_FSIZE",
        }
    }
}

const FAULT_KINDS: [&str; 7] =
    ["SIGINT", "SIGTERM", "SIGKILL", "full -T", "full output dir", "RLIMIT_FSIZE", "none"];
const OUTCOMES: [&str; 5] = ["completed", "interrupted", "starved", "killed", "other"];

#[derive(Debug, Clone)]
struct Case {
    n: usize,
    format: Format,
    /// Input bytes.
    bytes: u64,
    line_len: &'static str,
    gen_seed: u64,
    memory: &'static str,
    block_4k: bool,
    method: Method,
    disks: usize,
    temp_dirs: usize,
    input: Input,
    output: Output,
    fault: Fault,
}

/// Draws case `n` of the campaign `seed` (its own generator: replayable alone).
fn draw(seed: u64, n: usize, max_mib: u64, mounts: bool) -> Case {
    let mut r = Rng(seed ^ (n as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    r.next();
    let format = match r.range(0, 3) {
        0 => r.pick(&[Format::U32, Format::F64, Format::I64]),
        1 => r.pick(&[Format::Rec100, Format::Rec104]),
        _ => Format::Lines,
    };
    let bytes = r.range(1 << 20, (max_mib << 20) + 1) / format.item() * format.item();
    let line_len = r.pick(&["0..40", "10..100", "1..300"]);
    let memory = r.pick(&["256K", "512K", "1M", "2M"]);
    let stdin = Input::Stdin(r.pick(&["-", "/dev/stdin", ""]));
    let previous = r.chance(0.5);
    let (method, input, output) = match r.range(0, 6) {
        0 => (Method::Plain, Input::File, Output::File { previous }),
        1 => (Method::Plain, Input::File, Output::InPlace),
        2 => (Method::Plain, stdin, Output::File { previous }),
        3 => (Method::Plain, stdin, Output::Stdout),
        m => {
            let method = if m == 4 { Method::Dsm } else { Method::Srm };
            let input = if r.chance(0.25) { stdin } else { Input::File };
            (method, input, Output::File { previous })
        }
    };
    let disks = if method == Method::Plain { 0 } else { r.range(2, 4) as usize };
    let temp_dirs = if method == Method::Plain && r.chance(0.3) { 2 } else { 1 };
    let block_4k = method != Method::Plain || r.chance(0.5);
    // The bytes the starved directory must take at least: its share of the
    // runs (dealt round-robin over the temp dirs, striped over the disks).
    // A tmpfs of at most 70% of that cannot hold them.
    let starved_share = if method == Method::Plain { bytes / temp_dirs as u64 } else { bytes / disks as u64 };
    let mut kinds: Vec<u8> = vec![0, 1, 1, 2, 2, 3, 3, 3, 6];
    if mounts {
        kinds.extend([4, 5]);
    }
    let page = |b: u64| b / 4096 * 4096;
    // An input that fits in memory is sorted without runs: a full temp dir
    // or disk then starves only a spool of standard input (in the first
    // temp dir, which is the starved one only for the plain method).
    let mem_bytes = memory.strip_suffix('K').map_or_else(
        || memory.strip_suffix('M').unwrap().parse::<u64>().unwrap() << 20,
        |k| k.parse::<u64>().unwrap() << 10,
    );
    let temp_starves = bytes > mem_bytes || (method == Method::Plain && input != Input::File);
    let fault = loop {
        let k = r.pick(&kinds);
        // A fifth when the first run appears, a tenth at once (before the
        // handler may be installed), the rest up to 1.2 x the undisturbed time.
        let at = match r.range(0, 10) {
            0 | 1 => At::FirstRun,
            2 => At::Fraction(0.0),
            _ => At::Fraction(r.unit() * 1.2),
        };
        break match k {
            0 => Fault::None,
            1 => Fault::Signal(libc::SIGINT, at),
            2 => Fault::Signal(libc::SIGTERM, at),
            3 => Fault::Signal(libc::SIGKILL, at),
            4 if !temp_starves => continue,
            4 => Fault::FullTemp(page(r.range(64 << 10, starved_share * 7 / 10))),
            // The output cannot fill a full output dir; standard output has none.
            5 if output == Output::Stdout => continue,
            5 if output == Output::InPlace => Fault::FullOut(page(bytes + r.range(16 << 10, bytes * 8 / 10))),
            5 => Fault::FullOut(page(r.range(16 << 10, bytes * 8 / 10))),
            _ => Fault::Fsize(page(r.range(64 << 10, bytes - (64 << 10)))),
        };
    };
    Case {
        n,
        format,
        bytes,
        line_len,
        gen_seed: r.next() % 1_000_000,
        memory,
        block_4k,
        method,
        disks,
        temp_dirs,
        input,
        output,
        fault,
    }
}

// ---------------------------------------------------------------------------
// The campaign's report

#[derive(Default)]
struct Report {
    runs: usize,
    faults: BTreeMap<&'static str, usize>,
    outcomes: BTreeMap<&'static str, usize>,
    violations: Vec<String>,
    /// Signals that found the sort already finished (or were never sent:
    /// the sort ended before its first run appeared).
    too_late: usize,
    /// SIGINT / SIGTERM that killed the process before its handler was
    /// installed (nothing created yet).
    before_handler: usize,
    /// Stopped by a signal after the complete output was in place.
    complete_then_stopped: usize,
    /// Standard output cut short by a signal (a prefix of the result).
    partial_stdout: usize,
    /// Faults that did not bite (the sort completed).
    starvation_missed: usize,
    /// SIGKILLs that left entries, and how many, all removed by the next run.
    killed_left: usize,
    killed_left_entries: usize,
    /// Entries the next run did not remove.
    killed_kept: usize,
    /// Longest time from SIGINT / SIGTERM to the exit.
    max_stop: Duration,
    /// Sorts that the watchdog ended (the work had not stopped 3 s after the signal).
    watchdog: usize,
    mounts_skipped: bool,
}

impl Report {
    fn print(&self, name: &str, seed: u64, elapsed: Duration) {
        let row = |keys: &[&str], map: &BTreeMap<&str, usize>| {
            keys.iter()
                .filter(|k| **k != "other" || map.contains_key(*k))
                .map(|k| format!("{k} {}", map.get(*k).copied().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!("== {name}: seed {seed:#x}, {} runs in {:.1} s", self.runs, elapsed.as_secs_f64());
        println!("   faults      {}", row(&FAULT_KINDS, &self.faults));
        println!("   outcomes    {}", row(&OUTCOMES, &self.outcomes));
        println!(
            "   notes       signal after the end {}, signal before the handler {}, stopped after the \
             output was complete {}, partial standard output {}, starvation that did not bite {}",
            self.too_late,
            self.before_handler,
            self.complete_then_stopped,
            self.partial_stdout,
            self.starvation_missed
        );
        println!(
            "   SIGKILL     {} sorts left temporary entries ({} in all); the next run left {} of them",
            self.killed_left, self.killed_left_entries, self.killed_kept
        );
        println!(
            "   stops       slowest after SIGINT/SIGTERM {:.2} s; ended by the watchdog {}",
            self.max_stop.as_secs_f64(),
            self.watchdog
        );
        if self.mounts_skipped {
            println!("   full-disk faults skipped: mounting tmpfs needs root");
        }
        println!("   violations  {}", self.violations.len());
        for v in &self.violations {
            println!("   - {v}");
        }
    }
}

fn campaign(name: &str, seed: u64, cases: usize, max_mib: u64) {
    let root = tempfile::tempdir().unwrap();
    let mounts = can_mount(root.path());
    let only = env_u64("EMSORT_CRASH_CASE").map(|n| n as usize);
    let mut report = Report { mounts_skipped: !mounts, ..Report::default() };
    let t = Instant::now();
    println!(
        "== {name}: seed {seed:#x} ({cases} cases; EMSORT_CRASH_SEED, EMSORT_CRASH_CASES, EMSORT_CRASH_CASE)"
    );
    for n in (0..cases).filter(|n| only.is_none_or(|o| o == *n)) {
        let case = draw(seed, n, max_mib, mounts);
        run_case(root.path(), seed, &case, &mut report);
    }
    report.print(name, seed, t.elapsed());
    assert!(
        report.violations.is_empty(),
        "{} violation(s) of the promises (seed {seed:#x}):\n{}",
        report.violations.len(),
        report.violations.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Mounts

/// A tmpfs mounted for one case, unmounted when dropped (also on a panic).
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, bytes: u64) -> std::io::Result<Mount> {
        let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        let opts = CString::new(format!("size={bytes},mode=0755")).unwrap();
        // SAFETY: valid NUL-terminated strings.
        let r = unsafe {
            libc::mount(c"tmpfs".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), 0, opts.as_ptr().cast())
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let target = CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid path; MNT_DETACH so that an open file cannot keep it busy.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Whether this process may mount tmpfs (root, as CI runs).
fn can_mount(root: &Path) -> bool {
    let probe = root.join("mount-probe");
    std::fs::create_dir(&probe).unwrap();
    let ok = Mount::tmpfs(&probe, 64 << 10).is_ok();
    std::fs::remove_dir(&probe).unwrap();
    ok
}

// ---------------------------------------------------------------------------
// One case

/// The directories and files of one sort.
struct Layout {
    tmps: Vec<PathBuf>,
    disks: Vec<PathBuf>,
    out_dir: PathBuf,
    input: PathBuf,
    output: Option<PathBuf>,
}

impl Layout {
    fn new(base: &Path, case: &Case) -> Layout {
        let tmps: Vec<PathBuf> = (0..case.temp_dirs).map(|i| base.join(format!("tmp{i}"))).collect();
        let disks: Vec<PathBuf> = (0..case.disks).map(|i| base.join(format!("disk{i}"))).collect();
        let out_dir = base.join("out");
        for d in tmps.iter().chain(&disks).chain([&out_dir]) {
            std::fs::create_dir_all(d).unwrap();
        }
        let (input, output) = match case.output {
            Output::InPlace => (out_dir.join("data"), Some(out_dir.join("data"))),
            Output::File { .. } => (base.join("in"), Some(out_dir.join("sorted"))),
            Output::Stdout => (base.join("in"), None),
        };
        Layout { tmps, disks, out_dir, input, output }
    }

    /// The directories that must hold nothing of emsort once a sort is over.
    fn scratch(&self) -> impl Iterator<Item = &PathBuf> {
        self.tmps.iter().chain(&self.disks)
    }

    /// `--method M --disks a,b` and `-T` for each temp dir.
    fn dir_args(&self, case: &Case) -> Vec<String> {
        let mut a = Vec::new();
        if case.method != Method::Plain {
            a.push("--method".into());
            a.push(if case.method == Method::Dsm { "dsm" } else { "srm" }.into());
            a.push("--disks".into());
            a.push(self.disks.iter().map(|d| p(d)).collect::<Vec<_>>().join(","));
        }
        for t in &self.tmps {
            a.push("-T".into());
            a.push(p(t).into());
        }
        a
    }

    fn sort_args(&self, case: &Case) -> Vec<String> {
        let mut a: Vec<String> =
            ["sort", "-q", "--format", case.format.name(), "-S", case.memory].map(String::from).into();
        if case.block_4k {
            a.extend(["--block-size".into(), "4K".into()]);
        }
        a.extend(self.dir_args(case));
        match case.input {
            Input::File => a.push(p(&self.input).into()),
            Input::Stdin("") => {}
            Input::Stdin(name) => a.push(name.into()),
        }
        if let Some(o) = &self.output {
            a.extend(["-o".into(), p(o).into()]);
        }
        a
    }
}

/// What one `emsort sort` did.
struct Ran {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
    /// The signal and when it was sent (after spawn).
    sent: Option<(i32, Duration)>,
    hung: bool,
}

impl Ran {
    fn stop_latency(&self) -> Option<Duration> {
        self.sent.map(|(_, at)| self.elapsed.saturating_sub(at))
    }
}

/// Whether a run file exists in an emsort directory under one of `dirs`.
fn a_run_exists(dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|d| {
        std::fs::read_dir(d).into_iter().flatten().flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with("emsort-")
                && std::fs::read_dir(e.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|r| r.file_name().to_string_lossy().starts_with("run-"))
        })
    })
}

/// Runs `emsort args…`: standard input from `stdin_from`, standard output
/// captured, RLIMIT_FSIZE `fsize`, and `signal` sent at `at` (`at` in time
/// after spawn, or once a run appears in `watch`).
fn run_sort(
    args: &[String],
    stdin_from: Option<&Path>,
    fsize: Option<u64>,
    signal: Option<(i32, Option<Duration>)>,
    watch: &[PathBuf],
) -> Ran {
    let mut cmd = emsort();
    cmd.args(args)
        .stdin(if stdin_from.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(lim) = fsize {
        // Only the limit (SIGXFSZ at its default, which kills): the binary
        // must handle it itself. SAFETY: only async-signal-safe calls
        // between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit { rlim_cur: lim, rlim_max: lim };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                Ok(())
            });
        }
    }
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn emsort");
    let writer = stdin_from.map(|path| {
        let mut f = std::fs::File::open(path).unwrap();
        let mut sin = child.stdin.take().unwrap();
        // A sort that stops reading (signal, error) makes this fail: fine.
        std::thread::spawn(move || drop(std::io::copy(&mut f, &mut sin)))
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let mut sent = None;
    let mut hung = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let (Some((sig, at)), None) = (signal, sent) {
            let due = match at {
                Some(d) => t.elapsed() >= d,
                None => a_run_exists(watch),
            };
            if due {
                // The child is not reaped before try_wait returns it, so
                // the pid is still its own.
                // SAFETY: kill(2) on our own child.
                unsafe { libc::kill(pid, sig) };
                sent = Some((sig, t.elapsed()));
            }
        }
        if t.elapsed() > HANG && !hung {
            hung = true;
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let elapsed = t.elapsed();
    if let Some(w) = writer {
        w.join().unwrap();
    }
    Ran {
        status,
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        elapsed,
        sent,
        hung,
    }
}

/// What a complete result is, for one input.
struct Oracle {
    format: Format,
    /// The pristine input (the sorts never see this file).
    original: PathBuf,
    /// `LC_ALL=C sort` of it for lines; for binary formats, the verified
    /// output of an undisturbed sort, if one ran (to check prefixes).
    sorted: Option<Vec<u8>>,
}

impl Oracle {
    fn new(format: Format, original: &Path) -> Oracle {
        let sorted = (format == Format::Lines).then(|| {
            let o = Command::new("sort").env("LC_ALL", "C").arg(original).output().unwrap();
            assert!(o.status.success(), "LC_ALL=C sort {}", original.display());
            o.stdout
        });
        Oracle { format, original: original.to_path_buf(), sorted }
    }

    /// Whether `bytes` (at `path`, if it is a file) is the complete result.
    fn complete(&self, bytes: &[u8], path: Option<&Path>, scratch: &Path) -> bool {
        if self.format == Format::Lines {
            return self.sorted.as_deref() == Some(bytes);
        }
        if bytes.len() as u64 != std::fs::metadata(&self.original).unwrap().len() {
            return false;
        }
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => {
                let f = scratch.join("stdout.bin");
                std::fs::write(&f, bytes).unwrap();
                f
            }
        };
        let o = emsort()
            .args(["verify", "-f", self.format.name(), p(&path), "--input", p(&self.original)])
            .output()
            .unwrap();
        o.status.success()
    }
}

/// What an output file holds after a sort.
#[derive(Debug, PartialEq, Eq)]
enum State {
    Absent,
    Previous,
    /// Standard output cut short: a prefix of the result.
    Prefix,
    Complete,
    Other(String),
}

fn output_state(path: &Path, previous: Option<&[u8]>, oracle: &Oracle, scratch: &Path) -> State {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match previous {
            None => State::Absent,
            Some(_) => State::Other("the output is gone; it held a previous content".into()),
        },
        Err(e) => State::Other(format!("cannot read the output: {e}")),
        Ok(b) if previous == Some(&b[..]) => State::Previous,
        Ok(b) if oracle.complete(&b, Some(path), scratch) => State::Complete,
        Ok(b) => State::Other(format!(
            "{} bytes that are neither the previous content ({}) nor the complete result ({} bytes)",
            b.len(),
            previous.map_or("none".into(), |p| format!("{} bytes", p.len())),
            std::fs::metadata(&oracle.original).unwrap().len()
        )),
    }
}

/// Entries of `dir` that are not `allowed`.
fn extra_entries(dir: &Path, allowed: &[&str]) -> Vec<String> {
    entries(dir).into_iter().filter(|e| !allowed.contains(&e.as_str())).collect()
}

fn status_text(s: &ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (_, Some(sig)) => format!("killed by signal {sig}"),
        _ => format!("{s}"),
    }
}

fn describe(case: &Case) -> String {
    let io = match (case.input, case.output) {
        (Input::File, Output::InPlace) => "file -> itself (-o = input)".to_string(),
        (i, o) => {
            let i = match i {
                Input::File => "file".to_string(),
                Input::Stdin("") => "stdin (no name)".into(),
                Input::Stdin(n) => format!("stdin ({n})"),
            };
            let o = match o {
                Output::File { previous: true } => "file (with a previous content)",
                Output::File { previous: false } => "new file",
                _ => "stdout",
            };
            format!("{i} -> {o}")
        }
    };
    let method = match case.method {
        Method::Plain => format!("{} temp dir(s)", case.temp_dirs),
        Method::Dsm => format!("dsm on {} disks", case.disks),
        Method::Srm => format!("srm on {} disks", case.disks),
    };
    let fault = match case.fault {
        Fault::None => "no fault".to_string(),
        Fault::Signal(_, At::FirstRun) => format!("{} at the first run", case.fault.kind()),
        Fault::Signal(_, At::Fraction(0.0)) => format!("{} at once", case.fault.kind()),
        Fault::Signal(_, At::Fraction(f)) => {
            format!("{} at {f:.2} x the undisturbed time", case.fault.kind())
        }
        Fault::FullTemp(b) | Fault::FullOut(b) => format!("{} ({} KiB tmpfs)", case.fault.kind(), b >> 10),
        Fault::Fsize(b) => format!("RLIMIT_FSIZE {} KiB", b >> 10),
    };
    let size = if case.format == Format::Lines {
        format!("{} KiB of lines {}", case.bytes >> 10, case.line_len)
    } else {
        format!("{} x {}", case.bytes / case.format.item(), case.format.name())
    };
    format!("{size}, -S {}, {io}, {method}; {fault}", case.memory)
}

fn gen(case: &Case, out: &Path, bytes: u64, seed: u64) {
    let mut a: Vec<String> =
        ["gen", "-q", "--io", "buffered", "-f", case.format.name(), "--seed"].map(String::from).into();
    a.push(seed.to_string());
    if case.format == Format::Lines {
        a.extend(["--bytes".into(), bytes.to_string(), "--line-len".into(), case.line_len.into()]);
    } else {
        a.extend(["-n".into(), (bytes / case.format.item()).to_string()]);
    }
    a.extend(["-o".into(), p(out).into()]);
    let o = emsort().args(&a).output().unwrap();
    assert!(o.status.success(), "emsort {a:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn run_case(root: &Path, seed: u64, case: &Case, report: &mut Report) {
    let base = root.join(format!("case-{}", case.n));
    std::fs::create_dir(&base).unwrap();
    let original = base.join("original");
    gen(case, &original, case.bytes, case.gen_seed);
    let mut oracle = Oracle::new(case.format, &original);
    let mut v: Vec<String> = Vec::new();

    // An undisturbed run of the same sort in other directories: how long it
    // takes (to draw the moment of a signal), and, for binary formats to
    // standard output, the result that a cut-short output must begin.
    let binary_stdout = case.format != Format::Lines && case.output == Output::Stdout;
    let timed = matches!(case.fault, Fault::Signal(_, At::Fraction(f)) if f > 0.0);
    let mut undisturbed = Duration::ZERO;
    if timed || binary_stdout {
        let cal = base.join("undisturbed");
        let l = Layout::new(&cal, case);
        std::fs::copy(&original, &l.input).unwrap();
        let stdin = matches!(case.input, Input::Stdin(_)).then_some(l.input.as_path());
        let r = run_sort(&l.sort_args(case), stdin, None, None, &[]);
        undisturbed = r.elapsed;
        let result = match &l.output {
            Some(o) => std::fs::read(o).unwrap_or_default(),
            None => r.stdout.clone(),
        };
        let ok = r.status.success() && oracle.complete(&result, l.output.as_deref(), &cal);
        if !ok {
            v.push(format!("the undisturbed sort failed ({}): {}", status_text(&r.status), r.stderr.trim()));
        } else if binary_stdout {
            oracle.sorted = Some(result);
        }
        std::fs::remove_dir_all(&cal).unwrap();
    }

    // The case's own directories, full disks mounted before anything is in them.
    let l = Layout::new(&base, case);
    let mut mount = None;
    let mut starved_dir = None;
    match case.fault {
        Fault::FullTemp(b) => {
            let d = if case.method == Method::Plain { &l.tmps[0] } else { &l.disks[0] };
            mount =
                Some(Mount::tmpfs(d, b).unwrap_or_else(|e| panic!("mount tmpfs on {}: {e}", d.display())));
            starved_dir = Some(d.clone());
        }
        Fault::FullOut(b) => {
            let d = &l.out_dir;
            mount =
                Some(Mount::tmpfs(d, b).unwrap_or_else(|e| panic!("mount tmpfs on {}: {e}", d.display())));
            starved_dir = l.output.clone();
        }
        _ => {}
    }
    std::fs::copy(&original, &l.input).unwrap();
    let input_before = std::fs::read(&l.input).unwrap();
    let previous: Option<Vec<u8>> = match case.output {
        Output::InPlace => Some(input_before.clone()),
        Output::File { previous: true } => {
            let prev = format!("the previous content of case {}\n", case.n).into_bytes();
            std::fs::write(l.output.as_ref().unwrap(), &prev).unwrap();
            Some(prev)
        }
        _ => None,
    };

    let args = l.sort_args(case);
    let cmdline = format!("emsort {}", args.join(" "));
    let stdin = matches!(case.input, Input::Stdin(_)).then_some(l.input.as_path());
    let watch: Vec<PathBuf> = l.scratch().cloned().collect();
    let (signal, fsize) = match case.fault {
        Fault::Signal(sig, At::FirstRun) => (Some((sig, None)), None),
        Fault::Signal(sig, At::Fraction(f)) => (Some((sig, Some(undisturbed.mul_f64(f)))), None),
        Fault::Fsize(b) => (None, Some(b)),
        _ => (None, None),
    };
    let r = run_sort(&args, stdin, fsize, signal, &watch);
    *report.faults.entry(case.fault.kind()).or_default() += 1;
    report.runs += 1;

    // The input.
    if case.output != Output::InPlace && std::fs::read(&l.input).ok().as_ref() != Some(&input_before) {
        v.push("the input changed".into());
    }
    // The output.
    let state = match &l.output {
        Some(o) => output_state(o, previous.as_deref(), &oracle, &base),
        None if oracle.complete(&r.stdout, None, &base) => State::Complete,
        None if r.stdout.is_empty() => State::Absent,
        None => match &oracle.sorted {
            Some(s) if s.starts_with(&r.stdout) => State::Prefix,
            _ => State::Other(format!(
                "{} bytes on standard output, not a prefix of the result",
                r.stdout.len()
            )),
        },
    };
    if let State::Other(what) = &state {
        v.push(format!("output: {what}"));
    }
    if state == State::Prefix {
        report.partial_stdout += 1;
    }
    let complete = state == State::Complete;

    // The exit status.
    let (code, killed_by) = (r.status.code(), r.status.signal());
    let outcome = match (code, killed_by) {
        (Some(0), _) => "completed",
        (Some(130 | 143), _) | (_, Some(libc::SIGINT | libc::SIGTERM)) => "interrupted",
        (Some(3), _) => "starved",
        (_, Some(libc::SIGKILL)) => "killed",
        _ => "other",
    };
    *report.outcomes.entry(outcome).or_default() += 1;
    let status = status_text(&r.status);
    if r.hung {
        v.push(format!("still running after {HANG:?}: killed"));
    }
    if code == Some(0) && !complete {
        v.push("exit 0 without the complete output".into());
    }
    let stderr_line = r.stderr.trim().replace('\n', " | ");
    match case.fault {
        Fault::None if code != Some(0) => v.push(format!("{status} without a fault: {stderr_line}")),
        Fault::None => {}
        Fault::Signal(sig, _) => {
            if r.sent.is_none() || code == Some(0) {
                report.too_late += 1;
                if code != Some(0) {
                    v.push(format!("{status} with no signal sent: {stderr_line}"));
                }
            } else if sig == libc::SIGKILL {
                if killed_by != Some(libc::SIGKILL) {
                    v.push(format!("{status} after SIGKILL"));
                }
            } else {
                let want = 128 + sig;
                if killed_by == Some(sig) {
                    // Killed before main installed the handler: nothing may exist yet.
                    report.before_handler += 1;
                } else if code != Some(want) {
                    v.push(format!("{status} after signal {sig} (expected {want}): {stderr_line}"));
                }
                if complete && case.output != Output::Stdout {
                    report.complete_then_stopped += 1;
                }
                report.watchdog += usize::from(r.stderr.contains("stopped without waiting for the work"));
                let lat = r.stop_latency().unwrap_or_default();
                report.max_stop = report.max_stop.max(lat);
                if lat > STOP_LIMIT {
                    v.push(format!("took {:.1} s to stop after signal {sig}", lat.as_secs_f64()));
                }
            }
        }
        Fault::FullTemp(_) | Fault::FullOut(_) | Fault::Fsize(_) => {
            if code == Some(0) {
                report.starvation_missed += 1;
            } else {
                let cause = if matches!(case.fault, Fault::Fsize(_)) {
                    "file size limit exceeded"
                } else {
                    "no space left"
                };
                let named: Vec<PathBuf> = match &starved_dir {
                    Some(d) => vec![d.clone()],
                    None => l.scratch().cloned().chain(l.output.clone()).collect(),
                };
                if code == Some(3) && complete && case.output != Output::Stdout {
                    v.push("exit 3, yet the output was replaced by the complete result".into());
                }
                if code != Some(3) {
                    v.push(format!("{status} on {} (expected exit 3): {stderr_line}", case.fault.kind()));
                } else if !r.stderr.contains(cause) {
                    v.push(format!("the message does not say \"{cause}\": {stderr_line}"));
                } else if !named.iter().any(|d| r.stderr.contains(p(d))) {
                    v.push(format!("the message names none of {named:?}: {stderr_line}"));
                } else if r.stderr.split(['/', ':', ' ', '\n']).any(emsort_io::temp::is_atomic_temp_name) {
                    v.push(format!(
                        "the message names a temporary output file, not the output: {stderr_line}"
                    ));
                }
            }
        }
    }

    // What is left: nothing, except after SIGKILL, until the next run.
    let out_name = l.output.as_ref().map(|o| o.file_name().unwrap().to_str().unwrap().to_string());
    let allowed: Vec<&str> = out_name.iter().map(String::as_str).collect();
    let left = || -> Vec<String> {
        let mut left: Vec<String> = l
            .scratch()
            .flat_map(|d| entries(d).into_iter().map(move |e| format!("{}/{e}", d.display())))
            .collect();
        left.extend(
            extra_entries(&l.out_dir, &allowed).iter().map(|e| format!("{}/{e}", l.out_dir.display())),
        );
        left
    };
    let killed = killed_by == Some(libc::SIGKILL);
    let after = left();
    if !killed && !after.is_empty() {
        v.push(format!("left behind after {status}: {after:?}"));
    }
    if killed {
        if !after.is_empty() {
            report.killed_left += 1;
            report.killed_left_entries += after.len();
        }
        report.killed_kept += next_run(case, &l, &base, previous.as_deref(), &oracle, &mut v);
    }

    let line = format!(
        "case {:>3}: {} -> {status} in {:.2} s{}",
        case.n,
        describe(case),
        r.elapsed.as_secs_f64(),
        r.sent.map_or(String::new(), |(_, at)| format!(" (signal at {:.2} s)", at.as_secs_f64()))
    );
    // The message of a failure, for the log (the first line, shortened).
    let said = match r.stderr.lines().find(|m| !m.contains("warning:") && !m.contains("note:")) {
        Some(m) if code.is_some_and(|c| c != 0) => {
            format!("\n           {}", m.chars().take(200).collect::<String>())
        }
        _ => String::new(),
    };
    println!("{line}{}{said}", if v.is_empty() { "" } else { "  VIOLATION" });
    for what in v {
        report.violations.push(format!(
            "seed {seed:#x} case {}: {what}\n    case: {}\n    command: {cmdline}",
            case.n,
            describe(case)
        ));
    }
    drop(mount);
    std::fs::remove_dir_all(&base).unwrap();
}

/// After a SIGKILL: a small sort with the same temp dirs, disks and output
/// directory; then nothing of the dead sort may be left, and the output
/// still holds its previous content (or the complete result, if the kill
/// came after the rename). Returns how many entries were left.
fn next_run(
    case: &Case,
    l: &Layout,
    base: &Path,
    previous: Option<&[u8]>,
    oracle: &Oracle,
    v: &mut Vec<String>,
) -> usize {
    let small = base.join("small");
    let small_bytes = if case.format == Format::Lines { 20 << 10 } else { case.format.item() * 2000 };
    gen(case, &small, small_bytes, 7);
    let next_out = l.out_dir.join("next");
    let mut args: Vec<String> =
        ["sort", "--format", case.format.name(), "-S", "256K", "--block-size", "4K"].map(String::from).into();
    args.extend(l.dir_args(case));
    args.extend([p(&small).into(), "-o".into(), p(&next_out).into()]);
    let r = run_sort(&args, None, None, None, &[]);
    let small_oracle = Oracle::new(case.format, &small);
    if !r.status.success() {
        v.push(format!("the next run failed ({}): {}", status_text(&r.status), r.stderr.trim()));
    } else if output_state(&next_out, None, &small_oracle, base) != State::Complete {
        v.push("the next run's output is wrong".into());
    }
    let mut left: Vec<String> = l
        .scratch()
        .flat_map(|d| entries(d).into_iter().map(move |e| format!("{}/{e}", d.display())))
        .collect();
    let out_name = l.output.as_ref().map(|o| o.file_name().unwrap().to_str().unwrap().to_string());
    let mut allowed = vec!["next"];
    allowed.extend(out_name.as_deref());
    left.extend(extra_entries(&l.out_dir, &allowed).iter().map(|e| format!("{}/{e}", l.out_dir.display())));
    if !left.is_empty() {
        v.push(format!(
            "after SIGKILL, the next run (emsort {}) left what the dead one left: {left:?}",
            args.join(" ")
        ));
    }
    if let Some(o) = &l.output {
        match output_state(o, previous, oracle, base) {
            State::Previous | State::Absent | State::Complete | State::Prefix => {}
            State::Other(what) => v.push(format!("after SIGKILL and the next run, the output: {what}")),
        }
    }
    std::fs::remove_file(&next_out).ok();
    left.len()
}
