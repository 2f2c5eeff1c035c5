//! `emsort sort` in locales against GNU sort 9.1 in the same locale
//! (`LC_ALL=<locale> sort`, the oracle): generated lines of accented Latin
//! letters, Turkish dotted and dotless i, Swedish å ä ö, cases,
//! punctuation, blanks, digits, numbers with each locale's separators, its
//! month names, lines equal but for case or accents, NULs and invalid
//! UTF-8, sorted with GNU's options in memory, with budgets that force
//! runs and merges, through SRM, and checked by `-c`/`-C`. The locales must
//! be generated (CI runs locale-gen; see .ci/run): a missing one fails.

use std::path::Path;
use std::process::Command;

use crate::{emsort, p, setup, stderr};

/// The locales tested (C.UTF-8 is one for GNU 9.1: it collates by code
/// point, but `-R` hashes strxfrm's text and `--debug` names it).
const LOCALES: [&str; 6] =
    ["en_US.UTF-8", "de_DE.UTF-8", "sv_SE.UTF-8", "fr_FR.UTF-8", "tr_TR.UTF-8", "C.UTF-8"];

/// Words of the lines; `\u{1}`…: replaced by raw bytes (a NUL, invalid
/// UTF-8).
const WORDS: &[&str] = &[
    "apple",
    "Apple",
    "APPLE",
    "äpple",
    "Äpple",
    "apfel",
    "Zebra",
    "zebra",
    "ébène",
    "ebene",
    "Ebene",
    "élan",
    "elan",
    "cote",
    "côte",
    "coté",
    "côté",
    "ılık",
    "Ilık",
    "ilik",
    "İlik",
    "istanbul",
    "İstanbul",
    "Istanbul",
    "ıstanbul",
    "år",
    "ar",
    "är",
    "ör",
    "or",
    "Örebro",
    "Orebro",
    "straße",
    "strasse",
    "Strasse",
    "a-b",
    "ab",
    "a b",
    "a.b",
    "a_b",
    "'a",
    "-a",
    "1",
    "10",
    "2",
    "1,5",
    "1.5",
    "1.234,5",
    "1,234.5",
    "12 345",
    "-3",
    "-3,5",
    "0",
    "+4",
    "1e3",
    "0x10",
    "inf",
    "-inf",
    "Jan",
    "jan",
    "Mär",
    "mär",
    "Mar",
    "Mai",
    "May",
    "maj",
    "okt",
    "Okt",
    "Dez",
    "dec",
    "janv.",
    "févr.",
    "avril",
    "juil.",
    "août",
    "déc.",
    "Oca",
    "Şub",
    "şub",
    "Nis",
    "Ağu",
    "Eyl",
    "Eki",
    "Kas",
    "Ara",
    "1K",
    "2M",
    "3k",
    "1,5K",
    "2.5G",
    "",
    "  lead",
    "naïve",
    "naive",
    "Noël",
    "noel",
    "ﬁ",
    "fi",
    "Œuvre",
    "oeuvre",
    "ß",
    "ss",
    "Å",
    "Aa",
    "aa",
    "Ö",
    "Ø",
    "ø",
    "Ü",
    "ü",
    "u",
    "y",
    "ÿ",
    "x\u{1}y",
    "x",
    "x\u{1}",
    "\u{2}",
    "\u{3}",
    "a\u{4}",
    "a\u{5}b",
];

/// GNU option sets (each also run with a budget that forces runs).
const OPTIONS: &[&[&str]] = &[
    &[],
    &["-f"],
    &["-r"],
    &["-u"],
    &["-s", "-k2,2"],
    &["-t", ",", "-k2,2", "-k1,1"],
    &["-k2,2", "-k1,1"],
    &["-n"],
    &["-h"],
    &["-g"],
    &["-M"],
    &["-b", "-k2"],
    &["-d"],
    &["-i"],
    &["-fu"],
    &["-k2,2fr", "-k1,1"],
    &["-t", ",", "-k1,1M", "-k2,2g", "-s"],
    &["-k1,1n", "-k2,2"],
    &["-V"],
    &["-R"],
    &["-k2,2", "-u"],
];

