//! `emsort sort` against GNU `sort` (issue 17, point 3): seeded random
//! option sets × seeded random inputs, each run by `LC_ALL=C /usr/bin/sort`
//! and by `emsort sort` with tiny budgets (`-S 16K --block-size 1K
//! --fan-in 3`, emsort's least for that fan-in, so that runs go to disk and merge in several passes), the
//! two compared byte for byte: standard output, the exit status and, for
//! `-c`, the `FILE:LINENO: disorder: LINE` message.
//!
//! A case is one of:
//!
//! - **sort**: 0–3 `-k` keys (fields and characters, `.0` ends, per-key
//!   modifiers `bdfgiMhnrV`, now and then an invalid `.0` start or an
//!   incompatible pair such as `gn` that both must refuse with status 2),
//!   `-t` (`,` `:` tab space) or blank-separated fields, global flags among
//!   `-b -d -f -g -h -i -M -n -r -V -s -u` and `--sort=WORD`, sometimes
//!   `-z`; one to three input files, `-` or no operand for standard input;
//! - **merge** (`-m`): the same, on inputs sorted first by GNU with the
//!   case's options;
//! - **check** (`-c`, `-C`, `--check[=quiet|silent|diagnose-first]`) on
//!   sorted, nearly sorted and unsorted inputs (and two operands, which GNU
//!   refuses);
//! - any of these but random, now and then with `--debug` (GNU's
//!   annotated output, and its warnings on standard error compared too,
//!   `sort:` read as `emsort:`) or `--compress-program=gzip` (drawn by a
//!   generator of their own, so the other draws of a seed stay as they
//!   were);
//! - a share of the sort and random cases run by emsort with `--method dsm`
//!   or `--method srm` on two disk directories (drawn by that generator
//!   too): Barve and Vitter's merges with the same keys, `-u` and `-s`;
//! - **random** (`-R`): random orders cannot be compared byte for byte;
//!   both must succeed with the same multiset of lines (one line per key
//!   class under `-u`), lines with equal keys adjacent. Only keys whose
//!   equality this file computes itself are drawn: the whole line or one
//!   field (`-kN,N`, with or without `-t`, `b`, `f`).
//!
//! Inputs (0–250 lines, columns typed by the keys that read them): empty and
//! missing fields, leading blanks and tabs, signs, leading zeros, decimal
//! points, numbers of 1–40 digits and a few of thousands, `-0`, `+5`, `.5`,
//! `5.`, `0x1F`, `1e5`, `inf`, `nan`, `1K`/`2M`/`1.5G`, month names in any
//! case, version strings, NUL and bytes ≥ 0x80, CRLF, a last line without
//! its newline, repeated lines and keys, and now and then lines longer than
//! the memory budget.
//!
//! Each case draws from its own generator, seeded by the campaign's seed and
//! its number, so it replays alone. A mismatch is reported with the case's
//! seed, the two command lines and the input files, kept (with a shrunk
//! version: fewer lines, fewer options) in a directory the message names.
//!
//! Environment: `EMSORT_GNU_CASES` (default 2000; the ignored
//! `gnu_sort_differential_full` runs 50000), `EMSORT_GNU_SEED`,
//! `EMSORT_GNU_CASE` (one case alone), `EMSORT_GNU_THREADS` (default 2) and
//! `EMSORT_GNU_SELF=1`, which runs GNU `sort -S 1K` in emsort's place: the
//! harness checked against itself, to prove it reports no false mismatch.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::{emsort, env_u64};

/// Whether the generator draws `-z` and `-m` with standard input (both
/// supported: the README's table).
const Z_SUPPORTED: bool = true;
const MERGE_STDIN_SUPPORTED: bool = true;

/// How often a case that is not random gets `--debug`, and
/// `--compress-program=gzip`.
const DEBUG_SHARE: f64 = 0.15;
const COMPRESS_SHARE: f64 = 0.05;
/// How often a sort or random case is run by emsort with `--method dsm`
/// or `--method srm` (half each) on two disk directories.
const METHOD_SHARE: f64 = 0.2;

/// GNU coreutils `sort` (9.1 here), always run with `LC_ALL=C`.
const GNU: &str = "/usr/bin/sort";
/// The default suite's seed (`EMSORT_GNU_SEED` overrides it).
const SMALL_SEED: u64 = 0x6E75_5F73_6F72_7417;
/// The opt-in tier's default seed.
const FULL_SEED: u64 = 0xF011_5EED_0017;
/// A process that has not ended after this long is killed and reported.
const HANG: Duration = Duration::from_secs(60);
/// emsort's own tuning: a tiny budget, small blocks and a small fan-in, so
/// that every case but the smallest forms runs on disk and merges them in
/// several passes.
const EMSORT_TUNING: &[&str] = &["-S", "16K", "--block-size", "1K", "--fan-in", "3"];
/// The same for `--method dsm|srm` on 2 disks: blocks of 512 bytes through
/// the page cache (O_DIRECT would need 4 KiB) and the least memory both
/// methods take with them.
const STRIPED_TUNING: &[&str] = &["-S", "8K", "--block-size", "512", "--io", "buffered"];

#[test]
fn gnu_sort_differential() {
    let seed = env_u64("EMSORT_GNU_SEED").unwrap_or(SMALL_SEED);
    let cases = env_u64("EMSORT_GNU_CASES").map_or(2000, |n| n as usize);
    campaign("gnu_sort_differential", seed, cases);
}

#[test]
#[ignore = "opt-in tier: 50000 cases, about 25 minutes on 2 cores; cargo test -p emsort --test tests gnu_sort_differential_full -- --ignored"]
fn gnu_sort_differential_full() {
    let seed = env_u64("EMSORT_GNU_SEED").unwrap_or(FULL_SEED);
    let cases = env_u64("EMSORT_GNU_CASES").map_or(50_000, |n| n as usize);
    campaign("gnu_sort_differential_full", seed, cases);
}

/// Whether GNU `sort -S 1K` stands in for emsort (`EMSORT_GNU_SELF=1`).
fn self_check() -> bool {
    std::env::var("EMSORT_GNU_SELF").is_ok_and(|v| v == "1")
}

/// Whether `emsort sort` speaks GNU's options yet (its help names
/// `--key`): until it does, the differential tests say so and pass.
fn emsort_speaks_gnu() -> bool {
    let o = emsort().args(["sort", "--help"]).output().expect("run emsort");
    String::from_utf8_lossy(&o.stdout).contains("--key")
}

/// Whether only whole-line sorts (no options, or `-r`) are drawn: until
/// emsort speaks GNU's options, the campaign says so and runs those.
fn plain_only(name: &str) -> bool {
    if self_check() || emsort_speaks_gnu() {
        return false;
    }
    println!(
        "== {name}: `emsort sort --help` does not mention --key yet: whole-line sorts only \
         (EMSORT_GNU_SELF=1 checks the whole harness against GNU sort itself)"
    );
    true
}

// ---------------------------------------------------------------------------
// Cases

/// What a case asks of the two sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sort,
    /// `-m` on inputs sorted first by GNU with the same options.
    Merge,
    /// `-c` and its forms (the flag as given).
    Check(&'static str),
    /// `-R`: compared as multisets with equal keys adjacent.
    Random,
}

/// Where an operand's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operand {
    File(usize),
    Stdin,
}

/// The one key a random case orders by, as this file computes equality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RandomKey {
    /// `None`: the whole line.
    field: Option<usize>,
    blanks: bool,
    fold: bool,
}

#[derive(Debug, Clone)]
struct Case {
    /// The seed of this case's own generator.
    seed: u64,
    mode: Mode,
    /// Options as units (`["-k", "2,3n"]`, `["-u"]`): shrinking drops whole units.
    opts: Vec<Vec<String>>,
    /// The input files' contents (`in0`, `in1`, …); the one read through
    /// standard input is among them.
    files: Vec<Vec<u8>>,
    operands: Vec<Operand>,
    /// The file given as standard input (also when no operand names `-`).
    stdin: Option<usize>,
    /// The line terminator (`\0` under `-z`).
    eol: u8,
    /// `-o NAME`: a new file or one of the inputs (written after reading all input).
    output: Option<String>,
    random_key: Option<RandomKey>,
    /// emsort's merge method, when not the plain merge: `dsm` or `srm`
    /// (emsort's option only; GNU sorts as ever).
    method: Option<&'static str>,
}

