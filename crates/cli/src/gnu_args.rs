//! GNU sort's argument grammar in front of clap: `emsort sort` and `sort`
//! (the binary started under that name) read their arguments as GNU sort
//! 9.1 reads them with `getopt_long`, and hand clap a canonical list.
//!
//! What this layer does, as `sort.c` and glibc's `getopt_long` do:
//! - long options by any unambiguous prefix (`--p=1` is `--parallel=1`),
//!   GNU's own options first: an emsort option never makes a prefix that
//!   GNU sort accepts ambiguous; `--name=value` or `--name value`;
//! - short options clustered (`-nrk2,2`), a value attached or in the next
//!   argument; options and operands in any order, `--` ending options
//!   (under `POSIXLY_CORRECT` the first operand does);
//! - the obsolete keys `+POS1 [-POS2]`, converted to `-k` exactly as GNU
//!   converts them (a `+POS1` alone only when `_POSIX2_VERSION` is below
//!   200112), in their place among the `-k` keys; an invalid `+POS1` is a
//!   file name;
//! - repeated options as GNU takes them: flags any number of times, the
//!   largest `-S`, the last `--batch-size`/`--parallel`/`--files0-from`,
//!   `-o`/`-t`/`--compress-program`/`--random-source` repeated with the
//!   same value (different values are GNU's errors), `--sort=WORD` and
//!   `--check=WORD` by any unambiguous prefix of their words, `-y` ignored;
//! - GNU's messages for every error found here, and exit status 2.
//!
//! The canonical list names every option by its long name with `=VALUE`
//! (`-C`, which has none, by its letter), then `--`, then the operands.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// An argument error, in GNU sort's words: the lines to print after the
/// program name (`sort: `), each on its own line, then `Try … --help`
/// when `usage` is set. Exit status 2.
#[derive(Debug, PartialEq, Eq)]
pub struct ArgError {
    /// Lines printed with the program name before them.
    pub lines: Vec<String>,
    /// Lines printed as they are, after those (`--sort`'s valid words).
    pub tail: Vec<String>,
    /// Followed by "Try 'sort --help' for more information.".
    pub usage: bool,
    /// The exit status: 2 (GNU's `SORT_FAILURE`), 1 for a word `--sort` or
    /// `--check` does not know (gnulib's `argmatch_die` exits with
    /// `EXIT_FAILURE`).
    pub status: u8,
}

impl ArgError {
    fn usage(line: String) -> ArgError {
        ArgError { lines: vec![line], tail: Vec::new(), usage: true, status: 2 }
    }
    fn die(line: String) -> ArgError {
        ArgError { lines: vec![line], tail: Vec::new(), usage: false, status: 2 }
    }
}

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HasArg {
    No,
    Required,
    /// Only as `--name=VALUE` (`--check`).
    Optional,
}

/// GNU sort 9.1's long options, in `sort.c`'s order (which getopt's
/// "is ambiguous; possibilities:" follows), with the long name emsort's
/// command line gives each.
const GNU_LONG: &[(&str, HasArg)] = &[
    ("ignore-leading-blanks", HasArg::No),
    ("check", HasArg::Optional),
    ("compress-program", HasArg::Required),
    ("debug", HasArg::No),
    ("dictionary-order", HasArg::No),
    ("ignore-case", HasArg::No),
    ("files0-from", HasArg::Required),
    ("general-numeric-sort", HasArg::No),
    ("ignore-nonprinting", HasArg::No),
    ("key", HasArg::Required),
    ("merge", HasArg::No),
    ("month-sort", HasArg::No),
    ("numeric-sort", HasArg::No),
    ("human-numeric-sort", HasArg::No),
    ("version-sort", HasArg::No),
    ("random-sort", HasArg::No),
    ("random-source", HasArg::Required),
    ("sort", HasArg::Required),
    ("output", HasArg::Required),
    ("reverse", HasArg::No),
    ("stable", HasArg::No),
    ("batch-size", HasArg::Required),
    ("buffer-size", HasArg::Required),
    ("field-separator", HasArg::Required),
    ("temporary-directory", HasArg::Required),
    ("unique", HasArg::No),
    ("zero-terminated", HasArg::No),
    ("parallel", HasArg::Required),
    ("help", HasArg::No),
    ("version", HasArg::No),
];

