"""Tests of emsort.ray on a local Ray cluster started here (2 CPUs), on small data.

Every sort is checked against oracles computed here with numpy / Python: the parts in name
order concatenate to a sequence in the format's order (global order across parts), and
hold the same multiset of items as the inputs. Interrupted, failed and killed sorts are
checked by exact listings of the output and scratch directories afterwards.
"""

import bisect
import csv
import fcntl
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("emsort")
import emsort  # noqa: E402
import emsort.ray as er  # noqa: E402
from emsort.ray import EmsortRayError, Format  # noqa: E402
from emsort.ray import _cleanup, _sort  # noqa: E402


# ---- helpers ------------------------------------------------------------------------------


def _write(path, arr):
    np.ascontiguousarray(arr).tofile(path)
    return str(path)


def _parts(out):
    m = json.loads((out / "_SUCCESS").read_text())
    names = sorted(p.name for p in out.glob("part-*"))
    assert names == [p["name"] for p in m["parts"]] == [f"part-{i:05d}" for i in range(m["partitions"])]
    assert not list(out.glob(".part-*")), "temporary files left behind"
    return m, [(out / n).read_bytes() for n in names]


NUMBER_DTYPES = {"u32": "=u4", "i32": "=i4", "u64": "=u8", "i64": "=i8", "f32": "=f4", "f64": "=f8"}


def _keys(fmt, buf):
    """numpy's view of the format's order, independent of emsort: one entry per item of
    ``buf`` whose natural order is the format's (NaNs of either sign equal and last)."""
    a = buf.view(np.uint8).reshape(-1)
    if fmt.spec in ("f32", "f64"):
        ut = np.dtype("=u4") if fmt.spec == "f32" else np.dtype("=u8")
        bits = a.view(ut)
        top = ut.type(1) << ut.type(ut.itemsize * 8 - 1)
        k = np.where((bits & top) != 0, ~bits, bits | top)
        k[np.isnan(a.view(NUMBER_DTYPES[fmt.spec]))] = np.iinfo(ut).max
        return k
    if fmt.spec in NUMBER_DTYPES:
        return a.view(NUMBER_DTYPES[fmt.spec])
    _, size, off, klen = fmt.spec.split(":")
    size, off, klen = int(size), int(off), int(klen)
    key = np.ascontiguousarray(a.reshape(-1, size)[:, off : off + klen])
    return key.view(f"S{klen}").reshape(-1)


def _check_fixed(out, inputs, fmt_spec, reverse=False):
    """Global order across parts and the multiset, against the inputs."""
    fmt = Format.parse(fmt_spec)
    m, parts = _parts(out)
    data = b"".join(parts)
    src = b"".join(open(p, "rb").read() for p in inputs)
    isz = fmt.item_size
    assert len(data) == len(src)
    assert m["items"] == len(src) // isz == sum(p["items"] for p in m["parts"])
    for p, b in zip(m["parts"], parts):
        assert p["items"] * isz == len(b)
    if not data:
        return m
    keys = _keys(fmt, np.frombuffer(data, np.uint8))
    ordered = keys[:-1] >= keys[1:] if reverse else keys[:-1] <= keys[1:]
    assert ordered.all(), f"out of order at item {int(np.argmin(ordered))}"
    a = np.frombuffer(data, np.uint8).reshape(-1, isz)
    b = np.frombuffer(src, np.uint8).reshape(-1, isz)
    ua, ca = np.unique(a, axis=0, return_counts=True)
    ub, cb = np.unique(b, axis=0, return_counts=True)
    assert np.array_equal(ua, ub) and np.array_equal(ca, cb), "multiset differs from the input"
    return m


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _u32_inputs(tmp_path, sizes=(150_000, 70_001, 0, 33), seed=1):
    rng = np.random.default_rng(seed)
    return [_write(tmp_path / f"in-{i}.u32", rng.integers(0, 2**32, n, dtype=np.uint32)) for i, n in enumerate(sizes)]


# ---- sorts --------------------------------------------------------------------------------


def test_u32_many_chunks_against_numpy(cluster, tmp_path):
    inputs = _u32_inputs(tmp_path)
    out = tmp_path / "out"
    m = er.sort(inputs, out, format="u32", partitions=4, memory_per_task="1M", chunk_size="100K")
    _check_fixed(out, inputs, "u32")
    want = np.sort(np.concatenate([np.fromfile(p, np.uint32) for p in inputs]))
    got = np.concatenate([np.fromfile(out / f"part-{i:05d}", np.uint32) for i in range(4)])
    assert np.array_equal(got, want)
    assert m["map_tasks"] == 6 + 3 + 1  # 600 KB, 280 KB and 132 B in chunks of 100 KiB
    assert m["partitions"] == 4 and len(m["boundaries"]) == 3
    assert m["external_merges"] == 0
    # sampled boundaries split uniform data roughly evenly
    assert min(p["items"] for p in m["parts"]) > 0.15 * m["items"]
    assert er.verify(out)["ok"]


@pytest.mark.parametrize("spec", ["i32", "u64", "i64", "f32", "f64"])
def test_number_formats(cluster, tmp_path, spec):
    rng = np.random.default_rng(7)
    dt = np.dtype(NUMBER_DTYPES[spec])
    if dt.kind == "f":
        a = rng.standard_normal(40_000).astype(dt) * 1e3
        a[:6] = [np.nan, -np.inf, np.inf, -0.0, 0.0, -np.nan]
        rng.shuffle(a)
    else:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 40_000, dtype=dt, endpoint=True)
        a[:2] = [info.min, info.max]
    inputs = [_write(tmp_path / "a", a[:25_000]), _write(tmp_path / "b", a[25_000:])]
    out = tmp_path / "out"
    er.sort(inputs, out, format=spec, partitions=3, memory_per_task="64K")
    _check_fixed(out, inputs, spec)
    if dt.kind != "f":
        got = np.fromfile(out / "part-00000", dt)
        for i in (1, 2):
            got = np.concatenate([got, np.fromfile(out / f"part-{i:05d}", dt)])
        assert np.array_equal(got, np.sort(a))