impl Case {
    /// The arguments shared by both sorts: options, mode flags, operands.
    fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = self.opts.iter().flatten().cloned().collect();
        match self.mode {
            Mode::Merge => a.push("-m".into()),
            Mode::Check(flag) => a.push(flag.into()),
            Mode::Random => a.push("-R".into()),
            Mode::Sort => {}
        }
        if let Some(o) = &self.output {
            a.extend(["-o".to_string(), o.clone()]);
        }
        for op in &self.operands {
            a.push(match op {
                Operand::File(i) => file_name(*i),
                Operand::Stdin => "-".into(),
            });
        }
        a
    }

    fn is_unique(&self) -> bool {
        self.opts.iter().any(|u| u[0] == "-u" || u[0] == "--unique")
    }

    fn is_stable(&self) -> bool {
        self.opts.iter().any(|u| u[0] == "-s" || u[0] == "--stable")
    }

    fn is_debug(&self) -> bool {
        self.opts.iter().any(|u| u[0] == "--debug")
    }
}

fn file_name(i: usize) -> String {
    format!("in{i}")
}

/// SplitMix64's finaliser: a case's seed from the campaign's and its number.
fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

type R = Xoshiro256PlusPlus;

/// Column kinds: what a field's text looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Num,
    General,
    Human,
    Month,
    Version,
    Word,
    Any,
}

const KINDS: &[Kind] =
    &[Kind::Num, Kind::General, Kind::Human, Kind::Month, Kind::Version, Kind::Word, Kind::Any];

/// The ordering letters GNU counts as mutually exclusive: more than one of
/// `n`, `g`, `h`, `M` and one of (`V`, `R`, `d`, `i`) is an error.
fn incompatible(mods: &str) -> bool {
    let has = |c| mods.contains(c);
    let count = ['n', 'g', 'h', 'M'].iter().filter(|&&c| has(c)).count()
        + usize::from(has('V') || has('R') || has('d') || has('i'));
    count > 1
}

/// An ordering letter and the column kind it reads.
fn draw_order(r: &mut R) -> (Option<char>, Kind) {
    match r.random_range(0..100) {
        0..40 => (None, Kind::Word),
        40..58 => (Some('n'), Kind::Num),
        58..67 => (Some('g'), Kind::General),
        67..76 => (Some('h'), Kind::Human),
        76..86 => (Some('M'), Kind::Month),
        _ => (Some('V'), Kind::Version),
    }
}

/// Modifier letters: one ordering letter or none, and some of `b d f i r`;
/// incompatible sets kept only now and then (both sorts must refuse them).
fn draw_modifiers(r: &mut R, with_b: bool) -> (String, Kind) {
    loop {
        let (order, kind) = draw_order(r);
        let mut m = String::new();
        if let Some(c) = order {
            m.push(c);
        }
        for (c, p) in
            [('b', if with_b { 0.25 } else { 0.0 }), ('d', 0.08), ('f', 0.15), ('i', 0.06), ('r', 0.25)]
        {
            if r.random_bool(p) {
                m.push(c);
            }
        }
        if r.random_bool(0.03) {
            m.push(*['n', 'g', 'h', 'M', 'V', 'd'].choose(r).unwrap());
        }
        let mut chars: Vec<char> = m.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        chars.shuffle_with(r);
        let m: String = chars.into_iter().collect();
        if !incompatible(&m) || r.random_bool(0.15) {
            return (m, kind);
        }
    }
}

trait ShuffleWith {
    fn shuffle_with(&mut self, r: &mut R);
}

impl<T> ShuffleWith for Vec<T> {
    fn shuffle_with(&mut self, r: &mut R) {
        use rand::seq::SliceRandom;
        self.shuffle(r);
    }
}

/// One `-k` key as its option unit, and the kind of column it reads.
fn draw_key(r: &mut R) -> (Vec<String>, usize, Kind) {
    let f1 = r.random_range(1..=4usize);
    let mut pos1 = f1.to_string();
    if r.random_bool(0.3) {
        // `.0` in POS1 is an error GNU reports with status 2.
        let c1 = if r.random_bool(0.04) { 0 } else { r.random_range(1..=4) };
        pos1 += &format!(".{c1}");
    }
    let (mods, kind) = draw_modifiers(r, false);
    let mut spec = pos1;
    let mut pos2 = None;
    if r.random_bool(0.7) {
        let f2 = if r.random_bool(0.08) { f1.saturating_sub(1).max(1) } else { f1 + r.random_range(0..=1) };
        let mut p2 = f2.to_string();
        if r.random_bool(0.25) {
            p2 += &format!(".{}", r.random_range(0..=5));
        }
        pos2 = Some(p2);
    }
    let b1 = r.random_bool(0.25);
    let b2 = pos2.is_some() && r.random_bool(0.2);
    // Modifiers may follow either position; `b` means something at each.
    let on_second = pos2.is_some() && r.random_bool(0.5);
    if b1 {
        spec.push('b');
    }
    if !on_second {
        spec += &mods;
    }
    if let Some(p2) = pos2 {
        spec.push(',');
        spec += &p2;
        if b2 {
            spec.push('b');
        }
        if on_second {
            spec += &mods;
        }
    }
    let unit = match r.random_range(0..10) {
        0..6 => vec![format!("-k{spec}")],
        6..9 => vec!["-k".into(), spec],
        _ => vec![format!("--key={spec}")],
    };
    (unit, f1, kind)
}

/// The global flags: each unit, and the column kind a global ordering reads.
fn draw_globals(r: &mut R, unique: f64, stable: f64) -> (Vec<Vec<String>>, Option<Kind>) {
    let mut units = Vec::new();
    let (mut mods, kind) = draw_modifiers(r, true);
    let order_kind = mods.chars().any(|c| "nghMV".contains(c)).then_some(kind);
    // Now and then an ordering by its --sort word instead of its letter.
    let words = [
        ('n', "numeric"),
        ('g', "general-numeric"),
        ('h', "human-numeric"),
        ('M', "month"),
        ('V', "version"),
    ];
    if r.random_bool(0.2) {
        if let Some(&(c, w)) = words.iter().find(|(c, _)| mods.contains(*c)) {
            mods = mods.replace(c, "");
            units.push(vec![format!("--sort={w}")]);
        }
    }
    let long = [
        ('r', "--reverse"),
        ('f', "--ignore-case"),
        ('b', "--ignore-leading-blanks"),
        ('n', "--numeric-sort"),
        ('d', "--dictionary-order"),
    ];
    for c in mods.chars() {
        match long.iter().find(|(l, _)| *l == c) {
            Some((_, name)) if r.random_bool(0.15) => units.push(vec![(*name).to_string()]),
            _ => units.push(vec![format!("-{c}")]),
        }
    }
    if r.random_bool(unique) {
        units.push(vec![if r.random_bool(0.8) { "-u" } else { "--unique" }.into()]);
    }
    if r.random_bool(stable) {
        units.push(vec![if r.random_bool(0.8) { "-s" } else { "--stable" }.into()]);
    }
    (units, order_kind)
}

/// A separator for `-t`, or `None` for blank-separated fields.
fn draw_separator(r: &mut R) -> Option<u8> {
    match r.random_range(0..100) {
        0..40 => None,
        40..60 => Some(b','),
        60..75 => Some(b':'),
        75..90 => Some(b'\t'),
        _ => Some(b' '),
    }
}