/// The option table: GNU's long options, then emsort's own, from the
/// clap definition of `emsort sort` (so an option added there is known
/// here).
struct Table {
    /// Long name, whether it takes a value, whether GNU sort has it.
    long: Vec<(String, HasArg, bool)>,
    /// Short letter → its long name (or none: `-C`) and whether it takes a value.
    short: Vec<(char, Option<String>, HasArg)>,
}

impl Table {
    fn new(cmd: &clap::Command) -> Table {
        let mut long: Vec<(String, HasArg, bool)> =
            GNU_LONG.iter().map(|&(n, h)| (n.to_string(), h, true)).collect();
        let mut short = vec![('y', None, HasArg::Required)];
        for arg in cmd.get_arguments() {
            if arg.is_positional() {
                continue;
            }
            let has = if !arg.get_action().takes_values() {
                HasArg::No
            } else if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
                HasArg::Optional
            } else {
                HasArg::Required
            };
            if let Some(l) = arg.get_long() {
                if !long.iter().any(|(n, _, _)| n == l) {
                    long.push((l.to_string(), has, false));
                }
            }
            if let Some(c) = arg.get_short() {
                // `-c` has no value (getopt's "c"): `--check` alone takes one.
                let has = if c == 'c' { HasArg::No } else { has };
                short.push((c, arg.get_long().map(str::to_string), has));
            }
        }
        Table { long, short }
    }

    /// The long option `name` (a prefix of one) names: an exact name first,
    /// then a unique prefix among GNU's options, then among emsort's.
    fn find_long(&self, name: &str) -> Result<(String, HasArg), ArgError> {
        if let Some((n, h, _)) = self.long.iter().find(|(n, _, _)| n == name) {
            return Ok((n.clone(), *h));
        }
        for gnu in [true, false] {
            let hits: Vec<&(String, HasArg, bool)> =
                self.long.iter().filter(|(n, _, g)| *g == gnu && n.starts_with(name)).collect();
            match hits.len() {
                0 => continue,
                1 => return Ok((hits[0].0.clone(), hits[0].1)),
                _ => {
                    let list: String = hits.iter().map(|(n, _, _)| format!(" '--{n}'")).collect();
                    return Err(ArgError::usage(format!(
                        "option '--{name}' is ambiguous; possibilities:{list}"
                    )));
                }
            }
        }
        Err(ArgError::usage(format!("unrecognized option '--{name}'")))
    }
}

/// One option as read: its long name (or `-C`'s letter) and value.
struct Opt {
    name: String,
    value: Option<OsString>,
    /// How the user wrote the option, for messages (`-S`, `--buffer-size`).
    spelled: String,
}

/// GNU sort's `--sort` words and the flags they stand for.
const SORT_WORDS: &[(&str, &str)] = &[
    ("general-numeric", "general-numeric-sort"),
    ("human-numeric", "human-numeric-sort"),
    ("month", "month-sort"),
    ("numeric", "numeric-sort"),
    ("random", "random-sort"),
    ("version", "version-sort"),
];

/// GNU's `--check` words and what they mean.
const CHECK_WORDS: &[(&str, &str)] =
    &[("quiet", "quiet"), ("silent", "quiet"), ("diagnose-first", "diagnose-first")];

/// gnulib's `argmatch`: an exact word, or a prefix of words that all mean
/// the same; else "invalid/ambiguous argument" and the valid words.
fn argmatch<'a>(option: &str, value: &str, words: &[(&'a str, &'a str)]) -> Result<&'a str, ArgError> {
    if let Some((_, m)) = words.iter().find(|(w, _)| *w == value) {
        return Ok(m);
    }
    let hits: Vec<&str> = words.iter().filter(|(w, _)| w.starts_with(value)).map(|(_, m)| *m).collect();
    let ambiguous = match hits.first() {
        Some(first) if hits.iter().all(|m| m == first) => return Ok(first),
        Some(_) => true,
        None => false,
    };
    let what = if ambiguous { "ambiguous" } else { "invalid" };
    let mut tail = vec!["Valid arguments are:".to_string()];
    let mut last_meaning = "";
    for (w, m) in words {
        // argmatch_valid: synonyms on one line.
        if *m == last_meaning {
            tail.last_mut().unwrap().push_str(&format!(", '{w}'"));
        } else {
            tail.push(format!("  - '{w}'"));
        }
        last_meaning = m;
    }
    Err(ArgError {
        lines: vec![format!("{what} argument '{value}' for '--{option}'")],
        tail,
        usage: true,
        status: 1,
    })
}

