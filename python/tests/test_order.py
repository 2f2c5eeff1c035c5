"""GNU sort's ordering options of lines in the Python API (issue 40).

``emsort.sort``, ``emsort.merge_files``, ``emsort.Sorter`` and ``emsort.LineOrder`` take
``key``, ``field_separator``, ``numeric_sort``, ``unique`` … as ``emsort sort`` takes
``-k``, ``-t``, ``-n``, ``-u``; every output here is compared byte for byte with
``LC_ALL=C sort`` (GNU coreutils) given the same options. Lines are the default format.

Run after ``pip install './python[test]'``: ``pytest python/tests/test_order.py``.
"""

import random
import re
import subprocess
import typing

import pytest

import emsort

# Ordering options as keywords, and the same for GNU sort.
OPTION_SETS = [
    pytest.param(dict(key=["3,3n"], field_separator=","), ["-t,", "-k3,3n"], id="k3n"),
    pytest.param(dict(key=["2,2", "3,3nr"], field_separator=","), ["-t,", "-k2,2", "-k3,3nr"], id="k2-k3nr"),
    pytest.param(dict(unique=True), ["-u"], id="u"),
    pytest.param(dict(key="2,2", field_separator=",", unique=True), ["-t,", "-k2,2", "-u"], id="k2u"),
    pytest.param(dict(key="2,2", field_separator=",", stable=True), ["-t,", "-k2,2", "-s"], id="k2s"),
    pytest.param(dict(key="3,3n", field_separator=",", reverse=True), ["-r", "-t,", "-k3,3n"], id="rk3n"),
    pytest.param(dict(key="3,3n", field_separator=",", reverse=True, stable=True), ["-r", "-s", "-t,", "-k3,3n"],
                 id="rsk3n"),
    pytest.param(dict(numeric_sort=True, reverse=True), ["-n", "-r"], id="nr"),
    pytest.param(dict(key="2,2", field_separator=",", zero_terminated=True), ["-z", "-t,", "-k2,2"], id="z"),
    pytest.param(dict(key=["2,2f", "1,1n"], field_separator=","), ["-t,", "-k2,2f", "-k1,1n"], id="k2f-k1n"),
    pytest.param(dict(general_numeric_sort=True, key="3,3", field_separator=","), ["-g", "-t,", "-k3,3"], id="g"),
    pytest.param(dict(key="2", ignore_case=True, dictionary_order=True, ignore_leading_blanks=True),
                 ["-f", "-d", "-b", "-k2"], id="fdb-blank-fields"),
    pytest.param(dict(version_sort=True, unique=True), ["-V", "-u"], id="Vu"),
    pytest.param(dict(field_separator="\0", key="2,2n"), ["-t", "\\0", "-k2,2n"], id="t-nul"),
]

NAMES = ["ann", "bob", "Bob", "  cy", "", "dee-dee", "eve!", "é", "v1.10", "v1.9"]
AMOUNTS = ["-3", "10", "2.5", "", "-0.5", "007", "1e3", "abc", " 4", "-", "1,5"]


