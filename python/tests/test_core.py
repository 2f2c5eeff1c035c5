"""Tests of the emsort Python package (the extension built from crates/py).

Every test checks emsort against an oracle: numpy.sort, sorted(), bisect,
``LC_ALL=C sort``, open(path, "rb") slices. Data is small and lives in
pytest's tmp_path; the memory budgets are tiny so the sorts really spill
runs to disk and merge them.

Run after ``pip install './python[test]'``: ``pytest python/tests/test_core.py``.
"""

import bisect
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import emsort

NUMBER_DTYPES = {
    "u32": np.uint32,
    "i32": np.int32,
    "u64": np.uint64,
    "i64": np.int64,
    "f32": np.float32,
    "f64": np.float64,
}

# The keys of `emsort sort --stats` JSON (crates/sort/src/stats.rs).
STATS_KEYS = {
    "plan",
    "input_bytes",
    "output_bytes",
    "runs",
    "passes",
    "merge_levels",
    "merges",
    "merge_order",
    "run_formation",
    "merge",
    "total_seconds",
    "cpu_migrations",
    "parallel_disks",
    "bounds",
}


def random_numbers(fmt, n, seed=0):
    """n random items of a number format; floats with NaNs and infinities."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(NUMBER_DTYPES[fmt])
    if dt.kind == "f":
        a = (rng.standard_normal(n) * 1e6).astype(dt)
        a[rng.integers(0, n, n // 50)] = np.nan
        a[:3] = [np.inf, -np.inf, 0.0]
        return a
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def same_numbers(a, b):
    """Equal arrays, NaNs equal to NaNs."""
    if a.dtype.kind == "f":
        return np.array_equal(a, b, equal_nan=True)
    return np.array_equal(a, b)


def temp_dir(tmp_path):
    d = tmp_path / "tmp"
    d.mkdir(exist_ok=True)
    return d


def records(data, size):
    return [bytes(data[i : i + size]) for i in range(0, len(data), size)]


def emsort_binary():
    """The `emsort` CLI of this repository, if it was built."""
    root = Path(__file__).resolve().parents[2]
    dirs = [os.environ.get("CARGO_TARGET_DIR"), root / "target"]
    for d in filter(None, dirs):
        for profile in ("release", "debug"):
            exe = Path(d) / profile / "emsort"
            if exe.is_file():
                return exe
    return shutil.which("emsort")


# ---------------------------------------------------------------- file sort


@pytest.mark.parametrize("fmt", ["u32", "i64", "f64"])
@pytest.mark.parametrize("reverse", [False, True])
def test_sort_numbers_against_numpy(tmp_path, fmt, reverse):
    a = random_numbers(fmt, 150_000, seed=len(fmt) + reverse)
    src, dst = tmp_path / "in", tmp_path / "out"
    a.tofile(src)
    tmp = temp_dir(tmp_path)
    stats = emsort.sort(src, dst, format=fmt, memory="256K", temp_dirs=[tmp], reverse=reverse)
    want = np.sort(a)
    if reverse:
        want = want[::-1]  # NaNs first: the exact reverse of ascending
    got = np.fromfile(dst, dtype=a.dtype)
    assert same_numbers(got, want)
    assert stats["runs"] > 1 and stats["merges"] >= 1
    assert stats["input_bytes"] == stats["output_bytes"] == a.nbytes
    assert stats["plan"]["reverse"] is reverse and stats["plan"]["format"] == fmt
    assert list(tmp.iterdir()) == []
    assert same_numbers(np.fromfile(src, dtype=a.dtype), a), "input modified"


def test_sort_records_by_key(tmp_path):
    size, off, klen = 16, 4, 4
    fmt = f"rec:{size}:{off}:{klen}"
    rng = random.Random(7)
    # Few distinct keys: many ties, which the file sort may order either way.
    data = b"".join(
        bytes(rng.randrange(256) for _ in range(off)) + rng.choice([b"aaaa", b"abcd", b"\xff\x00zz", b"zzzz"]) + bytes(rng.randrange(256) for _ in range(size - off - klen))
        for _ in range(20_000)
    )
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    emsort.sort(str(src), str(dst), format=fmt, memory="128K", temp_dirs=temp_dir(tmp_path))
    got = records(dst.read_bytes(), size)
    items = records(data, size)
    key = lambda r: r[off : off + klen]
    assert [key(r) for r in got] == sorted(key(r) for r in items)
    assert sorted(got) == sorted(items)


def test_sort_lines_like_c_sort(tmp_path):
    rng = random.Random(3)
    alphabet = b"abcAB \t~\x80\xff\x01"
    lines = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))) for _ in range(20_000)]
    text = b"\n".join(lines)  # the last line lacks its newline
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_bytes(text)
    emsort.sort(src, dst, format="lines", memory="256K", temp_dirs=[temp_dir(tmp_path)])
    want = b"".join(line + b"\n" for line in sorted(lines))
    assert dst.read_bytes() == want
    if shutil.which("sort"):
        c_sort = subprocess.run(["sort", str(src)], env={**os.environ, "LC_ALL": "C"}, capture_output=True, check=True).stdout
        assert dst.read_bytes() == c_sort
    emsort.sort(src, dst, format="lines", reverse=True, temp_dirs=[temp_dir(tmp_path)])
    assert dst.read_bytes() == b"".join(line + b"\n" for line in sorted(lines, reverse=True))


@pytest.mark.parametrize("compress", ["lz4", "zstd:3", "auto", "none"])
def test_compressed_runs_sort_like_c_sort(tmp_path, compress):
    rng = random.Random(9)
    lines = [b"%d,w%d,%d" % (rng.randrange(1000), rng.randrange(40), i) for i in range(40_000)]
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_bytes(b"\n".join(lines) + b"\n")
    stats = emsort.sort(src, dst, memory="256K", temp_dirs=[temp_dir(tmp_path)], compress=compress,
                        field_separator=",", key="2,2")
    want = sorted(lines, key=lambda l: (l.split(b",")[1], l))
    assert dst.read_bytes() == b"".join(l + b"\n" for l in want)
    c = stats["compression"]
    if compress == "none":
        assert c is None
    elif compress == "auto":
        assert c["chosen"] in ("none", "lz4", "zstd:1") and c["why"]
    else:
        assert c["chosen"] == compress and 0 < c["stored_written"] < c["raw_written"]
        assert c["stored_read"] == c["stored_written"]
    assert os.listdir(temp_dir(tmp_path)) == []


def test_compress_refuses_what_it_does_not_know(tmp_path):
    src = tmp_path / "in"
    src.write_bytes(b"b\na\n")
    for bad in ["gzip", "zstd:99", "lz5"]:
        with pytest.raises(ValueError, match="zstd"):
            emsort.sort(src, tmp_path / "out", compress=bad)
    with emsort.Sorter("lines", memory="1M", compress="lz4") as s:
        s.push(b"b\na\n")
        s.finish()
        assert [x for b in s for x in b] == [b"a", b"b"]


def test_sort_in_place_and_options(tmp_path):
    a = random_numbers("u32", 50_000, seed=11)
    p = tmp_path / "data"
    a.tofile(p)
    stats = emsort.sort(p, p, format="u32", memory=1 << 20, fan_in=2, block_size="4K", parallel=1, policy="fifo", io="buffered", temp_dirs=str(temp_dir(tmp_path)))
    assert np.array_equal(np.fromfile(p, dtype=np.uint32), np.sort(a))
    assert stats["plan"]["fan_in"] == 2 and stats["plan"]["block_size"] == 4096
    assert stats["plan"]["threads"] == 1 and stats["plan"]["policy"] == "fifo"
    assert stats["merge_order"] <= 2


def test_stats_keys_match_the_cli(tmp_path):
    a = random_numbers("u32", 40_000, seed=5)
    src = tmp_path / "in"
    a.tofile(src)
    stats = emsort.sort(src, tmp_path / "out", format="u32", memory="256K", temp_dirs=[temp_dir(tmp_path)])
    assert STATS_KEYS <= set(stats)
    assert {"seconds", "bytes_read", "bytes_written"} <= set(stats["run_formation"])
    b = stats["bounds"]
    assert b["cpu_seconds"] > 0 and b["ratio"] > 0
    assert b["binds"] == ("io" if (b["io_seconds"] or 0) > b["cpu_seconds"] else "cpu")
    json.dumps(stats)  # plain JSON values
    exe = emsort_binary()
    if exe is None:
        pytest.skip("the emsort CLI is not built; checked the expected keys only")
    out = tmp_path / "stats.json"
    subprocess.run([str(exe), "sort", "-q", "--format", "u32", "-S", "256K", "-T", str(temp_dir(tmp_path)), "--stats", str(out), str(src), "-o", str(tmp_path / "out2")], check=True)
    cli = json.loads(out.read_text())
    assert set(cli) == set(stats)
    assert set(cli["plan"]) == set(stats["plan"])


# ------------------------------------------------------------- gen, verify


def test_gen_is_deterministic(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    emsort.gen(a, format="u64", count=100_000, seed=9)
    emsort.gen(b, format="u64", count=100_000, seed=9)
    emsort.gen(c, format="u64", count=100_000, seed=10)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert a.stat().st_size == 800_000
    emsort.gen(a, format="lines", bytes="64K", dist="zipf", seed=1, line_len=(3, 9))
    text = a.read_bytes()
    assert len(text) == 64 * 1024 and all(len(line) <= 9 for line in text.split(b"\n"))
    emsort.gen(a, format="rec:20:0:8", count=1000, dist="sorted")
    assert emsort.verify(a, format="rec:20:0:8")["ok"]
    with pytest.raises(ValueError, match="count"):
        emsort.gen(a, format="u32")
    with pytest.raises(ValueError, match="bytes"):
        emsort.gen(a, format="lines", count=10)
    with pytest.raises(ValueError, match="distribution"):
        emsort.gen(a, count=10, dist="normal")


def test_verify_ok_and_not(tmp_path):
    src, dst = tmp_path / "in", tmp_path / "out"
    emsort.gen(src, format="i32", count=10_000, seed=2)
    emsort.sort(src, dst, format="i32", temp_dirs=[temp_dir(tmp_path)])
    r = emsort.verify(dst, format="i32", input=src)
    assert r["ok"] and r["items"] == 10_000 and r["same_multiset"] is True and r["disorder"] is None
    assert "OK" in r["message"]
    assert emsort.verify(dst, format="i32", reverse=True)["ok"] is False
    a = np.fromfile(dst, dtype=np.int32)
    a[[100, 101]] = a[[101, 100]]
    if a[100] != a[101]:
        a.tofile(dst)
        r = emsort.verify(dst, format="i32")
        assert not r["ok"] and r["disorder"] == {"index": 101, "offset": 404}
        assert "item 101" in r["message"] and "NOT" in r["message"]
    b = np.sort(np.fromfile(src, dtype=np.int32))
    b[0] = np.iinfo(np.int32).min
    b.tofile(dst)
    r = emsort.verify(dst, format="i32", input=src)
    assert r["disorder"] is None and r["same_multiset"] is False and not r["ok"]


# ----------------------------------------------------------- numpy arrays


@pytest.mark.parametrize("fmt", list(NUMBER_DTYPES))
@pytest.mark.parametrize("reverse", [False, True])
def test_sort_array_in_place(fmt, reverse):
    a = random_numbers(fmt, 100_003, seed=1)
    want = np.sort(a)
    if reverse:
        want = want[::-1]
    emsort.sort_array(a, reverse=reverse)
    assert same_numbers(a, want)
    if a.dtype.kind == "f":
        nans = np.isnan(a)
        assert nans[-nans.sum() :].all() if not reverse else nans[: nans.sum()].all()
    b = np.array([3, 2, 1], dtype=NUMBER_DTYPES[fmt])
    emsort.sort_array(b[1:])  # a contiguous view sorts in place
    assert list(b) == [3, 1, 2]


def test_sort_array_float_total_order():
    x = np.array([np.nan, 1.0, -0.0, 0.0, -np.inf, np.inf, -1.0], dtype=np.float64)
    emsort.sort_array(x)
    assert list(x[:2]) == [-np.inf, -1.0] and list(x[4:6]) == [1.0, np.inf] and np.isnan(x[-1])
    assert np.signbit(x[2]) and not np.signbit(x[3])  # -0.0 before 0.0


def test_sort_array_rejects_other_arrays():
    with pytest.raises(TypeError, match="dtype"):
        emsort.sort_array(np.zeros(4, dtype=np.float16))
    with pytest.raises(TypeError, match="dtype"):
        emsort.sort_array(np.zeros(4, dtype=">u4"))
    with pytest.raises(TypeError):
        emsort.sort_array([3, 2, 1])
    with pytest.raises(ValueError, match="1-D"):
        emsort.sort_array(np.zeros((2, 2), dtype=np.uint32))
    with pytest.raises(ValueError, match="contiguous"):
        emsort.sort_array(np.arange(10, dtype=np.int64)[::2])
    ro = np.arange(5, dtype=np.int32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        emsort.sort_array(ro)


def test_sort_array_to_file_leaves_the_array(tmp_path):
    for fmt, dt in NUMBER_DTYPES.items():
        a = random_numbers(fmt, 10_000, seed=4)
        before = a.copy()
        out = tmp_path / f"sorted.{fmt}"
        emsort.sort_array_to_file(a[::-1], out, reverse=True)  # strided input is fine
        assert same_numbers(a, before)
        assert same_numbers(np.fromfile(out, dtype=dt), np.sort(a)[::-1])
        assert emsort.verify(out, format=fmt, reverse=True)["ok"]


@pytest.mark.parametrize("kind", ["stream", "mmap", "pread", "uring", "adaptive"])
def test_read_array_like_fromfile(tmp_path, kind):
    p = tmp_path / "data"
    a = random_numbers("f64", 10_000, seed=8)
    a.tofile(p)
    assert same_numbers(emsort.read_array(p, dtype="f64", kind=kind), a)
    got = emsort.read_array(p, dtype=np.uint32, offset=12, count=100, kind=kind)
    assert got.dtype == np.uint32
    assert np.array_equal(got, np.fromfile(p, dtype=np.uint32, offset=12, count=100))
    assert np.array_equal(emsort.read_array(p, dtype="int64", offset=8 * 9_990), a[9_990:].view(np.int64))
    assert len(emsort.read_array(p, dtype="u32", offset=a.nbytes)) == 0
    with pytest.raises(ValueError, match="past the end"):
        emsort.read_array(p, dtype="u64", offset=8, count=10_000, kind=kind)
    with pytest.raises(ValueError, match="whole number"):
        emsort.read_array(p, dtype="u64", offset=3)
    assert emsort.read_array(p).dtype == np.uint32


# ---------------------------------------------------------------- buffers


def oracle_lower_bounds(keys, boundary_keys):
    return [bisect.bisect_left(keys, b) for b in boundary_keys]


@pytest.mark.parametrize("container", ["bytearray", "numpy", "memoryview"])
def test_sort_buffer_and_partition_points_u32(container):
    a = random_numbers("u32", 50_000, seed=3) % 1000  # ties
    raw = bytearray(a.tobytes())
    buf = {"bytearray": raw, "numpy": np.frombuffer(raw, dtype=np.uint8), "memoryview": memoryview(raw)}[container]
    emsort.sort_buffer(buf, "u32")
    got = np.frombuffer(raw, dtype=np.uint32)
    assert np.array_equal(got, np.sort(a))
    bounds = [0, 1, 500, 999, 1000, 2**32 - 1]
    pts = emsort.partition_points(bytes(raw), "u32", [np.uint32(b).tobytes() for b in bounds])
    assert pts == oracle_lower_bounds(list(got), bounds)
    assert emsort.partition_points(buf, "u32", []) == []


def test_sort_buffer_unaligned_and_typed_views():
    a = random_numbers("f64", 1001, seed=6)
    raw = bytearray(b"x" + a.tobytes())
    emsort.sort_buffer(memoryview(raw)[1:], "f64")  # not 8-byte aligned
    assert raw[:1] == b"x"
    assert same_numbers(np.frombuffer(bytes(raw[1:]), dtype=np.float64), np.sort(a))
    b = random_numbers("i32", 1000, seed=2)
    emsort.sort_buffer(b, "i32", reverse=True)  # a numpy int32 array as bytes
    assert np.array_equal(b, np.sort(b)[::-1])


def test_sort_buffer_and_partition_points_records():
    size, off, klen = 16, 4, 4
    fmt = f"rec:{size}:{off}:{klen}"
    assert emsort.item_size(fmt) == size
    rng = random.Random(1)
    items = [bytes(rng.randrange(256) for _ in range(off)) + bytes(rng.choice(b"abc") for _ in range(klen)) + i.to_bytes(8, "little") for i in range(3000)]
    key = lambda r: r[off : off + klen]
    buf = bytearray(b"".join(items))
    emsort.sort_buffer(buf, fmt)
    got = records(buf, size)
    assert got == sorted(items, key=key)  # stable: equal keys keep their order
    bounds = sorted({key(rng.choice(items)) for _ in range(20)} | {b"\x00" * 4, b"\xff" * 4, b"abbb"})
    boundary_items = [b"\x00" * off + k + b"\x00" * (size - off - klen) for k in bounds]
    pts = emsort.partition_points(buf, fmt, boundary_items)
    assert pts == oracle_lower_bounds([key(r) for r in got], bounds)
    emsort.sort_buffer(buf, fmt, reverse=True)
    assert records(buf, size) == sorted(items, key=key, reverse=True)
    desc = emsort.partition_points(buf, fmt, boundary_items[::-1], reverse=True)
    neg = [bytes(255 - c for c in key(r)) for r in records(buf, size)]
    assert desc == oracle_lower_bounds(neg, [bytes(255 - c for c in k) for k in bounds[::-1]])


def test_buffer_errors():
    with pytest.raises(ValueError, match="whole number"):
        emsort.sort_buffer(bytearray(7), "u32")
    with pytest.raises(ValueError, match="lines"):
        emsort.sort_buffer(bytearray(b"b\na\n"), "lines")
    with pytest.raises(ValueError, match="format"):
        emsort.sort_buffer(bytearray(8), "u16")
    with pytest.raises(TypeError, match="writable|read-only"):
        emsort.sort_buffer(b"\x00" * 8, "u32")
    with pytest.raises(TypeError):
        emsort.sort_buffer([1, 2], "u32")
    with pytest.raises(ValueError, match="contiguous"):
        emsort.sort_buffer(np.zeros(8, dtype=np.uint32)[::2], "u32")
    with pytest.raises(ValueError, match="boundary 1"):
        emsort.partition_points(bytes(8), "u32", [bytes(4), bytes(3)])
    with pytest.raises(ValueError, match="lines"):
        emsort.item_size("lines")


def test_compare_and_sort_key_follow_the_format():
    vals = [np.nan, 1.5, -0.0, 0.0, -np.inf, np.inf, -2.0]
    items = [np.float64(v).tobytes() for v in vals]
    by_cmp = sorted(items, key=__import__("functools").cmp_to_key(lambda a, b: emsort.compare(a, b, "f64")))
    by_key = sorted(items, key=lambda x: emsort.sort_key(x, "f64"))
    want = [np.float64(v).tobytes() for v in [-np.inf, -2.0, -0.0, 0.0, 1.5, np.inf, np.nan]]
    assert by_cmp == by_key == want
    i = [np.int32(v).tobytes() for v in (-5, 3)]
    assert emsort.item_key_less(i[0], i[1], "i32") and not emsort.item_key_less(i[1], i[0], "i32")
    assert emsort.compare(i[0], i[0], "i32") == 0 and emsort.compare(i[1], i[0], "i32") == 1
    assert emsort.compare(i[0], i[1], "i32", reverse=True) == 1
    assert emsort.compare(b"zab", b"aac", "rec:3:1:2") == -1
    assert emsort.sort_key(b"zabq", "rec:4:1:2") == b"ab"
    assert emsort.compare(b"a", b"a\x80", "lines") == -1
    with pytest.raises(ValueError, match="bytes"):
        emsort.compare(b"abc", b"abcd", "u32")


# ------------------------------------------------------------ merge_files


@pytest.mark.parametrize("fan_in", [2, 16])
def test_merge_files_against_sorted_concatenation(tmp_path, fan_in):
    rng = np.random.default_rng(fan_in)
    parts, paths = [], []
    for i in range(7):
        p = np.sort(rng.integers(0, 10_000, rng.integers(0, 20_000), dtype=np.uint64))
        path = tmp_path / f"part{i}"
        p.tofile(path)
        parts.append(p)
        paths.append(path)
    before = [p.read_bytes() for p in paths]
    tmp = temp_dir(tmp_path)
    out = tmp_path / "merged"
    stats = emsort.merge_files(paths, out, format="u64", memory="1M", fan_in=fan_in, temp_dirs=[tmp])
    assert np.array_equal(np.fromfile(out, dtype=np.uint64), np.sort(np.concatenate(parts)))
    assert [p.read_bytes() for p in paths] == before
    assert list(tmp.iterdir()) == []
    assert stats["runs"] == 7 and stats["merge_order"] <= fan_in
    assert (stats["merges"] == 1) == (fan_in >= 7)
    rev = [np.sort(p)[::-1] for p in parts[:3]]
    for p, path in zip(rev, paths):
        p.tofile(path)
    emsort.merge_files([str(p) for p in paths[:3]], out, format="u64", reverse=True, temp_dirs=[tmp])
    assert np.array_equal(np.fromfile(out, dtype=np.uint64), np.sort(np.concatenate(rev))[::-1])
    emsort.merge_files([], out, format="u64")
    assert out.read_bytes() == b""


def test_merge_files_lines(tmp_path):
    rng = random.Random(5)
    parts = [sorted(f"{rng.random():.4f}\n" for _ in range(500)) for _ in range(5)]
    paths = []
    for i, p in enumerate(parts):
        paths.append(tmp_path / f"p{i}.txt")
        paths[-1].write_text("".join(p))
    out = tmp_path / "out.txt"
    emsort.merge_files(paths, out, format="lines", fan_in=2, temp_dirs=[temp_dir(tmp_path)])
    assert out.read_text() == "".join(sorted(line for p in parts for line in p))


# ---------------------------------------------------------------- readers


@pytest.mark.parametrize("kind", ["stream", "mmap", "pread", "uring", "adaptive"])
def test_reader_matches_file_slices(tmp_path, kind):
    p = tmp_path / "data"
    data = os.urandom(3 * 1024 * 1024 + 123)
    p.write_bytes(data)
    rng = random.Random(kind)
    with emsort.Reader(p, kind, block_size="64K", queue_depth=4) as r:
        assert r.kind == kind and r.name == str(p) and len(r) == r.size == len(data) and not r.closed
        for _ in range(60):
            off = rng.randrange(0, len(data) + 10)
            size = rng.choice([0, 1, 17, 4096, 70_000, rng.randrange(0, 2 << 20)])
            assert r.read(off, size) == data[off : off + size]
        assert r.read(len(data) - 5, 100) == data[-5:]  # short at EOF
        assert r.read(len(data), 10) == b"" and r.read(len(data) + 1000, 10) == b""
        buf = bytearray(100_000)
        assert r.readinto(1000, buf) == 100_000 and buf == data[1000:101_000]
        arr = np.zeros(1000, dtype=np.uint32)
        assert r.readinto(8, arr) == 4000 and arr.tobytes() == data[8:4008]
        mv = memoryview(bytearray(50))
        assert r.readinto(len(data) - 20, mv[10:]) == 20 and bytes(mv[10:30]) == data[-20:]
        with pytest.raises(TypeError):
            r.readinto(0, b"immutable")
    assert r.closed
    r.close()  # again: nothing happens
    with pytest.raises(ValueError, match="closed"):
        r.read(0, 1)


def test_reader_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        emsort.Reader(tmp_path / "missing")
    assert isinstance(e.value, emsort.EmsortError) and "missing" in str(e.value)
    with pytest.raises(IsADirectoryError):
        emsort.Reader(tmp_path, "pread")
    with pytest.raises(ValueError, match="kind|reader"):
        emsort.Reader(__file__, "magic")


# ----------------------------------------------------------------- errors


def test_errors_name_the_file_and_leave_nothing(tmp_path):
    out = tmp_path / "out"
    missing = tmp_path / "no-such-input"
    with pytest.raises(emsort.EmsortFileNotFoundError) as e:
        emsort.sort(missing, out, format="u32", temp_dirs=[temp_dir(tmp_path)])
    assert isinstance(e.value, FileNotFoundError) and str(missing) in str(e.value)
    assert e.value.errno == 2 and e.value.filename == str(missing)
    bad = tmp_path / "bad"
    bad.write_bytes(b"1234567")  # not whole u32 items
    with pytest.raises(emsort.EmsortError, match="not a multiple"):
        emsort.sort(bad, out, format="u32", temp_dirs=[temp_dir(tmp_path)])
    assert bad.read_bytes() == b"1234567"
    good = tmp_path / "good"
    np.arange(1000, 0, -1, dtype=np.uint32).tofile(good)
    with pytest.raises(ValueError, match="unknown format"):
        emsort.sort(good, out, format="u16")
    with pytest.raises(ValueError, match="too small"):
        emsort.sort(good, out, format="u32", memory="64K", fan_in=64, block_size="64K")
    with pytest.raises(ValueError):
        emsort.sort(good, out, format="u32", memory="lots")
    with pytest.raises(ValueError):
        emsort.sort(good, out, format="u32", io="telepathy")
    with pytest.raises(TypeError):
        emsort.sort(good, out, format="u32", memory=1.5)
    # A missing temporary directory matters only when runs are needed, as
    # GNU sort checks -T: an input that fits in memory sorts without it.
    fits = tmp_path / "sorted-without-temp"
    emsort.sort(good, fits, format="u32", temp_dirs=[tmp_path / "no-such-dir"])
    assert np.fromfile(fits, dtype=np.uint32).tolist() == list(range(1, 1001))
    big = tmp_path / "big"
    np.arange(400_000, 0, -1, dtype=np.uint32).tofile(big)
    with pytest.raises(emsort.EmsortFileNotFoundError):
        emsort.sort(big, out, format="u32", memory="1M", temp_dirs=[tmp_path / "no-such-dir"])
    fits.unlink()
    big.unlink()
    with pytest.raises(FileNotFoundError):
        emsort.merge_files([good, missing], out, format="u32")
    with pytest.raises(FileNotFoundError):
        emsort.verify(missing)
    with pytest.raises(FileNotFoundError):
        emsort.read_array(missing)
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["bad", "good", "tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []
    assert np.array_equal(np.fromfile(good, dtype=np.uint32), np.arange(1000, 0, -1, dtype=np.uint32))


# --------------------------------------------- progress, GIL and Ctrl-C


def test_progress_callback(tmp_path):
    src = tmp_path / "in"
    calls = []
    emsort.gen(src, count=2_000_000, seed=1, progress=lambda *a: calls.append(a))
    assert calls and calls[-1] == ("gen", 8_000_000, 8_000_000)
    calls.clear()
    emsort.sort(src, tmp_path / "out", format="u32", memory="2M", temp_dirs=[temp_dir(tmp_path)], progress=lambda *a: calls.append(a))
    phases = [c[0] for c in calls]
    assert phases[0] == "run formation" and phases[-1] == "merge"
    for phase in ("run formation", "merge"):
        done = [c[1] for c in calls if c[0] == phase]
        assert done == sorted(done), "done goes down"
        final = [c for c in calls if c[0] == phase][-1]
        assert final[1] == final[2] and final[2] > 0
    assert len(calls) <= 2 + 10 * 60  # throttled


def test_progress_callback_errors_stop_the_sort(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    # Large enough that the sort is still running at the first callback
    # (after 50 ms): 4 MB could finish before it, and then the callback's
    # exception comes after a complete output (CI saw that once).
    emsort.gen(src, count=8_000_000)

    def boom(phase, done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        emsort.sort(src, out, format="u32", memory="1M", temp_dirs=[temp_dir(tmp_path)], progress=boom)
    assert not out.exists() and list(temp_dir(tmp_path).iterdir()) == []
    with pytest.raises(TypeError, match="callable"):
        emsort.sort(src, out, format="u32", progress=42)


def test_long_calls_release_the_gil(tmp_path):
    src = tmp_path / "in"
    emsort.gen(src, count=4_000_000)
    ticks = 0
    done = threading.Event()

    def spin():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        t0 = time.perf_counter()
        emsort.sort(src, tmp_path / "out", format="u32", memory="4M", temp_dirs=[temp_dir(tmp_path)])
        a = np.random.default_rng(0).random(4_000_000)
        emsort.sort_array(a)
        elapsed = time.perf_counter() - t0
    finally:
        done.set()
        t.join()
    # Measured: 7–12 M ticks/s while the GIL is released, under 0.5 M/s
    # when a call holds it.
    assert ticks > 1_000_000 * elapsed, (ticks, elapsed)


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import sys, emsort
    src, out, tmp = sys.argv[1:4]
    started = False
    def progress(phase, done, total):
        global started
        if not started and done > 0:
            started = True
            print("STARTED", phase, flush=True)
    try:
        emsort.sort(src, out, format="u32", memory="16M", temp_dirs=[tmp], progress=progress)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        sys.exit(3)
    print("FINISHED", flush=True)
    """
)


def test_ctrl_c_stops_a_sort_cleanly(tmp_path):
    src, out, tmp = tmp_path / "in", tmp_path / "out", temp_dir(tmp_path)
    emsort.gen(src, count=50_000_000, seed=4)  # 200 MB: a sort of several seconds in 16M
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, str(src), str(out), str(tmp)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("STARTED"), line + proc.stderr.read()
        time.sleep(0.3)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
        stopped = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3 and "INTERRUPTED" in rest, (proc.returncode, rest, err)
    assert stopped < 5, stopped
    assert not out.exists()
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "tmp"]