/// gnulib's `xstrtoumax` on a decimal number with an optional one-letter
/// suffix from `suffixes` (powers of 1024).
#[derive(Debug, PartialEq, Eq)]
enum Num {
    Ok(u64),
    Invalid,
    /// The suffix that is not one of `suffixes`, and the number before it.
    BadSuffix(String, u64),
    Overflow,
}

fn xstrtoumax(s: &str, suffixes: &str) -> Num {
    let t = s.trim_start();
    if t.starts_with('-') {
        return Num::Invalid;
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, rest) = t.split_at(digits);
    let mut n: u64 = if digits == 0 {
        // A valid suffix alone counts as 1 of it.
        match rest.chars().next() {
            Some(c) if suffixes.contains(c) => 1,
            _ => return Num::Invalid,
        }
    } else {
        match num.parse::<u64>() {
            Ok(n) => n,
            Err(_) => return Num::Overflow,
        }
    };
    if rest.is_empty() {
        return Num::Ok(n);
    }
    let c = rest.chars().next().unwrap();
    if !suffixes.contains(c) {
        return Num::BadSuffix(rest.to_string(), n);
    }
    let power = match c {
        'k' | 'K' => 1,
        'm' | 'M' => 2,
        'g' | 'G' => 3,
        't' | 'T' => 4,
        'P' => 5,
        'E' => 6,
        'Z' => 7,
        'Y' => 8,
        _ => 0,
    };
    for _ in 0..power {
        n = match n.checked_mul(1024) {
            Some(n) => n,
            None => return Num::Overflow,
        };
    }
    if rest.len() > c.len_utf8() {
        return Num::BadSuffix(rest.to_string(), n);
    }
    Num::Ok(n)
}

/// gnulib's `xstrtol_fatal` messages.
fn xstrtol_fatal(e: &Num, spelled: &str, s: &str) -> ArgError {
    ArgError::die(match e {
        Num::Overflow => format!("{spelled} argument '{s}' too large"),
        Num::BadSuffix(..) => format!("invalid suffix in {spelled} argument '{s}'"),
        _ => format!("invalid {spelled} argument '{s}'"),
    })
}

/// GNU's `-S SIZE` in bytes: KiB by default, `b` bytes, `%` of the physical
/// memory (any percentage), `k K m M g G t T P E Z Y`.
pub fn sort_size(s: &str, spelled: &str) -> Result<u64, ArgError> {
    let r = xstrtoumax(s, "EgGkKmMPtTYZ");
    let last_digit = |s: &str| s.as_bytes().last().is_some_and(u8::is_ascii_digit);
    match r {
        Num::Ok(n) if last_digit(s) => {
            n.checked_mul(1024).ok_or_else(|| xstrtol_fatal(&Num::Overflow, spelled, s))
        }
        Num::Ok(n) => Ok(n),
        Num::BadSuffix(ref suf, n) if suf == "b" => Ok(n),
        Num::BadSuffix(ref suf, n) if suf == "%" => {
            let total = emsort_io::meminfo("MemTotal:").unwrap_or(0) as f64;
            let bytes = total * n as f64 / 100.0;
            if bytes < u64::MAX as f64 {
                Ok(bytes as u64)
            } else {
                Err(xstrtol_fatal(&Num::Overflow, spelled, s))
            }
        }
        e => Err(xstrtol_fatal(&e, spelled, s)),
    }
}

/// The environment the grammar depends on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Env {
    /// `POSIXLY_CORRECT` is set.
    pub posixly_correct: bool,
    /// `_POSIX2_VERSION` as a number (GNU's default: 200809); the obsolete
    /// `+POS1` alone is a key unless it is POSIX 2001's (200112 … 200808).
    pub posix2_version: u64,
    /// `RLIMIT_NOFILE`'s soft limit (for `--batch-size`).
    pub nofile: u64,
}

impl Env {
    /// The process's environment.
    pub fn current() -> Env {
        let nofile =
            rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX);
        Env {
            posixly_correct: std::env::var_os("POSIXLY_CORRECT").is_some(),
            posix2_version: std::env::var("_POSIX2_VERSION")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(200809),
            nofile,
        }
    }
}

