"""Parquet tables and Ray Datasets sorted on a local Ray cluster (2 CPUs) by emsort.ray
(issue 42, point 3): the parts in name order hold the rows DuckDB's ``ORDER BY`` gives
over all the inputs (ties by input position: emsort's sort of tables is stable), each
part a Parquet file with ``sorting_columns``; inputs through ``pyarrow.fs``; a worker
killed mid-job; nothing left behind.
"""

import json
import os

import pytest

ray = pytest.importorskip("ray")
duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
import pyarrow.compute as pc  # noqa: E402
import pyarrow.fs as pafs  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import emsort  # noqa: E402
import emsort.ray as er  # noqa: E402
from emsort.ray import EmsortRayError  # noqa: E402
from test_table import table  # noqa: E402


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Three Parquet files of one table's rows (several row groups each, one file empty),
    and the table."""
    d = tmp_path_factory.mktemp("ray-tables")
    t = table(6000, 7)
    paths = []
    for i, (a, b, groups) in enumerate([(0, 3500, 500), (3500, 3500, 100), (3500, 6000, 900)]):
        p = d / f"in-{i}.parquet"
        pq.write_table(t.slice(a, b - a), p, row_group_size=groups)
        paths.append(p)
    return paths, t


def duckdb_order(paths, order_by, where=""):
    """DuckDB's ids of the rows of ``paths`` (in order) by ``order_by``, ties by input
    position."""
    con = duckdb.connect()
    con.execute("SET threads=1")
    files = ", ".join(f"'{p}'" for p in paths)
    q = (f"SELECT id FROM (SELECT *, row_number() OVER () AS rn FROM read_parquet([{files}])) {where} "
         f"ORDER BY {order_by}, rn")
    return [r[0] for r in con.execute(q).fetchall()]


def part_ids(out, partitions):
    """The ids of the parts' rows in order; checks the listing: the parts, the manifest,
    nothing else."""
    names = [f"part-{i:05d}.parquet" for i in range(partitions)]
    assert sorted(os.listdir(out)) == ["_SUCCESS"] + names
    ids = []
    for n in names:
        ids.extend(pq.read_table(out / n).column("id").to_pylist())
    return ids


CASES = [
    (["int"], "int NULLS LAST"),
    (["text:desc,nulls_first", "int"], "text DESC NULLS FIRST, int NULLS LAST"),
    (["color:nulls_first", "ts:desc"], "color NULLS FIRST, ts DESC NULLS LAST"),
    (["amount", "day:desc"], "amount NULLS LAST, day DESC NULLS LAST"),
]


@pytest.mark.parametrize("keys,order_by", CASES)
def test_parquet_on_ray_orders_as_duckdb(cluster, inputs, tmp_path, keys, order_by):
    """Three key ranges, merges beyond their 128 KiB (emsort spills), map chunks of a few
    row groups: the parts in order are DuckDB's rows, each part sorted with its footer's
    sorting_columns, the manifest and verify agree."""
    paths, t = inputs
    out = tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    m = er.sort([str(p) for p in paths], out, key=keys, partitions=3, memory_per_task="128K",
                chunk_size="64K", scratch_dir=scratch)
    assert part_ids(out, 3) == duckdb_order(paths, order_by)
    assert m["format"] == "parquet" and m["rows"] == t.num_rows and m["map_tasks"] > 3
    assert m["external_merges"] >= 1
    assert sum(p["rows"] for p in m["parts"]) == t.num_rows and all(p["rows"] for p in m["parts"])
    names = t.schema.names
    first = emsort.parse_table_key(keys[0])
    sc = pq.ParquetFile(out / "part-00001.parquet").metadata.row_group(0).sorting_columns
    assert (sc[0].column_index, sc[0].descending, sc[0].nulls_first) == (names.index(first[0]), first[1], first[2])
    got = pq.read_table(out / "part-00000.parquet")
    assert got.schema.equals(t.schema), (got.schema, t.schema)
    assert er.verify(out) == {"ok": True, "items": t.num_rows, "message": "ok"}
    assert os.listdir(scratch) == []


def test_unique_and_reverse_as_one_machines_sort(cluster, inputs, tmp_path):
    """``unique`` keeps the first row of each key in input order across all inputs,
    ``reverse`` flips every key: the parts together are what emsort.sort writes for the
    same table on one machine (itself checked against pyarrow in test_table)."""
    paths, t = inputs
    whole = tmp_path / "whole.parquet"
    pq.write_table(t, whole, row_group_size=1000)
    one = tmp_path / "one.parquet"
    emsort.sort(whole, one, key=["color", "flag"], unique=True, reverse=True, memory="1M")
    out = tmp_path / "out"
    m = er.sort([str(p) for p in paths], out, key=["color", "flag"], unique=True, reverse=True,
                partitions=2, memory_per_task="1M")
    assert part_ids(out, 2) == pq.read_table(one).column("id").to_pylist()
    assert m["rows"] == pq.ParquetFile(one).metadata.num_rows < t.num_rows
    assert er.verify(out)["ok"]


def test_every_column_and_a_pyarrow_file_system(cluster, inputs, tmp_path):
    """No key: every column in order (DuckDB's ORDER BY of each, ``id`` last so that the
    other columns decide). Inputs read through a pyarrow file system (a SubTreeFileSystem
    over their directory, paths relative to it) and through ``file://`` URIs."""
    paths, t = inputs
    cols = [c for c in t.schema.names if c not in ("id", "tags")] + ["id"]
    src = tmp_path / "src"
    src.mkdir()
    mine = []
    for p in paths:
        q = src / p.name
        pq.write_table(pq.read_table(p).select(cols), q, row_group_size=400)
        mine.append(q)
    base = pafs.SubTreeFileSystem(str(src), pafs.LocalFileSystem())
    out = tmp_path / "out"
    m = er.sort([q.name for q in mine], out, filesystem=base, partitions=2, memory_per_task="512K",
                format="parquet")
    assert part_ids(out, 2) == duckdb_order(mine, ", ".join(f"{c} NULLS LAST" for c in cols))
    assert [i["filesystem"] for i in m["inputs"]] == ["SubTreeFileSystem"] * 3
    out2 = tmp_path / "out2"
    er.sort([f"file://{p}" for p in paths], out2, key="int", partitions=2, memory_per_task="512K")
    assert part_ids(out2, 2) == duckdb_order(paths, "int NULLS LAST")