fn separator_unit(r: &mut R, sep: u8) -> Vec<String> {
    let s = (sep as char).to_string();
    match r.random_range(0..3) {
        0 => vec![format!("-t{s}")],
        1 => vec!["-t".into(), s],
        _ => vec![format!("--field-separator={s}")],
    }
}

/// The forms of `-c` drawn (`-c` twice as often).
const CHECK_FLAGS: &[&str] =
    &["-c", "-c", "-C", "--check", "--check=quiet", "--check=silent", "--check=diagnose-first"];

fn draw(seed: u64, n: u64, plain: bool) -> Case {
    let seed = mix(seed, n);
    let mut r = R::seed_from_u64(seed);
    let r = &mut r;
    let mut mode = match r.random_range(0..100) {
        0..70 => Mode::Sort,
        70..82 => Mode::Merge,
        82..94 => Mode::Check(CHECK_FLAGS.choose(r).unwrap()),
        _ => Mode::Random,
    };
    let sep = draw_separator(r);
    let mut opts: Vec<Vec<String>> = Vec::new();
    let mut columns: Vec<Kind> = (0..r.random_range(1..=6)).map(|_| *KINDS.choose(r).unwrap()).collect();
    let mut random_key = None;
    if mode == Mode::Random {
        // One key whose equality `equal_keys` can compute: the whole line
        // or one field, with `b` and `f` only.
        let field = r.random_bool(0.6).then(|| r.random_range(1..=3usize));
        let blanks = r.random_bool(0.3);
        let fold = r.random_bool(0.3);
        let mods: String =
            [(blanks, 'b'), (fold, 'f')].iter().filter(|(on, _)| *on).map(|(_, c)| c).collect();
        match field {
            // `b` after POS1: the key's start skips blanks (after POS2 it would
            // only move the end).
            Some(f) => opts.push(vec![format!("-k{f}{mods},{f}")]),
            None if !mods.is_empty() => opts.push(vec![format!("-{mods}")]),
            None => {}
        }
        if field.is_some() {
            if let Some(s) = sep {
                opts.push(separator_unit(r, s));
            }
        }
        if r.random_bool(0.2) {
            opts.push(vec!["-u".into()]);
        }
        if r.random_bool(0.2) {
            opts.push(vec!["-s".into()]);
        }
        random_key = Some(RandomKey { field, blanks, fold });
        if field.is_none() && mods.is_empty() && r.random_bool(0.5) {
            // Whole lines with repeats: the interesting random case.
            columns.truncate(2);
        }
    } else {
        if let Some(s) = sep {
            opts.push(separator_unit(r, s));
        }
        let nkeys = *[0, 0, 0, 1, 1, 1, 1, 2, 2, 3].choose(r).unwrap();
        for _ in 0..nkeys {
            let (unit, field, kind) = draw_key(r);
            opts.push(unit);
            if field <= columns.len() && r.random_bool(0.75) {
                columns[field - 1] = kind;
            }
        }
        let (globals, order_kind) = draw_globals(r, 0.15, 0.15);
        if let Some(k) = order_kind {
            if nkeys == 0 && r.random_bool(0.7) {
                columns[0] = k;
            }
        }
        opts.extend(globals);
    }
    if plain {
        mode = Mode::Sort;
        opts.retain(|u| u[0] == "-r" || u[0] == "--reverse");
    }
    let zero = Z_SUPPORTED && !plain && r.random_bool(0.08);
    if zero {
        opts.push(vec![if r.random_bool(0.8) { "-z" } else { "--zero-terminated" }.into()]);
    }
    opts.shuffle_with(r);
    let eol = if zero { b'\0' } else { b'\n' };

    // Inputs.
    let nfiles = match (mode, r.random_range(0..100)) {
        (Mode::Check(_), 0..95) => 1,
        (_, 0..70) => 1,
        (_, 70..88) => 2,
        _ => 3,
    };
    let total = match r.random_range(0..100) {
        0..3 => 0,
        3..8 => r.random_range(1..=3),
        8..30 => r.random_range(4..=40),
        _ => r.random_range(60..=250),
    };
    let long_lines = r.random_bool(0.02);
    let mut gen = LineGen { columns, sep, eol, lines: Vec::new(), nan: false };
    let mut files: Vec<Vec<u8>> = Vec::new();
    for i in 0..nfiles {
        let lines = if nfiles == 1 { total } else { r.random_range(0..=total / nfiles + 3) };
        let mut bytes = Vec::new();
        for _ in 0..lines {
            bytes.extend(gen.line(r));
            bytes.push(eol);
        }
        if long_lines && i == 0 {
            for _ in 0..r.random_range(1..=3) {
                bytes.extend(gen.long_line(r));
                bytes.push(eol);
            }
        }
        if !bytes.is_empty() && r.random_bool(0.12) {
            bytes.pop(); // the last line without its terminator
        }
        files.push(bytes);
    }
    let mut operands: Vec<Operand> = (0..nfiles).map(Operand::File).collect();
    let mut stdin = None;
    if r.random_bool(0.2) && (MERGE_STDIN_SUPPORTED || !matches!(mode, Mode::Merge)) {
        let i = r.random_range(0..nfiles);
        stdin = Some(i);
        if nfiles == 1 && r.random_bool(0.4) {
            operands.clear(); // no operand: standard input
        } else {
            operands[i] = Operand::Stdin;
        }
    }
    let output = (matches!(mode, Mode::Sort | Mode::Merge) && r.random_bool(0.1)).then(|| {
        if r.random_bool(0.7) {
            "out".to_string()
        } else {
            file_name(r.random_range(0..nfiles))
        }
    });
    let mut case = Case { seed, mode, opts, files, operands, stdin, eol, random_key, output, method: None };
    match mode {
        Mode::Merge => presort(&mut case, r),
        Mode::Check(_) if r.random_bool(0.6) => presort(&mut case, r),
        _ => {}
    }
    // After the presort (whose output must not be annotated), from a
    // generator of their own: the other draws stay as they were.
    let side = &mut R::seed_from_u64(seed ^ 0xDEB6_C0DE);
    if !plain && mode != Mode::Random {
        if side.random_bool(DEBUG_SHARE) {
            let at = side.random_range(0..=case.opts.len());
            case.opts.insert(at, vec!["--debug".into()]);
        }
        if side.random_bool(COMPRESS_SHARE) {
            let at = side.random_range(0..=case.opts.len());
            case.opts.insert(at, vec!["--compress-program=gzip".into()]);
        }
    }
    // The striped methods have no place for a compress program.
    let compressed = case.opts.iter().any(|u| u[0].starts_with("--compress-program"));
    if !plain && matches!(mode, Mode::Sort | Mode::Random) && !compressed && side.random_bool(METHOD_SHARE) {
        case.method = Some(if side.random_bool(0.5) { "dsm" } else { "srm" });
    }
    case
}

/// Sorts each input with GNU and the case's options (merge and check
/// cases); a check case sometimes gets two adjacent lines swapped after.
fn presort(case: &mut Case, r: &mut R) {
    let dir = tempfile::tempdir().unwrap();
    for (i, f) in case.files.iter_mut().enumerate() {
        let path = dir.path().join(file_name(i));
        std::fs::write(&path, &*f).unwrap();
        let o = Command::new(GNU)
            .env("LC_ALL", "C")
            .args(case.opts.iter().flatten())
            .arg(&path)
            .output()
            .expect("run GNU sort");
        if !o.status.success() {
            return; // bad options: both sorts will refuse them anyway
        }
        *f = o.stdout;
        if matches!(case.mode, Mode::Check(_)) && r.random_bool(0.3) {
            let mut lines: Vec<&[u8]> = f.split(|&b| b == case.eol).collect();
            lines.pop();
            if lines.len() >= 2 {
                let k = r.random_range(0..lines.len() - 1);
                lines.swap(k, k + 1);
                *f = lines.iter().flat_map(|l| l.iter().copied().chain([case.eol])).collect();
            }
        }
    }
}

