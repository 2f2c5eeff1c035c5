//! `emsort sort --jsonl` against an oracle: events from `emsort gen
//! --format jsonl` with hand-made lines mixed in (arrays, nested objects,
//! `-0`, exponents, escaped keys and NULs, CRLF ends), sorted with budgets
//! that force runs and merges (`-S 32K`, 4 KiB blocks), plain and SRM, by
//! several key sets; the expected bytes are the same lines ordered in
//! Python by a comparison written from jq's `jv_cmp` (and, where `jq` is
//! installed, checked against `jq -s 'sort_by(…)'` for the stable cases
//! jq can express). Also `-m` of two sorted halves, `-c`, and invalid
//! JSON naming the file and line with nothing written.

use std::process::Command;

use crate::{emsort, p, run, stderr};

/// Reads the lines of the file `argv[1]`, and for each case (a JSON object
/// per line on standard input: `keys` [[path, mods]], `flags`, `jq`)
/// writes `argv[1].expected.N`; the first case also writes two sorted
/// halves (`.a`, `.b`) and their merge (`.merged`).
const ORACLE: &str = r#"
import functools, json, re, shutil, subprocess, sys
path = sys.argv[1]
raw = open(path, "rb").read().split(b"\n")
assert raw[-1] == b""
raw = raw[:-1]
vals = [json.loads(l) for l in raw]
def cls(v):
    if v is None: return 0
    if v is False: return 1
    if v is True: return 2
    if isinstance(v, (int, float)): return 3
    if isinstance(v, str): return 4
    if isinstance(v, list): return 5
    return 6
def sign(x): return (x > 0) - (x < 0)
def jq_cmp(a, b):
    ca, cb = cls(a), cls(b)
    if ca != cb: return sign(ca - cb)
    if ca == 3: return sign(float(a) - float(b)) if float(a) != float(b) else 0
    if ca == 4:
        x, y = a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
        return (x > y) - (x < y)
    if ca == 5:
        for x, y in zip(a, b):
            r = jq_cmp(x, y)
            if r: return r
        return sign(len(a) - len(b))
    if ca == 6:
        ka, kb = sorted(a, key=lambda k: k.encode()), sorted(b, key=lambda k: k.encode())
        r = jq_cmp(ka, kb)
        if r: return r
        for k in ka:
            r = jq_cmp(a[k], b[k])
            if r: return r
    return 0
NUM = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")
def at(v, steps):
    for s in steps:
        if isinstance(s, str) and isinstance(v, dict): v = v.get(s)
        elif isinstance(s, int) and isinstance(v, list) and -len(v) <= s < len(v): v = v[s]
        else: return None
    return v
def numeric(v):
    if isinstance(v, (int, float)) and not isinstance(v, bool): return [1, float(v)]
    if isinstance(v, str) and NUM.match(v.strip(" \t\n\r\f\v")): return [1, float(v.strip(" \t\n\r\f\v"))]
    return [0, 0]
cases = [json.loads(l) for l in sys.stdin.read().splitlines()]
for n, case in enumerate(cases):
    flags = case["flags"]
    rev = "r" in flags
    def key_cmp(i, j):
        for steps, mods in case["keys"]:
            a, b = at(vals[i], steps), at(vals[j], steps)
            r = jq_cmp(numeric(a), numeric(b)) if "n" in mods else jq_cmp(a, b)
            if ("r" in mods) != rev: r = -r
            if r: return r
        return 0
    def full_cmp(i, j):
        r = key_cmp(i, j)
        if r or "s" in flags or "u" in flags: return r
        r = (raw[i] > raw[j]) - (raw[i] < raw[j])
        return -r if rev else r
    order = sorted(range(len(raw)), key=functools.cmp_to_key(full_cmp))
    if "u" in flags:
        order = [x for k, x in enumerate(order) if k == 0 or key_cmp(order[k - 1], x) != 0]
    open("%s.expected.%d" % (path, n), "wb").write(b"".join(raw[i] + b"\n" for i in order))
    if case.get("jq") and shutil.which("jq"):
        f = "to_entries | sort_by(.value | %s) | map(.key)" % case["jq"]
        got = json.loads(subprocess.run(["jq", "-s", "-c", f, path], capture_output=True, check=True).stdout)
        assert got == order, "the oracle differs from jq on case %d" % n
        print("jq agrees on case", n, file=sys.stderr)
    if n == 0:
        halves = [sorted(range(h, len(raw), 2), key=functools.cmp_to_key(key_cmp)) for h in (0, 1)]
        for h, name in zip(halves, "ab"):
            open("%s.%s" % (path, name), "wb").write(b"".join(raw[i] + b"\n" for i in h))
        merged = sorted(halves[0] + halves[1], key=functools.cmp_to_key(key_cmp))
        open("%s.merged" % path, "wb").write(b"".join(raw[i] + b"\n" for i in merged))