def test_a_directory_of_parquet_files_is_a_table_input(cluster, inputs, tmp_path):
    """A directory whose files are Parquet is sorted as tables without ``format=`` (its
    files in name order, a hidden or ``_``-named file aside); one holding anything else is
    not taken for tables."""
    paths, t = inputs
    src = tmp_path / "dataset"
    src.mkdir()
    for p in paths:
        (src / p.name).write_bytes(p.read_bytes())
    (src / "_SUCCESS").write_text("")
    (src / ".hidden").write_text("x")
    out = tmp_path / "out"
    m = er.sort(str(src), out, key=["color:nulls_first", "ts:desc"], partitions=2, memory_per_task="512K")
    assert m["format"] == "parquet"
    assert part_ids(out, 2) == duckdb_order(paths, "color NULLS FIRST, ts DESC NULLS LAST")
    (src / "notes.txt").write_text("b\na\n")
    assert not er._table.is_table_input(str(src))


def test_a_dead_drivers_shuffle_is_removed_by_the_next_sort(cluster, inputs, tmp_path):
    """A shuffle directory whose driver is gone (its lock free) is removed by the next
    sort into that output directory; the sort's own shuffle is gone when it ends."""
    paths, _ = inputs
    out = tmp_path / "out"
    stale = out / ".emsort-shuffle-0badcafe-x1y2z3"
    stale.mkdir(parents=True)
    (stale / "m000000-r000000-00000000.arrow").write_bytes(b"ARROW1")
    er.sort([str(p) for p in paths], out, key="int", partitions=2, memory_per_task="512K")
    assert part_ids(out, 2) == duckdb_order(paths, "int NULLS LAST")


