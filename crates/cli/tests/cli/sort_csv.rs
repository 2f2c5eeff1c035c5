//! `emsort sort --csv`/`--tsv` against Python's `csv` module: records with
//! quoted separators, quotes, CRs and newlines, written by `csv.writer`,
//! sorted by keys on their unquoted fields with budgets that force runs,
//! merges and records straddling blocks, through every merge method and
//! `-m`; the expected bytes are the same rows sorted in Python and written
//! by the same writer (records come out as they came in).

use std::process::Command;

use crate::{p, run, stderr};

/// Writes `rows` random rows (seed `seed`) with `csv.writer` (separator
/// `sep`, records ended by `eol`) to `input`; then, for each case
/// `KEY|FLAGS` on standard input, writes `expected.N`: the rows as GNU
/// `sort --csv -kKEY FLAGS` must order them.
const ORACLE: &str = r#"
import csv, io, random, re, sys
seed, nrows, sep, eol, input = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
r = random.Random(seed)
def text():
    s = "".join(r.choice(['a', 'b', 'B', ' ', ',', '"', '\n', '\r', '\t', 'é', 'z']) for _ in range(r.randint(0, 6)))
    # csv.writer leaves a CR unquoted when records end with LF alone; readers take it for a record's end.
    return s + "\n" if "\r" in s else s
def number():
    return r.choice([str(r.randint(-30, 30)), "%d.%d" % (r.randint(-9, 9), r.randint(0, 99)), " 7", "x", ""])
rows = [[number(), text(), number(), text()][: r.randint(1, 4)] for _ in range(nrows)]
def raw(row):
    b = io.StringIO()
    csv.writer(b, delimiter=sep, lineterminator=eol).writerow(row)
    return b.getvalue().encode()
open(input, "wb").write(b"".join(raw(x) for x in rows))
def num(s):
    m = re.match(r"[ \t]*(-?[0-9]*(?:\.[0-9]*)?)", s).group(1)
    return float(m) if re.search("[0-9]", m) else 0.0
def field(row, i):
    return row[i] if i < len(row) else ""
for n, case in enumerate(sys.stdin.read().split()):
    keys, flags = case.split("|")
    def key(row):
        k = []
        for spec in filter(None, keys.split(";")):
            i, kind = int(spec[0]) - 1, spec[1:]
            v = num(field(row, i)) if "n" in kind else field(row, i).encode()
            k.append(-v if kind == "nr" else v)
        return k
    stable = "s" in flags or "u" in flags
    out = sorted(rows, key=lambda x: key(x) if stable else (key(x), raw(x)[: -1]))
    if "u" in flags:
        out = [x for i, x in enumerate(out) if i == 0 or key(out[i - 1]) != key(x)]
    open("%s.expected.%d" % (input, n), "wb").write(b"".join(raw(x) for x in out))
    if n == 0:
        # Two sorted halves for -m, and their merge (ties: the first file's first).
        halves = [sorted(rows[h::2], key=key) for h in (0, 1)]
        for h, name in zip(halves, "ab"):
            open("%s.%s" % (input, name), "wb").write(b"".join(raw(x) for x in h))
        merged = sorted(halves[0] + halves[1], key=key)
        open("%s.merged" % input, "wb").write(b"".join(raw(x) for x in merged))
"#;

/// (keys as `-k` specs, oracle keys `FIELD[n|nr]` joined by `;`, flags).
const CASES: [(&[&str], &str, &str); 6] = [
    (&["-k3,3n"], "3n", "s"),
    (&["-k2,2"], "2", ""),
    (&["-k1,1n", "-k2,2"], "1n;2", "s"),
    (&["-k3,3nr", "-k4,4"], "3nr;4", "s"),
    (&["-k1,1n"], "1n", "u"),
    (&[], "", ""),
];