/// Which `--key`s of this process's command line were `+POS1 -POS2` (set
/// once by `main`, read by `emsort sort`'s `--debug` warnings).
pub static TRADITIONAL_KEYS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();

/// The arguments as clap reads them.
#[derive(Debug)]
pub struct Canonical {
    /// The canonical list (see the module docs).
    pub args: Vec<OsString>,
    /// Which of the `--key`s (counted from 0) were `+POS1 -POS2`.
    pub traditional_keys: Vec<usize>,
}

/// Parses `args` (what follows `sort`) as GNU sort does and returns the
/// canonical list for clap.
pub fn canonical(args: &[OsString], cmd: &clap::Command, env: Env) -> Result<Canonical, ArgError> {
    let table = Table::new(cmd);
    let mut opts: Vec<Opt> = Vec::new();
    let mut operands: Vec<OsString> = Vec::new();
    let mut traditional = !(200112..200809).contains(&env.posix2_version);
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let a = args[i].as_bytes();
        i += 1;
        // POSIXLY_CORRECT: an operand ends the options, but for a
        // traditional `-o FILE` after it.
        let posix_stop = env.posixly_correct
            && !operands.is_empty()
            && !(traditional
                && !opts.iter().any(|o| o.name == "check" || o.name == "C")
                && a.starts_with(b"-o")
                && (a.len() > 2 || i < args.len()));
        if options_done || posix_stop || a == b"-" || !a.starts_with(b"-") {
            if !options_done && !posix_stop && a.first() == Some(&b'+') {
                let next = args.get(i).map(|n| n.as_bytes());
                let minus_pos = next.is_some_and(|n| n.len() > 1 && n[0] == b'-' && n[1].is_ascii_digit());
                traditional |= minus_pos && !env.posixly_correct;
                if traditional {
                    let end = if minus_pos { next } else { None };
                    let key = match obsolete_key(&a[1..], end) {
                        Ok(key) => key,
                        Err(e) => return Err(earlier(opts, e, env)),
                    };
                    if let Some(key) = key {
                        if minus_pos {
                            i += 1;
                        }
                        opts.push(Opt { name: "key".into(), value: Some(key.into()), spelled: "+".into() });
                        continue;
                    }
                }
            }
            operands.push(args[i - 1].clone());
            continue;
        }
        if a == b"--" {
            options_done = true;
            continue;
        }
        if let Some(rest) = a.strip_prefix(b"--") {
            let (name, value) = match rest.iter().position(|&b| b == b'=') {
                Some(p) => (&rest[..p], Some(OsStr::from_bytes(&rest[p + 1..]).to_os_string())),
                None => (rest, None),
            };
            let name = String::from_utf8_lossy(name).into_owned();
            let (long, has) = match table.find_long(&name) {
                Ok(found) => found,
                Err(e) => return Err(earlier(opts, e, env)),
            };
            let value = match (has, value) {
                (HasArg::No, Some(_)) => {
                    return Err(earlier(
                        opts,
                        ArgError::usage(format!("option '--{long}' doesn't allow an argument")),
                        env,
                    ));
                }
                (HasArg::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        let e = ArgError::usage(format!("option '--{long}' requires an argument"));
                        return Err(earlier(opts, e, env));
                    }
                },
                (_, v) => v,
            };
            if long == "help" || long == "version" {
                // Errors of the options before it come first.
                emit(opts, Vec::new(), env)?;
                return Ok(Canonical {
                    args: vec![format!("--{long}").into()],
                    traditional_keys: Vec::new(),
                });
            }
            opts.push(Opt { spelled: format!("--{long}"), name: long, value });
            continue;
        }
        // A cluster of short options.
        let mut j = 1;
        while j < a.len() {
            let c = a[j] as char;
            j += 1;
            let Some((_, long, has)) = table.short.iter().find(|(s, _, _)| *s == c && c.is_ascii()) else {
                let shown = String::from_utf8_lossy(&a[j - 1..j]).into_owned();
                return Err(earlier(opts, ArgError::usage(format!("invalid option -- '{shown}'")), env));
            };
            let value = if *has == HasArg::Required {
                let v = if j < a.len() {
                    OsStr::from_bytes(&a[j..]).to_os_string()
                } else if let Some(v) = args.get(i) {
                    i += 1;
                    // `-y`: the next argument is its value only when all digits.
                    if c == 'y' && !v.as_bytes().iter().all(u8::is_ascii_digit) {
                        i -= 1;
                    }
                    v.clone()
                } else {
                    return Err(earlier(
                        opts,
                        ArgError::usage(format!("option requires an argument -- '{c}'")),
                        env,
                    ));
                };
                j = a.len();
                Some(v)
            } else {
                None
            };
            if c == 'y' {
                continue; // Solaris' -y: accepted and ignored
            }
            let name = long.clone().unwrap_or_else(|| c.to_string());
            opts.push(Opt { name, value, spelled: format!("-{c}") });
        }
    }
    let traditional_keys = opts
        .iter()
        .filter(|o| o.name == "key")
        .enumerate()
        .filter(|(_, o)| o.spelled == "+")
        .map(|(i, _)| i)
        .collect();
    Ok(Canonical { args: emit(opts, operands, env)?, traditional_keys })
}