/// Lines from a column schema, remembering them to repeat some.
struct LineGen {
    columns: Vec<Kind>,
    sep: Option<u8>,
    eol: u8,
    lines: Vec<Vec<u8>>,
    /// Whether a line with a NaN has been drawn: GNU's `-g` orders NaNs by
    /// `memcmp` of their `long double`s, padding bytes included, so two NaN
    /// keys compare differently from one run to the next (`-S 1K` and
    /// `-S 48K` disagree). One NaN per case keeps the order defined.
    nan: bool,
}

/// Whether a line has something `strtold` reads as a NaN.
fn has_nan(l: &[u8]) -> bool {
    l.windows(3).any(|w| w.eq_ignore_ascii_case(b"nan"))
}

impl LineGen {
    fn line(&mut self, r: &mut R) -> Vec<u8> {
        for _ in 0..20 {
            let l = self.draw_line(r);
            if !has_nan(&l) || !self.nan {
                self.nan |= has_nan(&l);
                self.lines.push(l.clone());
                return l;
            }
        }
        Vec::new()
    }

    fn draw_line(&mut self, r: &mut R) -> Vec<u8> {
        if !self.lines.is_empty() && r.random_bool(0.15) {
            return self.lines.choose(r).unwrap().clone(); // a repeated line
        }
        let mut fields: Vec<Vec<u8>> = self
            .columns
            .iter()
            .map(|&k| if r.random_bool(0.1) { field(r, Kind::Any) } else { field(r, k) })
            .collect();
        if !self.lines.is_empty() && r.random_bool(0.12) {
            // A repeated key: an earlier line with its last field changed.
            let old = self.lines.choose(r).unwrap().clone();
            let mut l = old;
            l.extend(field(r, Kind::Word));
            return l;
        }
        if r.random_bool(0.15) {
            fields.truncate(r.random_range(0..fields.len())); // missing fields
        }
        let mut l = Vec::new();
        if r.random_bool(0.2) {
            l.extend(blanks(r));
        }
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                match self.sep {
                    Some(s) => {
                        l.push(s);
                        if r.random_bool(0.1) {
                            l.extend(blanks(r));
                        }
                    }
                    None => l.extend(blanks(r)),
                }
            }
            l.extend(f);
        }
        if r.random_bool(0.04) {
            l.push(b'\r'); // CRLF
        }
        if self.eol == 0 {
            // Under -z a newline is an ordinary byte of the line, and a
            // blank between fields: some NULs and blanks become newlines.
            for b in l.iter_mut() {
                if *b == 0 || ((*b == b' ' || *b == b'\t') && r.random_bool(0.25)) {
                    *b = b'\n';
                }
            }
            if r.random_bool(0.1) {
                l.insert(r.random_range(0..=l.len()), b'\n');
            }
        } else {
            l.retain(|&b| b != b'\n');
        }
        l
    }

    /// A line longer than the memory budget.
    fn long_line(&mut self, r: &mut R) -> Vec<u8> {
        let mut l = self.line(r);
        let len = r.random_range(50_000..130_000);
        while l.len() < len {
            l.push(*b"abcxyz0123 ,:".choose(r).unwrap());
        }
        l
    }
}

fn blanks(r: &mut R) -> Vec<u8> {
    (0..r.random_range(1..=3)).map(|_| if r.random_bool(0.7) { b' ' } else { b'\t' }).collect()
}

fn digits(r: &mut R, n: usize) -> String {
    (0..n).map(|_| char::from(b'0' + r.random_range(0..10u8))).collect()
}

/// A decimal number as `-n` reads it: signs, zeros, points, long mantissas.
fn number(r: &mut R) -> String {
    let special =
        ["-0", "0", "+5", ".5", "5.", "-0.0", "000", "-.5", "0.", "-", ".", "+", "-00", "1,000", "00.100"];
    if r.random_bool(0.1) {
        return (*special.choose(r).unwrap()).into();
    }
    let mut s = String::new();
    match r.random_range(0..100) {
        0..20 => s.push('-'),
        20..24 => s.push('+'),
        _ => {}
    }
    if r.random_bool(0.1) {
        s += &"0".repeat(r.random_range(1..=3));
    }
    let len = match r.random_range(0..1000) {
        0..5 => r.random_range(1000..=3000),
        5..100 => r.random_range(7..=40),
        100..140 => 0,
        _ => r.random_range(1..=3),
    };
    s += &digits(r, len);
    if r.random_bool(0.3) {
        s.push('.');
        let n = r.random_range(0..=4);
        s += &digits(r, n);
    }
    if s.is_empty() || s == "-" || s == "+" {
        s.push('7');
    }
    s
}

fn field(r: &mut R, kind: Kind) -> Vec<u8> {
    let s: Vec<u8> = match kind {
        Kind::Num => number(r).into_bytes(),
        Kind::General => {
            let fixed = [
                "1e5", "1E-5", "-2.5e+10", "inf", "-inf", "INF", "infinity", "nan", "-nan", "NaN", "0x1F",
                "0x1p4", "0X.8", "1e400", "-1e-400", "1e", "e5", "1e5x", "0x", "-0", "1.0e0", "  3", "nanx",
                "0x1fg",
            ];
            if r.random_bool(0.5) {
                (*fixed.choose(r).unwrap()).into()
            } else {
                let mut s = number(r);
                if r.random_bool(0.3) {
                    s += &format!("e{}{}", ["", "-", "+"].choose(r).unwrap(), r.random_range(0..400));
                }
                s.into_bytes()
            }
        }
        Kind::Human => {
            let mut s = if r.random_bool(0.3) {
                format!("{}.{}", r.random_range(0..3), r.random_range(0..10))
            } else {
                number(r)
            };
            if r.random_bool(0.8) {
                let suffixes =
                    ["K", "k", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q", "B", "KB", "Ki", "m", "KK"];
                s += suffixes.choose(r).unwrap();
            }
            s.into_bytes()
        }
        Kind::Month => {
            let names = [
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "xyz",
                "ja", "janu", "january", "", "de", "sept", "0", "j an",
            ];
            let mut s: String = (*names.choose(r).unwrap()).into();
            s = s.chars().map(|c| if r.random_bool(0.4) { c.to_ascii_uppercase() } else { c }).collect();
            if r.random_bool(0.2) {
                s = String::from_utf8(blanks(r)).unwrap() + &s;
            }
            s.into_bytes()
        }
        Kind::Version => {
            let fixed = [
                "1.10",
                "1.9",
                "1.0a",
                "1.0~rc1",
                "1.0",
                "foo-1.2.tar.gz",
                ".hidden",
                "1.2.3-4",
                "a~",
                "~",
                "..",
                "a.b",
                "1.010",
                "01.1",
                "1.01",
                "2.0.0~beta",
                "1.0-1",
                "foo-1.10.tar.gz",
                "",
                "1",
                "1a1",
                "1.0~",
                "v2",
                "file.txt",
            ];
            if r.random_bool(0.6) {
                (*fixed.choose(r).unwrap()).into()
            } else {
                let mut s = String::new();
                if r.random_bool(0.3) {
                    s += ["foo-", "bar_", "x", "."].choose(r).unwrap();
                }
                s += &r.random_range(0..20).to_string();
                for _ in 0..r.random_range(0..3) {
                    s += &format!(".{}", r.random_range(0..120));
                }
                if r.random_bool(0.3) {
                    s += ["a", "~rc1", "-1", ".tar.gz", "~", "b2", "+git"].choose(r).unwrap();
                }
                s.into_bytes()
            }
        }
        Kind::Word => {
            let alphabet = b"abcdeABCDExyzXYZ0123456789-_.!~#@[]^`{|}";
            (0..r.random_range(0..=8)).map(|_| *alphabet.choose(r).unwrap()).collect()
        }
        Kind::Any => {
            let weird: &[u8] =
                &[0, 1, 0x7f, 0x80, 0xa0, 0xc3, 0xe9, 0xff, b'\r', b'\t', b' ', b'a', b'Z', b'5', b'-', b'.'];
            (0..r.random_range(0..=6)).map(|_| *weird.choose(r).unwrap()).collect()
        }
    };
    if r.random_bool(0.04) {
        let mut s = s;
        s.insert(r.random_range(0..=s.len()), *[0u8, 0x80, 0xff, b'\t'].choose(r).unwrap());
        return s;
    }
    s
}

// ---------------------------------------------------------------------------
// Running

/// Runs `cmd` in `dir` with `stdin` fed in, killed after [`HANG`].
fn run_in(mut cmd: Command, dir: &Path, stdin: Option<&[u8]>) -> Output {
    cmd.current_dir(dir).env("LC_ALL", "C").stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().expect("spawn a sort");
    let pid = child.id() as libc::pid_t;
    let writer = stdin.map(|data| {
        let data = data.to_vec();
        let mut sin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = sin.write_all(&data); // a sort that refuses its options reads nothing
        })
    });
    let (done, wait) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if wait.recv_timeout(HANG).is_err() {
            // SAFETY: our own child, not yet reaped (the main thread is still waiting on it).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let o = child.wait_with_output().expect("wait for a sort");
    let _ = done.send(());
    watchdog.join().unwrap();
    if let Some(w) = writer {
        w.join().unwrap();
    }
    o
}