def csv_lines(n, seed):
    """Random CSV-like lines: repeated values (ties for the keys, whole duplicate lines),
    negative and decimal numbers, empty fields, blanks, a NUL and bytes above 127."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        amount = rng.choice(AMOUNTS) if rng.random() < 0.4 else str(rng.randint(-999, 999))
        line = f"{rng.randint(0, 50)},{rng.choice(NAMES)},{amount}"
        if rng.random() < 0.02:
            line += ",x\0y"
        out.append(line.encode())
    return out


def gnu_sort(args, data=None, paths=()):
    """``LC_ALL=C sort ARGS [PATHS…]``, the oracle."""
    r = subprocess.run(["sort", *args, *map(str, paths)], input=data, env={"LC_ALL": "C"}, capture_output=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def terminator(opts):
    return b"\0" if opts.get("zero_terminated") else b"\n"


def write_lines(path, lines, eol):
    data = eol.join(lines) + eol
    path.write_bytes(data)
    return data


@pytest.fixture
def tmp(tmp_path):
    d = tmp_path / "tmp"
    d.mkdir()
    return d


# ------------------------------------------------------- differential: sort, merge, Sorter


@pytest.mark.parametrize("opts,gnu", OPTION_SETS)
def test_sort_against_gnu_sort(tmp_path, tmp, opts, gnu):
    eol = terminator(opts)
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    data = write_lines(src, csv_lines(12_000, seed=len(gnu)), eol)
    stats = emsort.sort(src, dst, memory="64K", temp_dirs=[tmp], **opts)
    assert dst.read_bytes() == gnu_sort(gnu, data)
    assert stats["runs"] > 1, "the tiny budget should spill runs"
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("opts,gnu", OPTION_SETS)
def test_merge_files_against_gnu_sort_m(tmp_path, tmp, opts, gnu):
    eol = terminator(opts)
    lines = csv_lines(6000, seed=len(gnu) + 1)
    parts = []
    for i in range(5):
        p = tmp_path / f"part{i}"
        p.write_bytes(gnu_sort(gnu, eol.join(lines[i::5]) + eol))  # each part sorted by GNU sort
        parts.append(p)
    out = tmp_path / "merged"
    stats = emsort.merge_files(parts, out, fan_in=2, memory="1M", temp_dirs=[tmp], **opts)
    assert out.read_bytes() == gnu_sort(["-m", *gnu], paths=parts)
    assert stats["runs"] == 5 and stats["merges"] > 1
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("opts,gnu", OPTION_SETS)
def test_sorter_against_gnu_sort(tmp_path, tmp, opts, gnu):
    eol = terminator(opts)
    data = eol.join(csv_lines(8000, seed=len(gnu) + 2)) + eol
    want = gnu_sort(gnu, data)
    rng = random.Random(3)
    for write in (False, True):
        s = emsort.Sorter(memory="64K", temp_dirs=[tmp], **opts)
        pos = 0
        while pos < len(data):  # pieces cut anywhere, lines too
            n = rng.randint(1, 40_000)
            s.push(data[pos : pos + n])
            pos += n
        s.finish()
        if write:
            s.write(tmp_path / "out")
            assert (tmp_path / "out").read_bytes() == want
        else:
            assert b"".join(line + eol for block in s for line in block) == want
        assert s.stats["runs"] > 1
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("opts,gnu", OPTION_SETS)
def test_line_order_in_memory_against_gnu_sort(tmp_path, opts, gnu):
    eol = terminator(opts)
    lines = csv_lines(3000, seed=len(gnu) + 3)
    data = eol.join(lines[:-1]) + eol + lines[-1]  # the last line without its terminator
    order = emsort.LineOrder(**opts)
    got = order.sort(data)
    assert got == gnu_sort(gnu, data)
    assert order.terminator == eol and order.unique == bool(opts.get("unique"))
    # partition_points: every line before a cut comes before its boundary, none after
    got_lines = got.split(eol)[:-1]
    bounds = [b"", *(random.Random(i).choice(got_lines) for i in range(5)), b"\xff"]
    for b, cut in zip(bounds, order.partition_points(got, bounds)):
        assert cut == 0 or got[cut - 1 : cut] == eol
        head, tail = got[:cut].split(eol)[:-1], got[cut:].split(eol)[:-1]
        assert all(order.compare(x, b) < 0 for x in head)
        assert all(order.compare(x, b) >= 0 for x in tail)
    # check: sort -c (strict with unique)
    (tmp_path / "sorted").write_bytes(got)
    last = len(got) - len(got_lines[-1]) - 1 if got_lines else None
    assert order.check(tmp_path / "sorted") == {
        "ok": True, "lines": len(got_lines), "records": len(got_lines), "disorder": None,
        "first_record": (0, len(got_lines[0]) + 1) if got_lines else None,
        "last_record": (last, len(got)) if got_lines else None,
    }
    if len(set(got_lines)) > 2:
        (tmp_path / "reversed").write_bytes(eol.join(got_lines[::-1]) + eol)
        r = order.check(tmp_path / "reversed")
        assert not r["ok"] and r["disorder"]["line"] == r["lines"] >= 2


# --------------------------------------------- a CSV larger than memory, by a numeric column


def test_csv_larger_than_memory_by_numeric_column(tmp_path, tmp):
    """About 30 MB of ``id,name,amount`` lines in 4 MiB: runs on disk, merged; the output
    is ``LC_ALL=C sort -t, -k3,3n``'s, byte for byte."""
    rng = random.Random(40)
    names = [f"customer{i}" for i in range(500)] + ["", "o'neil", "Zed"]
    with open(tmp_path / "sales.csv", "w") as f:
        for i in range(0, 1_000_000, 1000):
            f.write("".join(
                f"{i + j},{rng.choice(names)},{rng.randint(-10**6, 10**6) / 100}\n" if j % 97 else f"{i + j},,\n"
                for j in range(1000)
            ))
    src = tmp_path / "sales.csv"
    assert src.stat().st_size > 20 << 20
    stats = emsort.sort(src, tmp_path / "by-amount.csv", key="3,3n", field_separator=",", memory="4M",
                        temp_dirs=[tmp])
    assert stats["runs"] > 1 and stats["input_bytes"] == src.stat().st_size
    assert (tmp_path / "by-amount.csv").read_bytes() == gnu_sort(["-t,", "-k3,3n"], paths=[src])
    assert list(tmp.iterdir()) == []