@pytest.mark.parametrize("phase,index", [("map", 1), ("merge", 1)])
def test_killed_worker_is_retried(cluster, inputs, tmp_path, phase, index):
    """The first attempt of one task SIGKILLs its worker (a map after writing one of its
    files, a merge after writing part of its ``.part-*.tmp``); Ray retries it and the output is complete and correct, with nothing
    of the dead attempt left."""
    paths, _ = inputs
    marker = tmp_path / "killed"
    out = tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    er.sort([str(p) for p in paths], out, key="float:desc", partitions=3, memory_per_task="256K",
            chunk_size="64K", scratch_dir=scratch, _kill=(phase, index, str(marker)))
    assert marker.read_text().startswith(f"{phase} {index} pid ")
    assert part_ids(out, 3) == duckdb_order(paths, "float DESC NULLS LAST")
    assert er.verify(out)["ok"]
    assert os.listdir(scratch) == []


def test_failed_job_leaves_nothing(cluster, inputs, tmp_path):
    """A merge whose retries run out: the job fails and removes all it made."""
    paths, _ = inputs
    marker = tmp_path / "killed"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(EmsortRayError, match="merge task failed"):
        er.sort([str(p) for p in paths], tmp_path / "out", key="int", partitions=2, max_retries=0,
                memory_per_task="128K", scratch_dir=scratch, _kill=("merge", 0, str(marker)))
    assert marker.exists()
    assert not (tmp_path / "out").exists()
    assert os.listdir(scratch) == []


def test_bad_inputs_and_keys_name_them(cluster, inputs, tmp_path):
    paths, t = inputs
    with pytest.raises(EmsortRayError, match="nope: no such column"):
        er.sort([str(paths[0])], tmp_path / "o1", key="nope")
    with pytest.raises(EmsortRayError, match="numeric_sort orders text lines"):
        er.sort([str(paths[0])], tmp_path / "o2", key="int", numeric_sort=True)
    with pytest.raises(EmsortRayError, match="unknown modifier"):
        er.sort([str(paths[0])], tmp_path / "o3", key="int:sideways")
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"not parquet\n")
    with pytest.raises(EmsortRayError, match="fake.parquet: not a Parquet file"):
        er.sort([str(paths[0]), str(fake)], tmp_path / "o4", key="int")
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), other)
    with pytest.raises(EmsortRayError, match="other.parquet: its columns differ"):
        er.sort([str(paths[0]), str(other)], tmp_path / "o5", key="id")
    with pytest.raises(EmsortRayError, match="missing.parquet: no such file"):
        er.sort([str(tmp_path / "missing.parquet")], tmp_path / "o6")
    for n in ("o1", "o2", "o3", "o4", "o5", "o6"):
        assert not (tmp_path / n).exists()


def test_sort_dataset_returns_the_sorted_rows(cluster, inputs, tmp_path):
    """A Dataset in (read from the Parquet files, with a column added by map_batches), a
    Dataset out over the sorted parts: its rows in order are DuckDB's; the staging files
    are gone."""
    paths, t = inputs
    ds = ray.data.read_parquet([str(p) for p in paths]).map_batches(
        lambda b: b.append_column("twice", pc.multiply(b.column("id"), 2)), batch_format="pyarrow"
    )
    out = tmp_path / "sorted"
    got = er.sort_dataset(ds, key=["text", "id:desc"], output_dir=out, partitions=3, memory_per_task="512K")
    rows = got.take_all()
    assert [r["id"] for r in rows] == duckdb_order(paths, "text NULLS LAST, id DESC NULLS LAST")
    assert all(r["twice"] == 2 * r["id"] for r in rows)
    assert sorted(os.listdir(tmp_path)) == ["sorted"]
    assert json.loads((out / "_SUCCESS").read_text())["partitions"] == 3
    assert er.verify(out)["ok"]


