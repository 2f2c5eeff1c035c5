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
            let methods: &[&[&str]] = if n < 2 {
                &[&[], &["--method", "srm", "--disks", &disks], &["--method", "dsm", "--disks", &disks]]
            } else {
                &[&[]]
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