# ----------------------------------------------------------------- lines are the default


def test_lines_are_the_default_format(tmp_path):
    """``emsort.sort('f.txt', 'o')`` sorts text as ``LC_ALL=C sort`` (it read u32 before)."""
    src = tmp_path / "f.txt"
    data = write_lines(src, csv_lines(2000, seed=9) + [b"", b"z"], b"\n")
    stats = emsort.sort(src, tmp_path / "o")
    assert (tmp_path / "o").read_bytes() == gnu_sort([], data)
    assert stats["plan"]["format"] == "lines"
    emsort.merge_files([tmp_path / "o", tmp_path / "o"], tmp_path / "m")
    assert (tmp_path / "m").read_bytes() == gnu_sort(["-m"], paths=[tmp_path / "o", tmp_path / "o"])
    s = emsort.Sorter(memory="1M")
    assert s.format == "lines"
    s.push(b"pear\napple\nfig")
    assert [x for block in s.finish() for x in block] == [b"apple", b"fig", b"pear"]


# ------------------------------------------------------------------------------ errors


def test_bad_options_raise_value_error(tmp_path):
    src, out = tmp_path / "f.txt", tmp_path / "o"
    src.write_bytes(b"b\na\n")
    cases = [
        (dict(key="0"), "field number is zero: invalid field specification '0'"),
        (dict(key=["1", "2.0"]), "character offset is zero"),
        (dict(key="1x"), "stray character in field spec"),
        (dict(field_separator="ab"), "multi-character tab 'ab'"),
        (dict(field_separator=""), "empty tab"),
        (dict(numeric_sort=True, general_numeric_sort=True), "options '-gn' are incompatible"),
        (dict(key="1,1Mn"), "options '-Mn' are incompatible"),
        (dict(random_sort=True, random_source=tmp_path / "f.txt"), "end of file"),
    ]
    for kw, message in cases:
        for call in (
            lambda: emsort.sort(src, out, **kw),
            lambda: emsort.merge_files([src], out, **kw),
            lambda: emsort.Sorter(**kw),
            lambda: emsort.LineOrder(**kw),
        ):
            with pytest.raises(ValueError, match=message.replace("(", r"\(")):
                call()
    for kw in (dict(key=3), dict(key=b"1"), dict(key=["1", 2]), dict(field_separator=44)):
        with pytest.raises(TypeError, match="key|field_separator"):
            emsort.sort(src, out, **kw)
    assert not out.exists()


def test_unknown_keywords_raise_type_error_as_python_does(tmp_path):
    """Each entry point takes the ordering options as ``**order``: a keyword that is not
    one of them is refused in Python's words, for every format."""
    src, out = tmp_path / "f.txt", tmp_path / "o"
    src.write_bytes(b"b\na\n")
    calls = [
        ("sort", lambda **kw: emsort.sort(src, out, **kw)),
        ("merge_files", lambda **kw: emsort.merge_files([src], out, **kw)),
        ("Sorter.__new__", lambda **kw: emsort.Sorter(**kw)),
    ]
    for name, call in calls:
        message = rf"^{re.escape(name)}\(\) got an unexpected keyword argument 'kye'$"
        for kw in (dict(kye="1"), dict(key="1", kye="1"), dict(format="u32", kye="1")):
            with pytest.raises(TypeError, match=message):
                call(**kw)
    with pytest.raises(TypeError, match=r"^LineOrder\.__new__\(\) got an unexpected keyword argument 'format'$"):
        emsort.LineOrder(key="1", format="lines")
    assert not out.exists()


def test_order_options_name_what_the_entry_points_take():
    """``emsort.OrderOptions`` (the type and the docs) names exactly the keywords the
    extension parses: each at its default is taken, and orders nothing (numbers too)."""
    hints = typing.get_type_hints(emsort.OrderOptions)
    assert len(hints) == 20 and "reverse" not in hints
    defaults = {name: False if t is bool else None for name, t in hints.items()}
    lo = emsort.LineOrder(**defaults)
    assert (lo.terminator, lo.unique, lo.random) == (b"\n", False, False)
    emsort.Sorter("u32", memory="1M", **defaults).close()
    for kw in (dict(unique=1), dict(numeric_sort="yes"), dict(stable=None), dict(random_source=3), dict(locale=3)):
        with pytest.raises(TypeError):
            emsort.LineOrder(**kw)