#[test]
fn csv_records_sort_as_pythons_csv_reads_them() {
    let d = tempfile::tempdir().unwrap();
    let disks: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let x = d.path().join(n);
            std::fs::create_dir(&x).unwrap();
            p(&x).to_string()
        })
        .collect();
    let disks = disks.join(",");
    for (seed, sep, eol) in [(1, ",", "\n"), (2, ",", "\r\n"), (3, "\t", "\n")] {
        let input = d.path().join(format!("in{seed}"));
        let cases: Vec<String> = CASES
            .iter()
            .map(|(_, keys, flags)| format!("{}|{flags}", if keys.is_empty() { "" } else { keys }))
            .collect();
        let mut py = Command::new("python3")
            .args(["-c", ORACLE, &seed.to_string(), "3000", sep, eol, p(&input)])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the oracle");
        use std::io::Write;
        py.stdin.take().unwrap().write_all(cases.join(" ").as_bytes()).unwrap();
        assert!(py.wait().unwrap().success(), "the oracle failed");
        let sep_args: &[&str] = if sep == "\t" { &["--tsv"] } else { &["--csv"] };
        for (n, (keys, _, flags)) in CASES.iter().enumerate() {
            let expected = std::fs::read(format!("{}.expected.{n}", p(&input))).unwrap();
            let mut order: Vec<&str> = sep_args.to_vec();
            order.extend(*keys);
            order.extend(flags.chars().map(|f| if f == 's' { "-s" } else { "-u" }));
            // Runs compressed in frames (issue 43) give the same order.
            let methods: &[&[&str]] = if n < 2 {
                &[
                    &[],
                    &["--method", "srm", "--disks", &disks],
                    &["--method", "dsm", "--disks", &disks],
                    &["--compress=zstd:3"],
                ]
            } else {
                &[&[], &["--compress=lz4"]]
            };
            for method in methods {
                let out = d.path().join("out");
                let memory = if method.is_empty() { "32K" } else { "96K" };
                let mut args = vec!["sort", "-q", "-S", memory, "--block-size", "4K", "-o", p(&out)];
                args.extend(&order);
                args.extend(*method);
                args.push(p(&input));
                let o = run(&args);
                assert!(o.status.success(), "{args:?}: {}", stderr(&o));
                assert!(std::fs::read(&out).unwrap() == expected, "{args:?}: not as Python sorts the rows");
                // -c agrees that the output is in order.
                let c = run(&[&["sort", "-c"][..], &order, &[p(&out)]].concat());
                assert!(c.status.success(), "-c {order:?}: {}", stderr(&c));
            }
        }
        // -m of two sorted halves, read in blocks of 4 KiB.
        let halves = [format!("{}.a", p(&input)), format!("{}.b", p(&input))];
        let mut args = vec!["sort", "-m", "-s", "-k3,3n", "--block-size", "4K"];
        args.extend(sep_args);
        args.extend(halves.iter().map(String::as_str));
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(o.stdout == std::fs::read(format!("{}.merged", p(&input))).unwrap(), "{args:?}");
    }
}

#[test]
fn an_unclosed_quote_is_an_error_naming_the_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.csv");
    // Record 2 spans lines 2 and 3; record 4's quote, on line 5, never closes.
    std::fs::write(&bad, "a,1\nb,\"2\nc\"\"d\"\nc\ne,\"open\nf,5\n").unwrap();
    let out = d.path().join("out");
    for extra in [&[][..], &["-m"], &["-c"]] {
        let mut args = vec!["sort", "--csv"];
        args.extend(extra);
        args.push(p(&bad));
        if extra.is_empty() {
            args.extend(["-o", p(&out)]);
        }
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        let line5 = e.contains("bad.csv:5:") || e.contains("line 5:");
        assert!(e.contains("bad.csv") && line5 && e.contains("no closing quote"), "{args:?}: {e}");
    }
    assert!(!out.exists(), "nothing written");
}

/// Writes `input` (a header naming the columns `id`, `name, first`,
/// `amount`, `note`, then `rows` random rows of four fields, written by
/// `csv.writer`), its rows in two halves `input.a` and `input.b` sorted by
/// amount (each with the header), and the expected outputs: `input.amount`
/// (the header, then the rows by amount, stably), `input.name` (by the
/// second column), `input.merged` (the halves merged by amount).
const HEADER_ORACLE: &str = r#"
import csv, io, random, re, sys
seed, nrows, input = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
r = random.Random(seed)
def text():
    s = "".join(r.choice(['a', 'b', 'B', ' ', ',', '"', '\n', 'é', 'z']) for _ in range(r.randint(0, 6)))
    return s
def number():
    return r.choice([str(r.randint(-30, 30)), "%d.%d" % (r.randint(-9, 9), r.randint(0, 99)), "x", ""])
header = ["id", "name, first", "amount", "note"]
rows = [[str(i), text(), number(), text()] for i in range(nrows)]
def raw(rows):
    b = io.StringIO()
    csv.writer(b, lineterminator="\n").writerows(rows)
    return b.getvalue().encode()
def num(s):
    m = re.match(r"[ \t]*(-?[0-9]*(?:\.[0-9]*)?)", s).group(1)
    return float(m) if re.search("[0-9]", m) else 0.0
amount = lambda x: num(x[2])
open(input, "wb").write(raw([header] + rows))
open(input + ".amount", "wb").write(raw([header] + sorted(rows, key=amount)))
open(input + ".name", "wb").write(raw([header] + sorted(rows, key=lambda x: x[1].encode())))
halves = [sorted(rows[h::2], key=amount) for h in (0, 1)]
for h, name in zip(halves, "ab"):
    open(input + "." + name, "wb").write(raw([header] + h))
open(input + ".merged", "wb").write(raw([header] + sorted(halves[0] + halves[1], key=amount)))
"#;

