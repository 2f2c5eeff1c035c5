"""Tests of ``emsort.Sorter``: data a program pushes, sorted larger than memory.

Oracles: ``numpy.sort``, ``sorted()``, ``LC_ALL=C sort``, and order +
multiset checks. Budgets are small (1–16 MiB) so every sort really spills
runs to disk and merges them; each test takes a second or two.

Run after ``pip install './python[test]'``: ``pytest python/tests/test_sorter.py``.
"""

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

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

MiB = 1 << 20


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


def push_in_pieces(sorter, data, seed=0):
    """Pushes the bytes of ``data`` cut at random places (items split
    across pushes), starting with a push of 3 bytes."""
    raw = memoryview(np.ascontiguousarray(data)).cast("B")
    rng = np.random.default_rng(seed)
    pos = 0
    cut = 3
    while pos < len(raw):
        sorter.push(raw[pos : pos + cut])
        pos += cut
        cut = int(rng.integers(1, 300_000))


def taken(sorter):
    """The sorter's blocks, concatenated (numbers)."""
    blocks = list(sorter)
    return blocks, (np.concatenate(blocks) if blocks else None)


@pytest.fixture
def tmp(tmp_path):
    d = tmp_path / "tmp"
    d.mkdir()
    return d


@pytest.mark.parametrize("reverse", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("fmt", list(NUMBER_DTYPES))
def test_numbers_come_back_sorted(fmt, reverse, tmp):
    dt = NUMBER_DTYPES[fmt]
    data = random_numbers(fmt, 400_000, seed=len(fmt) + reverse)
    with emsort.Sorter(fmt, memory="1M", temp_dirs=tmp, reverse=reverse) as s:
        push_in_pieces(s, data)
        assert s.pushed == data.nbytes
        s.finish()
        blocks, got = taken(s)
    assert all(b.dtype == dt and b.ndim == 1 for b in blocks)
    want = np.sort(data)  # NaNs last
    if reverse:
        want = want[::-1]  # NaNs first, as `sort --reverse`
    if np.dtype(dt).kind == "f":
        assert np.array_equal(got, want, equal_nan=True)
        nans = np.isnan(got)
        k = int(nans.sum())
        assert k > 0 and (nans[:k].all() if reverse else nans[-k:].all())
    else:
        assert np.array_equal(got, want)
    stats = s.stats
    assert stats["runs"] > 2 and stats["input_bytes"] == data.nbytes == stats["output_bytes"]
    assert list(tmp.iterdir()) == []


def test_a_pushed_numpy_array_is_taken_whole_and_read_only_is_fine(tmp):
    a = np.arange(100_000, 0, -1, dtype=np.int64)
    a.flags.writeable = False
    s = emsort.Sorter("i64", memory="1M", temp_dirs=tmp)
    s.push(a)
    s.push(a.tobytes())  # bytes
    s.push(bytearray(a.view(np.uint8)))  # a bytearray, and a uint8 view of the items
    blocks, got = taken(s.finish())
    assert np.array_equal(got, np.repeat(np.arange(1, 100_001, dtype=np.int64), 3))


def test_records_sort_by_their_key(tmp):
    fmt = "rec:12:2:3"
    rng = np.random.default_rng(7)
    recs = rng.integers(0, 256, (150_000, 12), dtype=np.uint8)
    recs[:, 2] = rng.integers(0, 4, len(recs))  # many equal keys
    for reverse in (False, True):
        with emsort.Sorter(fmt, memory="1M", temp_dirs=tmp, reverse=reverse) as s:
            push_in_pieces(s, recs, seed=1)
            s.finish()
            blocks = list(s)
        assert all(b.dtype == np.uint8 and b.ndim == 2 and b.shape[1] == 12 for b in blocks)
        got = [bytes(r) for b in blocks for r in b]
        keys = [r[2:5] for r in got]
        assert keys == sorted((bytes(r[2:5]) for r in recs), reverse=reverse)
        assert sorted(got) == sorted(bytes(r) for r in recs)  # the same records
        assert s.stats["runs"] > 2


def random_lines(n, seed):
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcxyzABC019 \t\x01\x7f\x80\xc3\xa9\xff", dtype=np.uint8)
    lines = []
    for _ in range(n):
        k = int(rng.integers(0, 40))
        lines.append(bytes(rng.choice(alphabet, k)))
    return lines


def test_lines_sort_as_c_sort(tmp, tmp_path):
    lines = random_lines(60_000, seed=3) + [b"", b"", b"same", b"same"]
    text = b"\n".join(lines)  # the last line without its \n: one is added
    with emsort.Sorter("lines", memory="1M", temp_dirs=tmp) as s:
        push_in_pieces(s, np.frombuffer(text, dtype=np.uint8), seed=2)
        s.finish()
        blocks = list(s)
    assert all(isinstance(b, list) and all(isinstance(x, bytes) for x in b) for b in blocks)
    got = [x for b in blocks for x in b]
    assert got == sorted(lines)
    assert s.stats["runs"] > 2
    if shutil.which("sort"):
        src = tmp_path / "in.txt"
        src.write_bytes(text + b"\n")
        c_sorted = subprocess.run(
            ["sort", str(src)], env={**os.environ, "LC_ALL": "C"}, capture_output=True, check=True
        ).stdout
        assert b"".join(x + b"\n" for x in got) == c_sorted


@pytest.mark.parametrize("fmt", ["u64", "rec:12:2:3", "lines"])
def test_write_gives_the_iteration_s_bytes(fmt, tmp, tmp_path):
    if fmt == "lines":
        data = np.frombuffer(b"\n".join(random_lines(30_000, seed=5)) + b"\n", dtype=np.uint8)
    elif fmt == "u64":
        data = random_numbers("u64", 200_000, seed=5)
    else:
        data = np.random.default_rng(5).integers(0, 256, (100_000, 12), dtype=np.uint8)
    out = tmp_path / "sorted.bin"
    out.write_bytes(b"old")
    with emsort.Sorter(fmt, memory="1M", temp_dirs=tmp) as s:
        s.push(data)
        stats = s.finish().write(out)
    assert stats == s.stats and stats["runs"] > 2 and stats["output_bytes"] == data.nbytes
    assert {"plan", "runs", "passes", "merges", "run_formation", "merge", "total_seconds"} <= set(stats)
    with emsort.Sorter(fmt, memory="1M", temp_dirs=tmp) as s:
        s.push(data)
        s.finish()
        if fmt == "lines":
            iterated = b"".join(x + b"\n" for b in s for x in b)
        else:
            iterated = b"".join(b.tobytes() for b in s)
    assert out.read_bytes() == iterated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sorted.bin", "tmp"]
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("fmt", ["u32", "f64", "rec:8:0:8", "lines"])
def test_empty_input(fmt, tmp, tmp_path):
    s = emsort.Sorter(fmt, memory="1M", temp_dirs=tmp)
    assert s.stats is None
    s.push(b"")
    s.push(np.empty(0, dtype=np.uint8))
    s.finish()
    assert list(s) == [] and s.stats["input_bytes"] == 0 and s.state == "done"
    assert next(s, "end") == "end"  # exhausted, as any iterator
    s = emsort.Sorter(fmt, memory="1M", temp_dirs=tmp)
    s.finish().write(tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == b""
    assert list(tmp.iterdir()) == []


def test_a_single_run_comes_back_in_blocks(tmp):
    # The input fits in memory: one run, still handed back block by block.
    data = random_numbers("u32", 1_000_000, seed=9)
    s = emsort.Sorter("u32", memory="64M", block_size="256K", temp_dirs=tmp)
    s.push(data)
    blocks, got = taken(s.finish())
    assert s.stats["runs"] == 1 and np.array_equal(got, np.sort(data))
    assert len(blocks) > 1 and max(b.nbytes for b in blocks) <= 256 << 10


def test_dropping_or_closing_a_sorter_mid_way_removes_its_files(tmp):
    data = random_numbers("u64", 1_000_000, seed=11)  # 8 MB in 1M: runs on disk

    def sorter():
        s = emsort.Sorter("u64", memory="1M", temp_dirs=tmp)
        s.push(data)
        assert list(tmp.iterdir()) != []  # its temp dir, with runs
        return s

    s = sorter()
    del s  # while pushing
    gc.collect()
    assert list(tmp.iterdir()) == []
    s = sorter().finish()
    del s  # finished, before its last merge
    assert list(tmp.iterdir()) == []
    s = sorter().finish()
    first = next(s)
    assert first.size > 0 and (np.diff(first) >= 0).all()
    del s  # during the iteration
    assert list(tmp.iterdir()) == []
    s = sorter()
    s.close()
    assert s.state == "closed" and list(tmp.iterdir()) == []
    s.close()  # again: nothing
    with pytest.raises(ValueError, match="closed"):
        s.push(data)
    with pytest.raises(ZeroDivisionError):
        with sorter() as s:
            s.finish()
            next(s)
            1 / 0
    assert s.state == "closed" and list(tmp.iterdir()) == []


def test_misuse_raises_clear_errors(tmp, tmp_path):
    s = emsort.Sorter("u32", memory="1M", temp_dirs=tmp)
    with pytest.raises(RuntimeError, match=r"before finish\(\)"):
        iter(s)
    with pytest.raises(RuntimeError, match=r"before finish\(\)"):
        next(s)
    with pytest.raises(RuntimeError, match=r"before finish\(\)"):
        s.write(tmp_path / "out")
    with pytest.raises(TypeError, match="int64"):
        s.push(np.arange(10))  # int64 items are not u32 items
    with pytest.raises(TypeError, match="bytes-like"):
        s.push("text")
    with pytest.raises(ValueError, match="contiguous"):
        s.push(np.arange(10, dtype=np.uint32)[::2])
    assert s.pushed == 0 and s.state == "pushing"  # refused pushes change nothing
    s.push(np.arange(10, dtype=np.uint32))
    s.finish()
    with pytest.raises(RuntimeError, match=r"push\(\) after finish\(\)"):
        s.push(b"abcd")
    with pytest.raises(RuntimeError, match="already called"):
        s.finish()
    it = iter(s)
    assert it is s and iter(s) is s
    next(s)
    with pytest.raises(RuntimeError, match="being taken"):
        s.write(tmp_path / "out")
    assert list(s) == []
    with pytest.raises(RuntimeError, match="already taken"):
        iter(s)
    with pytest.raises(RuntimeError, match="already taken"):
        s.write(tmp_path / "out")
    s = emsort.Sorter("u32", memory="1M", temp_dirs=tmp)
    s.finish().write(tmp_path / "out")
    with pytest.raises(RuntimeError, match="already taken"):
        list(s)

    # Options are checked as sort's.
    with pytest.raises(ValueError, match="unknown format"):
        emsort.Sorter("u33")
    with pytest.raises(ValueError, match="too small"):
        emsort.Sorter("u32", memory=100)
    with pytest.raises(ValueError):
        emsort.Sorter("u32", io="floppy")
    with pytest.raises(TypeError, match="callable"):
        emsort.Sorter("u32", progress=42)
    assert emsort.Sorter("u32").memory > 0  # the default: a quarter of the available RAM


def test_errors_of_the_sort_fail_the_sorter(tmp, tmp_path):
    s = emsort.Sorter("u32", memory="1M", temp_dirs=tmp)
    s.push(b"abc")  # 3 bytes: not a whole u32
    with pytest.raises(emsort.EmsortError, match="multiple of the element size"):
        s.finish()
    assert s.state == "failed"
    with pytest.raises(RuntimeError, match="earlier exception"):
        s.push(b"d")
    s = emsort.Sorter("u32", memory="1M", temp_dirs=tmp)
    s.push(random_numbers("u32", 1_000_000))
    with pytest.raises(emsort.EmsortFileNotFoundError):
        s.finish().write(tmp_path / "no" / "such" / "dir" / "out")
    assert s.state == "failed" and list(tmp.iterdir()) == []


def test_progress_is_reported_and_its_errors_cancel(tmp):
    calls = []
    data = random_numbers("u32", 2_000_000, seed=13)
    s = emsort.Sorter("u32", memory="1M", temp_dirs=tmp, progress=lambda *a: calls.append(a))
    for piece in np.array_split(data, 8):  # 1 MB pieces, pushed by a watched thread
        s.push(piece)
    s.finish()
    n = sum(b.size for b in s)
    assert n == data.size
    phases = [c[0] for c in calls]
    assert phases[0] == "run formation" and phases[-1] == "merge"
    rf = [c for c in calls if c[0] == "run formation"]
    assert rf[-1][1] == data.nbytes and rf[-1][2] is None  # the input's size is not known
    merge = [c for c in calls if c[0] == "merge"]
    assert merge[-1][1] == merge[-1][2] > 0
    assert [c[1] for c in merge] == sorted(c[1] for c in merge)

    def boom(phase, done, total):
        raise OSError("stop here")

    s = emsort.Sorter("u32", memory="1M", temp_dirs=tmp, progress=boom)
    with pytest.raises(OSError, match="stop here"):
        s.push(data)
    assert s.state == "failed" and list(tmp.iterdir()) == []


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import os, sys, numpy as np, emsort
    tmp, piece = sys.argv[1], int(sys.argv[2])
    a = np.random.default_rng(0).integers(0, 2**32, piece // 4, dtype=np.uint32)
    s = emsort.Sorter("u32", memory="16M", temp_dirs=[tmp])
    try:
        with s:
            print("STARTED", flush=True)
            while True:
                s.push(a)
    except KeyboardInterrupt:
        print("INTERRUPTED", s.state, os.listdir(tmp), flush=True)
        sys.exit(3)
    """
)


@pytest.mark.parametrize("piece", [64 << 10, 16 << 20], ids=["small-pushes", "large-pushes"])
def test_ctrl_c_stops_pushing_cleanly(piece, tmp):
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, str(tmp), str(piece)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("STARTED"), line + proc.stderr.read()
        time.sleep(0.5)  # pushing, runs on disk
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
        stopped = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, (proc.returncode, rest, err)
    # Raised inside push (the sort fails) or between two pushes (the with
    # block closes it): either way nothing is left.
    assert rest.split(maxsplit=1)[1].strip() in ("failed []", "closed []"), rest
    assert stopped < 5, stopped
    assert list(tmp.iterdir()) == []


# The done-when, in a fresh interpreter so that the peak RSS is this
# sort's alone (pytest's own allocations and other tests' threads stay out).
BUDGET_SCRIPT = textwrap.dedent(
    """
    import json, sys, numpy as np, emsort

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

    SLICE = 1 << 16  # items hashed at a time: a uint64 copy of 512 KiB

    # count, sum, xor and sum of squares (mod 2**64) of a's items, added
    # to h: the same for any order of the same items.
    def fold(h, a):
        count, total, xor, squares = h
        for i in range(0, a.size, SLICE):
            w = a[i : i + SLICE].astype(np.uint64)
            total += int(w.sum())
            xor ^= int(np.bitwise_xor.reduce(w))
            w *= w
            squares += int(w.sum())
        return (count + a.size, total % 2**64, xor, squares % 2**64)

    tmp, memory, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(16)
    s = emsort.Sorter("u32", memory=memory, temp_dirs=[tmp])
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        reset = True
    except OSError as e:
        reset = str(e)
    baseline = status("VmRSS")
    pushed_hash = got_hash = (0, 0, 0, 0)
    pushed = max_piece = 0
    while pushed < total:
        size = min(int(rng.integers(1, 5)) << 20, total - pushed)  # 1-4 MiB
        piece = rng.integers(0, 2**32, size // 4, dtype=np.uint32)
        pushed_hash = fold(pushed_hash, piece)
        s.push(piece)
        pushed += piece.nbytes
        max_piece = max(max_piece, piece.nbytes)
        del piece  # freed: one piece of the program's data at a time
    s.finish()
    last, ordered, max_block = -1, True, 0
    for block in s:
        assert block.dtype == np.uint32
        max_block = max(max_block, block.nbytes)
        ordered &= bool(block[0] >= last) and bool((block[1:] >= block[:-1]).all())
        last = int(block[-1])
        got_hash = fold(got_hash, block)
        del block
    peak = status("VmHWM")
    stats = s.stats
    print(json.dumps({
        "reset": reset, "baseline": baseline, "peak": peak,
        "max_piece": max_piece, "max_block": max_block,
        "ordered": ordered,
        "same": pushed_hash == got_hash and got_hash[0] == total // 4,
        "runs": stats["runs"], "threads": stats["plan"]["threads"],
        "block_size": stats["plan"]["block_size"], "memory": stats["plan"]["memory"],
    }))
    """
)


def test_four_times_the_budget_of_pushed_data_sorts_within_the_budget(tmp):
    """emsort.Sorter sorts 4x its memory of pushed numpy data, block by
    block, with the peak RSS within the budget plus the documented overhead."""
    M = 16 * MiB
    total = 4 * M
    proc = subprocess.run(
        [sys.executable, "-c", BUDGET_SCRIPT, str(tmp), str(M), str(total)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["ordered"], "the blocks are not in ascending order"
    assert r["same"], "the sorted items are not the pushed ones (count, sum, xor, sum of squares)"
    assert r["runs"] >= 4 and r["memory"] == M
    assert list(tmp.iterdir()) == []
    if r["reset"] is not True:
        pytest.skip(f"cannot reset the peak RSS (/proc/self/clear_refs: {r['reset']}); order and multiset checked")
    B = r["block_size"]
    bound = (
        M  # the sort's memory budget
        + 8 * MiB  # plan.rs: the process's own baseline (binary, libc, stacks)
        + 1 * MiB * r["threads"]  # plan.rs: the radix sort's buckets, per thread
        + 2 * B  # sorter.rs: two blocks in flight (a pushed one, a sorted one)
        + r["max_piece"]  # the test's data in flight: one pushed numpy piece ...
        + r["max_block"]  # ... and one yielded block
        + 512 * 1024  # the multiset check's uint64 copy of a slice of 64Ki items
    )
    grown = r["peak"] - r["baseline"]
    print(f"baseline {r['baseline'] / MiB:.1f} MiB, VmHWM {r['peak'] / MiB:.1f} MiB, "
          f"grown {grown / MiB:.1f} MiB, bound {bound / MiB:.1f} MiB")
    assert grown <= bound, (grown / MiB, bound / MiB, r)