/// The candidate's command: emsort with its tuning (and the case's merge
/// method on the disks `d0`, `d1`), or GNU with `-S 1K` when the harness
/// checks itself.
fn candidate(args: &[String], stats: Option<&str>, method: Option<&str>) -> Command {
    if self_check() {
        let mut c = Command::new(GNU);
        c.arg0("sort").args(["-S", "1K", "-T", "tmp"]).args(args);
        return c;
    }
    let mut c = emsort();
    c.arg("sort");
    match method {
        Some(m) => c.args(STRIPED_TUNING).args(["--method", m, "--disks", "d0,d1"]),
        None => c.args(EMSORT_TUNING),
    };
    c.args(["-T", "tmp"]);
    if let Some(s) = stats {
        c.args(["--stats", s]);
    }
    c.args(args);
    c
}

fn gnu(args: &[String]) -> Command {
    let mut c = Command::new(GNU);
    c.arg0("sort").args(["-S", "48K", "-T", "tmp"]).args(args);
    c
}

/// How a case that matched went.
#[derive(Default, Clone, Copy)]
struct Outcome {
    /// GNU's exit status.
    status: Option<i32>,
    /// The runs and merge passes the candidate's `--stats` counted, when it wrote them.
    spill: Option<(u64, f64)>,
}

/// Writes a case's files into `dir` (and its temp dirs).
/// The two sorts run side by side, each in its own copy of the inputs
/// (`-o` may overwrite one), with its own temp dir `tmp`.
fn lay_out(dir: &Path, case: &Case) {
    for side in ["gnu", "em"] {
        std::fs::create_dir_all(dir.join(side).join("tmp")).unwrap();
        if side == "em" && case.method.is_some() {
            for d in ["d0", "d1"] {
                std::fs::create_dir_all(dir.join(side).join(d)).unwrap();
            }
        }
        for (i, f) in case.files.iter().enumerate() {
            std::fs::write(dir.join(side).join(file_name(i)), f).unwrap();
        }
    }
}

/// Runs one case in `dir`: `Err` describes a mismatch.
fn run_case(dir: &Path, case: &Case) -> Result<Outcome, String> {
    lay_out(dir, case);
    let args = case.args();
    let stdin = case.stdin.map(|i| case.files[i].as_slice());
    let g = run_in(gnu(&args), &dir.join("gnu"), stdin);
    let sorts_on_disk = matches!(case.mode, Mode::Sort | Mode::Merge) && !self_check();
    let e =
        run_in(candidate(&args, sorts_on_disk.then_some("stats.json"), case.method), &dir.join("em"), stdin);
    let (gs, es) = (g.status.code(), e.status.code());
    let show = |o: &Output| {
        format!(
            "status {:?}\n    stdout {}\n    stderr {}",
            o.status.code(),
            escape(&o.stdout, 400),
            escape(&o.stderr, 400)
        )
    };
    let mismatch = |what: &str| Err(format!("{what}\n  GNU:    {}\n  emsort: {}", show(&g), show(&e)));
    if gs != es {
        return mismatch("exit status differs");
    }
    for d in ["tmp", "d0", "d1"].iter().filter(|d| dir.join("em").join(d).exists()) {
        let left = crate::entries(&dir.join("em").join(d));
        if !left.is_empty() {
            return Err(format!("emsort left {left:?} in {d}"));
        }
    }
    match case.mode {
        Mode::Random if gs == Some(0) => {
            if let Err(w) = check_random(case, &g.stdout, &e.stdout) {
                return mismatch(&w);
            }
        }
        Mode::Check(_) if gs == Some(1) => {
            if g.stdout != e.stdout {
                return mismatch("standard output differs");
            }
            // `sort: FILE:LINENO: disorder: LINE`, or nothing when quiet.
            let found = match g.stderr.strip_prefix(b"sort: ") {
                Some(msg) => (0..e.stderr.len())
                    .filter(|&at| e.stderr[..at].ends_with(b": "))
                    .any(|at| e.stderr[at..].starts_with(msg)),
                None => g.stderr.is_empty() && !e.stderr.windows(9).any(|w| w == b"disorder:"),
            };
            if !found {
                return mismatch("the disorder message differs");
            }
        }
        _ if gs == Some(0) && g.stdout != e.stdout => return mismatch("standard output differs"),
        _ => {}
    }
    if case.is_debug() && gs == Some(0) && debug_stderr(&g.stderr) != debug_stderr(&e.stderr) {
        return mismatch("--debug's warnings differ");
    }
    if let (Some(o), Some(0)) = (&case.output, gs) {
        let (go, eo) = (std::fs::read(dir.join("gnu").join(o)), std::fs::read(dir.join("em").join(o)));
        if go.as_ref().ok() != eo.as_ref().ok() {
            let show = |r: &std::io::Result<Vec<u8>>| match r {
                Ok(b) => escape(b, 400),
                Err(e) => e.to_string(),
            };
            return Err(format!("-o {o} differs\n  GNU:    {}\n  emsort: {}", show(&go), show(&eo)));
        }
    }
    let spill = std::fs::read(dir.join("em/stats.json")).ok().and_then(|b| {
        let j: serde_json::Value = serde_json::from_slice(&b).ok()?;
        Some((j["runs"].as_u64()?, j["passes"].as_f64()?))
    });
    Ok(Outcome { status: gs, spill })
}