/// The error to report when `e` is found after `opts`: GNU reads options
/// in order, so an error in the options before it comes first.
fn earlier(opts: Vec<Opt>, e: ArgError, env: Env) -> ArgError {
    emit(opts, Vec::new(), env).err().unwrap_or(e)
}

/// GNU's conversion of `+POS1 [-POS2]` (without their signs) to a `-k`
/// KEYDEF: POS1 counts fields and characters from 0, `-POS2` ends before
/// field POS2 (or after character C of field POS2 + 1). `None`: POS1 is
/// not a key (then it is a file name).
fn obsolete_key(pos1: &[u8], pos2: Option<&[u8]>) -> Result<Option<String>, ArgError> {
    const ORDERING: &[u8] = b"bdfgiMhnRrV";
    /// A count at the start of `s` (saturating, as GNU's SIZE_MAX), and the rest.
    fn count(s: &[u8]) -> Option<(u64, &[u8])> {
        let d = s.iter().take_while(|b| b.is_ascii_digit()).count();
        if d == 0 {
            return None;
        }
        let n = std::str::from_utf8(&s[..d]).unwrap().parse::<u64>().unwrap_or(u64::MAX);
        Some((n, &s[d..]))
    }
    let Some((field, mut s)) = count(pos1) else { return Ok(None) };
    let mut char_ = 0;
    if let Some(rest) = s.strip_prefix(b".") {
        let Some((c, rest)) = count(rest) else { return Ok(None) };
        char_ = c;
        s = rest;
    }
    if !s.iter().all(|b| ORDERING.contains(b)) {
        return Ok(None);
    }
    let mods = std::str::from_utf8(s).unwrap();
    let mut key = format!("{}.{}{mods}", field.saturating_add(1), char_.saturating_add(1));
    if let Some(p2) = pos2 {
        let shown = String::from_utf8_lossy(p2).into_owned();
        let bad = |why: &str| ArgError::die(format!("{why}: invalid field specification '{shown}'"));
        let (eword, mut rest) = count(&p2[1..]).expect("a digit follows '-'");
        let mut echar = 0;
        if let Some(r) = rest.strip_prefix(b".") {
            let Some((c, r)) = count(r) else {
                return Err(ArgError::die(format!(
                    "invalid number after '.': invalid count at start of '{}'",
                    String::from_utf8_lossy(r)
                )));
            };
            echar = c;
            rest = r;
        }
        if !rest.iter().all(|b| ORDERING.contains(b)) {
            return Err(bad("stray character in field spec"));
        }
        let mods = std::str::from_utf8(rest).unwrap();
        // GNU keeps eword as given and ends after echar characters of the
        // field after it; with echar 0 it ends with field eword (counted
        // from 1), and field 0 behaves as field 1.
        if echar == 0 {
            key += &format!(",{}{mods}", eword.max(1));
        } else {
            key += &format!(",{}.{echar}{mods}", eword.saturating_add(1));
        }
    }
    Ok(Some(key))
}

