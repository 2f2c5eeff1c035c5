"""Parquet and Arrow files sorted by columns (issue 42): ``emsort.sort("in.parquet",
"out.parquet", key=[...])`` against DuckDB's ``ORDER BY`` (ties broken by input position,
since emsort's table sort is stable) and pyarrow's ``sort_by``, on generated tables with
every kind of key column, nulls and several row groups, at budgets small enough for runs
and merges.

Run after ``pip install './python[test]'``: ``pytest python/tests/test_table.py``.
"""

import datetime
import decimal
import math
import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import emsort


def table(n, seed):
    """A table of ``n`` rows: integers, floats (with infinities, no -0.0 and no NaN, whose
    order DuckDB and Arrow agree on), text with repeats, a dictionary column, timestamps with
    a time zone, decimals, booleans, dates, and a list carried along; about 10 % nulls."""
    rng = random.Random(seed)
    maybe = lambda v: None if rng.random() < 0.1 else v
    floats = [math.inf, -math.inf, 0.0, 1.5, -2.25, 1e300, -1e-300, 7.0]
    words = ["", "a", "ab", "b", "Zed", "zed", "é", "ä", "a\nb", "longer text than sixteen bytes"]
    utc = datetime.timezone.utc
    cols = {
        "id": pa.array(range(n), pa.int64()),
        "int": pa.array([maybe(rng.randint(-25, 25)) for _ in range(n)], pa.int64()),
        "float": pa.array([maybe(rng.choice(floats)) for _ in range(n)], pa.float64()),
        "text": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.string()),
        "color": pa.array([maybe(rng.choice(["red", "green", "blue", "Blue"])) for _ in range(n)]).dictionary_encode(),
        "ts": pa.array(
            [maybe(datetime.datetime(2024, 1, 1, tzinfo=utc) + datetime.timedelta(seconds=rng.randint(0, 999) * 3600)) for _ in range(n)],
            pa.timestamp("us", tz="Europe/Paris"),
        ),
        "amount": pa.array([maybe(decimal.Decimal(rng.randint(-1000, 1000)) / 100) for _ in range(n)], pa.decimal128(10, 2)),
        "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 60)) for _ in range(n)], pa.date32()),
        "tags": pa.array([maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 3))]) for _ in range(n)], pa.list_(pa.int32())),
    }
    return pa.table(cols)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    t = table(5000, 42)
    path = d / "in.parquet"
    pq.write_table(t, path, row_group_size=700)
    return path, t


def duckdb_order(path, order_by):
    """DuckDB's rows of ``path`` by ``order_by``, ties by input position."""
    con = duckdb.connect()
    con.execute("SET threads=1")
    q = f"SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER () AS rn FROM read_parquet('{path}')) ORDER BY {order_by}, rn"
    return con.execute(q).fetchall()


def rows_of(path):
    return duckdb.connect().execute(f"SELECT * FROM read_parquet('{path}')").fetchall()


CASES = [
    (["int"], "int NULLS LAST"),
    (["float:desc,nulls_first"], "float DESC NULLS FIRST"),
    (["text", "int:desc"], "text NULLS LAST, int DESC NULLS LAST"),
    (["color:nulls_first", "ts:desc"], "color NULLS FIRST, ts DESC NULLS LAST"),
    (["amount"], "amount NULLS LAST"),
    (["flag", "day:desc", "text"], "flag NULLS LAST, day DESC NULLS LAST, text NULLS LAST"),
    (["ts"], "ts NULLS LAST"),
]


@pytest.mark.parametrize("keys,order_by", CASES)
def test_parquet_orders_as_duckdb(data, tmp_path, keys, order_by):
    src, t = data
    out = tmp_path / "out.parquet"
    stats = emsort.sort(src, out, key=keys, memory="192K", temp_dirs=[tmp_path])
    assert stats["runs"] > 2 and stats["rows_in"] == stats["rows_out"] == t.num_rows
    assert rows_of(out) == duckdb_order(src, order_by)
    got = pq.read_table(out)
    assert got.schema.equals(t.schema), (got.schema, t.schema)
    md = pq.ParquetFile(out).metadata
    assert md.row_group(0).num_rows == 700
    assert md.row_group(0).column(0).compression == pq.ParquetFile(src).metadata.row_group(0).column(0).compression
    assert list(tmp_path.iterdir()) == [out]


def test_sorting_columns_in_the_footer(data, tmp_path):
    src, t = data
    out = tmp_path / "out.parquet"
    emsort.sort(src, out, key=["text:desc", "int:nulls_first"], memory="1M")
    sc = pq.ParquetFile(out).metadata.row_group(0).sorting_columns
    names = t.schema.names
    assert [(s.column_index, s.descending, s.nulls_first) for s in sc] == [
        (names.index("text"), True, False),
        (names.index("int"), False, True),
    ]