/// Standard error as `--debug` cases compare it: GNU's `sort: ` read as
/// `emsort: `, and emsort's own notes and warnings (`emsort: note: …`, a
/// merge in more than two passes) left out.
fn debug_stderr(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in b.split_inclusive(|&c| c == b'\n') {
        if line.starts_with(b"emsort: note: ") || line.starts_with(b"emsort: warning: ") {
            continue;
        }
        match line.strip_prefix(b"sort: ") {
            Some(rest) => {
                out.extend_from_slice(b"emsort: ");
                out.extend_from_slice(rest);
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// A random order's promises: the same lines as GNU's (one per key class
/// under `-u`, the first of its class in the input), equal keys adjacent.
fn check_random(case: &Case, gnu: &[u8], em: &[u8]) -> Result<(), String> {
    let key = case.random_key.unwrap();
    let eol = case.eol;
    let lines = |b: &[u8]| -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = b.split(|&c| c == eol).map(<[u8]>::to_vec).collect();
        if b.last() == Some(&eol) || b.is_empty() {
            v.pop();
        }
        v
    };
    let sep = case.opts.iter().find_map(|u| {
        let s = u.concat();
        let v = s.strip_prefix("-t").or_else(|| s.strip_prefix("--field-separator="))?;
        Some(v.as_bytes()[0])
    });
    let k = |l: &[u8]| random_key_of(l, key, sep);
    let (gl, el) = (lines(gnu), lines(em));
    let mut a = gl.clone();
    let mut b = el.clone();
    a.sort();
    b.sort();
    if a != b {
        return Err("not the same lines as GNU's".into());
    }
    let mut seen: Vec<Vec<u8>> = Vec::new();
    for (i, l) in el.iter().enumerate() {
        let kl = k(l);
        if i > 0 && k(&el[i - 1]) == kl {
            continue;
        }
        if seen.contains(&kl) {
            return Err(format!(
                "lines with equal keys are not adjacent (line {}: {})",
                i + 1,
                escape(l, 80)
            ));
        }
        seen.push(kl);
    }
    if case.is_unique() {
        // One line per class, the first of its class in the input.
        let mut input: Vec<Vec<u8>> = Vec::new();
        for op in &case.operands {
            let i = match op {
                Operand::File(i) => *i,
                Operand::Stdin => case.stdin.unwrap(),
            };
            input.extend(lines(&case.files[i]));
        }
        if case.operands.is_empty() {
            input.extend(lines(&case.files[case.stdin.unwrap()]));
        }
        for l in &el {
            let first = input.iter().find(|x| k(x) == k(l)).unwrap();
            if first != l {
                return Err(format!(
                    "-u kept {} where the input's first of its key is {}",
                    escape(l, 80),
                    escape(first, 80)
                ));
            }
        }
    } else if !case.is_stable() {
        // Within a class, the last-resort comparison orders whole lines.
        for w in el.windows(2) {
            if k(&w[0]) == k(&w[1]) && w[0] > w[1] {
                return Err(format!("equal keys not in the last-resort order: {}", escape(&w[1], 80)));
            }
        }
    }
    Ok(())
}

/// GNU's blanks: `isblank` and the newline (a line holds one only under `-z`).
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\n'
}

/// The key a random case compares, as GNU extracts it: field N (with its
/// leading blanks when fields are blank-separated, unless `b`), folded to
/// upper case under `f`.
fn random_key_of(line: &[u8], key: RandomKey, sep: Option<u8>) -> Vec<u8> {
    let mut k: &[u8] = line;
    if let Some(n) = key.field {
        let mut start = 0;
        for _ in 1..n {
            // Skip one field and its separator.
            match sep {
                Some(s) => match line[start..].iter().position(|&b| b == s) {
                    Some(p) => start += p + 1,
                    None => start = line.len(),
                },
                None => {
                    while start < line.len() && is_blank(line[start]) {
                        start += 1;
                    }
                    while start < line.len() && !is_blank(line[start]) {
                        start += 1;
                    }
                }
            }
        }
        let mut end = start;
        match sep {
            Some(s) => end += line[start..].iter().position(|&b| b == s).unwrap_or(line.len() - start),
            None => {
                while end < line.len() && is_blank(line[end]) {
                    end += 1;
                }
                while end < line.len() && !is_blank(line[end]) {
                    end += 1;
                }
            }
        }
        k = &line[start..end];
    }
    if key.blanks {
        while let [b, rest @ ..] = k {
            if !is_blank(*b) {
                break;
            }
            k = rest;
        }
    }
    if key.fold {
        k.to_ascii_uppercase()
    } else {
        k.to_vec()
    }
}

/// Bytes as a Rust-style escaped string, cut at `max` bytes.
fn escape(b: &[u8], max: usize) -> String {
    let mut s: String = b[..b.len().min(max)].escape_ascii().to_string();
    if b.len() > max {
        s += &format!("… ({} bytes)", b.len());
    }
    format!("\"{s}\"")
}

/// A shell word: single-quoted unless plain.
fn sh(a: &str) -> String {
    if !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.,=/+".contains(&b)) {
        a.into()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The two command lines of a case, as a shell would run them in its dir.
fn command_lines(case: &Case) -> String {
    let args: Vec<String> = case.args().iter().map(|a| sh(a)).collect();
    let args = args.join(" ");
    let stdin = case.stdin.map(|i| format!(" < {}", file_name(i))).unwrap_or_default();
    let tuning = match case.method {
        Some(m) => format!("{} --method {m} --disks d0,d1", STRIPED_TUNING.join(" ")),
        None => EMSORT_TUNING.join(" "),
    };
    format!(
        "(in gnu/) LC_ALL=C {GNU} -S 48K -T tmp {args}{stdin}\n    (in em/)  emsort sort {tuning} -T tmp {args}{stdin}"
    )
}

// ---------------------------------------------------------------------------
// Shrinking

/// A smaller case that still mismatches: fewer option units (each
/// dropped in turn while the mismatch stays), then fewer lines (halves,
/// quarters, … of each file dropped while it stays). At most `budget`
/// re-runs.
fn shrink(dir: &Path, case: &Case, mut budget: usize) -> Case {
    let mut best = case.clone();
    let mut attempt = 0;
    let mut fails = |c: &Case, budget: &mut usize| -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        attempt += 1;
        let d = dir.join(format!("try{attempt}"));
        let bad = run_case(&d, c).is_err();
        let _ = std::fs::remove_dir_all(&d);
        bad
    };
    let mut u = 0;
    // A random case's checker reads its key from the options: keep them.
    while u < best.opts.len() && best.mode != Mode::Random {
        let mut c = best.clone();
        c.opts.remove(u);
        if fails(&c, &mut budget) {
            best = c;
        } else {
            u += 1;
        }
    }
    for f in 0..best.files.len() {
        let mut chunk = split_lines(&best.files[f], best.eol).len().div_ceil(2);
        while chunk >= 1 {
            let mut at = 0;
            loop {
                let lines = split_lines(&best.files[f], best.eol);
                if at >= lines.len() {
                    break;
                }
                let mut c = best.clone();
                let kept: Vec<&[u8]> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < at || *i >= at + chunk)
                    .map(|(_, l)| *l)
                    .collect();
                c.files[f] = kept.concat();
                if fails(&c, &mut budget) {
                    best = c;
                } else {
                    at += chunk;
                }
            }
            chunk /= 2;
        }
    }
    best
}

/// A file's lines, each with its terminator (the last may lack it).
fn split_lines(b: &[u8], eol: u8) -> Vec<&[u8]> {
    b.split_inclusive(|&c| c == eol).collect()
}

// ---------------------------------------------------------------------------
// The campaign

#[derive(Default)]
struct Tally {
    by_mode: [usize; 4],
    /// Cases with `--debug`, with `--compress-program`, with `--method dsm|srm`.
    debug: usize,
    compress: usize,
    striped: usize,
    /// `--method dsm|srm` cases whose runs went to the disks.
    striped_spilled: usize,
    refused: usize,
    spilled: usize,
    multipass: usize,
    /// `-z` cases: drawn, with runs on disk, with more than one merge pass.
    zero: [usize; 3],
    /// `-m` cases that read standard input.
    merge_stdin: usize,
    failures: Vec<String>,
    slowest: (Duration, usize),
}

fn campaign(name: &str, seed: u64, cases: usize) {
    let plain = plain_only(name);
    let root = tempfile::Builder::new().prefix("emsort-gnu-").tempdir().unwrap();
    let only = env_u64("EMSORT_GNU_CASE");
    let threads = env_u64("EMSORT_GNU_THREADS").map_or(2, |n| n.max(1) as usize);
    let t = Instant::now();
    println!(
        "== {name}: seed {seed:#x}, {cases} cases, {threads} threads{} \
         (EMSORT_GNU_SEED, EMSORT_GNU_CASES, EMSORT_GNU_CASE, EMSORT_GNU_THREADS, EMSORT_GNU_SELF)",
        if self_check() { ", GNU sort -S 1K in emsort's place" } else { "" }
    );
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= cases {
                    break;
                }
                if only.is_some_and(|o| o != n as u64) {
                    continue;
                }
                let case = draw(seed, n as u64, plain);
                let dir = root.path().join(format!("case{n}"));
                let t0 = Instant::now();
                let result = run_case(&dir, &case);
                let took = t0.elapsed();
                let mut t = tally.lock().unwrap();
                if took > t.slowest.0 {
                    t.slowest = (took, n);
                }
                t.by_mode[match case.mode {
                    Mode::Sort => 0,
                    Mode::Merge => 1,
                    Mode::Check(_) => 2,
                    Mode::Random => 3,
                }] += 1;
                t.debug += usize::from(case.is_debug());
                t.compress += usize::from(case.opts.iter().any(|u| u[0].starts_with("--compress-program")));
                t.striped += usize::from(case.method.is_some());
                let zero = case.eol == 0;
                t.zero[0] += usize::from(zero);
                t.merge_stdin += usize::from(case.mode == Mode::Merge && case.stdin.is_some());
                match result {
                    Ok(out) => {
                        t.refused += usize::from(out.status == Some(2));
                        if let Some((runs, passes)) = out.spill {
                            t.spilled += usize::from(runs > 1);
                            t.striped_spilled += usize::from(runs > 1 && case.method.is_some());
                            t.multipass += usize::from(passes > 2.0 + 1e-9);
                            t.zero[1] += usize::from(zero && runs > 1);
                            t.zero[2] += usize::from(zero && passes > 2.0 + 1e-9);
                        }
                        drop(t);
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                    Err(what) => {
                        // Shrinking re-runs a case up to 400 times: the first few only.
                        let shrink = t.failures.len() < 5;
                        drop(t);
                        let report = report_failure(&dir, seed, n, &case, &what, shrink);
                        tally.lock().unwrap().failures.push(report);
                    }
                }
            });
        }
    });
    let t_all = t.elapsed();
    let tally = tally.into_inner().unwrap();
    println!(
        "   {} sort, {} merge, {} check, {} random ({} with --debug, {} with --compress-program, {} with --method dsm|srm ({} with runs on the disks); \
         {} refused by both with status 2); runs on disk in {}, more than one merge pass in {} (from --stats); \
         -z in {} (runs on disk in {}, more than one merge pass in {}); -m of standard input in {}; \
         {:.1} s, the slowest case {} {:.2} s",
        tally.by_mode[0],
        tally.by_mode[1],
        tally.by_mode[2],
        tally.by_mode[3],
        tally.debug,
        tally.compress,
        tally.striped,
        tally.striped_spilled,
        tally.refused,
        tally.spilled,
        tally.multipass,
        tally.zero[0],
        tally.zero[1],
        tally.zero[2],
        tally.merge_stdin,
        t_all.as_secs_f64(),
        tally.slowest.1,
        tally.slowest.0.as_secs_f64()
    );
    if tally.failures.is_empty() {
        return;
    }
    let kept = root.keep();
    panic!(
        "{} of {cases} cases differ from GNU sort (seed {seed:#x}; files kept in {}):\n\n{}",
        tally.failures.len(),
        kept.display(),
        tally.failures.join("\n\n")
    );
}