/// The input: `n` lines of one to four words, separated by blanks or
/// commas (seeded).
fn input(n: usize) -> Vec<u8> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let words = 1 + next() % 4;
        for w in 0..words {
            if w > 0 {
                out.extend_from_slice([b" ", b" ", b"\t", b","][(next() % 4) as usize]);
            }
            for &b in WORDS[(next() % WORDS.len() as u64) as usize].as_bytes() {
                out.push(match b {
                    1 => 0,
                    2 => 0xff,
                    3 => 0xc3,
                    4 => 0xe9,
                    5 => 0x80,
                    b => b,
                });
            }
        }
        out.push(b'\n');
    }
    out
}

/// Fails, saying how to install it, when `locale` is not generated.
fn need_locales() {
    let o = Command::new("locale").arg("-a").output().expect("locale -a runs");
    let have = String::from_utf8_lossy(&o.stdout).to_lowercase();
    for l in LOCALES {
        let norm = l.to_lowercase().replace("utf-8", "utf8");
        assert!(
            have.lines().any(|h| h == norm),
            "locale {l} is not installed: uncomment it in /etc/locale.gen and run locale-gen \
             (as root; .ci/run does it)"
        );
    }
}

/// GNU sort's output (and exit status) in `locale`.
fn gnu(locale: &str, args: &[&str], file: &Path) -> std::process::Output {
    Command::new("/usr/bin/sort").env("LC_ALL", locale).args(args).arg(file).output().expect("GNU sort runs")
}

/// `cmd` with `locale` in the categories sort reads and messages in C
/// (`LC_ALL` unset).
fn categories(mut cmd: Command, locale: &str) -> Command {
    cmd.env_remove("LC_ALL").env("LANG", "C").env("LC_MESSAGES", "C");
    for c in ["LC_COLLATE", "LC_CTYPE", "LC_NUMERIC", "LC_TIME"] {
        cmd.env(c, locale);
    }
    cmd
}

