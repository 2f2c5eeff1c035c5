"""Parquet tables on Ray: sample → map (range-partition rows) → merge (sort each range).

The shape of :mod:`emsort.ray._sort`'s sort, over rows of Parquet files in place of bytes:

1. **sample** — one task per input file reads a few of its row groups (the key columns
   only) and returns the sort keys of random rows (``emsort.table_keys``: arrow-row's
   encoding, bytes that compare as the rows order); the driver sorts them and takes
   ``partitions - 1`` boundaries at even quantiles.
2. **map** — one task per chunk of whole row groups (at most ``chunk_size`` bytes of
   uncompressed data, one row group at least) reads them, finds each row's key range
   (``emsort.table_ranges``) and writes one Arrow IPC file per range, the rows of each in
   their input order, into the job's shuffle directory inside the output directory; it
   returns their names only, so the object store never holds the table.
3. **merge** — one task per key range reads the matching file of every map task,
   sorts their rows with ``emsort.sort_arrow`` within ``memory_per_task`` (spilling to a
   scratch directory beyond it, stable: equal keys keep the input order) and writes
   ``part-NNNNN.parquet`` (the footer's ``sorting_columns`` say the order) under a
   temporary name, renamed when complete.

Rows with equal keys fall in the same range, so ``unique`` (the first row of each group
of equal keys, in the order of the inputs) holds across parts. Inputs are read through
``pyarrow.fs`` (local paths, or any file system pyarrow reaches: ``s3://…``, ``gs://…``,
or one given as ``filesystem``); the output is a directory every node sees, with the
cleanup of :mod:`emsort.ray._sort` (locks, ``_SUCCESS`` last, nothing left on failure).
"""

from __future__ import annotations

import glob
import os
import random
import secrets
import shutil
import socket
import tempfile
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import ray

import emsort

from . import _cleanup
from ._formats import parse_size
from ._sort import (
    _LOCK_WAIT_S,
    EmsortRayError,
    _Job,
    _maybe_kill,
    _remove_own,
    _wait_all,
    check_inputs_outside,
    job_facts,
    read_manifest,
)

PART = "part-{:05d}.parquet"
TABLE_SUFFIXES = (".parquet", ".pq")


def is_table_input(inputs) -> bool:
    """Whether ``inputs`` name Parquet files (by their suffix; a directory by its
    files)."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    names = [os.fspath(i) for i in items]
    return bool(names) and all(_names_tables(n) for n in names)


def _names_tables(name: str) -> bool:
    """A name with a table suffix, or a local directory whose visible files all have one
    (at least one)."""
    if name.rstrip("/").endswith(TABLE_SUFFIXES):
        return True
    if "://" in name or not os.path.isdir(name):
        return False
    files = [e.name for e in os.scandir(name) if e.is_file() and not e.name.startswith((".", "_"))]
    return bool(files) and all(f.endswith(TABLE_SUFFIXES) for f in files)


def _keys(key) -> list:
    """``key`` as a list of key specs (``None``: every column)."""
    if key is None:
        return []
    return [key] if isinstance(key, str) else list(key)


def _key_columns(keys: list) -> Optional[list]:
    """The columns the keys read (``None``: every column, when no key is given)."""
    if not keys:
        return None
    cols = []
    for k in keys:
        name = emsort.parse_table_key(k)[0]
        if name not in cols:
            cols.append(name)
    return cols


# ---- inputs -----------------------------------------------------------------------------


def _resolve(path: str, filesystem) -> tuple:
    """``(file system, path in it)`` for an input: the one given, one from a URI, or the
    local file system (an absolute path)."""
    if filesystem is not None:
        return filesystem, path
    if "://" in path:
        try:
            return pafs.FileSystem.from_uri(path)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            # A URI pyarrow cannot parse, or whose scheme this pyarrow lacks (built
            # without S3, say): bad input, named.
            raise EmsortRayError(f"{path}: {e}") from None
    return pafs.LocalFileSystem(), os.path.abspath(path)


def expand_tables(inputs, filesystem=None) -> list:
    """The Parquet files ``inputs`` name, as ``(file system, path)``: files, directories
    (their ``.parquet`` files in name order, hidden ones and ``_``-names aside) and, on
    the local file system, glob patterns. Raises :class:`EmsortRayError` naming a missing
    input or one that is not Parquet."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    out = []
    for item in items:
        fs, path = _resolve(os.fspath(item), filesystem)
        try:
            info = fs.get_file_info(path)
        except OSError as e:
            raise EmsortRayError(f"{os.fspath(item)}: {e}") from None
        if info.type == pafs.FileType.Directory:
            found = fs.get_file_info(pafs.FileSelector(path, recursive=False))
            out.extend(
                (fs, f.path)
                for f in sorted(found, key=lambda f: f.path)
                if f.type == pafs.FileType.File
                and not f.base_name.startswith((".", "_"))
                and f.base_name.endswith(TABLE_SUFFIXES)
            )
        elif info.type == pafs.FileType.File:
            out.append((fs, path))
        elif isinstance(fs, pafs.LocalFileSystem) and glob.has_magic(path):
            found = sorted(glob.glob(path))
            if not found:
                raise EmsortRayError(f"{os.fspath(item)}: no file matches this pattern")
            out.extend((fs, p) for p in found)
        else:
            raise EmsortRayError(f"{os.fspath(item)}: no such file or directory")
    if not out:
        raise EmsortRayError("no input tables")
    return out