@pytest.mark.parametrize("fmt", ["u32", "f64", "rec:8:0:4"])
def test_ordering_options_refused_for_other_formats(tmp_path, fmt):
    src, out = tmp_path / "in", tmp_path / "out"
    src.write_bytes(bytes(range(16)))
    for kw, names in [
        (dict(key="1"), "key"),
        (dict(numeric_sort=True, unique=True), "numeric_sort, unique"),
        (dict(zero_terminated=True), "zero_terminated"),
        (dict(field_separator=",", stable=True), "field_separator, stable"),
    ]:
        with pytest.raises(ValueError, match=f"{names} orders? text lines .*not format {fmt}"):
            emsort.sort(src, out, format=fmt, **kw)
        with pytest.raises(ValueError, match=names):
            emsort.merge_files([src], out, format=fmt, **kw)
        with pytest.raises(ValueError, match=names):
            emsort.Sorter(fmt, **kw)
    assert not out.exists()
    emsort.sort(src, out, format=fmt, reverse=True)  # reverse orders every format
    assert emsort.verify(out, format=fmt, reverse=True)["ok"]


def test_random_sort_with_a_random_source_is_gnu_sorts(tmp_path):
    """``random_sort`` hashes keys with MD5 salted by ``random_source``'s first 16 bytes,
    as GNU sort -R --random-source does: the same shuffle, equal keys together."""
    src, salt = tmp_path / "f.txt", tmp_path / "salt"
    salt.write_bytes(bytes(range(100, 164)))
    data = write_lines(src, csv_lines(3000, seed=5), b"\n")
    emsort.sort(src, tmp_path / "o", random_sort=True, random_source=salt, key="2,2", field_separator=",")
    want = gnu_sort(["-R", f"--random-source={salt}", "-t,", "-k2,2"], data)
    assert (tmp_path / "o").read_bytes() == want
    assert emsort.LineOrder(random_sort=True, random_source=salt).random
    assert not emsort.LineOrder(key="1,1n").random


# ----------------------------------------------------------------- JSON lines (--jsonl)


def test_jsonl_by_paths_larger_than_memory(tmp_path, tmp):
    """``jsonl=True`` with ``key=[".ts:n", ".user.id:r"]``: numbers (and strings holding
    them) by value after everything else, then user ids descending, stable; in 1 MiB,
    so runs are merged. A line that is not JSON names the file and line."""
    import json

    rng = random.Random(41)
    rows = []
    for i in range(60_000):
        e = {"ts": rng.choice([rng.randint(-50, 50), rng.randint(0, 99) / 4, str(rng.randint(0, 9)), None, "x"]),
             "user": {"id": rng.randint(0, 30), "name": rng.choice(["a", "é", "\U0001F600"])}, "i": i}
        if rng.random() < 0.1:
            del e["ts"]
        rows.append(json.dumps(e, ensure_ascii=rng.random() < 0.5))
    src = tmp_path / "events.jsonl"
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")

    def num(v):
        if isinstance(v, (int, float)):
            return (1, float(v))
        if isinstance(v, str) and re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", v.strip()):
            return (1, float(v))
        return (0, 0.0)

    def key(line):
        e = json.loads(line)
        return (num(e.get("ts")), -e["user"]["id"])

    stats = emsort.sort(src, tmp_path / "out", jsonl=True, key=[".ts:n", ".user.id:r"], stable=True,
                        memory="1M", temp_dirs=[tmp])
    assert stats["runs"] > 1
    want = "".join(x + "\n" for x in sorted(rows, key=key))
    assert (tmp_path / "out").read_text(encoding="utf-8") == want
    assert list(tmp.iterdir()) == []

    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows[:4] + ['{"ts": 1,}'] + rows[4:10]) + "\n")
    with pytest.raises(emsort.EmsortError, match=r"bad\.jsonl:5: invalid JSON"):
        emsort.sort(bad, tmp_path / "never", jsonl=True, key=".ts:n")
    assert not (tmp_path / "never").exists()
    with pytest.raises(ValueError, match="add --jsonl"):
        emsort.sort(src, tmp_path / "never", key=".ts")