/// The failure's report, with a shrunk case laid out beside the original.
fn report_failure(dir: &Path, seed: u64, n: usize, case: &Case, what: &str, shrink_it: bool) -> String {
    let shrunk = if shrink_it { shrink(&dir.join("shrinking"), case, 400) } else { case.clone() };
    let _ = std::fs::remove_dir_all(dir.join("shrinking"));
    let small = dir.join("shrunk");
    let small_what =
        run_case(&small, &shrunk).err().unwrap_or_else(|| "(the shrunk case passes: flaky?)".into());
    let mut s = format!(
        "case {n} (campaign seed {seed:#x}, case seed {:#x}; EMSORT_GNU_SEED={seed:#x} EMSORT_GNU_CASE={n}): {what}\n  \
         in {}:\n    {}",
        case.seed,
        dir.display(),
        command_lines(case)
    );
    s += &format!("\n  shrunk, in {}:\n    {}\n", small.display(), command_lines(&shrunk));
    for (i, f) in shrunk.files.iter().enumerate() {
        s += &format!("    {} = {}\n", file_name(i), escape(f, 600));
    }
    s += &format!("  shrunk: {small_what}");
    s
}

// ---------------------------------------------------------------------------
// GNU's surprises, pinned

/// A pinned case: what it shows, the options, the input, GNU's output and exit status.
type Pinned = (&'static str, &'static [&'static str], &'static [u8], &'static [u8], i32);

/// Where GNU `sort` surprises, its output pinned by hand: GNU must still
/// print it (so the comment stays true), and emsort the same.
#[test]
fn gnu_sort_surprises() {
    #[rustfmt::skip]
    let cases: &[Pinned] = &[
        // -n reads `-0` and `0` as equal: the last-resort comparison puts `-0` (0x2d) first.
        ("-0 equals 0", &["-k1,1n"], b"0 b\n-0 a\n", b"-0 a\n0 b\n", 0),
        // ... and under -s the input order stays.
        ("-0 equals 0, stable", &["-s", "-k1,1n"], b"-0 b\n0 a\n-0 c\n", b"-0 b\n0 a\n-0 c\n", 0),
        // -n takes no `+` sign: `+5` is not a number, so it sorts as 0, before 3.
        ("+5 is no number", &["-n"], b"3\n+5\n", b"+5\n3\n", 0),
        // -n stops at the `e`: `1e5` is 1.
        ("-n reads no exponent", &["-n"], b"1e5\n2\n", b"1e5\n2\n", 0),
        // -n takes no thousands separator under LC_ALL=C: `1,000` is 1.
        ("-n has no thousands separator", &["-n"], b"2\n1,000\n", b"1,000\n2\n", 0),
        // Under LC_ALL=C, GNU sort 9.1 takes byte 0x80 for the thousands separator of -n and -h
        // (its "no separator" value, CHAR_MAX + 1, compared as a char): `5\x805` is 55.
        ("-n: 0x80 separates thousands", &["-n"], b"7\n5\x805\n", b"7\n5\x805\n", 0),
        ("-h: 0x80 separates thousands", &["-h"], b"7\n5\x805\n", b"7\n5\x805\n", 0),
        ("-n: 0x80 runs", &["-n"], b"70\n5\x80\x805\x805\n", b"70\n5\x80\x805\x805\n", 0),
        // ... but not in the fraction, nor for -g (strtold): `5\x805` is 5.
        ("-n: no 0x80 in the fraction", &["-n"], b"5.5\x805\n5.6\n", b"5.5\x805\n5.6\n", 0),
        ("-g: 0x80 ends the number", &["-g"], b"7\n5\x805\n", b"5\x805\n7\n", 0),
        // -g does: 1e5 is 100000, and `0x1F` is hexadecimal 31 (strtold).
        ("-g reads exponents and hex", &["-g"], b"1e5\n0x1F\n20\n", b"20\n0x1F\n1e5\n", 0),
        // -g: what is no number first, then NaN, then -inf.
        ("-g puts NaN after non-numbers", &["-g"], b"-inf\nnan\nx\n", b"x\nnan\n-inf\n", 0),
        // -h orders by the suffix first: 1K > 999999, and `k` is K.
        ("-h: the suffix first", &["-h"], b"1K\n999999\n3k\n2M\n1.5G\n", b"999999\n1K\n3k\n2M\n1.5G\n", 0),
        // -h: 1K and 1k are equal (stable keeps the input order).
        ("-h: k is K", &["-h", "-s"], b"1k\n1K\n", b"1k\n1K\n", 0),
        // -M skips leading blanks, ignores case; a non-month sorts before JAN.
        ("-M", &["-M"], b" feb\nJAN\nxyz\n", b"xyz\nJAN\n feb\n", 0),
        // -V: `~` sorts before everything, even the end of the string.
        ("-V and ~", &["-V"], b"1.10\n1.9\n1.0\n1.0~rc1\n", b"1.0~rc1\n1.0\n1.9\n1.10\n", 0),
        // -u keeps the first line of each run of equal keys, in input order.
        ("-u keeps the first", &["-u", "-k2,2"], b"b 1\na 1\nc 1\n", b"b 1\n", 0),
        // -u with -n: `1`, `01` and `1.0` are one number.
        ("-u -n", &["-n", "-u"], b"01\n1\n1.0\n", b"01\n", 0),
        // -u with -f: `a` and `A` are one key, the first stays.
        ("-u -f", &["-f", "-u"], b"a\nA\n", b"a\n", 0),
        // Without -s the last-resort comparison of whole lines orders equal keys ...
        ("last resort", &["-k1,1"], b"a 2\na 1\n", b"a 1\na 2\n", 0),
        // ... -s turns it off ...
        ("-s: no last resort", &["-s", "-k1,1"], b"a 2\na 1\n", b"a 2\na 1\n", 0),
        // ... and a global -r reverses it too, while a key's own `r` does not.
        ("-r reverses the last resort", &["-k1,1", "-r"], b"a a\na b\n", b"a b\na a\n", 0),
        ("a key's r leaves the last resort", &["-k1,1r"], b"a b\na a\n", b"a a\na b\n", 0),
        // A key with a modifier of its own inherits no global option, not even -r.
        ("-k1n ignores -r", &["-k1n", "-r"], b"10\n9\n2\n", b"2\n9\n10\n", 0),
        // Blank-separated fields keep their leading blanks: a tab (0x09) sorts before a space.
        ("fields keep their blanks", &["-k2,2"], b"x  a\nx\tb\n", b"x\tb\nx  a\n", 0),
        // ... so -u sees `  a` and ` a` as different keys.
        ("-u and blanks", &["-u", "-k2"], b"x  a\nx a\n", b"x  a\nx a\n", 0),
        // Character offsets count those blanks: char 2 of `  ab` is a blank.
        ("-k2.2 counts blanks", &["-k2.2,2.2"], b"q ba\np  ab\n", b"p  ab\nq ba\n", 0),
        // `b` on POS1 alone: the start skips blanks but the end still counts them, so both keys are empty.
        ("b on POS1 only", &["-k2.2b,2.2"], b"q ba\np  ab\n", b"p  ab\nq ba\n", 0),
        ("b on both ends", &["-k2.2b,2.2b"], b"p  ab\nq ba\n", b"q ba\np  ab\n", 0),
        // A global -b applies to both ends of the keys that inherit it.
        ("global -b, both ends", &["-b", "-k2,2.1"], b"x  b y\nx a  y\n", b"x a  y\nx  b y\n", 0),
        // With -t, char 1 is the first after the separator.
        ("-t and .C", &["-t:", "-k2.2"], b"ab:cz\nxy:db\n", b"xy:db\nab:cz\n", 0),
        // A character offset runs past the end of its field into the next ones.
        ("-k1.3 reads on", &["-k1.3n"], b"1 10\n1 9\n", b"1 9\n1 10\n", 0),
        // A POS2 before POS1 makes an empty key: only the last resort orders.
        ("POS2 before POS1", &["-k2,1"], b"b 1\na 2\n", b"a 2\nb 1\n", 0),
        // `.0` at the end means the end of the field.
        ("end .0", &["-k2,3.0"], b"b x y\na y x\n", b"b x y\na y x\n", 0),
        // -d keeps letters, digits and blanks only; the rest is skipped.
        ("-d", &["-d"], b"a-c\nab\na.b\na c\n", b"a c\na.b\nab\na-c\n", 0),
        // -i skips bytes that are not printable ASCII (0x80 and up too).
        ("-i", &["-i"], b"a\x80c\nab\n", b"ab\na\x80c\n", 0),
        // -f folds to upper case: `_` (0x5f) sorts after `A` but before `a`... and folded `a` is `A`.
        ("-f", &["-f"], b"b\n_\nB\na\n", b"a\nB\nb\n_\n", 0),
        // The CR of a CRLF line is part of the line.
        ("CRLF", &[], b"a\r\na\n", b"a\na\r\n", 0),
        // --debug: each line, then its keys underlined (a number only as far as it reads), then the
        // whole line for the last resort; a tab shows as `>`. (Its warnings are compared too.)
        ("--debug", &["--debug", "-k2n"], b"b\t10 x\na  9\n", b"a  9\n   _\n____\nb>10 x\n  __\n______\n", 0),
        // ... an empty key is `^ no match for key`; -s leaves out the last resort.
        ("--debug: no match", &["--debug", "-s", "-k2,2"], b" x\n\n", b" x\n  ^ no match for key\n\n^ no match for key\n", 0),
        ("--debug: -h with its unit", &["--debug", "-s", "-h", "-b"], b"jan\n-5K\n", b"-5K\n___\njan\n^ no match for key\n", 0),
        ("--debug with -o", &["--debug", "-o", "out"], b"a\n", b"", 2),
        // -z: newlines are ordinary bytes, NUL ends a line.
        ("-z", &["-z"], b"b\nc\0a\0", b"a\0b\nc\0", 0),
        // ... a newline is a blank between fields, and a last line without NUL gets one.
        ("-z fields", &["-z", "-k2,2"], b"x\nb\0y a\0z", b"z\0x\nb\0y a\0", 0),
        ("-z -u -n", &["-z", "-u", "-n"], b"\n2\x00001\x00002\n\0", b"001\0\n2\0", 0),
        // A last line without its newline gets one.
        ("no final newline", &[], b"b\na", b"a\nb\n", 0),
        // -c: the first disorder, `sort: FILE:LINE: disorder: TEXT` on stderr, status 1.
        ("-c", &["-c"], b"a\nc\nb\n", b"", 1),
        // -c -u: equal neighbours are a disorder.
        ("-c -u", &["-c", "-u"], b"a\na\n", b"", 1),
        // Errors: status 2.
        ("char 0 in POS1", &["-k1.0"], b"a\n", b"", 2),
        ("field 0", &["-k0"], b"a\n", b"", 2),
        ("field 0 in POS2", &["-k1,0"], b"a\n", b"", 2),
        ("-gn", &["-gn"], b"a\n", b"", 2),
        ("-k1,1gn", &["-k1,1gn"], b"a\n", b"", 2),
        ("-dn", &["-dn"], b"a\n", b"", 2),
        ("-MV", &["-MV"], b"a\n", b"", 2),
        ("multi-character tab", &["-t", "ab"], b"a\n", b"", 2),
        ("empty tab", &["-t", ""], b"a\n", b"", 2),
    ];
    let em = emsort_speaks_gnu() || self_check();
    if !em {
        println!("gnu_sort_surprises: emsort does not speak GNU's options yet: GNU alone checked");
    }
    let d = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    for (i, (what, args, input, want, status)) in cases.iter().enumerate() {
        let check = args.contains(&"-c");
        let case = Case {
            seed: 0,
            mode: if check { Mode::Check("-c") } else { Mode::Sort },
            opts: args.iter().filter(|a| **a != "-c").map(|a| vec![(*a).to_string()]).collect(),
            files: vec![input.to_vec()],
            operands: vec![Operand::File(0)],
            stdin: None,
            eol: if args.contains(&"-z") { 0 } else { b'\n' },
            random_key: None,
            output: None,
            method: None,
        };
        let dir = d.path().join(format!("s{i}"));
        lay_out(&dir, &case);
        let g = run_in(gnu(&case.args()), &dir.join("gnu"), None);
        if g.stdout != *want || g.status.code() != Some(*status) {
            bad.push(format!(
                "{what}: GNU sort {args:?} on {} printed {} (status {:?}), pinned {} (status {status})",
                escape(input, 100),
                escape(&g.stdout, 100),
                g.status.code(),
                escape(want, 100)
            ));
            continue;
        }
        if em {
            if let Err(e) = run_case(&dir, &case) {
                bad.push(format!("{what}: {}\n  {e}", command_lines(&case)));
            }
        }
    }
    assert!(bad.is_empty(), "{} of {} pinned cases fail:\n{}", bad.len(), cases.len(), bad.join("\n"));
}