def _open(fs, path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(fs.open_input_file(path))
    except (OSError, pa.ArrowException) as e:
        raise EmsortRayError(f"{path}: not a Parquet file ({e})") from None


def _footers(tables: list) -> tuple:
    """The schema all inputs share (fields equal by name and type, a field nullable in
    any is nullable), each input's row groups (rows, uncompressed bytes) and the first
    input's footer."""
    schema, first, first_md, groups = None, None, None, []
    for fs, path in tables:
        md = _open(fs, path).metadata
        s = md.schema.to_arrow_schema()
        if schema is None:
            schema, first, first_md = s, path, md
        else:
            same = [f.name for f in s] == [f.name for f in schema] and all(
                f.type == g.type for f, g in zip(s, schema)
            )
            if not same:
                raise EmsortRayError(
                    f"{path}: its columns differ from the first input's ({first}): {s} against {schema}"
                )
            schema = pa.schema(
                [f.with_nullable(f.nullable or g.nullable) for f, g in zip(schema, s)], metadata=schema.metadata
            )
        groups.append([(md.row_group(i).num_rows, md.row_group(i).total_byte_size) for i in range(md.num_row_groups)])
    return schema, groups, first_md


def check_tables(inputs, output_dir, key, filesystem=None) -> tuple:
    """The tables ``inputs`` name, checked before any task runs: ``(tables, schema,
    row groups, keys, the first input's footer)`` — each a Parquet file (:func:`expand_tables`), none that the
    sort would delete, all of one schema, every key naming a column of it (keys as
    ``(column, descending, nulls_first)``). Raises :class:`EmsortRayError` naming the
    input or key at fault."""
    try:
        parsed = [emsort.parse_table_key(k) for k in _keys(key)]
    except ValueError as e:
        raise EmsortRayError(str(e)) from None
    tables = expand_tables(inputs, filesystem)
    local = [p for fs, p in tables if isinstance(fs, pafs.LocalFileSystem)]
    check_inputs_outside(local, os.path.abspath(os.fspath(output_dir)))
    schema, groups, first = _footers(tables)
    names = [f.name for f in schema]
    for name, _, _ in parsed:
        if name not in names:
            raise EmsortRayError(f"key {name}: no such column (the columns: {', '.join(names)})")
    return tables, schema, groups, parsed, first


def _plan_chunks(groups: list, chunk: int) -> list:
    """Chunks of whole row groups, at most ``chunk`` uncompressed bytes each (one group at
    least): ``(input index, [group indices])``."""
    out = []
    for i, gs in enumerate(groups):
        cur, size = [], 0
        for j, (rows, nbytes) in enumerate(gs):
            if not rows:
                continue
            if cur and size + nbytes > chunk:
                out.append((i, cur))
                cur, size = [], 0
            cur.append(j)
            size += nbytes
        if cur:
            out.append((i, cur))
    return out


def _sorting_columns(schema: pa.Schema, keys: list) -> tuple:
    """The footer's ``sorting_columns`` for ``keys`` (every column ascending when none),
    ``reverse`` already applied to them."""
    out = []
    for name, descending, nulls_first in keys:
        (c,) = pq.SortingColumn.from_ordering(
            schema, [(name, "descending" if descending else "ascending")],
            null_placement="at_start" if nulls_first else "at_end",
        )
        out.append(c)
    return tuple(out)


# ---- tasks ------------------------------------------------------------------------------


@ray.remote
def _table_sample_task(fs, path: str, groups: list, n: int, seed: int, key: list, reverse: bool, columns):
    """The sort keys of ``n`` random rows of a few random row groups of one file."""
    rng = random.Random(seed)
    picked = sorted(rng.sample(groups, min(len(groups), 4)))
    t = _open(fs, path).read_row_groups(picked, columns=columns)
    rows = sorted(rng.sample(range(t.num_rows), min(n, t.num_rows)))
    return emsort.table_keys(t.take(rows), key=key or None, reverse=reverse)


@ray.remote
def _table_map_task(fs, path, groups, boundaries, key, reverse, schema, index, shuffle, kill):
    """Reads row groups ``groups`` of one file, cuts their rows into one table per key
    range (each in the input order) and writes each non-empty one as an Arrow IPC file in
    ``shuffle``; returns ``{"files": [(path, rows, bytes) or None per range], "stats"}``.
    The names carry a token of this attempt: a retried attempt writes files of its own,
    and the merges read those its result names."""
    t0 = time.perf_counter()
    # The schema the inputs share (a column nullable in one is nullable in all), with
    # its metadata: the merges' readers take the blocks' batches as of one schema.
    t = _open(fs, path).read_row_groups(groups).cast(schema)
    t1 = time.perf_counter()
    nparts = len(boundaries) + 1
    ranges = emsort.table_ranges(t, boundaries, key=key or None, reverse=reverse)
    order = np.argsort(ranges, kind="stable")
    counts = np.bincount(ranges, minlength=nparts)
    attempt = secrets.token_hex(4)
    files = []
    for r, part in enumerate(np.split(order, np.cumsum(counts)[:-1])):
        if not len(part):
            files.append(None)
            continue
        name = os.path.join(shuffle, f"m{index:06d}-r{r:06d}-{attempt}.arrow")
        with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, schema) as w:
            w.write_table(t.take(part))
        files.append((name, len(part), os.path.getsize(name)))
        _maybe_kill(kill, "map", index)  # a dead attempt leaves a file behind
    stats = {
        "index": index,
        "path": path,
        "row_groups": list(groups),
        "rows": t.num_rows,
        "bytes": int(t.nbytes),
        "read_s": t1 - t0,
        "partition_s": time.perf_counter() - t1,
        "node": socket.gethostname(),
    }
    return {"files": files, "stats": stats}


