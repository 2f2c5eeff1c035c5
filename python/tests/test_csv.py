"""CSV records and headers in the Python API (issue 41): ``csv=True`` and ``header=True``
as ``emsort sort --csv --header`` takes them, checked against Python's own ``csv`` module
and a stable sort, with budgets small enough for runs and merges.

Run after ``pip install './python[test]'``: ``pytest python/tests/test_csv.py``.
"""

import csv
import io
import random

import pytest

import emsort

HEADER = ["id", "name, first", "amount"]


def rows(n, seed):
    """Rows whose text holds separators, quotes and newlines; amounts with ties."""
    rng = random.Random(seed)
    text = lambda: "".join(rng.choice('ab, "\nzé') for _ in range(rng.randint(0, 6)))
    return [[str(i), text(), str(rng.randint(-20, 20))] for i in range(n)]


def written(rs):
    b = io.StringIO()
    csv.writer(b, lineterminator="\n").writerows(rs)
    return b.getvalue().encode()


@pytest.fixture
def data(tmp_path):
    rs = rows(3000, 5)
    path = tmp_path / "in.csv"
    path.write_bytes(written([HEADER] + rs))
    return path, rs


@pytest.mark.parametrize("key", ["amount:n", "3,3n"])
def test_sort_with_a_header_by_a_named_or_numbered_column(tmp_path, data, key):
    path, rs = data
    out = tmp_path / "out.csv"
    emsort.sort(path, out, csv=True, header=True, key=key, stable=True, memory="64K", block_size="4K")
    want = written([HEADER] + sorted(rs, key=lambda r: int(r[2])))
    assert out.read_bytes() == want


def test_merge_files_drops_the_later_headers(tmp_path, data):
    _, rs = data
    halves = [sorted(rs[h::2], key=lambda r: r[1].encode()) for h in (0, 1)]
    paths = []
    for i, h in enumerate(halves):
        paths.append(tmp_path / f"half{i}.csv")
        paths[-1].write_bytes(written([HEADER] + h))
    out = tmp_path / "out.csv"
    emsort.merge_files(paths, out, csv=True, header=True, key="name, first", stable=True)
    assert out.read_bytes() == written([HEADER] + sorted(halves[0] + halves[1], key=lambda r: r[1].encode()))


def test_sorter_yields_whole_records_after_its_header(data):
    path, rs = data
    with emsort.Sorter(csv=True, header=True, key="3,3n", stable=True, memory="64K") as s:
        blob = path.read_bytes()
        for i in range(0, len(blob), 1000):
            s.push(blob[i:i + 1000])
        got = [rec for block in s.finish() for rec in block]
    want = [written([r])[:-1] for r in [HEADER] + sorted(rs, key=lambda r: int(r[2]))]
    assert got == want


def test_a_named_column_needs_a_file_and_must_exist(tmp_path, data):
    path, _ = data
    with pytest.raises(ValueError, match="no column 'amt'"):
        emsort.sort(path, tmp_path / "out", csv=True, header=True, key="amt:n")
    with pytest.raises(ValueError, match="names a column"):
        emsort.Sorter(csv=True, header=True, key="amount")
    assert not (tmp_path / "out").exists()


def test_line_order_sorts_and_partitions_records(data):
    _, rs = data
    lo = emsort.LineOrder(csv=True, key="3,3n", stable=True)
    blob = written(rs)
    got = lo.sort(blob)
    by_amount = sorted(rs, key=lambda r: int(r[2]))
    assert got == written(by_amount)
    # Where the records of amount >= 0 start.
    (p,) = lo.partition_points(got, [b"x,y,0"])
    assert got[p:] == written([r for r in by_amount if int(r[2]) >= 0])


def test_gen_csv_export_sorts_by_its_named_columns(tmp_path):
    path, out = tmp_path / "export.csv", tmp_path / "out.csv"
    emsort.gen(path, format="csv-export", count=5000, seed=3)
    with open(path, newline="") as f:
        header, *rs = list(csv.reader(f))
    assert header == ["id", "name", "city", "amount", "date", "note"] and len(rs) == 5000
    assert any("\n" in r[5] for r in rs) and all(len(r) == 6 for r in rs)
    emsort.sort(path, out, csv=True, header=True, key=["name", "amount:nr"], stable=True, memory="128K")
    with open(out, newline="") as f:
        assert list(csv.reader(f)) == [header] + sorted(rs, key=lambda r: (r[1].encode(), -float(r[3])))