#[test]
fn a_header_stays_first_and_keys_name_its_columns() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.csv");
    let i = p(&input);
    let py = Command::new("python3").args(["-c", HEADER_ORACLE, "7", "3000", i]).status();
    assert!(py.expect("python3 runs the oracle").success());
    let expected = |ext: &str| std::fs::read(format!("{i}.{ext}")).unwrap();
    let out = d.path().join("out");
    let o = p(&out);
    let small = ["sort", "-q", "-S", "32K", "--block-size", "4K", "--csv", "--header", "-s"];
    for (key, want) in
        [(&["-k", "amount:n"][..], "amount"), (&["-k", "name, first"], "name"), (&["-k3,3n"], "amount")]
    {
        let args = [&small[..], key, &["--fields", "-o", o, i]].concat();
        let r = run(&args);
        assert!(r.status.success(), "{args:?}: {}", stderr(&r));
        assert!(std::fs::read(&out).unwrap() == expected(want), "{args:?}: not as Python sorts the rows");
        // -c skips the header, and finds the rows in order.
        let c = run(&[&["sort", "--csv", "--header", "-s", "-c"][..], key, &[o]].concat());
        assert!(c.status.success(), "-c {key:?}: {}", stderr(&c));
    }
    // Standard input: the header read to name the column is not lost.
    let r = crate::run_stdin(&[&small[..], &["-k", "amount:n"]].concat(), &std::fs::read(&input).unwrap());
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(r.stdout == expected("amount"), "from standard input");
    // DSM and SRM on three disks, and in place (-o the input): the same.
    let disks: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let x = d.path().join(format!("disk-{n}"));
            std::fs::create_dir(&x).unwrap();
            p(&x).to_string()
        })
        .collect();
    let disks = disks.join(",");
    for method in ["dsm", "srm"] {
        // Three disks' blocks need more than 32K.
        let pdisk = ["sort", "-q", "-S", "96K", "--block-size", "4K", "--csv", "--header", "-s"];
        let args =
            [&pdisk[..], &["--method", method, "--disks", &disks, "-k", "amount:n", "-o", o, i]].concat();
        let r = run(&args);
        assert!(r.status.success(), "{args:?}: {}", stderr(&r));
        assert!(std::fs::read(&out).unwrap() == expected("amount"), "{args:?}: not as Python sorts the rows");
    }
    let copy = d.path().join("copy.csv");
    std::fs::copy(&input, &copy).unwrap();
    let r = run(&[&small[..], &["-k", "amount:n", "-o", p(&copy), p(&copy)]].concat());
    assert!(r.status.success(), "in place: {}", stderr(&r));
    assert!(std::fs::read(&copy).unwrap() == expected("amount"), "in place");
    // Several files (-m too): one header, the others checked and dropped.
    let (a, b) = (format!("{i}.a"), format!("{i}.b"));
    for extra in [&[][..], &["-m"]] {
        let args = [&small[..], extra, &["-k", "amount:n", "-o", o, &a, &b]].concat();
        let r = run(&args);
        assert!(r.status.success(), "{args:?}: {}", stderr(&r));
        let want = if extra.is_empty() { expected("amount") } else { expected("merged") };
        let got = std::fs::read(&out).unwrap();
        if extra.is_empty() {
            // The halves' rows, sorted: the same rows as the whole, stably
            // ordered within each half only.
            assert_eq!(got.len(), want.len(), "{args:?}");
            assert!(got.starts_with(b"id,\"name, first\",amount,note\n"), "{args:?}");
        } else {
            assert!(got == want, "{args:?}: not the halves' merge");
        }
    }
    // A second input whose header differs: exit 2, its line 1, nothing written.
    std::fs::remove_file(&out).unwrap();
    let other = d.path().join("other.csv");
    std::fs::write(&other, "id,name,amount,note\n1,a,2,x\n").unwrap();
    for extra in [&[][..], &["-m"]] {
        let args = [&small[..], extra, &["-k", "amount:n", "-o", o, i, p(&other)]].concat();
        let r = run(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        assert!(stderr(&r).contains("other.csv:1: its header differs"), "{}", stderr(&r));
        assert!(!out.exists(), "nothing written");
    }
    // A key naming no column lists the columns.
    let r = run(&["sort", "--csv", "--header", "-k", "amt:n", i]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("no column 'amt'") && stderr(&r).contains("name, first"), "{}", stderr(&r));
}

#[test]
fn a_record_with_another_field_count_is_an_error_naming_its_line() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.csv");
    // Line 5 starts a record of two fields (its quoted field spans a line).
    std::fs::write(&bad, "a,b,c\n1,\"x,\ny\",3\n4,5,6\n7,\"8\n\"\n9,9,9\n").unwrap();
    let out = d.path().join("out");
    for (fields, line, why) in
        [("--fields", 5, "not 3 as the first record has"), ("--fields=2", 1, "as --fields asks")]
    {
        for extra in [&[][..], &["-m"]] {
            let args = [&["sort", "--csv", fields][..], extra, &["-o", p(&out), p(&bad)]].concat();
            let r = run(&args);
            assert_eq!(r.status.code(), Some(2), "{args:?}");
            let e = stderr(&r);
            assert!(e.contains(&format!("bad.csv:{line}:")) && e.contains(why), "{args:?}: {e}");
            assert!(!out.exists(), "nothing written");
        }
    }
    let r = run(&["sort", "--fields", p(&bad)]);
    assert_eq!(r.status.code(), Some(2), "--fields without --csv is refused");
}