def test_records_with_duplicate_keys_and_external_merge(cluster, tmp_path):
    rng = np.random.default_rng(3)
    n = 20_000
    recs = rng.integers(0, 256, (n, 100), dtype=np.uint8)
    recs[:, 2:12] = rng.integers(0, 4, (n, 10), dtype=np.uint8)  # few distinct key bytes
    recs[: n // 4, 2:12] = 7  # a quarter share one key
    inputs = [_write(tmp_path / "r1", recs[:12_345]), _write(tmp_path / "r2", recs[12_345:])]
    out = tmp_path / "out"
    # 2 MB in 4 ranges of ~500 KB against 128 KiB per task: merges go to disk
    m = er.sort(inputs, out, format="rec:100:2:10", partitions=4, memory_per_task="128K")
    _check_fixed(out, inputs, "rec:100:2:10")
    assert m["external_merges"] >= 1


def test_reverse(cluster, tmp_path):
    inputs = _u32_inputs(tmp_path, sizes=(50_000, 20_000))
    out = tmp_path / "out"
    m = er.sort(inputs, out, format="u32", partitions=3, memory_per_task="64K", reverse=True)
    _check_fixed(out, inputs, "u32", reverse=True)
    assert m["reverse"] and er.verify(out)["ok"]


def test_lines(cluster, tmp_path):
    rng = np.random.default_rng(5)
    alphabet = np.frombuffer(b"abcdefghij \t\x01\xff", np.uint8)
    lines = [alphabet[rng.integers(0, len(alphabet), rng.integers(0, 40))].tobytes() for _ in range(20_000)]
    lines[:3] = [b"", b"", b"zzz"]
    rng.shuffle(lines)
    a = b"\n".join(lines[:11_000]) + b"\n"
    b = b"\n".join(lines[11_000:])  # last line without its newline
    (tmp_path / "a.txt").write_bytes(a)
    (tmp_path / "b.txt").write_bytes(b)
    out = tmp_path / "out"
    # chunks of 4 KiB cut lines in the middle: each line belongs to the chunk holding its first byte
    m = er.sort([tmp_path / "a.txt", tmp_path / "b.txt"], out, format="lines", partitions=4,
                memory_per_task="1M", chunk_size="4K")
    _, parts = _parts(out)
    assert b"".join(parts) == b"".join(x + b"\n" for x in sorted(lines))
    assert m["items"] == len(lines)
    for p in parts:
        assert not p or p.endswith(b"\n")
    out2 = tmp_path / "out2"
    er.sort([tmp_path / "a.txt", tmp_path / "b.txt"], out2, format="lines", partitions=3,
            memory_per_task="16K", chunk_size="8K", reverse=True)
    _, parts = _parts(out2)
    assert b"".join(parts) == b"".join(x + b"\n" for x in sorted(lines, reverse=True))


def _gnu_sort(args, paths):
    """``LC_ALL=C sort ARGS PATHS…``: the oracle of the line orders."""
    return subprocess.run(["sort", *args, *map(str, paths)], env={"LC_ALL": "C"}, capture_output=True,
                          check=True).stdout


def _csv_inputs(tmp_path, eol=b"\n", seed=11):
    """Two files of ``id,name,amount`` lines: repeated names and amounts (ties for the keys,
    whole duplicate lines), negative and decimal amounts, empty fields."""
    rng = np.random.default_rng(seed)
    names = [b"ann", b"bob", b"Cy", b"", b"dee dee", b"eve"]
    amounts = [b"-3", b"10", b"2.5", b"", b"-0.5", b"007", b"1e3", b"abc"]
    lines = [b"%d,%s,%s" % (rng.integers(0, 300), names[rng.integers(len(names))],
                            amounts[rng.integers(len(amounts))] if rng.random() < 0.5 else b"%d" % rng.integers(-999, 999))
             for _ in range(6000)]
    paths = [tmp_path / "a.csv", tmp_path / "b.csv"]
    paths[0].write_bytes(eol.join(lines[:3500]) + eol)
    paths[1].write_bytes(eol.join(lines[3500:]))  # the last line without its terminator
    return paths


@pytest.mark.parametrize("opts,gnu,memory", [
    (dict(key="3,3n", field_separator=","), ["-t,", "-k3,3n"], "1M"),
    (dict(key=["2,2", "3,3nr"], field_separator=","), ["-t,", "-k2,2", "-k3,3nr"], "1M"),
    # external merges (blocks above 16 KiB) that drop lines equal across blocks
    (dict(key=["1,1", "3,3"], field_separator=",", unique=True), ["-t,", "-k1,1", "-k3,3", "-u"], "16K"),
    (dict(numeric_sort=True, unique=True, reverse=True, key="3,3", field_separator=",", zero_terminated=True),
     ["-n", "-u", "-r", "-k3,3", "-t,", "-z"], "1M"),
])
def test_lines_by_keys_against_gnu_sort(cluster, tmp_path, opts, gnu, memory):
    """Parts cut by the engine's order: their concatenation is LC_ALL=C sort's output."""
    inputs = _csv_inputs(tmp_path, eol=b"\0" if opts.get("zero_terminated") else b"\n")
    out = tmp_path / "out"
    m = er.sort(inputs, out, partitions=3, memory_per_task=memory, chunk_size="8K", **opts)
    _, parts = _parts(out)
    want = _gnu_sort(gnu, inputs)
    assert b"".join(parts) == want
    assert m["format"] == "lines" and m["items"] == want.count(b"\0" if opts.get("zero_terminated") else b"\n")
    assert (m["external_merges"] > 0) == (memory == "16K")
    assert er.verify(out)["ok"]
    # a part out of the order is caught by verify (by the keys, not bytewise)
    p = next(out / p["name"] for p in m["parts"] if p["items"] > 2)
    data = p.read_bytes()
    eol = b"\0" if opts.get("zero_terminated") else b"\n"
    lines = data.split(eol)[:-1]
    p.write_bytes(eol.join(lines[::-1]) + eol)
    assert not er.verify(out)["ok"]


def test_ordering_options_refused(tmp_path):
    (tmp_path / "a.u32").write_bytes(b"\0" * 8)
    (tmp_path / "a.txt").write_bytes(b"a\n")
    with pytest.raises(EmsortRayError, match="key, unique order text lines .* not format u32"):
        er.sort([tmp_path / "a.u32"], tmp_path / "out", format="u32", key="1", unique=True)
    with pytest.raises(EmsortRayError, match="options '-gn' are incompatible"):
        er.sort([tmp_path / "a.txt"], tmp_path / "out", numeric_sort=True, general_numeric_sort=True)
    with pytest.raises(EmsortRayError, match="field number is zero"):
        er.sort([tmp_path / "a.txt"], tmp_path / "out", key="0")
    with pytest.raises(EmsortRayError, match="needs random_source"):
        er.sort([tmp_path / "a.txt"], tmp_path / "out", key="1,1R")
    assert not (tmp_path / "out").exists()


def test_unknown_ordering_keyword(tmp_path):
    """``emsort.ray.sort`` takes the ordering options as ``**order``: a keyword that is
    not one of them is refused in Python's words, before any work."""
    (tmp_path / "a.txt").write_bytes(b"a\n")
    for fmt in ("lines", "u32"):
        with pytest.raises(TypeError, match=r"^sort\(\) got an unexpected keyword argument 'kye'$"):
            er.sort([tmp_path / "a.txt"], tmp_path / "out", format=fmt, key="1", kye="1")
    assert not (tmp_path / "out").exists()


def test_empty_and_single_partition(cluster, tmp_path):
    empty = _write(tmp_path / "e.u64", np.empty(0, np.uint64))
    out = tmp_path / "out"
    m = er.sort([empty], out, format="u64", partitions=3)
    _, parts = _parts(out)
    assert m["items"] == 0 and parts == [b"", b"", b""]
    inputs = _u32_inputs(tmp_path, sizes=(1000,))
    m = er.sort(inputs, out, format="u32", partitions=1)  # reuses the directory: old parts go
    _check_fixed(out, inputs, "u32")
    assert m["partitions"] == 1


def test_directory_and_glob_inputs(cluster, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    inputs = _u32_inputs(d, sizes=(5000, 6000, 7000))
    out = tmp_path / "out"
    er.sort(d, out, format="u32", partitions=2)
    _check_fixed(out, inputs, "u32")
    er.sort(str(d / "in-*.u32"), tmp_path / "out2", format="u32", partitions=2)
    _check_fixed(tmp_path / "out2", inputs, "u32")


# ---- fault tolerance -----------------------------------------------------------------------


@pytest.mark.parametrize("phase,index,memory", [("merge", 1, "1M"), ("merge", 1, "64K"), ("map", 2, "200K")])
def test_killed_worker_is_retried(cluster, tmp_path, phase, index, memory):
    """The first attempt of one task SIGKILLs its own worker process (a merge in memory
    after writing part of its ``.part-*.tmp``, an external merge after writing its blocks
    to its scratch directory); Ray retries the task and the output is still complete and
    correct, with nothing of the dead attempt left."""
    inputs = _u32_inputs(tmp_path, sizes=(120_000, 80_000))
    marker = tmp_path / "killed"
    out = tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    m = er.sort(inputs, out, format="u32", partitions=4, memory_per_task=memory, scratch_dir=scratch,
                _kill=(phase, index, str(marker)))
    assert marker.exists(), "the kill hook never ran"
    assert marker.read_text().startswith(f"{phase} {index} pid ")
    killed_pid = int(marker.read_text().split()[-1])
    assert not _alive(killed_pid), "the killed worker is still running"
    _check_fixed(out, inputs, "u32")
    assert m["items"] == 200_000 and er.verify(out)["ok"]
    if phase == "merge":
        assert m["external_merges"] == (4 if memory == "64K" else 0)
    assert sorted(os.listdir(out)) == ["_SUCCESS"] + [f"part-{i:05d}" for i in range(4)]
    assert os.listdir(scratch) == []


def test_retries_exhausted_is_an_error(cluster, tmp_path):
    """A job that fails removes what it made: the killed attempt's partial file and
    scratch directory, the parts other merges finished, the output directory it created."""
    inputs = _u32_inputs(tmp_path, sizes=(40_000,))
    marker = tmp_path / "killed"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(EmsortRayError, match="merge task failed"):
        er.sort(inputs, tmp_path / "out", format="u32", partitions=2, max_retries=0, memory_per_task="16K",
                scratch_dir=scratch, _kill=("merge", 0, str(marker)))
    assert marker.exists()
    assert not (tmp_path / "out").exists()
    assert os.listdir(scratch) == []


# ---- interruption, leftovers, verify ----------------------------------------------------------


@pytest.fixture(scope="module")
def big_u32(tmp_path_factory):
    """32 MB of u32: with -p 2 -m 1M, two external merges of about 0.3 s each on 2 CPUs."""
    path = tmp_path_factory.mktemp("big") / "big.u32"
    np.random.default_rng(11).integers(0, 2**32, 8 << 20, dtype=np.uint32).tofile(path)
    return path


def _sort_and_signal(cluster, src, out, scratch, sig, cwd):
    """Runs ``python -m emsort.ray sort`` on the test cluster and sends ``sig`` as soon as a
    merge has made its scratch directory. Returns (returncode, stderr, what was there)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "emsort.ray", "sort", str(src), "-o", str(out), "-f", "u32", "-p", "2", "-m", "1M",
         "--scratch-dir", str(scratch), "--address", cluster],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
    )
    deadline = time.monotonic() + 90
    try:
        while not os.listdir(scratch):
            assert p.poll() is None, f"the sort ended before any merge began: {p.communicate()[1]}"
            assert time.monotonic() < deadline, "no merge began in 90 s"
            time.sleep(0.002)
        seen = (sorted(os.listdir(out)), sorted(os.listdir(scratch)))
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err, seen


@pytest.mark.parametrize("sig,code,existing", [
    pytest.param(signal.SIGINT, 130, True, id="SIGINT-existing-outdir"),
    pytest.param(signal.SIGTERM, 143, False, id="SIGTERM-new-outdir"),
])
def test_interrupted_sort_leaves_nothing(cluster, big_u32, tmp_path, sig, code, existing):
    """Ctrl-C or SIGTERM in the middle of the (external) merges: the command cancels its
    tasks and removes every file and directory the run made, finished parts included;
    what was in the output directory before stays."""
    out = tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("not emsort's")
    rc, err, seen = _sort_and_signal(cluster, big_u32, out, scratch, sig, tmp_path)
    assert rc == code, err
    assert "interrupted" in err and "sorted " not in err, err
    assert ".part-00000.tmp" in seen[0] or ".part-00001.tmp" in seen[0], seen  # it was merging
    if existing:
        assert sorted(os.listdir(out)) == ["notes.txt"]
        assert (out / "notes.txt").read_text() == "not emsort's"
    else:
        assert not out.exists(), os.listdir(out)  # it made the directory: gone too
    assert os.listdir(scratch) == []


def test_killed_sort_is_cleaned_by_the_next_run(cluster, big_u32, tmp_path):
    """SIGKILL of the driver mid-merge (Ray then kills its workers): its temporary files
    and scratch directories stay; the next sort into the same directory with the same
    scratch directory removes them, and its output verifies."""
    out = tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    rc, err, _ = _sort_and_signal(cluster, big_u32, out, scratch, signal.SIGKILL, tmp_path)
    assert rc == -signal.SIGKILL, err
    left = sorted(os.listdir(out))
    assert "._SUCCESS.tmp" in left and "_SUCCESS" not in left, left
    assert any(n.startswith(".part-") for n in left), left
    assert all(n.startswith("emsort-ray-part-0000") for n in os.listdir(scratch)) and os.listdir(scratch)
    m = er.sort(big_u32, out, format="u32", partitions=2, memory_per_task="1M", scratch_dir=scratch)
    assert m["external_merges"] == 2
    assert sorted(os.listdir(out)) == ["_SUCCESS", "part-00000", "part-00001"]
    assert os.listdir(scratch) == []
    assert er.verify(out) == {"ok": True, "items": 8 << 20, "message": "ok"}


def _locked(path, directory=False):
    """A descriptor holding the lock of ``path``, as a live sort holds its files."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY) if directory else os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_rerun_removes_only_what_dead_runs_left(cluster, tmp_path):
    """Planted leftovers: emsort.ray's names whose lock is free go; a scratch directory
    locked by a live process stays, and so does everything not named like ours."""
    inputs = _u32_inputs(tmp_path, sizes=(30_000,))
    out = tmp_path / "out"
    out.mkdir()
    for name in (".part-00003.tmp", "..part-00001.tmp.emsort-4000000-7.tmp", ".part-00000.emsort-4000000-0.tmp",
                 "._SUCCESS.tmp", "part-00007", "_SUCCESS"):
        (out / name).write_bytes(b"left by a killed run")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "emsort-ray-part-00004-deadbeef-abc12345").mkdir()
    (scratch / "emsort-ray-part-00004-deadbeef-abc12345" / "block-000000").write_bytes(b"x" * 100)
    live = scratch / "emsort-ray-part-00005-cafecafe-live0000"
    live.mkdir()
    (live / "block-000000").write_bytes(b"y" * 100)
    (scratch / "notes.txt").write_text("mine")
    (scratch / "emsort-ray-partial").mkdir()
    (scratch / "emsort-ray-part-00006-file").write_text("a file, not a directory we made")
    fd = _locked(live, directory=True)
    try:
        er.sort(inputs, out, format="u32", partitions=2, memory_per_task="16K", scratch_dir=scratch)
        assert sorted(os.listdir(out)) == ["_SUCCESS", "part-00000", "part-00001"]
        assert sorted(os.listdir(scratch)) == [
            "emsort-ray-part-00005-cafecafe-live0000", "emsort-ray-part-00006-file", "emsort-ray-partial", "notes.txt"
        ]
        assert (live / "block-000000").read_bytes() == b"y" * 100
        assert er.verify(out)["ok"]
    finally:
        os.close(fd)
    assert _cleanup.sweep_scratch(str(scratch)) == []  # its owner gone, it goes
    assert sorted(os.listdir(scratch)) == ["emsort-ray-part-00006-file", "emsort-ray-partial", "notes.txt"]


def test_files_of_a_live_sort_are_never_removed(cluster, tmp_path, monkeypatch):
    """A sort whose output directory holds files locked by a running process refuses to
    start (after waiting for them) and removes none of them."""
    inputs = _u32_inputs(tmp_path, sizes=(1000,))
    out = tmp_path / "out"
    out.mkdir()
    fd = _locked(out / "._SUCCESS.tmp")
    try:
        with pytest.raises(EmsortRayError, match=r"another sort is writing into this directory"):
            er.sort(inputs, out, format="u32", partitions=2)
    finally:
        os.close(fd)
    assert os.listdir(out) == ["._SUCCESS.tmp"]
    os.unlink(out / "._SUCCESS.tmp")

    monkeypatch.setattr(_sort, "_LOCK_WAIT_S", 0.3)
    fd = _locked(out / ".part-00001.tmp")
    rust = out / ".part-00001.emsort-123-0.tmp"  # emsort.merge_files' file of that live attempt
    rust.write_bytes(b"being written")
    (out / "part-00000").write_bytes(b"old")
    try:
        with pytest.raises(EmsortRayError, match=r"still locked after 0.3 s: \.part-00001\.emsort-123-0\.tmp, "
                                                 r"\.part-00001\.tmp"):
            er.sort(inputs, out, format="u32", partitions=2)
        assert sorted(os.listdir(out)) == [".part-00001.emsort-123-0.tmp", ".part-00001.tmp", "part-00000"]
    finally:
        os.close(fd)
    # the owner gone, the next run cleans up and sorts
    er.sort(inputs, out, format="u32", partitions=2)
    assert sorted(os.listdir(out)) == ["_SUCCESS", "part-00000", "part-00001"]


def test_lock_race_creator_retries(tmp_path, monkeypatch):
    """A cleaner may remove a fresh file between its creation and its lock: the creator
    notices (the path no longer names the inode it locked) and makes it again; a cleaner
    that finds the entry locked leaves it."""
    path = str(tmp_path / ".part-00000.tmp")
    real = _cleanup._try_flock
    calls = []

    def cleaner_first(fd):
        if not calls:
            os.unlink(path)  # the cleaner won the race
        calls.append(fd)
        return real(fd)

    monkeypatch.setattr(_cleanup, "_try_flock", cleaner_first)
    fd = _cleanup.create_locked(path, wait=1)
    monkeypatch.setattr(_cleanup, "_try_flock", real)
    try:
        assert len(calls) == 2
        assert os.fstat(fd).st_ino == os.stat(path).st_ino
        assert _cleanup.sweep_output(str(tmp_path)) == [".part-00000.tmp"]
        assert os.path.exists(path)
    finally:
        os.close(fd)
    assert _cleanup.sweep_output(str(tmp_path)) == []
    assert os.listdir(tmp_path) == []

    real_mkdtemp = _cleanup.tempfile.mkdtemp
    made = []

    def mkdtemp_then_cleaner(**kw):
        d = real_mkdtemp(**kw)
        made.append(d)
        if len(made) == 1:
            os.rmdir(d)  # removed before its creator could open it
        return d

    monkeypatch.setattr(_cleanup.tempfile, "mkdtemp", mkdtemp_then_cleaner)
    d, dfd = _cleanup.make_scratch_dir(str(tmp_path), "emsort-ray-part-00000-job-")
    try:
        assert len(made) == 2 and d == made[1] and os.listdir(tmp_path) == [os.path.basename(d)]
        assert _cleanup.sweep_scratch(str(tmp_path), job="job", wait=0.1) == [os.path.basename(d)]
    finally:
        os.close(dfd)
    assert _cleanup.sweep_scratch(str(tmp_path)) == [] and os.listdir(tmp_path) == []


def test_verify_fails_on_stray_files_and_missing_manifest(cluster, tmp_path):
    inputs = _u32_inputs(tmp_path, sizes=(20_000,))
    out = tmp_path / "out"
    er.sort(inputs, out, format="u32", partitions=2)
    assert er.verify(out) == {"ok": True, "items": 20_000, "message": "ok"}
    for stray in ("notes.txt", ".part-00001.tmp", "..part-00000.tmp.emsort-77-0.tmp", "part-00002", "sub"):
        if stray == "sub":
            (out / stray).mkdir()
        else:
            (out / stray).write_bytes(b"")
        r = er.verify(out)
        assert not r["ok"] and r["message"].endswith(f"1 file(s) that are not parts listed by the manifest: {stray}"), r
        r = _cli("verify", out, cwd=tmp_path)
        assert r.returncode == 1 and r.stdout.startswith("FAILED") and stray in r.stdout, r.stdout
        (out / stray).rmdir() if stray == "sub" else (out / stray).unlink()
    assert er.verify(out)["ok"]
    (out / "_SUCCESS").unlink()
    r = er.verify(out)
    assert not r["ok"] and "no manifest" in r["message"], r
    r = _cli("verify", out, cwd=tmp_path)
    assert r.returncode == 1 and "no manifest" in r.stdout
    r = er.verify(tmp_path / "nowhere")
    assert not r["ok"] and "no such directory" in r["message"]


# ---- errors and the command line ----------------------------------------------------------


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(EmsortRayError, match="nope.u32: no such file"):
        er.sort([tmp_path / "nope.u32"], tmp_path / "out", format="u32")
    bad = tmp_path / "bad.u64"
    bad.write_bytes(b"x" * 12)
    with pytest.raises(EmsortRayError, match=r"bad.u64: size 12 is not a multiple of the u64 item size \(8"):
        er.sort([bad], tmp_path / "out", format="u64")
    with pytest.raises(EmsortRayError, match="unknown format 'u16'"):
        er.sort([bad], tmp_path / "out", format="u16")
    with pytest.raises(EmsortRayError, match="no file matches"):
        er.sort([str(tmp_path / "*.none")], tmp_path / "out")
    # an input that the sort would remove with the old output: refused, kept
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-00000").write_bytes(b"\x01\x00\x00\x00")
    with pytest.raises(EmsortRayError, match="part-00000: this input is in the output directory"):
        er.sort([out / "part-00000"], out, format="u32")
    with pytest.raises(EmsortRayError, match="part-00000: this input is in the output directory"):
        er.sort(out, out, format="u32")
    assert os.listdir(out) == ["part-00000"]


def _cli(*args, cwd):
    # cwd: not the source tree, whose emsort/ has no compiled extension unless installed editable
    return subprocess.run([sys.executable, "-m", "emsort.ray", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_cli_help_and_bad_input(tmp_path):
    r = _cli("sort", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "--memory-per-task" in r.stdout and "part-00000" in r.stdout
    bad = tmp_path / "bad.u32"
    bad.write_bytes(b"abcdef")
    r = _cli("sort", bad, "-o", tmp_path / "out", "-f", "u32", cwd=tmp_path)
    assert r.returncode == 2 and "bad.u32" in r.stderr and "multiple" in r.stderr
    r = _cli("sort", tmp_path / "missing", "-o", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 2 and "missing: no such file" in r.stderr


def test_cli_sort_on_the_running_cluster(cluster, tmp_path):
    inputs = _u32_inputs(tmp_path, sizes=(30_000, 30_000))
    out = tmp_path / "out"
    r = _cli("sort", *inputs, "-o", out, "-f", "u32", "-p", "3", "-m", "64K", "--address", cluster, "--verify",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "map" in r.stderr and "merge" in r.stderr and "verified: 60000 items" in r.stderr
    _check_fixed(out, inputs, "u32")
    r = _cli("verify", out, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: 60000 items")
    csv = _csv_inputs(tmp_path)
    r = _cli("sort", *csv, "-o", tmp_path / "csv-out", "-t", ",", "-k", "3,3n", "-u", "-p", "2", "--address", cluster,
             "--verify", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert b"".join(p.read_bytes() for p in sorted((tmp_path / "csv-out").glob("part-*"))) == \
        _gnu_sort(["-t,", "-k3,3n", "-u"], csv)
    # a damaged part is caught
    p = out / "part-00001"
    data = bytearray(p.read_bytes())
    data[:4], data[-4:] = data[-4:], data[:4]
    p.write_bytes(bytes(data))
    r = _cli("verify", out, cwd=tmp_path)
    assert r.returncode == 1 and "part-00001" in r.stdout


# ---- CSV records, headers, JSON lines, locales ---------------------------------------------

CSV_HEADER = ["id", "name, first", "amount", "note"]


def _csv_rows(n, seed):
    """Rows whose text holds separators, doubled quotes, newlines and empty fields, amounts
    with ties (integers, decimals, empty, not a number)."""
    rng = np.random.default_rng(seed)
    text = lambda: "".join(rng.choice(list('ab, "\nzé')) for _ in range(rng.integers(0, 7)))
    amount = lambda: rng.choice([str(rng.integers(-20, 20)), f"{rng.integers(-20, 20)}.5", "", "x"])
    return [[str(i), text(), amount(), text() * int(rng.integers(0, 3))] for i in range(n)]


def _record(row, eol):
    b = io.StringIO()
    csv.writer(b, lineterminator=eol).writerow(row)
    return b.getvalue().encode()


def _csv_files(tmp_path, rows, splits=(0.45, 0.2, 0.35), header=True):
    """The rows written in files (the second with CRLF, the last without its final newline),
    each with the header; their raw records (each ended by LF, as the sort writes them), in
    input order. Each file read back by Python's csv module gives its rows."""
    paths, raw, at = [], [], 0
    for i, share in enumerate(splits):
        n = len(rows) - at if i == len(splits) - 1 else int(len(rows) * share)
        chunk, at = rows[at : at + n], at + n
        eol = "\r\n" if i == 1 else "\n"
        recs = [_record(r, eol) for r in chunk]
        data = (_record(CSV_HEADER, eol) if header else b"") + b"".join(recs)
        if i == len(splits) - 1 and data.endswith(b"\n"):
            data = data[:-1]
        p = tmp_path / f"in-{i}.csv"
        p.write_bytes(data)
        parsed = list(csv.reader(io.StringIO(data.decode(), newline="")))
        assert parsed == ([CSV_HEADER] if header else []) + chunk
        paths.append(p)
        raw += [r if r.endswith(b"\n") else r + b"\n" for r in recs]
    return paths, raw


def _gnu_n(s):
    """GNU sort -n's value of a field: its leading number, 0 for none."""
    m = re.match(r"[ \t]*(-?)(\d*)(?:\.(\d*))?", s)
    digits = (m.group(2) or "") + "." + (m.group(3) or "")
    v = float(digits) if digits != "." else 0.0
    return -v if m.group(1) and v else v


def _parts_without_header(out, header):
    """The parts' records concatenated; each part starts with ``header`` (bytes)."""
    m, parts = _parts(out)
    assert bytes.fromhex(m["header"]) == header
    for p in parts:
        assert p.startswith(header), p[:80]
    return m, b"".join(p[len(header) :] for p in parts)


@pytest.mark.parametrize("opts,want_key,reverse,unique", [
    (dict(key="3,3n"), lambda r: _gnu_n(r[2]), False, False),
    (dict(key=["amount:n"]), lambda r: _gnu_n(r[2]), False, False),
    (dict(key="name, first"), lambda r: r[1].encode(), True, False),
    (dict(key=["3,3n"]), lambda r: _gnu_n(r[2]), False, True),
    # a key with modifiers of its own takes no global flag: "amount:nr" is reversed by its own r
    (dict(key=["amount:nr", "2,2"]), lambda r: (_gnu_n(r[2]), r[1].encode()), True, True),
])
def test_csv_with_header_against_python_csv(cluster, tmp_path, opts, want_key, reverse, unique):
    """CSV records cut near quoted newlines by 1 KiB chunks, three files (one CRLF, one
    without its last newline): the parts, each starting with the header, hold the records of
    a stable ``sorted`` by Python's parse of the fields, byte for byte."""
    rows = _csv_rows(1500, 3)
    paths, raw = _csv_files(tmp_path, rows)
    out = tmp_path / "out"
    m = er.sort(paths, out, csv=True, header=True, stable=True, reverse=reverse, unique=unique,
                partitions=3, memory_per_task="64K", chunk_size="1K", **opts)
    order = sorted(range(len(rows)), key=lambda i: want_key(rows[i]), reverse=reverse)
    if unique:
        kept, last = [], object()
        for i in order:
            k = want_key(rows[i])
            if k != last:
                kept.append(i)
            last = k
        order = kept
    header = _record(CSV_HEADER, "\n")
    got_m, got = _parts_without_header(out, header)
    assert got == b"".join(raw[i] for i in order)
    assert m["items"] == len(order) and m["map_tasks"] > 20
    assert er.verify(out) == {"ok": True, "items": len(order), "message": "ok"}
    shutil.rmtree(out)


def test_csv_without_stable_and_external_merges_against_emsort(cluster, tmp_path):
    """Last-resort comparisons and external merges (blocks above 16 KiB): the parts are what
    emsort.sort writes on one machine for the same input, header once there."""
    rows = _csv_rows(6000, 4)
    paths, _ = _csv_files(tmp_path, rows, splits=(0.5, 0.5))
    # LF only: a CRLF record's CR would take part in the last-resort comparison
    paths[1].write_bytes(paths[1].read_bytes().replace(b"\r\n", b"\n") + b"\n")
    header = _record(CSV_HEADER, "\n")
    cat = tmp_path / "cat.csv"
    cat.write_bytes(paths[0].read_bytes() + paths[1].read_bytes()[len(header):])
    for opts in (dict(key="3,3n"), dict(key="2,2", reverse=True), dict(key="amount", unique=True)):
        out = tmp_path / "out"
        m = er.sort(paths, out, csv=True, header=True, partitions=2, memory_per_task="16K", chunk_size="8K", **opts)
        assert m["external_merges"] > 0 or opts.get("unique")  # the maps leave a few unique lines
        _, got = _parts_without_header(out, header)
        one = tmp_path / "one.csv"
        emsort.sort(cat, one, csv=True, header=True, **opts)
        assert header + got == one.read_bytes()
        assert er.verify(out)["ok"]


def test_csv_without_header_and_record_spans(cluster, tmp_path):
    """No header: the parts are plain CSV; ``LineOrder.record_spans`` answers every offset
    with the record Python's csv module found there."""
    rows = _csv_rows(800, 5)
    paths, raw = _csv_files(tmp_path, rows, splits=(1.0,), header=False)
    data = paths[0].read_bytes()
    starts, at = [], 0
    for r in raw:
        starts.append(at)
        at += len(r)
    lo = emsort.LineOrder(csv=True)
    offsets = list(range(len(data) + 2))
    spans = lo.record_spans(paths[0], offsets)
    for o, (s, e) in zip(offsets, spans):
        i = bisect.bisect_left(starts, o)
        want = (starts[i], starts[i + 1] if i + 1 < len(starts) else len(data)) if i < len(starts) else (len(data),) * 2
        assert (s, e) == want, o
    assert lo.count(data) == len(rows)
    out = tmp_path / "out"
    m = er.sort(paths, out, csv=True, key="1,1n", partitions=2, chunk_size="512")
    _, parts = _parts(out)
    assert b"".join(parts) == b"".join(raw) and m["header"] is None
    assert er.verify(out)["ok"]


def test_csv_header_mismatch_names_the_file(cluster, tmp_path):
    rows = _csv_rows(300, 6)
    paths, _ = _csv_files(tmp_path, rows, splits=(0.5, 0.5))
    bad = tmp_path / "in-1.csv"
    bad.write_bytes(b'id,"name, first",amount,NOTE\r\n' + bad.read_bytes().split(b"\r\n", 1)[1])
    out = tmp_path / "out"
    with pytest.raises(EmsortRayError, match=r"in-1\.csv: its header differs from the first input's .*in-0\.csv"):
        er.sort(paths, out, csv=True, header=True, key="amount:n")
    assert not out.exists()
    out.mkdir()
    with pytest.raises(EmsortRayError, match=r"in-1\.csv: its header differs"):
        er.sort(paths, out, csv=True, header=True)
    assert os.listdir(out) == []
    with pytest.raises(EmsortRayError, match="amout"):
        er.sort(paths[:1], out, csv=True, header=True, key="amout:n")
    r = _cli("sort", *paths, "-o", out, "--csv", "--header", cwd=tmp_path)
    assert r.returncode == 2 and "in-1.csv: its header differs" in r.stderr, r.stderr
    assert os.listdir(out) == []


def test_header_with_plain_lines_and_empty_parts(cluster, tmp_path):
    """``header`` without ``csv``: the first line; an empty part holds the header alone."""
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_bytes(b"name\nb\na\nc\n")
    b.write_bytes(b"name\r\nd\n")
    out = tmp_path / "out"
    m = er.sort([a, b], out, header=True, partitions=4, chunk_size="4")
    _, got = _parts_without_header(out, b"name\n")
    assert got == b"a\nb\nc\nd\n" and m["items"] == 4
    assert er.verify(out)["ok"]


def test_jsonl_against_python(cluster, tmp_path):
    """JSON lines need no scan (a JSON string holds no raw newline): by a path, stable, as
    Python's sort of the parsed values (jq's order for strings and numbers)."""
    rng = np.random.default_rng(8)
    recs = [{"id": i, "ts": int(rng.integers(0, 50)), "user": "".join(rng.choice(list("abé\n\"Z"), 3))}
            for i in range(3000)]
    lines = [json.dumps(r, ensure_ascii=bool(i % 2)).encode() for i, r in enumerate(recs)]
    p = tmp_path / "in.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    for key, want in ((".ts:n", lambda r: r["ts"]), (".user", lambda r: r["user"])):
        out = tmp_path / "out"
        er.sort([p], out, jsonl=True, key=key, stable=True, partitions=3, chunk_size="4K")
        _, parts = _parts(out)
        order = sorted(range(len(recs)), key=lambda i: want(recs[i]))
        assert b"".join(parts) == b"".join(lines[i] + b"\n" for i in order)
        assert er.verify(out)["ok"]
    if shutil.which("jq"):
        jq = subprocess.run(["jq", "-c", "-s", "sort_by(.user) | .[] | .id"], input=p.read_bytes(),
                            capture_output=True, check=True).stdout.split()
        assert [json.loads(x)["id"] for x in b"".join(parts).splitlines()] == [int(x) for x in jq]


def _have_locale(name):
    norm = name.lower().replace("utf-8", "utf8")
    have = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower().split()
    return norm in have


@pytest.mark.skipif(not _have_locale("sv_SE.UTF-8"), reason="sv_SE.UTF-8 not generated")
def test_locale_against_gnu_sort(cluster, tmp_path):
    """``locale`` reaches the tasks: the parts are ``LC_ALL=sv_SE.UTF-8 sort``'s output."""
    rng = np.random.default_rng(9)
    alphabet = list("aAbBzZåÅäÄöÖéÉ -")
    words = ["".join(rng.choice(alphabet, int(rng.integers(1, 8)))) + "," + str(rng.integers(0, 9))
             for _ in range(4000)]
    p = tmp_path / "words.txt"
    p.write_bytes("\n".join(words).encode() + b"\n")
    for opts, gnu in ((dict(), []), (dict(key="1,1", field_separator=",", ignore_case=True), ["-t,", "-k1,1", "-f"])):
        out = tmp_path / "out"
        m = er.sort([p], out, locale="sv_SE.UTF-8", partitions=3, chunk_size="8K", **opts)
        _, parts = _parts(out)
        want = subprocess.run(["sort", *gnu, str(p)], env={"LC_ALL": "sv_SE.UTF-8"}, capture_output=True,
                              check=True).stdout
        assert b"".join(parts) == want
        assert m["order"]["locale"] == "sv_SE.UTF-8" and er.verify(out)["ok"]
    with pytest.raises(EmsortRayError, match="xx_YY.UTF-8"):
        er.sort([p], tmp_path / "bad", locale="xx_YY.UTF-8")


def test_csv_ending_inside_quotes_is_refused(cluster, tmp_path):
    """A quote never closed: the scan reads to the end and names the file and the line the
    record starts on, as emsort.sort does; nothing is left."""
    p = tmp_path / "open.csv"
    p.write_bytes(b"h\n" + b"a,b\n" * 500 + b'c,"d\ne\n' + b"f\n" * 10)
    with pytest.raises(emsort.EmsortError, match=r"open\.csv:502: a quoted field has no closing quote"):
        emsort.LineOrder(csv=True).record_spans(p, [0, p.stat().st_size])
    out = tmp_path / "out"
    with pytest.raises(EmsortRayError, match=r"open\.csv:502: a quoted field has no closing quote"):
        er.sort([p], out, csv=True, header=True, chunk_size="1K")
    assert not out.exists()


def test_cli_csv_header_locale(cluster, tmp_path):
    rows = _csv_rows(1000, 7)
    paths, raw = _csv_files(tmp_path, rows, splits=(0.5, 0.5))
    out = tmp_path / "out"
    r = _cli("sort", *paths, "-o", out, "--csv", "--header", "-k", "amount:n", "-s", "-p", "2", "--chunk-size", "2K",
             "--locale", "C", "--address", cluster, "--verify", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    _, got = _parts_without_header(out, _record(CSV_HEADER, "\n"))
    assert got == b"".join(raw[i] for i in sorted(range(len(rows)), key=lambda i: _gnu_n(rows[i][2])))
    r = _cli("verify", out, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: 1000 items"), r.stdout