@pytest.mark.parametrize("phase", ["map", "merge"])
def test_sort_dataset_with_a_worker_killed(cluster, inputs, tmp_path, phase):
    """The Dataset path with the first attempt of one task killed (SIGKILL of its worker):
    Ray retries it; the Dataset out holds DuckDB's rows in order, nothing else is left."""
    paths, _ = inputs
    marker = tmp_path / "killed"
    out = tmp_path / "sorted"
    ds = ray.data.read_parquet([str(p) for p in paths])
    got = er.sort_dataset(ds, key=["float:desc", "id"], output_dir=out, partitions=3, memory_per_task="256K",
                          chunk_size="64K", _kill=(phase, 1, str(marker)))
    assert marker.read_text().startswith(f"{phase} 1 pid ")
    assert [r["id"] for r in got.take_all()] == duckdb_order(paths, "float DESC NULLS LAST, id")
    assert sorted(os.listdir(tmp_path)) == ["killed", "sorted"]
    assert er.verify(out)["ok"]


def test_command_line_sorts_parquet(cluster, inputs, tmp_path):
    """``python -m emsort.ray sort *.parquet -k …``: the parts in DuckDB's order, verified;
    a key naming no column and a missing input are bad input (exit 2, named); a damaged
    part fails ``verify`` (exit 1, named)."""
    import subprocess
    import sys

    paths, t = inputs

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "emsort.ray", *map(str, args)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)

    out = tmp_path / "out"
    r = cli("sort", *paths, "-o", out, "-k", "amount:desc,nulls_first", "-k", "id", "-p", "2", "-m", "256K",
            "--compression", "zstd", "--address", cluster, "--verify")
    assert r.returncode == 0, r.stderr
    assert f"verified: {t.num_rows} items" in r.stderr
    assert part_ids(out, 2) == duckdb_order(paths, "amount DESC NULLS FIRST, id")
    assert pq.ParquetFile(out / "part-00000.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    r = cli("sort", paths[0], "-o", tmp_path / "o2", "-k", "nope", "--address", cluster)
    assert r.returncode == 2 and "nope: no such column" in r.stderr, r.stderr
    r = cli("sort", tmp_path / "missing.parquet", "-o", tmp_path / "o3")
    assert r.returncode == 2 and "missing.parquet: no such file" in r.stderr, r.stderr
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o3").exists()
    # Part 1's rows reversed: out of order.
    p = out / "part-00001.parquet"
    pq.write_table(pq.read_table(p).take(list(range(pq.ParquetFile(p).metadata.num_rows - 1, -1, -1))), p)
    r = cli("verify", out)
    assert r.returncode == 1 and "part-00001.parquet" in r.stdout, r.stdout


def test_interrupted_sort_leaves_nothing(cluster, tmp_path):
    """Ctrl-C (SIGINT) to ``python -m emsort.ray sort`` of Parquet while its merges run:
    exit 130, and nothing of the run is left — no output directory (it made it), no
    scratch directory, no temporary part."""
    import signal
    import subprocess
    import sys
    import time

    big = tmp_path / "big.parquet"
    t = table(6000, 3)
    pq.write_table(pa.concat_tables([t] * 25), big, row_group_size=5000)  # 150,000 rows
    out = tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    p = subprocess.Popen(
        [sys.executable, "-m", "emsort.ray", "sort", str(big), "-o", str(out), "-k", "text", "-k", "ts:desc",
         "-p", "2", "-m", "256K", "--scratch-dir", str(scratch), "--address", cluster],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    deadline = time.monotonic() + 90
    try:
        while not os.listdir(scratch):
            assert p.poll() is None, f"the sort ended before any merge began: {p.communicate()[1]}"
            assert time.monotonic() < deadline, "no merge began in 90 s"
            time.sleep(0.002)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "interrupted" in err
    assert not out.exists(), os.listdir(out)
    assert os.listdir(scratch) == []