#[test]
fn sorts_as_gnu_sort_in_each_locale() {
    need_locales();
    let (d, tmp) = setup();
    let data = input(2500);
    let file = d.path().join("in");
    std::fs::write(&file, &data).unwrap();
    let seed = d.path().join("seed");
    std::fs::write(&seed, [7u8; 64]).unwrap();
    let disks: Vec<String> = ["d1", "d2"]
        .iter()
        .map(|n| {
            let x = d.path().join(n);
            std::fs::create_dir(&x).unwrap();
            p(&x).to_string()
        })
        .collect();
    let disks = disks.join(",");
    let random = format!("--random-source={}", p(&seed));
    let mut failures = Vec::new();
    for locale in LOCALES {
        for (i, opts) in OPTIONS.iter().enumerate() {
            let mut opts: Vec<&str> = opts.to_vec();
            if opts == ["-R"] {
                opts.push(&random);
            }
            let want = gnu(locale, &opts, &file);
            assert!(want.status.success(), "GNU sort {opts:?} failed");
            let budgets: Vec<Vec<&str>> = vec![
                vec![],
                vec!["-S", "32K", "--block-size", "4K"],
                // Some sets through SRM on two disks too.
                if i % 5 == 0 {
                    vec!["-S", "96K", "--block-size", "4K", "--method", "srm", "--disks", &disks]
                } else {
                    vec!["--parallel", "2"]
                },
            ];
            for budget in budgets {
                let o = emsort()
                    .env("LC_ALL", locale)
                    .args(["sort", "-q", "-T", p(&tmp)])
                    .args(&budget)
                    .args(&opts)
                    .arg(&file)
                    .output()
                    .unwrap();
                if !o.status.success() || o.stdout != want.stdout {
                    failures.push(format!("LC_ALL={locale} sort {opts:?} {budget:?}: {}", stderr(&o)));
                }
            }
            // -c/-C on GNU's output (in order) and on the input (not), the
            // locale named per category so that messages stay in English
            // (GNU translates them).
            if i < 8 {
                let sorted = d.path().join("sorted");
                std::fs::write(&sorted, &want.stdout).unwrap();
                for (f, check) in [(&sorted, "-c"), (&file, "-c"), (&file, "-C")] {
                    let args: Vec<&str> = [&[check][..], &opts].concat();
                    let g = categories(Command::new("/usr/bin/sort"), locale)
                        .args(&args)
                        .arg(f)
                        .output()
                        .unwrap();
                    let o = categories(emsort(), locale).arg("sort").args(&args).arg(f).output().unwrap();
                    let strip = |e: &[u8], prog: &str| {
                        String::from_utf8_lossy(e).trim_start_matches(prog).to_string()
                    };
                    if o.status.code() != g.status.code()
                        || strip(&o.stderr, "emsort") != strip(&g.stderr, "/usr/bin/sort")
                    {
                        failures.push(format!(
                            "LC_ALL={locale} sort {args:?} {}: {:?} {} (GNU: {:?} {})",
                            f.display(),
                            o.status.code(),
                            stderr(&o),
                            g.status.code(),
                            String::from_utf8_lossy(&g.stderr)
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} cases differ from GNU sort:\n{}", failures.len(), failures.join("\n"));
}

/// Keys of at most 8 bytes (a number) in a collating locale, shared by
/// thousands of lines of each chunk (groups larger than the radix's small
/// groups), through several runs that carry their keys: the runs' keys
/// must be the keys, not the lines' first bytes the ties were sorted by
/// (the merge of such runs had found nothing in order and spun for ever).
#[test]
fn keyed_runs_of_large_tied_groups_merge_in_a_locale() {
    need_locales();
    let (d, tmp) = setup();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut data = Vec::new();
    for _ in 0..120_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let word = WORDS[(x % 40) as usize];
        data.extend_from_slice(format!("{},{word}\n", (x >> 32) % 4).as_bytes());
    }
    let file = d.path().join("in");
    std::fs::write(&file, &data).unwrap();
    for opts in [&["-t,", "-k1,1n"][..], &["-t,", "-k1,1n", "-r"], &["-t,", "-k1,1"]] {
        let want = gnu("en_US.UTF-8", opts, &file);
        let out = d.path().join("out");
        let mut child = emsort()
            .env("LC_ALL", "en_US.UTF-8")
            .args(["sort", "-q", "-S", "4M", "-T", p(&tmp), "-o", p(&out)])
            .args(opts)
            .arg(&file)
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > std::time::Duration::from_secs(120) {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("sort {opts:?} ran past 120 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(status.success(), "sort {opts:?}: {status}");
        assert!(std::fs::read(&out).unwrap() == want.stdout, "sort {opts:?} differs from GNU sort");
    }
}

/// `--debug`: the locale's line, its number warnings and the annotation,
/// as GNU prints them (stderr then stdout).
#[test]
fn debug_names_the_locale_as_gnu_does() {
    need_locales();
    let (d, _tmp) = setup();
    let file = d.path().join("in");
    std::fs::write(&file, "1.234,5 Mär\nx 1,5\n\t-3 déc.\nß 12 345\n").unwrap();
    for locale in ["en_US.UTF-8", "de_DE.UTF-8", "fr_FR.UTF-8", "C.UTF-8", "C"] {
        for opts in [&["-k1,1n"][..], &["-k2,2M"], &["-t", ",", "-k1n"], &["-t", ".", "-k1,1g"], &[]] {
            let args: Vec<&str> = [&["--debug"][..], opts].concat();
            let g =
                categories(Command::new("/usr/bin/sort"), locale).args(&args).arg(&file).output().unwrap();
            let o = categories(emsort(), locale).arg("sort").args(&args).arg(&file).output().unwrap();
            let strip = |e: &[u8], prog: &str| String::from_utf8_lossy(e).replace(prog, "");
            assert_eq!(
                (strip(&o.stderr, "emsort: "), String::from_utf8_lossy(&o.stdout)),
                (strip(&g.stderr, "/usr/bin/sort: "), String::from_utf8_lossy(&g.stdout)),
                "LC_ALL={locale} sort {args:?}"
            );
        }
    }
}