/// Applies GNU's rules for repeated options and writes the canonical list.
fn emit(opts: Vec<Opt>, operands: Vec<OsString>, env: Env) -> Result<Vec<OsString>, ArgError> {
    let mut out: Vec<OsString> = Vec::new();
    let mut flags: Vec<String> = Vec::new();
    let mut size: Option<u64> = None;
    let mut same: Vec<(&str, OsString)> = Vec::new(); // output, separator, program, random source
    let mut last: Vec<(String, OsString)> = Vec::new(); // batch-size, parallel, files0-from
    let mut check: Option<&str> = None;
    // With emsort's --header, a key may name a column (checked later).
    let header = opts.iter().any(|o| o.name == "header");
    // A sort of tables (an input or the output named .parquet, .arrow …)
    // names columns too (checked later).
    let table = |p: &OsString| emsort_table::TableKind::of_name(std::path::Path::new(p)).is_some();
    let tables = operands.iter().any(table)
        || opts.iter().any(|o| o.name == "output" && o.value.as_ref().is_some_and(table));
    let mut flag = |f: &str| {
        if !flags.iter().any(|g| g == f) {
            flags.push(f.to_string());
        }
    };
    for o in opts {
        let value = o.value.clone().unwrap_or_default();
        let text = value.to_string_lossy().into_owned();
        match o.name.as_str() {
            "sort" => flag(argmatch("sort", &text, SORT_WORDS)?),
            "check" | "C" => {
                let c = match (o.name.as_str(), &o.value) {
                    ("C", _) => "quiet",
                    (_, None) => "diagnose-first",
                    (_, Some(_)) => argmatch("check", &text, CHECK_WORDS)?,
                };
                if check.is_some_and(|k| k != c) {
                    return Err(ArgError::die("options '-cC' are incompatible".into()));
                }
                check = Some(c);
            }
            "buffer-size" => {
                let n = sort_size(&text, &o.spelled)?;
                size = Some(size.map_or(n, |s| s.max(n)));
            }
            "batch-size" => {
                let max = env.nofile.saturating_sub(3);
                let n = match xstrtoumax(&text, "") {
                    Num::Ok(n) => n,
                    Num::Overflow => u64::MAX,
                    e => return Err(xstrtol_fatal(&e, "--batch-size", &text)),
                };
                if n < 2 {
                    return Err(ArgError {
                        lines: vec![
                            format!("invalid --batch-size argument '{text}'"),
                            "minimum --batch-size argument is '2'".into(),
                        ],
                        tail: Vec::new(),
                        usage: false,
                        status: 2,
                    });
                }
                if n > max {
                    return Err(ArgError {
                        lines: vec![
                            format!("--batch-size argument '{text}' too large"),
                            format!("maximum --batch-size argument with current rlimit is {max}"),
                        ],
                        tail: Vec::new(),
                        usage: false,
                        status: 2,
                    });
                }
                last.retain(|(n, _)| n != "batch-size");
                last.push(("batch-size".into(), n.to_string().into()));
            }
            "parallel" => {
                let n = match xstrtoumax(&text, "") {
                    Num::Ok(n) => n,
                    Num::Overflow => u64::MAX,
                    e => return Err(xstrtol_fatal(&e, "--parallel", &text)),
                };
                if n == 0 {
                    return Err(ArgError::die("number in parallel must be nonzero".into()));
                }
                last.retain(|(n, _)| n != "parallel");
                last.push(("parallel".into(), n.min(usize::MAX as u64).to_string().into()));
            }
            "field-separator" => {
                let b = value.as_bytes();
                let tab: OsString = match b {
                    [] => return Err(ArgError::die("empty tab".into())),
                    [_] => value.clone(),
                    b"\\0" => OsString::from_vec(vec![0]),
                    _ => return Err(ArgError::die(format!("multi-character tab '{text}'"))),
                };
                if let Some((_, t)) = same.iter().find(|(n, _)| *n == "field-separator") {
                    if *t != tab {
                        return Err(ArgError::die("incompatible tabs".into()));
                    }
                } else {
                    same.push(("field-separator", tab));
                }
            }
            name @ ("output" | "compress-program" | "random-source") => {
                let what = match name {
                    "output" => "output files",
                    "compress-program" => "compress programs",
                    _ => "random sources",
                };
                let key: &'static str = match name {
                    "output" => "output",
                    "compress-program" => "compress-program",
                    _ => "random-source",
                };
                if let Some((_, v)) = same.iter().find(|(n, _)| *n == key) {
                    if *v != value {
                        return Err(ArgError::die(format!("multiple {what} specified")));
                    }
                } else {
                    same.push((key, value));
                }
            }
            "key" => {
                // GNU parses each key as it reads it: an error in order.
                // (A JSON path, `--jsonl`'s, and a column's name, with
                // `--header`, are parsed with the options.)
                let named = (header || tables) && !text.starts_with(|c: char| c.is_ascii_digit());
                if !emsort_sort::keys::JsonKey::is_path(&text) && !named {
                    emsort_sort::keys::Key::parse(&text).map_err(ArgError::die)?;
                }
                let mut s = OsString::from("--key=");
                s.push(&value);
                out.push(s);
            }
            "files0-from" => {
                last.retain(|(n, _)| n != "files0-from");
                last.push(("files0-from".into(), value));
            }
            _ => match o.value {
                // Options that accumulate (-k, -T) or emsort's own: as given.
                Some(v) => {
                    let mut s = OsString::from(format!("--{}=", o.name));
                    s.push(v);
                    out.push(s);
                }
                None => flag(&o.name),
            },
        }
    }
    let long = |name: &str, v: &OsStr| {
        let mut s = OsString::from(format!("--{name}="));
        s.push(v);
        s
    };
    for f in flags {
        out.push(if f.len() == 1 { format!("-{f}") } else { format!("--{f}") }.into());
    }
    if let Some(c) = check {
        out.push(format!("--check={c}").into());
    }
    if let Some(n) = size {
        out.push(format!("--buffer-size={n}b").into());
    }
    for (name, v) in same.iter() {
        if *name == "field-separator" && v.as_bytes() == [0] {
            out.push("--field-separator=\\0".into());
        } else {
            out.push(long(name, v));
        }
    }
    for (name, v) in &last {
        out.push(long(name, v));
    }
    out.push("--".into());
    out.extend(operands);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn cmd() -> clap::Command {
        crate::Cli::command().find_subcommand("sort").unwrap().clone()
    }

    fn run(args: &[&str], env: Env) -> Result<Vec<String>, ArgError> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        canonical(&args, &cmd(), env).map(|v| v.args.into_iter().map(|s| s.into_string().unwrap()).collect())
    }

    fn env() -> Env {
        Env { posixly_correct: false, posix2_version: 200809, nofile: 1024 }
    }

    #[test]
    fn long_options_by_prefix_gnu_first() {
        assert_eq!(run(&["--p=1", "f"], env()).unwrap(), ["--parallel=1", "--", "f"]);
        assert_eq!(run(&["--rev", "--num"], env()).unwrap(), ["--reverse", "--numeric-sort", "--"]);
        let e = run(&["--s"], env()).unwrap_err();
        assert_eq!(e.lines, ["option '--s' is ambiguous; possibilities: '--sort' '--stable'"]);
        assert_eq!(run(&["--nope"], env()).unwrap_err().lines, ["unrecognized option '--nope'"]);
        assert_eq!(
            run(&["--debug=1"], env()).unwrap_err().lines,
            ["option '--debug' doesn't allow an argument"]
        );
        assert_eq!(run(&["--key"], env()).unwrap_err().lines, ["option '--key' requires an argument"]);
        // emsort's own, by prefix when GNU has none.
        assert_eq!(run(&["--show-p"], env()).unwrap(), ["--show-plan", "--"]);
    }

    #[test]
    fn short_clusters_and_values() {
        assert_eq!(
            run(&["-nrk2,2", "-t", ":"], env()).unwrap(),
            ["--key=2,2", "--numeric-sort", "--reverse", "--field-separator=:", "--"]
        );
        assert_eq!(run(&["-x"], env()).unwrap_err().lines, ["invalid option -- 'x'"]);
        assert_eq!(run(&["-k"], env()).unwrap_err().lines, ["option requires an argument -- 'k'"]);
        assert_eq!(run(&["-y", "12", "f"], env()).unwrap(), ["--", "f"]);
        assert_eq!(run(&["-y", "f"], env()).unwrap(), ["--", "f"]);
        assert_eq!(run(&["-cC"], env()).unwrap_err().lines, ["options '-cC' are incompatible"]);
        assert_eq!(run(&["-C", "--check=q"], env()).unwrap(), ["--check=quiet", "--"]);
    }

    #[test]
    fn repeated_options_as_gnu() {
        assert_eq!(run(&["-n", "-n", "-u", "-u"], env()).unwrap(), ["--numeric-sort", "--unique", "--"]);
        assert_eq!(run(&["-S", "10", "-S", "20"], env()).unwrap(), ["--buffer-size=20480b", "--"]);
        assert_eq!(run(&["-o", "x", "-o", "x"], env()).unwrap(), ["--output=x", "--"]);
        assert_eq!(
            run(&["-o", "x", "-o", "y"], env()).unwrap_err().lines,
            ["multiple output files specified"]
        );
        assert_eq!(run(&["-t", "a", "-t", "b"], env()).unwrap_err().lines, ["incompatible tabs"]);
        assert_eq!(run(&["-t", "ab"], env()).unwrap_err().lines, ["multi-character tab 'ab'"]);
        assert_eq!(run(&["--sort=mon"], env()).unwrap(), ["--month-sort", "--"]);
        let e = run(&["--sort=x"], env()).unwrap_err();
        assert_eq!(e.lines, ["invalid argument 'x' for '--sort'"]);
        assert_eq!(e.tail[1], "  - 'general-numeric'");
        let e = run(&["--check=x"], env()).unwrap_err();
        assert_eq!(e.tail, ["Valid arguments are:", "  - 'quiet', 'silent'", "  - 'diagnose-first'"]);
    }

    #[test]
    fn sizes_as_gnu() {
        assert_eq!(sort_size("1", "-S"), Ok(1024));
        assert_eq!(sort_size("10b", "-S"), Ok(10));
        assert_eq!(sort_size("1k", "-S"), Ok(1024));
        assert_eq!(sort_size("0", "-S"), Ok(0));
        assert!(sort_size("200%", "-S").unwrap() > sort_size("100%", "-S").unwrap());
        assert_eq!(sort_size("1x", "-S").unwrap_err().lines, ["invalid suffix in -S argument '1x'"]);
        assert_eq!(sort_size("x", "-S").unwrap_err().lines, ["invalid -S argument 'x'"]);
        assert_eq!(
            sort_size("99999999999999999999", "--buffer-size").unwrap_err().lines,
            ["--buffer-size argument '99999999999999999999' too large"]
        );
        let e = run(&["--batch-size=1"], env()).unwrap_err();
        assert_eq!(e.lines, ["invalid --batch-size argument '1'", "minimum --batch-size argument is '2'"]);
        let e = run(&["--batch-size=2000"], env()).unwrap_err();
        assert_eq!(e.lines[1], "maximum --batch-size argument with current rlimit is 1021");
    }

    #[test]
    fn obsolete_keys_as_gnu_converts_them() {
        // +POS1 -POS2: a key wherever it stands among -k keys.
        assert_eq!(run(&["-k3", "+1", "-2", "f"], env()).unwrap(), ["--key=3", "--key=2.1,2", "--", "f"]);
        assert_eq!(run(&["+1.2n", "-3.4b"], env()).unwrap(), ["--key=2.3n,4.4b", "--"]);
        assert_eq!(run(&["+0", "-0"], env()).unwrap(), ["--key=1.1,1", "--"]);
        // +POS1 alone is a key too, but under POSIX 2001 (_POSIX2_VERSION
        // 200112 … 200808), where it is a file.
        assert_eq!(run(&["+1"], env()).unwrap(), ["--key=2.1", "--"]);
        let posix2001 = Env { posix2_version: 200112, ..env() };
        assert_eq!(run(&["+1"], posix2001).unwrap(), ["--", "+1"]);
        let old = Env { posix2_version: 199209, ..env() };
        // Not a valid POS1: a file.
        assert_eq!(run(&["+x", "-2"], old).unwrap_err().lines, ["invalid option -- '2'"]);
        assert_eq!(
            run(&["+1", "-2x"], env()).unwrap_err().lines,
            ["stray character in field spec: invalid field specification '-2x'"]
        );
        // Under POSIXLY_CORRECT, options end at the first operand.
        let posix = Env { posixly_correct: true, ..env() };
        assert_eq!(run(&["f", "-n"], posix).unwrap(), ["--", "f", "-n"]);
        // Errors in the order GNU reads the options.
        assert_eq!(
            run(&["--batch-size=1", "--nope"], env()).unwrap_err().lines[0],
            "invalid --batch-size argument '1'"
        );
        assert_eq!(run(&["--check=x", "+1", "-2x"], env()).unwrap_err().status, 1);
        assert_eq!(run(&["--sort="], env()).unwrap_err().lines, ["ambiguous argument '' for '--sort'"]);
        assert_eq!(run(&["f", "-n"], env()).unwrap(), ["--numeric-sort", "--", "f"]);
    }
}