"#;

/// Lines mixed into the generated events: every kind of value, keys with
/// escapes, NUL in strings, exponents, `-0`, CRLF ends, repeated keys.
const EXTRA: &[&str] = &[
    "null",
    "true",
    "false",
    "-0",
    "[1,[2,{\"a\":null}],\"x\"]",
    "[]",
    "{}",
    "\"just a string\"",
    "{\"ts\":-0.0,\"user\":{\"id\":0,\"name\":\"\"}}",
    "{\"ts\":1.7e12,\"user\":{\"name\":\"a\\u0000b\",\"id\":3}}",
    "{\"ts\":\"1.7E12\",\"user\":{\"name\":\"a\",\"id\":3}}",
    "{\"ts\":\" 17 \",\"user\":\"not an object\",\"tags\":{\"0\":1}}",
    "{\"ts\":1700000000000,\"ts\":5,\"user\":{\"id\":[1,2]}}\r",
    "  {\"t\\u0073\":3, \"user\" : {\"name\":\"\\ud83d\\ude00\"} }  \r",
    "{\"tags\":[[\"a\"],[\"a\",null],[]],\"amount\":1e-7}",
    "{\"user\":{\"id\":2,\"name\":\"z\"},\"user\":{\"name\":\"y\"},\"event\":\"buy\"}",
    "{\"ts\":123456789012345678901234567890,\"event\":null}",
];