def test_unique_and_reverse_as_pyarrow(data, tmp_path):
    """``unique=True`` keeps each key's first row; ``reverse=True`` reverses every key; checked
    against pyarrow's stable ``sort_by`` where the table fits."""
    src, t = data
    out = tmp_path / "u.parquet"
    emsort.sort(src, out, key=["color", "flag"], unique=True, reverse=True, memory="256K")
    # pyarrow sorts no dictionary column: its values, then (nulls at the end, its default).
    plain = t.set_column(t.schema.get_field_index("color"), "color", t.column("color").cast(pa.string()))
    want = plain.sort_by([("color", "descending"), ("flag", "descending")])
    seen, first = set(), []
    for row in want.select(["color", "flag", "id"]).to_pylist():
        k = (row["color"], row["flag"])
        if k not in seen:
            seen.add(k)
            first.append(row["id"])
    assert pq.read_table(out).column("id").to_pylist() == first


def test_arrow_files_in_and_out(data, tmp_path):
    """An Arrow IPC file sorts into Parquet, and Parquet into an Arrow IPC file (whose
    dictionary column comes back as its values: an IPC file holds one dictionary a column)."""
    src, t = data
    arrow_in = tmp_path / "b.arrow"
    with pa.ipc.new_file(arrow_in, t.schema) as w:
        w.write_table(t.slice(0, 3000))
    out = tmp_path / "out.parquet"
    emsort.sort(arrow_in, out, key="int:desc", memory="256K")
    con = duckdb.connect()
    part = t.slice(0, 3000)
    con.register("part", part)
    want = con.execute("SELECT id FROM (SELECT *, row_number() OVER () AS rn FROM part) ORDER BY int DESC NULLS LAST, rn").fetchall()
    assert pq.read_table(out).column("id").to_pylist() == [r[0] for r in want]
    arrow_out = tmp_path / "out.arrow"
    emsort.sort(src, arrow_out, key=["text", "id"], memory="256K")
    got = pa.ipc.open_file(arrow_out).read_all()
    assert got.schema.field("color").type == pa.string()
    assert got.column("id").to_pylist() == t.sort_by([("text", "ascending"), ("id", "ascending")]).column("id").to_pylist()


def test_bad_keys_and_inputs(data, tmp_path):
    src, _ = data
    out = tmp_path / "never.parquet"
    with pytest.raises(ValueError, match="nope"):
        emsort.sort(src, out, key="nope")
    with pytest.raises(ValueError, match="text lines"):
        emsort.sort(src, out, key="int", numeric_sort=True)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet\n")
    with pytest.raises(Exception, match="bad.parquet"):
        emsort.sort(bad, out)
    assert not out.exists()


@pytest.mark.parametrize("source", ["table", "reader", "polars", "pandas"])
def test_arrow_streams_sort_beyond_the_budget(data, tmp_path, source):
    """A pyarrow Table, a RecordBatchReader of many batches, a Polars frame and a pandas
    frame (its ``__arrow_c_stream__``) sort into a RecordBatchReader whose batches stream
    out, as DuckDB orders them, at a budget far below the data."""
    _, t = data
    big = pa.concat_tables([t] * 6)  # 30,000 rows, ~3 MB
    if source == "table":
        obj = big
    elif source == "reader":
        obj = pa.RecordBatchReader.from_batches(big.schema, big.to_batches(max_chunksize=500))
    elif source == "polars":
        pl = pytest.importorskip("polars")
        obj = pl.from_arrow(big.drop_columns(["color"]))
    else:
        pytest.importorskip("pandas")
        obj = big.select(["id", "int", "text", "float"]).to_pandas()
        if not hasattr(obj, "__arrow_c_stream__"):
            pytest.skip("this pandas has no __arrow_c_stream__")
    reader = emsort.sort_arrow(obj, key=["text", "int:desc"], memory="256K", temp_dirs=[tmp_path])
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) > 1
    got = pa.Table.from_batches(batches)
    con = duckdb.connect()
    con.register("big", big)
    want = con.execute(
        "SELECT id FROM (SELECT *, row_number() OVER () AS rn FROM big) ORDER BY text NULLS LAST, int DESC NULLS LAST, rn"
    ).fetchall()
    assert got.column("id").to_pylist() == [r[0] for r in want]
    assert list(tmp_path.iterdir()) == []


def test_arrow_stream_refusals():
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        emsort.sort_arrow([1, 2, 3])
    t = pa.table({"a": [3, 1, 2]})
    with pytest.raises(ValueError, match="no such column"):
        emsort.sort_arrow(t, key="b")
    assert emsort.sort_arrow(t, key="a:desc").read_all().column("a").to_pylist() == [3, 2, 1]