def _blocks(files: list):
    """The record batches of the map outputs ``files``, in order (memory-mapped: the
    pages come from the page cache as the sort reads them)."""
    for name, _, _ in files:
        reader = pa.ipc.open_file(pa.memory_map(name))
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


@ray.remote
def _table_merge_task(index, out_dir, schema, key, reverse, unique, memory, scratch_dir, job, kill, layout, files):
    """Sorts the rows of one key range (the map outputs ``files``, in input order) into
    ``out_dir/part-NNNNN.parquet`` (every part is a Parquet file, an empty one too).

    As the merge of bytes (:func:`emsort.ray._sort._merge_task`): the attempt holds the
    lock of ``.part-NNNNN.tmp`` from start to end and writes the part into it, renamed
    when complete; its scratch directory (emsort's runs beyond ``memory``) is locked while
    it exists; on an error or a cancellation it removes its own files before raising.
    """
    t0 = time.perf_counter()
    final = os.path.join(out_dir, PART.format(index))
    tmp = os.path.join(out_dir, _cleanup.part_tmp_name(index))
    os.makedirs(out_dir, exist_ok=True)
    scratch_root = scratch_dir or tempfile.gettempdir()
    _cleanup.sweep_scratch(scratch_root)
    fd = _cleanup.create_locked(tmp, wait=_LOCK_WAIT_S)
    rows_in = sum(rows for _, rows, _ in files)
    try:
        os.ftruncate(fd, 0)
        scratch, sfd = _cleanup.make_scratch_dir(scratch_root, f"{_cleanup.SCRATCH_PREFIX}{index:05d}-{job}-")
        try:
            with open(fd, "wb", closefd=False) as f:

                def partial_output():  # what a worker killed mid-merge leaves behind
                    f.write(b"PAR1" + b"\xde\xad" * 4096)
                    f.flush()

                _maybe_kill(kill, "merge", index, before=partial_output)
                reader = pa.RecordBatchReader.from_batches(schema, _blocks(files))
                ordered = emsort.sort_arrow(
                    reader, key=key or None, unique=unique, reverse=reverse, memory=memory, temp_dirs=[scratch]
                )
                rows = 0
                with pq.ParquetWriter(
                    f, ordered.schema, compression=layout["compression"], sorting_columns=layout["sorting"]
                ) as w:
                    for b in ordered:
                        w.write_batch(b, row_group_size=layout["row_group_size"])
                        rows += b.num_rows
        finally:
            try:
                shutil.rmtree(scratch, ignore_errors=True)
            finally:
                os.close(sfd)
        os.replace(tmp, final)
    except BaseException:
        _remove_own(tmp, fd)
        raise
    finally:
        os.close(fd)
    return {
        "name": PART.format(index),
        "rows": rows,
        "rows_in": rows_in,
        "bytes": os.path.getsize(final),
        "blocks": len(files),
        "external": sum(nbytes for _, _, nbytes in files) > memory,
        "seconds": time.perf_counter() - t0,
        "node": socket.gethostname(),
    }