/// (sort arguments, the oracle's case, whether SRM runs it too).
const CASES: &[(&[&str], &str, bool)] = &[
    (&["-k", ".ts:n", "-s"], r#"{"keys":[[["ts"],"n"]],"flags":"s"}"#, true),
    (
        &["-k", ".user.name", "-k", ".ts:nr", "-s"],
        r#"{"keys":[[["user","name"],""],[["ts"],"nr"]],"flags":"s"}"#,
        false,
    ),
    (
        &["-k", ".missing", "-s"],
        r#"{"keys":[[["missing"],""]],"flags":"s","jq":"try .missing catch null"}"#,
        false,
    ),
    (&["-u", "-k", ".user.id"], r#"{"keys":[[["user","id"],""]],"flags":"u"}"#, false),
    (&["-s"], r#"{"keys":[[[],""]],"flags":"s","jq":"."}"#, true),
    (&[], r#"{"keys":[[[],""]],"flags":""}"#, false),
    (&["-r", "-k", ".amount:n"], r#"{"keys":[[["amount"],"n"]],"flags":"r"}"#, false),
    (
        &["-k", ".tags[0]", "-k", ".\"user\"[\"name\"]", "-k", ".tags[-1]:r"],
        r#"{"keys":[[["tags",0],""],[["user","name"],""],[["tags",-1],"r"]],"flags":""}"#,
        false,
    ),
    (
        &["-s", "-k", ".user.name", "-k", ".event"],
        r#"{"keys":[[["user","name"],""],[["event"],""]],"flags":"s","jq":"[(try .user.name catch null), (try .event catch null)]"}"#,
        false,
    ),
];

#[test]
fn json_lines_sort_as_jq_orders_them() {
    let d = tempfile::tempdir().unwrap();
    let disks: Vec<String> = ["a", "b"]
        .iter()
        .map(|n| {
            let x = d.path().join(n);
            std::fs::create_dir(&x).unwrap();
            p(&x).to_string()
        })
        .collect();
    let disks = disks.join(",");
    let input = d.path().join("events.jsonl");
    let o = run(&["gen", "-q", "--format", "jsonl", "--count", "2500", "--seed", "5", "-o", p(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The extra lines spread through the generated ones.
    let generated = std::fs::read_to_string(&input).unwrap();
    let mut lines: Vec<&str> = generated.lines().collect();
    for (i, x) in EXTRA.iter().enumerate() {
        lines.insert(i * 131 % lines.len(), x);
        lines.insert((i * 977 + 50) % lines.len(), x);
    }
    std::fs::write(&input, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();

    let mut py = Command::new("python3")
        .args(["-c", ORACLE, p(&input)])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the oracle");
    use std::io::Write;
    let cases: Vec<&str> = CASES.iter().map(|c| c.1).collect();
    py.stdin.take().unwrap().write_all(cases.join("\n").as_bytes()).unwrap();
    assert!(py.wait().unwrap().success(), "the oracle failed");

    for (n, (order, _, srm)) in CASES.iter().enumerate() {
        let expected = std::fs::read(format!("{}.expected.{n}", p(&input))).unwrap();
        // Runs compressed in frames (issue 43) give the same order.
        let methods: &[&[&str]] = if *srm {
            &[&[], &["--method", "srm", "--disks", &disks], &["--compress=zstd"]]
        } else {
            &[&[], &["--compress=lz4"]]
        };
        for method in methods {
            let out = d.path().join("out");
            let memory = if method.is_empty() { "32K" } else { "96K" };
            let mut args = vec!["sort", "-q", "--jsonl", "-S", memory, "--block-size", "4K", "-o", p(&out)];
            args.extend(*order);
            args.extend(*method);
            args.push(p(&input));
            let o = run(&args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            let got = std::fs::read(&out).unwrap();
            if got != expected {
                let first =
                    got.split(|&b| b == b'\n').zip(expected.split(|&b| b == b'\n')).position(|(a, b)| a != b);
                panic!("{args:?}: not in jq's order; first difference at output line {first:?}");
            }
            let c = run(&[&["sort", "--jsonl", "-c"][..], order, &[p(&out)]].concat());
            assert!(c.status.success(), "-c {order:?}: {}", stderr(&c));
        }
    }
    // -m of two sorted halves (ties: the first file's first).
    let halves = [format!("{}.a", p(&input)), format!("{}.b", p(&input))];
    let mut args = vec!["sort", "-q", "--jsonl", "-m", "-s", "-k", ".ts:n", "--block-size", "4K"];
    args.extend(halves.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout == std::fs::read(format!("{}.merged", p(&input))).unwrap(), "{args:?}");
}

#[test]
fn invalid_json_is_an_error_naming_the_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    for (bad_line, why) in
        [("{\"ts\":1,}", "invalid JSON"), ("", "a blank line"), ("{\"a\":\"\\q\"}", "invalid JSON")]
    {
        let bad = d.path().join("events.jsonl");
        let mut text: String = (0..40).map(|i| format!("{{\"ts\":{i}}}\n")).collect();
        let at = text.match_indices('\n').nth(15).unwrap().0 + 1;
        text.insert_str(at, &format!("{bad_line}\n"));
        std::fs::write(&bad, &text).unwrap();
        for extra in [&[][..], &["-m"], &["-c"], &["-S", "32K", "--block-size", "4K"]] {
            let mut args = vec!["sort", "-q", "--jsonl", "-k", ".ts:n"];
            args.extend(extra);
            args.push(p(&bad));
            if extra != ["-c"] {
                args.extend(["-o", p(&out)]);
            }
            let o = run(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            let e = stderr(&o);
            let line17 =
                e.contains("events.jsonl:17: ") || (e.contains("events.jsonl") && e.contains("line 17:"));
            assert!(line17 && e.contains(why), "{args:?}: {e}");
            assert!(!out.exists(), "nothing written: {args:?}");
        }
        // From standard input, and a stream given to -m.
        for extra in [&[][..], &["-m"]] {
            let o = emsort()
                .args([&["sort", "-q", "--jsonl"][..], extra, &["-"]].concat())
                .stdin(std::fs::File::open(&bad).unwrap())
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2));
            assert!(stderr(&o).contains(":17: invalid JSON"), "{}", stderr(&o));
            assert!(o.stdout.is_empty());
        }
    }
}

#[test]
fn keys_and_options_that_do_not_go_with_jsonl_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("x.jsonl");
    std::fs::write(&f, "{\"a\":1}\n").unwrap();
    for (args, says) in [
        (&["--jsonl", "-k2,2"][..], "not GNU field keys"),
        (&["-k", ".a"], "add --jsonl"),
        (&["--jsonl", "-t,"], "not with -t"),
        (&["--jsonl", "--csv"], "not with -t, --csv"),
        (&["--jsonl", "-z"], "not with -z"),
        (&["--jsonl", "--format", "u32"], "not with -z, --debug or --format"),
        (&["--jsonl", "-n"], "only -r applies"),
        (&["--jsonl", "-k", ".a:x"], "unknown modifier 'x'"),
        (&["--jsonl", "-k", ".a b"], "invalid JSON path key '.a b'"),
    ] {
        let o = run(&[&["sort", "-q"][..], args, &[p(&f)]].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}