# ---- driver -----------------------------------------------------------------------------


def sort_tables(
    inputs,
    output_dir,
    *,
    key=None,
    reverse: bool = False,
    unique: bool = False,
    partitions: Optional[int] = None,
    memory_per_task="256M",
    chunk_size=None,
    samples: Optional[int] = None,
    seed: int = 0,
    scratch_dir: Optional[str] = None,
    filesystem=None,
    compression: Optional[str] = None,
    row_group_size: Optional[int] = None,
    max_retries: int = 3,
    num_cpus_per_task: float = 1,
    progress: Optional[Callable[[str, int, int], None]] = None,
    _kill=None,
) -> dict:
    """Sorts Parquet files on the connected Ray cluster into
    ``output_dir/part-00000.parquet`` …: see :func:`emsort.ray.sort`, which calls this
    for Parquet inputs. Returns the manifest (also ``output_dir/_SUCCESS``)."""
    t_start = time.perf_counter()
    keys = _keys(key)
    try:
        memory = parse_size(memory_per_task)
        chunk = parse_size(chunk_size) if chunk_size is not None else memory
    except ValueError as e:
        raise EmsortRayError(str(e)) from None
    if memory <= 0 or chunk <= 0:
        raise EmsortRayError("memory_per_task and chunk_size must be positive")
    out_dir = os.path.abspath(os.fspath(output_dir))
    tables, schema, groups, parsed, first = check_tables(inputs, out_dir, keys, filesystem)
    names = [f.name for f in schema]
    # The order the parts are written in, for the footers: every column ascending when no
    # key is given (as the sort orders them), each direction flipped by `reverse`.
    order = parsed or [(n, False, False) for n in names]
    order = [(n, d ^ bool(reverse), nf) for n, d, nf in order]
    codec = compression
    if codec is None:
        # The first input's (pyarrow's names for Parquet's codecs), else zstd.
        codec = "zstd"
        if first.num_row_groups and first.num_columns:
            c = first.row_group(0).column(0).compression.lower()
            codec = {"uncompressed": "none", "lz4_raw": "lz4"}.get(c, c)
    layout = {
        "compression": codec,
        "row_group_size": row_group_size or (first.row_group(0).num_rows if first.num_row_groups else 1 << 20),
        "sorting": _sorting_columns(schema, order),
    }
    total_rows = sum(r for gs in groups for r, _ in gs)
    total_bytes = sum(b for gs in groups for _, b in gs)

    if not ray.is_initialized():
        ray.init()
    if partitions is None:
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        partitions = max(cpus, -(-total_bytes // memory))
    partitions = int(partitions)
    if partitions < 1:
        raise EmsortRayError(f"partitions must be ≥ 1, not {partitions}")

    created = not os.path.isdir(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    opts = dict(max_retries=max_retries, retry_exceptions=False, num_cpus=num_cpus_per_task)
    job = _Job(out_dir, scratch_dir or tempfile.gettempdir(), created)
    try:
        # 1. sample: the keys of random rows, in order; boundaries at even quantiles
        t0 = time.perf_counter()
        want = samples if samples is not None else max(2000, 100 * partitions)
        columns = _key_columns(keys)
        sample_refs = []
        for i, ((fs, path), gs) in enumerate(zip(tables, groups)):
            rows = sum(r for r, _ in gs)
            nonempty = [j for j, (r, _) in enumerate(gs) if r]
            if not nonempty:
                continue
            n = max(1, -(-want * rows // max(1, total_rows)))
            sample_refs.append(
                _table_sample_task.options(**opts).remote(fs, path, nonempty, n, seed + i, keys, reverse, columns)
            )
        job.track(sample_refs)
        sampled = _wait_all(sample_refs, "sample", progress, "sampling") if sample_refs else []
        pool = sorted(k for ks in sampled for k in ks)
        k = len(pool)
        boundaries = [pool[i * k // partitions] for i in range(1, partitions)] if k else [b""] * (partitions - 1)
        t_sample = time.perf_counter() - t0

        # 2. map: each chunk's rows cut by range into files of the job's shuffle directory
        #    (the object store carries only their names: it never holds the table)
        t0 = time.perf_counter()
        chunks = _plan_chunks(groups, chunk)
        bref = ray.put(boundaries)
        sref = ray.put(schema)
        shuffle = job.shuffle_dir()
        map_refs = []
        for i, (t, gs) in enumerate(chunks):
            fs, path = tables[t]
            map_refs.append(
                _table_map_task.options(**opts).remote(fs, path, gs, bref, keys, reverse, sref, i, shuffle, _kill)
            )
        job.track(map_refs)
        mapped_out = _wait_all(map_refs, "map", progress, "a map task")
        map_stats = [m["stats"] for m in mapped_out]
        t_map = time.perf_counter() - t0

        # 3. merge: one task per range over its files, in input order
        t1 = time.perf_counter()
        merge_refs = [
            _table_merge_task.options(**opts).remote(
                r, out_dir, sref, keys, reverse, unique, memory, scratch_dir, job.token, _kill, layout,
                [m["files"][r] for m in mapped_out if m["files"][r] is not None],
            )
            for r in range(partitions)
        ]
        job.track(merge_refs)
        parts = _wait_all(merge_refs, "merge", progress, "a merge task")
        t_merge = time.perf_counter() - t1
        del map_refs, merge_refs

        rows = sum(p["rows"] for p in parts)
        mapped = sum(s["rows"] for s in map_stats)
        if mapped != total_rows or rows > mapped or (rows != mapped and not unique):
            raise EmsortRayError(
                f"the parts hold {rows} rows, the map tasks read {mapped}, the inputs hold {total_rows}"
            )
        manifest = {
            "format": "parquet",
            "key": keys,
            "reverse": bool(reverse),
            "unique": bool(unique),
            "order": [{"column": n, "descending": d, "nulls_first": nf} for n, d, nf in order],
            "items": rows,
            "rows": rows,
            "bytes": total_bytes,
            "inputs": [
                {"path": p, "filesystem": type(fs).__name__, "rows": sum(r for r, _ in gs)}
                for (fs, p), gs in zip(tables, groups)
            ],
            "compression": codec,
            "row_group_size": layout["row_group_size"],
            **job_facts(partitions, len(chunks), chunk, memory, k, boundaries,
                        [dict(p, items=p["rows"]) for p in parts], map_stats, (t_start, t_sample, t_map, t_merge)),
        }
        job.commit(manifest)
        return manifest
    except BaseException:
        job.abort()
        raise


def verify_tables(out: str, m: dict) -> dict:
    """Checks a finished Parquet sort's parts (see :func:`emsort.ray.verify`): each part's
    rows in the manifest's order (their keys, ``emsort.table_keys``, never decreasing;
    increasing with ``unique``), across the parts' edges too, and the row counts."""
    key = m.get("key") or None
    reverse = bool(m.get("reverse"))
    unique = bool(m.get("unique"))
    rows = 0
    prev = None
    for p in m["parts"]:
        path = os.path.join(out, p["name"])
        if not os.path.exists(path):
            return {"ok": False, "items": rows, "message": f"{path}: missing"}
        try:
            pf = pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as e:
            return {"ok": False, "items": rows, "message": f"{path}: not a Parquet file ({e})"}
        n = 0
        for batch in pf.iter_batches():
            for kb in emsort.table_keys(batch, key=key, reverse=reverse):
                if prev is not None and (kb < prev or (unique and kb == prev)):
                    what = "not after" if unique else "before"
                    return {
                        "ok": False,
                        "items": rows + n,
                        "message": f"{path}: row {n + 1} comes {what} the row above it in the sort's order",
                    }
                prev = kb
                n += 1
        if n != p["rows"]:
            return {"ok": False, "items": rows, "message": f"{path}: {n} rows, manifest says {p['rows']}"}
        rows += n
    if rows != m["rows"]:
        return {"ok": False, "items": rows, "message": f"{rows} rows in the parts, manifest says {m['rows']}"}
    return {"ok": True, "items": rows, "message": "ok"}


def sort_dataset(
    ds: "ray.data.Dataset",
    *,
    key=None,
    reverse: bool = False,
    unique: bool = False,
    output_dir=None,
    staging_dir: Optional[str] = None,
    **options: Any,
) -> "ray.data.Dataset":
    """Sorts a ``ray.data.Dataset`` by columns and returns a Dataset over the sorted
    Parquet parts, in order (:func:`read_sorted`).

    The Dataset is written as Parquet files into a staging directory (``staging_dir``,
    default beside ``output_dir``; removed at the end) — Ray writes each block as its
    operators make it, so the Dataset is never whole in the object store — and those are
    sorted by :func:`sort_tables` into ``output_dir`` (default a new directory in the
    driver's temp directory: give one every node sees on a cluster of several nodes).
    ``options``: those of :func:`emsort.ray.sort` for Parquet inputs. Rows with equal
    keys keep the order of the written files (``unique`` keeps the first of them).
    """
    out_dir = os.path.abspath(os.fspath(output_dir)) if output_dir is not None else tempfile.mkdtemp(
        prefix="emsort-ray-sorted-"
    )
    parent = staging_dir or os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".emsort-ray-input-", dir=parent)
    try:
        ds.write_parquet(staging)
        sort_tables(staging, out_dir, key=key, reverse=reverse, unique=unique, **options)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return read_sorted(out_dir)


def read_sorted(output_dir) -> "ray.data.Dataset":
    """A ``ray.data.Dataset`` over the parts of a finished Parquet sort, in order."""
    m = read_manifest(output_dir)
    if m.get("format") != "parquet":
        raise EmsortRayError(f"{output_dir}: not the output of a sort of tables (format {m.get('format')})")
    paths = [os.path.join(os.fspath(output_dir), p["name"]) for p in m["parts"]]
    ds = ray.data.read_parquet(paths, shuffle=None)
    # This Dataset's own context (a copy): its blocks come in order, and the
    # caller's other Datasets are left as they were.
    ds.context.execution_options.preserve_order = True
    return ds


__all__: Sequence[str] = ["check_tables", "expand_tables", "is_table_input", "read_sorted", "sort_dataset", "sort_tables"]
