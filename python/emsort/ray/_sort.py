"""The distributed sort: sample → map (sort + range-partition) → shuffle → merge.

The shape is Exoshuffle's (Luan et al., SIGCOMM 2023; the 2022 CloudSort record):

1. **sample** — one task per input file reads a few random items with ``emsort.Reader``;
   the driver sorts them by the order (``emsort.sort_buffer``, or ``emsort.LineOrder``
   for lines) and takes ``partitions - 1`` boundaries at even quantiles.
2. **map** — one task per input chunk (at most ``chunk_size`` bytes of whole items) reads
   its chunk with ``emsort.Reader.readinto`` into a numpy buffer, sorts it in place
   (``emsort.sort_buffer``), cuts it at the boundaries (``emsort.partition_points``) and
   returns one block per key range as a separate Ray object (``num_returns=partitions+1``,
   the last return being the task's statistics). Blocks are uint8 numpy arrays, so they
   are stored once in the object store and read zero-copy; Ray spills them to disk when the
   store fills up. Lines are sorted and cut by an ``emsort.LineOrder`` built from GNU
   sort's ordering options (``key``, ``field_separator``, ``numeric_sort``, ``unique`` …):
   the engine's order, so that the parts are what ``emsort.sort`` and ``LC_ALL=C sort``
   with the same options write, and lines equal by the order never straddle two parts.
3. **merge** — one task per key range receives the matching block of every map task (Ray
   fetches them to its node), merges them with emsort — in memory when they fit in
   ``memory_per_task``, otherwise written to a scratch directory on the node and merged
   externally by ``emsort.merge_files`` with that memory budget and the same ordering
   options — and writes
   ``part-NNNNN`` in the output directory under a temporary name, renamed when complete.

CSV records (``csv=True``) may hold newlines in quotes, so a byte in the middle of a file
cannot be told to end a record from the bytes around it: one scan task per file
(``_scan_task``, in place of the sample task) reads it from its start with the engine's
record parse (``LineOrder.record_spans``) and returns the first record at or after every
``chunk_size`` bytes and the sampled records; map tasks then read exact ranges of whole
records. With ``header=True`` the driver reads every input's first record first (a
different one is an error naming the file), chunks start after it, the tasks resolve
named keys from it (``LineOrder(columns=header)``) and every part starts with it.

Every task has ``max_retries`` (Ray re-runs it when its worker dies) and
``retry_exceptions=False`` (an error in our code or in the data is not retried). A part is
either absent or complete (renames are atomic); a lost map output is rebuilt by Ray from
lineage. The driver writes ``_SUCCESS`` (the manifest, JSON) last.

Nothing is left behind (``_cleanup`` has the names and the locks): every temporary file
and scratch directory is locked by the process using it, so that a dead process's can be
told from a live one's. A failed or interrupted job cancels its tasks (they remove their
own files; the workers of those that do not stop in time are killed) and removes what it
made, finished parts included: no ``_SUCCESS``, no parts, no temporary file, no scratch
directory. What a killed job (SIGKILL, a lost node) leaves is removed by the next sort
into the same output directory or with the same scratch directory.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import tempfile
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import ray

import emsort

from . import _cleanup
from ._formats import Format, parse_size

if TYPE_CHECKING:
    from typing_extensions import Unpack

MANIFEST = "_SUCCESS"
_PART = "part-{:05d}"
_PART_RE = re.compile(r"part-\d{5,}(?:\.parquet)?\Z")

# How long a cleaner waits for the locks of cancelled or killed tasks to go (their workers
# to exit) before it gives up on their files.
_LOCK_WAIT_S = 10.0
# How long cancelled tasks get to remove their own files (KeyboardInterrupt) before the
# driver kills their workers.
_CANCEL_GRACE_S = 5.0

_Base = getattr(emsort, "EmsortError", Exception)


class EmsortRayError(_Base):
    """A distributed sort failed: bad input, a task that failed for good, or a bad output."""


# ---- emsort operations -----------------------------------------------------------------


def _line_order(order: Optional[dict], columns: Optional[bytes] = None) -> "emsort.LineOrder":
    """The engine's order of ``order`` (``reverse`` included); with ``header``, keys that
    name columns take them from ``columns``, the header record."""
    order = order if order is not None else {}
    if order.get("header"):
        return emsort.LineOrder(columns=columns or b"", **order)
    return emsort.LineOrder(**order)


def _record_order(order: Optional[dict]) -> "emsort.LineOrder":
    """The order that only tells where records end (lines, or CSV records with ``csv``,
    which may span lines): what the scans of the inputs need, keys aside."""
    order = order or {}
    return emsort.LineOrder(**{k: order[k] for k in ("csv", "field_separator", "zero_terminated") if k in order})


def _bare(record: bytes, eol: bytes) -> bytes:
    """A header record without its terminator and CR: CRLF and LF files' headers agree."""
    record = record[:-1] if record.endswith(eol) else record
    return record[:-1] if record.endswith(b"\r") else record


def _sorted_records(records: list, lo: "emsort.LineOrder") -> list:
    """Records (without terminators) in the order ``lo`` — a few thousand samples: CSV
    records may hold the terminator, so they are not joined and split as lines are."""
    return sorted(records, key=functools.cmp_to_key(lo.compare))


def _read_exact(path: str, offset: int, size: int, kind: str) -> np.ndarray:
    buf = np.empty(size, dtype=np.uint8)
    if size:
        with emsort.Reader(path, kind) as f:
            n = f.readinto(offset, buf)
        if n != size:
            raise EmsortRayError(
                f"{path}: short read at offset {offset}: {n} of {size} bytes (did the file change during the sort?)"
            )
    return buf


def _find_newline(f: "emsort.Reader", pos: int, file_size: int, window: int = 1 << 16, eol: bytes = b"\n") -> Optional[int]:
    """Offset of the first line terminator ``eol`` at or after ``pos``, or None."""
    while pos < file_size:
        data = f.read(pos, min(window, file_size - pos))
        i = data.find(eol)
        if i >= 0:
            return pos + i
        pos += len(data)
        if not data:
            break
    return None


def _read_lines_chunk(path: str, start: int, end: int, file_size: int, kind: str, eol: bytes) -> bytes:
    """The lines whose first byte lies in ``[start, end)``, each with its terminator
    ``eol`` (but the file's last line may lack one)."""
    with emsort.Reader(path, kind) as f:
        # The first line starting at or after `start`: after the terminator that ends
        # the line holding byte `start - 1` (that line is the previous chunk's).
        nl = _find_newline(f, start - 1, file_size, eol=eol) if start > 0 else -1
        if nl is None or nl + 1 >= end:
            return b""
        s = nl + 1
        nl = _find_newline(f, end - 1, file_size, eol=eol)
        e = file_size if nl is None else nl + 1
        return f.read(s, e - s)


def _maybe_kill(kill, phase: str, index: int, before=None) -> None:
    """Test hook: the first attempt of task ``index`` of ``phase`` kills its own worker
    with SIGKILL (the marker file makes it happen once)."""
    if not kill or kill[0] != phase or kill[1] != index:
        return
    try:
        fd = os.open(kill[2], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return
    os.write(fd, f"{phase} {index} pid {os.getpid()}\n".encode())
    os.close(fd)
    if before is not None:
        before()
    os.kill(os.getpid(), signal.SIGKILL)


# ---- tasks ------------------------------------------------------------------------------


@ray.remote
def _sample_task(path: str, fmt_spec: str, file_size: int, n: int, seed: int, eol: bytes = b"\n", start: int = 0):
    """``n`` random items of one file: a uint8 array of whole items, or a list of lines
    (ended by ``eol``) from byte ``start`` on (after a header)."""
    fmt = Format.parse(fmt_spec)
    rng = random.Random(seed)
    # pread, whatever `kind` says: small random reads through mmap would page in the
    # read-around window (read_ahead_kb, 8 MiB on some machines) for each sample.
    with emsort.Reader(path, "pread") as f:
        if fmt.fixed:
            isz = fmt.item_size
            items = file_size // isz
            n = min(n, items)
            out = np.empty(n * isz, dtype=np.uint8)
            for j, i in enumerate(sorted(rng.sample(range(items), n))):
                f.readinto(i * isz, out[j * isz : (j + 1) * isz])
            return out
        lines = []
        if start == 0:
            first = f.read(0, min(file_size, 1 << 16)).split(eol, 1)[0]
            lines.append(first)
        # A line after the terminator at or after `off`: `off` from the header's last byte.
        for off in sorted(rng.randrange(start - 1 if start else 0, file_size) for _ in range(max(0, n - 1))):
            nl = _find_newline(f, off, file_size, window=4096, eol=eol)
            if nl is None or nl + 1 >= file_size:
                continue
            end = _find_newline(f, nl + 1, file_size, window=4096, eol=eol)
            end = file_size if end is None else end
            lines.append(f.read(nl + 1, end - nl - 1))
        return lines


@ray.remote
def _scan_task(path: str, file_size: int, start: int, chunk: int, n: int, seed: int, order: dict):
    """The chunks and samples of one file of CSV records, found in one sequential read.

    A record may hold newlines in quotes, and whether a byte ends a record depends on
    every quote before it: the file is parsed from its start by the engine
    (``LineOrder.record_spans``, the sort's own record parse, in blocks of 1 MiB). Returns
    the starts of the chunks (the first record at or after ``start``, after the header,
    then at or after every ``chunk`` bytes; the last chunk ends at ``file_size``) and
    ``n`` records (without their terminators) that start at or after random offsets.
    Raises ``emsort.EmsortError`` for a file that ends inside a quoted field.
    """
    lo = _record_order(order)
    eol = lo.terminator
    rng = random.Random(seed)
    cuts = list(range(start, file_size, chunk))
    picks = sorted(rng.randrange(start, file_size) for _ in range(n)) if file_size > start else []
    # The file's end too: read to it, the scan refuses a file that ends inside a quoted
    # field (an EmsortError naming the file and line, as emsort.sort's).
    spans = lo.record_spans(path, cuts + picks + [file_size])[:-1]
    starts = sorted({s for s, _ in spans[: len(cuts)] if s < file_size})
    samples = []
    with emsort.Reader(path, "pread") as f:
        for s, e in sorted(set(spans[len(cuts) :])):
            if s < e:
                r = f.read(s, e - s)
                samples.append(r[:-1] if r.endswith(eol) else r)
    return starts, samples


@ray.remote
def _map_task(path, offset, size, file_size, fmt_spec, boundaries, reverse, kind, index, kill, order=None,
              columns=None, exact=False):
    """Sorts one chunk and cuts it into one block per part (in part order); lines by the
    ordering options ``order`` (``reverse`` included; ``columns``: the header record, with
    ``header``). ``exact``: the chunk is ``size`` bytes of whole records from ``offset``
    (CSV records, cut by the driver's scan), else the lines whose first byte lies there."""
    t0 = time.perf_counter()
    fmt = Format.parse(fmt_spec)
    nparts = len(boundaries) + 1
    if fmt.fixed:
        isz = fmt.item_size
        buf = _read_exact(path, offset, size, kind)
        t1 = time.perf_counter()
        emsort.sort_buffer(buf, fmt.spec, reverse=reverse)
        t2 = time.perf_counter()
        n = end = size // isz
        # descending: part k holds the k-th range from the top, boundaries taken from the top
        bounds = boundaries[::-1] if reverse else boundaries
        points = emsort.partition_points(buf, fmt.spec, bounds, reverse=reverse)
        what = "partition_points returned unordered points"
    else:
        # The engine's order (keys, -r, -u …): part k holds the lines from boundary k-1
        # to boundary k in that order, descending ones included.
        lo = _line_order(order if order is not None else {"reverse": reverse}, columns)
        eol = lo.terminator
        if exact:
            data = _read_exact(path, offset, size, kind)
        else:
            data = _read_lines_chunk(path, offset, offset + size, file_size, kind, eol)
        t1 = time.perf_counter()
        buf = np.frombuffer(lo.sort(data), dtype=np.uint8)
        del data
        t2 = time.perf_counter()
        points = lo.partition_points(buf, boundaries)
        what = "LineOrder.partition_points returned unordered offsets"
        isz, end = 1, buf.size  # the points are byte offsets
        n = lo.count(buf)  # records: a CSV one may span lines
    edges = [0] + [int(i) for i in points] + [end]
    if any(a > b for a, b in zip(edges, edges[1:])):
        raise EmsortRayError(f"{what} {edges[1:-1]}")
    _maybe_kill(kill, "map", index)
    blocks = [buf[a * isz : b * isz] for a, b in zip(edges, edges[1:])]
    t3 = time.perf_counter()
    stats = {
        "index": index,
        "path": path,
        "offset": offset,
        "bytes": size,
        "items": n,
        "read_s": t1 - t0,
        "sort_s": t2 - t1,
        "partition_s": t3 - t2,
        "node": socket.gethostname(),
    }
    assert len(blocks) == nparts
    return (*blocks, stats)


def _remove_own(path: str, fd: int) -> None:
    """Removes ``path`` if it still names the file locked as ``fd`` (ours)."""
    with contextlib.suppress(OSError):
        if _cleanup.still_names(path, fd):
            os.unlink(path)


@ray.remote
def _merge_task(index, out_dir, fmt_spec, memory, reverse, scratch_dir, job, kill, order, columns, *blocks):
    """Merges the blocks of one key range into ``out_dir/part-NNNNN`` (lines by the
    ordering options ``order``, ``reverse`` included). With ``header``, the part starts
    with the header record ``columns`` (every part does, an empty one too: each part is a
    CSV file of its own).

    The attempt holds the lock of ``.part-NNNNN.tmp`` from start to end (and of its
    scratch directory while it exists), so that cleaners — the driver, later runs, other
    attempts — can tell its files from those of a dead attempt. On an error or a
    cancellation (KeyboardInterrupt) it removes its own files before raising.
    """
    t0 = time.perf_counter()
    fmt = Format.parse(fmt_spec)
    order = order if order is not None else {"reverse": reverse}
    lo = None if fmt.fixed else _line_order(order, columns)
    header = columns if order.get("header") and columns else b""
    total = sum(int(b.nbytes) for b in blocks)
    final = os.path.join(out_dir, _PART.format(index))
    tmp = os.path.join(out_dir, _cleanup.part_tmp_name(index))
    os.makedirs(out_dir, exist_ok=True)  # a node-local output directory
    scratch_root = scratch_dir or tempfile.gettempdir()
    # Scratch directories of killed attempts on this node (a retried task, or a killed
    # job): only those whose lock is free; the live tasks' stay.
    _cleanup.sweep_scratch(scratch_root)
    # A dead attempt's .tmp is unlocked already: its worker is gone before Ray retries.
    fd = _cleanup.create_locked(tmp, wait=_LOCK_WAIT_S)
    try:
        os.ftruncate(fd, 0)
        external = total > memory
        if not external:
            with open(fd, "wb", closefd=False) as f:

                def partial_output():  # what a worker killed mid-merge leaves behind
                    f.write(b"\xde\xad" * 4096)
                    f.flush()

                _maybe_kill(kill, "merge", index, before=partial_output)
                buf = np.concatenate(blocks) if blocks else np.empty(0, np.uint8)
                if fmt.fixed:
                    emsort.sort_buffer(buf, fmt.spec, reverse=reverse)
                    f.write(memoryview(buf).cast("B"))
                    items = total // fmt.item_size
                else:
                    # The blocks in map order are the input's order: a stable sort keeps
                    # it between equal lines (stable, unique), as GNU sort does.
                    data = lo.sort(buf)
                    del buf
                    f.write(header)
                    f.write(data)
                    items = lo.count(data)
            os.replace(tmp, final)
        else:
            scratch, sfd = _cleanup.make_scratch_dir(scratch_root, f"{_cleanup.SCRATCH_PREFIX}{index:05d}-{job}-")
            try:
                files = []
                items = 0
                for j, b in enumerate(blocks):
                    if b.nbytes:
                        p = os.path.join(scratch, f"block-{j:06d}")
                        with open(p, "wb") as w:
                            # With `header`, each block file starts with it: the merge
                            # checks and drops them, writes it once, and resolves named keys.
                            w.write(header)
                            w.write(memoryview(b).cast("B"))
                        files.append(p)
                        items += (b.nbytes // fmt.item_size) if fmt.fixed else lo.count(b)
                _maybe_kill(kill, "merge", index)
                # merge_files writes `.part-NNNNN.emsort-PID-SEQ.tmp` and renames it to
                # the part when complete; .part-NNNNN.tmp stays this attempt's lock.
                emsort.merge_files(files, final, format=fmt.spec, memory=memory, temp_dirs=[scratch], **order)
                if order.get("unique"):
                    items = lo.check(final)["records"]  # the merge dropped lines equal across blocks
            finally:
                try:
                    shutil.rmtree(scratch, ignore_errors=True)
                finally:
                    # Ray reuses the worker: a descriptor left open would keep the lock
                    # (and the directory, were rmtree interrupted) for good.
                    os.close(sfd)
            _remove_own(tmp, fd)
    except BaseException:
        _remove_own(tmp, fd)
        raise
    finally:
        os.close(fd)
    return {
        "name": _PART.format(index),
        "items": int(items),
        "bytes": total,
        "blocks": len(blocks),
        "external": external,
        "seconds": time.perf_counter() - t0,
        "node": socket.gethostname(),
    }


# ---- driver -----------------------------------------------------------------------------


def expand_inputs(inputs: Union[str, os.PathLike, Sequence]) -> list:
    """Files named by ``inputs``: paths, directories (their regular, non-hidden files in
    name order) or glob patterns. Raises :class:`EmsortRayError` naming a missing one."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out = []
    for item in inputs:
        p = os.fspath(item)
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p) if not n.startswith(".") and not n.startswith("_"))
            out.extend(os.path.join(p, n) for n in names if os.path.isfile(os.path.join(p, n)))
        elif os.path.exists(p):
            out.append(p)
        elif glob.has_magic(p):
            found = sorted(glob.glob(p))
            if not found:
                raise EmsortRayError(f"{p}: no file matches this pattern")
            out.extend(found)
        else:
            raise EmsortRayError(f"{p}: no such file or directory")
    if not out:
        raise EmsortRayError("no input files")
    for p in out:
        if not os.path.isfile(p):
            raise EmsortRayError(f"{p}: not a regular file")
        if not os.access(p, os.R_OK):
            raise EmsortRayError(f"{p}: permission denied")
    return out


def _plan_chunks(files, sizes, fmt: Format, chunk: int, starts=None) -> list:
    """Chunks of at most ``chunk`` bytes of each file, from ``starts`` (after headers)."""
    chunks = []
    if fmt.fixed:
        chunk = max(fmt.item_size, chunk - chunk % fmt.item_size)
    for path, size, off in zip(files, sizes, starts or [0] * len(files)):
        while off < size:
            n = min(chunk, size - off)
            chunks.append((path, off, n, size))
            off += n
    return chunks


def _order_options(fmt: Format, reverse: bool, given: Mapping[str, Any]) -> Optional[dict]:
    """The ordering options the tasks take (``reverse`` included), checked by the engine;
    ``None`` for fixed-size formats, which refuse them (but ``reverse``)."""
    # Those given other than their default (None, False), in the order emsort names them.
    names = emsort.OrderOptions.__annotations__
    set_ = {k: given[k] for k in names if given.get(k) is not None and given.get(k) is not False}
    if fmt.fixed:
        if set_:
            raise EmsortRayError(
                f"{', '.join(set_)} order{'s' if len(set_) == 1 else ''} text lines (format \"lines\"), "
                f"not format {fmt.spec}: numbers and records have their own order (only reverse applies to them)"
            )
        return None
    if isinstance(set_.get("key"), str):
        set_["key"] = [set_["key"]]
    elif "key" in set_:
        set_["key"] = list(set_["key"])
    if "random_source" in set_:
        # The tasks run in other directories, maybe on other nodes.
        set_["random_source"] = os.path.abspath(os.fspath(set_["random_source"]))
    order = dict(set_, reverse=bool(reverse))
    try:
        if order.get("locale") == "":
            # The driver's environment's locale, named to every task: the workers'
            # environments may hold another.
            name = emsort.LineOrder(locale="").locale
            if name is None:
                del order["locale"]  # C or POSIX: bytewise
            else:
                order["locale"] = name
        # With `header`, keys may name columns: checked once the header is read
        # (`check_headers`); the rest now, named keys left out.
        lo = emsort.LineOrder(**_without_named_keys(order))
    except (ValueError, TypeError) as e:
        raise EmsortRayError(str(e)) from None
    if lo.random and "random_source" not in order:
        raise EmsortRayError(
            "a shuffle (random_sort, or R in a key) on Ray needs random_source: a file every node reads "
            "at the same path, so that all the tasks hash the lines with the same salt"
        )
    return order


def _without_named_keys(order: dict) -> dict:
    """``order`` without ``header`` and the keys that name columns (those not starting
    with a field number or a JSON path's dot): what can be checked before the header is
    read."""
    if not order.get("header"):
        return order
    out = {k: v for k, v in order.items() if k != "header"}
    keys = [k for k in out.get("key", []) if k[:1].isdigit() or k.startswith(".")]
    if keys:
        out["key"] = keys
    else:
        out.pop("key", None)
    return out


def check_headers(files, sizes, order: Optional[dict]) -> tuple:
    """With ``header``: the first non-empty input's header record (with its terminator, one
    added if it had none) and where each input's records start (after its header, 0 for an
    empty input). Reads each input up to its header's end, as the sort reads them (a CSV
    header may span lines). Raises :class:`EmsortRayError` naming an input whose header
    differs from the first's (but for CRLF against LF), or a key naming no column.
    Without ``header``: ``(None, [0, …])``."""
    if not order or not order.get("header"):
        return None, [0] * len(files)
    rec = _record_order(order)
    eol = rec.terminator
    header, first, starts = None, None, []
    for p, size in zip(files, sizes):
        if not size:
            starts.append(0)
            continue
        ((s, e),) = rec.record_spans(p, [0])
        with open(p, "rb") as f:
            record = f.read(e)
        starts.append(e)
        if header is None:
            header, first = (record if record.endswith(eol) else record + eol), p
        elif _bare(record, eol) != _bare(header, eol):
            raise EmsortRayError(
                f"{p}: its header differs from the first input's ({first}: "
                f"{_bare(header, eol).decode('utf-8', 'replace')!r})"
            )
    try:
        _line_order(order, header)
    except (ValueError, TypeError) as e:
        raise EmsortRayError(str(e)) from None
    return header, starts


def _manifest_order(order: Optional[dict]) -> Optional[dict]:
    """The ordering options as JSON (a ``bytes`` separator as its Latin-1 character)."""
    if order is None:
        return None
    out = dict(order)
    if isinstance(out.get("field_separator"), bytes):
        out["field_separator"] = out["field_separator"].decode("latin-1")
    return out


def _order_from_manifest(m: dict) -> dict:
    """The ordering options a manifest records (``reverse`` alone before they existed)."""
    order = dict(m.get("order") or {"reverse": bool(m.get("reverse"))})
    t = order.get("field_separator")
    if isinstance(t, str) and len(t) == 1 and ord(t) > 127:
        order["field_separator"] = t.encode("latin-1")
    return order


def _get(refs, what: str):
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, EmsortRayError):
            raise EmsortRayError(str(cause)) from e
        raise EmsortRayError(f"{what} failed: {cause if cause is not None else e}") from e
    except ray.exceptions.RayError as e:
        raise EmsortRayError(f"{what} failed (retries exhausted?): {e}") from e


def _wait_all(refs, phase: str, progress, what: str) -> list:
    """``ray.get`` of every ref, reporting ``progress(phase, done, total)`` as they finish."""
    pending = list(refs)
    total = len(pending)
    done = 0
    if progress:
        progress(phase, 0, total)
    while pending:
        ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
        if ready:
            _get(ready, what)  # raise early on a failure
            done += len(ready)
            if progress:
                progress(phase, done, total)
    return _get(list(refs), what)


def check_settings(format: str, reverse: bool, options: Mapping[str, Any], memory_per_task, chunk_size) -> tuple:
    """The settings of :func:`sort`, checked: ``(format, memory per task, chunk size,
    ordering options as _order_options returns them)``. Raises :class:`EmsortRayError`."""
    try:
        fmt = Format.parse(format)
        memory = parse_size(memory_per_task)
        chunk = parse_size(chunk_size) if chunk_size is not None else memory
    except ValueError as e:
        raise EmsortRayError(str(e)) from None
    if memory <= 0 or chunk <= 0:
        raise EmsortRayError("memory_per_task and chunk_size must be positive")
    if fmt.fixed and chunk < fmt.item_size:
        raise EmsortRayError(f"chunk size {chunk} is smaller than one {fmt.spec} item ({fmt.item_size} bytes)")
    return fmt, memory, chunk, _order_options(fmt, reverse, options)


def check_inputs(inputs, output_dir, fmt: Format, order: Optional[dict] = None) -> tuple:
    """The files of ``inputs`` (:func:`expand_inputs`) and their sizes, checked: whole
    items of ``fmt``, none that the sort would delete (:func:`check_inputs_outside`), the
    same header in each with ``header`` in ``order`` (:func:`check_headers`)."""
    files = expand_inputs(inputs)
    sizes = [os.path.getsize(p) for p in files]
    if fmt.fixed:
        for p, s in zip(files, sizes):
            if s % fmt.item_size:
                raise EmsortRayError(
                    f"{p}: size {s} is not a multiple of the {fmt.spec} item size ({fmt.item_size} bytes)"
                )
    check_inputs_outside(files, output_dir)
    check_headers(files, sizes, order)
    return files, sizes


def check_inputs_outside(files, output_dir) -> None:
    """Refuses an input that the sort would delete or overwrite: one in ``output_dir``
    named like the sort's output (``part-NNNNN``, ``_SUCCESS``) or its temporary files,
    since the previous output there is removed first."""
    out_dir = os.path.abspath(os.fspath(output_dir))
    if not os.path.isdir(out_dir):
        return
    for p in files:
        for q in {os.path.abspath(p), os.path.realpath(p)}:
            name = os.path.basename(q)
            if not (name == MANIFEST or _PART_RE.match(name) or _cleanup.is_temporary(name)):
                continue
            try:
                inside = os.path.samefile(os.path.dirname(q), out_dir)
            except OSError:
                inside = False
            if inside:
                raise EmsortRayError(
                    f"{p}: this input is in the output directory, whose old parts are removed "
                    "before the sort: sort into another directory"
                )


def _retrying(step: Callable[[], None]) -> None:
    """Runs a cleanup step again (at most twice) when Ctrl-C interrupts it: every step can
    be repeated, and each is bounded in time, so a second Ctrl-C does not leave files."""
    for attempt in range(3):
        try:
            step()
            return
        except KeyboardInterrupt:
            if attempt == 2:
                raise


def _pending(refs: list, timeout: float) -> list:
    """Those of ``refs`` still under way after ``timeout`` seconds (all if Ray cannot tell)."""
    try:
        return ray.wait(refs, num_returns=len(refs), timeout=timeout, fetch_local=False)[1]
    except Exception:  # noqa: BLE001
        return refs


def _cancel_each(refs: list, force: bool) -> None:
    for r in refs:
        with contextlib.suppress(Exception):  # finished, or Ray is going: nothing to cancel
            ray.cancel(r, force=force)


def job_facts(partitions, map_tasks, chunk, memory, samples, boundaries, parts, map_stats, times) -> dict:
    """The manifest's fields every sort on Ray writes: its plan, its parts, its timings
    (``times``: the start and the phases' seconds) and the versions."""
    t_start, t_sample, t_map, t_merge = times
    return {
        "partitions": partitions,
        "map_tasks": map_tasks,
        "chunk_size": chunk,
        "memory_per_task": memory,
        "samples": int(samples),
        "boundaries": [b.hex() for b in boundaries],
        "parts": parts,
        "external_merges": sum(1 for p in parts if p["external"]),
        "timings": {
            "sample_s": t_sample,
            "map_s": t_map,
            "merge_s": t_merge,
            "total_s": time.perf_counter() - t_start,
            "map_read_s": sum(s["read_s"] for s in map_stats),
            "map_partition_s": sum(s["partition_s"] for s in map_stats),
            "merge_task_s": sum(p["seconds"] for p in parts),
        },
        "ray_version": ray.__version__,
        "emsort_version": getattr(emsort, "__version__", None),
    }


class _Job:
    """One sort's hold on its output directory: its lock, its tasks, its cleanup.

    The driver holds the lock of ``._SUCCESS.tmp`` for the whole job (a second sort into
    the same directory is refused while it lives) and writes the manifest into that file
    at the end. Starting, it removes what earlier runs left there (temporary files whose
    owners are gone, waiting a little for those of a killed job whose workers Ray is still
    stopping; then the previous output) and the stale scratch directories of this node.
    """

    def __init__(self, out_dir: str, scratch_root: str, created: bool):
        self.out_dir = out_dir
        self.scratch_root = scratch_root
        self.created = created
        self.token = secrets.token_hex(4)  # in scratch names: this job's directories
        self.refs: list = []
        self.shuffle: Optional[tuple] = None  # (path, fd holding its lock)
        self.lock_path = os.path.join(out_dir, _cleanup.MANIFEST_TMP)
        try:
            self.fd = _cleanup.create_locked(self.lock_path, wait=1.0)
        except _cleanup.LockedError:
            self._remove_dir()
            raise EmsortRayError(
                f"{out_dir}: another sort is writing into this directory "
                f"({_cleanup.MANIFEST_TMP} is locked by a running process)"
            ) from None
        try:
            os.ftruncate(self.fd, 0)
            busy = _cleanup.sweep_output(out_dir, keep=[_cleanup.MANIFEST_TMP], wait=_LOCK_WAIT_S)
            if busy:
                raise EmsortRayError(
                    f"{out_dir}: files of running processes (another sort?) still locked after "
                    f"{_LOCK_WAIT_S:g} s: {', '.join(busy)}"
                )
            _cleanup.sweep_scratch(scratch_root)
            self._remove_output()
        except BaseException:
            self._release(remove=True)
            raise

    def _remove_output(self) -> None:
        for name in os.listdir(self.out_dir):
            if name == MANIFEST or _PART_RE.match(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.out_dir, name))

    def _remove_dir(self) -> None:
        if self.created:
            with contextlib.suppress(OSError):
                os.rmdir(self.out_dir)  # only if empty: never someone else's files

    def _release(self, remove: bool) -> None:
        if self.fd is None:
            return
        if remove:
            _remove_own(self.lock_path, self.fd)
        os.close(self.fd)
        self.fd = None
        if remove:
            self._remove_dir()

    def shuffle_dir(self) -> str:
        """``OUTDIR/.emsort-shuffle-JOB-XXXXXXXX/``, made on first use: map tasks write
        their outputs there as files (a sort of tables), every node seeing it as it sees
        the output. The driver holds its lock until the job ends and then removes it."""
        if self.shuffle is None:
            self.shuffle = _cleanup.make_scratch_dir(self.out_dir, f"{_cleanup.SHUFFLE_PREFIX}{self.token}-")
        return self.shuffle[0]

    def _remove_shuffle(self) -> None:
        if self.shuffle is None:
            return
        path, fd = self.shuffle
        try:
            for _ in range(3):  # a straggler's file may appear while it goes
                shutil.rmtree(path, ignore_errors=True)
                if not os.path.lexists(path):
                    break
        finally:
            os.close(fd)
            self.shuffle = None

    def track(self, refs) -> None:
        """Tasks to cancel if the job fails (one return of each task is enough)."""
        self.refs.extend(refs)

    def _cancel(self) -> None:
        """Cancels the tasks: running ones get KeyboardInterrupt and remove their files
        (on whichever node they run); those still running after the grace time have
        their workers killed."""
        refs, self.refs = self.refs, []
        # Only the tasks still under way: cancelling finished ones made the driver abort
        # (Ray 2.60, a failed check in TaskManager::CompletePendingTask) in about one
        # interrupted run out of three.
        refs = _pending(refs, 0) if refs else []
        if refs:
            _cancel_each(refs, force=False)
            _cancel_each(_pending(refs, _CANCEL_GRACE_S), force=True)

    def _remove_all(self) -> None:
        """Removes what the job made here: temporary files (waiting for the locks of
        killed workers to go), this node's scratch directories, finished parts (they are
        no sorted output without the rest and the manifest), the lock, and the output
        directory if the job created it and it is empty."""
        if self.fd is None:
            return
        self._remove_shuffle()
        _cleanup.sweep_output(self.out_dir, keep=[_cleanup.MANIFEST_TMP], wait=_LOCK_WAIT_S)
        _cleanup.sweep_scratch(self.scratch_root, job=self.token, wait=_LOCK_WAIT_S)
        self._remove_output()
        self._release(remove=True)

    def abort(self) -> None:
        """Cancels the tasks and removes everything the job made (see ``_remove_all``)."""
        _retrying(self._cancel)
        _retrying(self._remove_all)

    def commit(self, manifest: dict) -> None:
        """Removes what killed task attempts left, then writes the manifest and renames it
        to ``_SUCCESS``: the directory looks complete only when it is."""
        self._remove_shuffle()
        busy = _cleanup.sweep_output(self.out_dir, keep=[_cleanup.MANIFEST_TMP], wait=_LOCK_WAIT_S)
        if busy:
            raise EmsortRayError(f"{self.out_dir}: files still locked by running processes: {', '.join(busy)}")
        _cleanup.sweep_scratch(self.scratch_root, job=self.token, wait=_LOCK_WAIT_S)
        with open(self.fd, "w", closefd=False) as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        os.replace(self.lock_path, os.path.join(self.out_dir, MANIFEST))
        self._release(remove=False)


def sort(
    inputs,
    output_dir,
    *,
    format: str = "lines",
    partitions: Optional[int] = None,
    memory_per_task="256M",
    reverse: bool = False,
    chunk_size=None,
    samples: Optional[int] = None,
    seed: int = 0,
    scratch_dir: Optional[str] = None,
    reader: str = "adaptive",
    max_retries: int = 3,
    num_cpus_per_task: float = 1,
    progress: Optional[Callable[[str, int, int], None]] = None,
    filesystem=None,
    compression: Optional[str] = None,
    row_group_size: Optional[int] = None,
    _kill=None,
    **options: Unpack[emsort.OrderOptions],
) -> dict:
    """Sorts ``inputs`` on the connected Ray cluster into ``output_dir/part-00000`` … .

    Parquet inputs (``.parquet``, ``.pq``; ``format="parquet"``) are sorted as tables, by
    columns: ``key="ts"`` or ``key=["ts", "user:desc,nulls_first"]`` (none: every column),
    ``reverse``, ``unique``; the parts are ``part-NNNNN.parquet``, each a Parquet file
    whose footer's ``sorting_columns`` say the order (see ``docs/ray.md``).

    Args:
        inputs: a file, a directory (its regular files), a glob pattern, or a list of
            these. Every node must see them at the same path (shared storage).
        output_dir: where ``part-NNNNN`` and ``_SUCCESS`` go (created if missing;
            old ``part-*`` and ``_SUCCESS`` there are removed first, and the temporary
            files of killed runs). The parts in name order are the sorted output. Shared
            storage, or a per-node local directory (the manifest then says which node
            holds each part). One sort at a time per directory.
        format: ``lines`` (the default, as ``emsort sort``), ``u32 i32 u64 i64 f32 f64`` or
            ``rec:SIZE:KEY_OFFSET:KEY_LEN``.
        partitions: number of key ranges = merge tasks = output parts. Default: the
            cluster's CPUs, or more so that one range fits in ``memory_per_task``.
        memory_per_task: memory budget of one task (bytes or "256M"): map chunks are at
            most this size (unless ``chunk_size`` says otherwise) and a merge whose
            blocks exceed it merges externally with this budget.
        reverse: descending order (part-00000 holds the largest items); for lines, GNU
            sort's global ``-r``.
        chunk_size: bytes per map task (default ``memory_per_task``).
        samples: items sampled in all to choose the boundaries (default
            ``max(2000, 100 * partitions)``).
        scratch_dir: directory on each node for external merges (default the node's
            temp directory); the ``emsort-ray-part-*`` directories of killed runs there
            are removed.
        reader: ``emsort.Reader`` kind for the map tasks' reads (sampling uses ``pread``).
        max_retries: Ray retries of a task whose worker died (exceptions are not retried).
        progress: ``progress(phase, done, total)`` with phase ``sample``, ``map``,
            ``merge``; called on the driver.
        filesystem: Parquet inputs: the ``pyarrow.fs`` file system they are read from
            (default: the local one, or the one a URI such as ``s3://bucket/data/``
            names); the output directory is a path every node sees.
        compression: Parquet output: the codec (``zstd``, ``snappy``, ``none`` …;
            default the first input's).
        row_group_size: Parquet output: rows per row group (default the first input's).
        **options: GNU sort's ordering options of lines (:class:`emsort.OrderOptions`), as
            :func:`emsort.sort` takes them (``key="3,3n", field_separator=","``): the
            parts in name order are what ``LC_ALL=C sort`` writes with those options.
            ``unique`` keeps the first of equal lines in the order of the inputs (files
            in the order given, each from its start), as GNU sort does. A shuffle
            (``random_sort``, ``R`` in a key) needs ``random_source``, a file every node
            reads at the same path: the tasks must hash with the same salt.
        _kill: test hook, ``(phase, index, marker_path)``: the first attempt of task
            ``index`` of ``phase`` (``"map"`` or ``"merge"``) SIGKILLs its own worker.

    Returns:
        The manifest (also written to ``output_dir/_SUCCESS``): parts with their items,
        bytes and node, boundaries (hex), phase timings, totals.

    Raises:
        EmsortRayError: a missing or malformed input, an input inside ``output_dir``,
            another sort writing into ``output_dir``, or a task that failed for good;
            bad ordering options (the engine's message, e.g. "options '-gn' are
            incompatible"), or ordering options other than ``reverse`` for a format
            that is not ``lines``.

    On any exception (KeyboardInterrupt included) the tasks are cancelled and everything
    the sort made is removed before the exception propagates: parts, temporary files,
    scratch directories, ``output_dir`` itself if it created it and it is empty.
    """
    t_start = time.perf_counter()
    for name in options:  # Python's own check, for a signature with every keyword in it
        if name not in emsort.OrderOptions.__annotations__:
            raise TypeError(f"sort() got an unexpected keyword argument '{name}'")
    from . import _table

    if format == "parquet" or (format == "lines" and _table.is_table_input(inputs)):
        other = sorted(k for k, v in options.items() if k not in ("key", "unique") and v not in (None, False))
        if other:
            raise EmsortRayError(
                f"{', '.join(other)} order{'s' if len(other) == 1 else ''} text lines, not tables: a table's "
                "keys are key=\"COLUMN[:desc,nulls_first]\" (reverse and unique apply)"
            )
        return _table.sort_tables(
            inputs, output_dir, key=options.get("key"), reverse=reverse, unique=bool(options.get("unique")),
            partitions=partitions, memory_per_task=memory_per_task, chunk_size=chunk_size, samples=samples,
            seed=seed, scratch_dir=scratch_dir, filesystem=filesystem, compression=compression,
            row_group_size=row_group_size, max_retries=max_retries, num_cpus_per_task=num_cpus_per_task,
            progress=progress, _kill=_kill,
        )
    if filesystem is not None or compression is not None or row_group_size is not None:
        raise EmsortRayError("filesystem, compression and row_group_size apply to Parquet inputs only")
    fmt, memory, chunk, order = check_settings(format, reverse, options, memory_per_task, chunk_size)
    eol = _record_order(order).terminator if order is not None else None
    out_dir = os.path.abspath(os.fspath(output_dir))
    files, sizes = check_inputs(inputs, out_dir, fmt)
    # With `header`: the header (every part starts with it) and where each input's records
    # start; an input whose header differs is refused here, before any task runs.
    header, starts = check_headers(files, sizes, order)
    csv = bool(order and order.get("csv"))
    total_bytes = sum(sizes)

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
        # 1. sample (CSV: scan, which also finds the chunks' first records)
        t0 = time.perf_counter()
        nonempty = [(p, s, b) for p, s, b in zip(files, sizes, starts) if s > b]
        want = samples if samples is not None else max(2000, 100 * partitions)
        sample_refs = []
        for i, (p, s, b) in enumerate(nonempty):
            n = max(1, -(-want * s // max(1, total_bytes)))
            if csv:
                ref = _scan_task.options(**opts).remote(p, s, b, chunk, n, seed + i, order)
            else:
                ref = _sample_task.options(**opts).remote(p, fmt.spec, s, n, seed + i, eol or b"\n", b)
            sample_refs.append(ref)
        job.track(sample_refs)
        sampled = _wait_all(sample_refs, "sample", progress, "sampling") if sample_refs else []
        if csv:
            # Chunks of whole records: from each chunk's first record to the next one's.
            chunks = []
            for (p, s, _), (cuts, _) in zip(nonempty, sampled):
                for a, b in zip(cuts, cuts[1:] + [s]):
                    chunks.append((p, a, b - a, s))
            sampled = [records for _, records in sampled]
        else:
            chunks = _plan_chunks(files, sizes, fmt, chunk, starts)
        if fmt.fixed:
            isz = fmt.item_size
            pool = np.concatenate(sampled) if sampled else np.empty(0, np.uint8)
            emsort.sort_buffer(pool, fmt.spec)
            k = pool.size // isz
            boundaries = [pool[(i * k // partitions) * isz : (i * k // partitions + 1) * isz].tobytes() for i in range(1, partitions)] if k else [bytes(isz)] * (partitions - 1)
        else:
            # The samples in the engine's order.
            pool = _sorted_records([r for records in sampled for r in records], _line_order(order, header))
            k = len(pool)
            boundaries = [pool[i * k // partitions] for i in range(1, partitions)] if k else [b""] * (partitions - 1)
        t_sample = time.perf_counter() - t0

        # 2. map
        t0 = time.perf_counter()
        bref = ray.put(boundaries)
        map_refs = []
        for i, (p, off, n, fsize) in enumerate(chunks):
            refs = _map_task.options(num_returns=partitions + 1, **opts).remote(
                p, off, n, fsize, fmt.spec, bref, reverse, reader, i, _kill, order, header, csv
            )
            map_refs.append(refs)
            job.track([refs[-1]])

        # 3. merge (submitted now: Ray starts each one when its blocks exist)
        merge_refs = [
            _merge_task.options(**opts).remote(
                r, out_dir, fmt.spec, memory, reverse, scratch_dir, job.token, _kill, order, header,
                *[m[r] for m in map_refs]
            )
            for r in range(partitions)
        ]
        job.track(merge_refs)
        map_stats = _wait_all([m[-1] for m in map_refs], "map", progress, "a map task")
        t_map = time.perf_counter() - t0
        t1 = time.perf_counter()
        parts = _wait_all(merge_refs, "merge", progress, "a merge task")
        t_merge = time.perf_counter() - t1
        del map_refs, merge_refs

        items = sum(p["items"] for p in parts)
        mapped = sum(s["items"] for s in map_stats)
        # `unique` drops lines in the merges too: the parts hold at most what was mapped.
        if items > mapped or (items != mapped and not (order or {}).get("unique")):
            raise EmsortRayError(f"the parts hold {items} items but the map tasks read {mapped}")

        manifest = {
            "format": fmt.spec,
            "reverse": bool(reverse),
            "order": _manifest_order(order),
            "items": items,
            "bytes": total_bytes,
            "inputs": [{"path": os.path.abspath(p), "bytes": s} for p, s in zip(files, sizes)],
            # With `header`: every part starts with this record (an empty part holds it
            # alone), so that each part is a CSV file of its own; items count records.
            "header": header.hex() if header is not None else None,
            **job_facts(partitions, len(chunks), chunk, memory, k, boundaries, parts, map_stats,
                        (t_start, t_sample, t_map, t_merge)),
        }
        manifest["timings"]["map_sort_s"] = sum(s["sort_s"] for s in map_stats)
        job.commit(manifest)
        return manifest
    except BaseException:
        # An error, Ctrl-C (KeyboardInterrupt), or SIGTERM that the caller turned into an
        # exception: cancel the tasks and remove all the job made; no _SUCCESS.
        job.abort()
        raise


# ---- reading and checking an output -----------------------------------------------------


def read_manifest(output_dir) -> dict:
    """The ``_SUCCESS`` manifest of a finished sort (EmsortRayError if absent)."""
    path = os.path.join(os.fspath(output_dir), MANIFEST)
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise EmsortRayError(f"{path}: no manifest (the sort did not finish)") from None


def part_paths(output_dir) -> list:
    """The output parts in order. With ``header=True`` each starts with the header record
    (``read_manifest(output_dir)["header"]``, hex), so that each is a CSV file of its own:
    the sorted records are each part after its header, part after part."""
    m = read_manifest(output_dir)
    return [os.path.join(os.fspath(output_dir), p["name"]) for p in m["parts"]]


def _edge_item(path: str, fmt: Format, last: bool) -> Optional[bytes]:
    """The first or last item of a part of a fixed-size format."""
    size = os.path.getsize(path)
    if size == 0:
        return None
    with open(path, "rb") as f:
        f.seek(size - fmt.item_size if last else 0)
        return f.read(fmt.item_size)


def _span(path: str, span, eol: bytes) -> Optional[bytes]:
    """The record at byte span ``(start, end)`` of a file (None: none), without ``eol``."""
    if span is None:
        return None
    start, end = span
    with open(path, "rb") as f:
        f.seek(start)
        r = f.read(end - start)
    return r[:-1] if r.endswith(eol) else r


def _fail(items: int, message: str) -> dict:
    return {"ok": False, "items": items, "message": message}


def verify(output_dir, *, format: Optional[str] = None) -> dict:
    """Checks a finished sort on this machine (the parts must be readable here): the
    manifest is there, the directory holds nothing but it and the parts it lists (a stray
    temporary file, an extra part or any other file fails), each part in order
    (``emsort.verify``), consecutive parts in order across their edge, item counts as the
    manifest says. Returns ``{"ok", "items", "message"}``; the message names the files
    at fault.

    Raises:
        EmsortRayError: ``format`` is not a format.
    """
    out = os.fspath(output_dir)
    if not os.path.isdir(out):
        return _fail(0, f"{out}: no such directory")
    try:
        m = read_manifest(out)
        names = [p["name"] for p in m["parts"]]
    except EmsortRayError as e:
        return _fail(0, str(e))
    except (ValueError, KeyError, TypeError) as e:
        return _fail(0, f"{os.path.join(out, MANIFEST)}: not a manifest ({type(e).__name__}: {e})")
    stray = sorted(set(os.listdir(out)) - set(names) - {MANIFEST})
    if stray:
        shown = ", ".join(stray[:10]) + (f" and {len(stray) - 10} more" if len(stray) > 10 else "")
        return _fail(0, f"{out}: {len(stray)} file(s) that are not parts listed by the manifest: {shown}")
    if (format or m.get("format")) == "parquet":
        from ._table import verify_tables

        return verify_tables(out, m)
    try:
        fmt = Format.parse(format or m["format"])
    except ValueError as e:
        raise EmsortRayError(str(e)) from None
    reverse = bool(m.get("reverse"))
    # Lines: the engine's order of the manifest's options (`sort -c` on each part); with a
    # header, every part starts with it.
    header = bytes.fromhex(m["header"]) if m.get("header") is not None else None
    lo = None if fmt.fixed else _line_order(_order_from_manifest(m), header)
    eol = lo.terminator if lo is not None else b"\n"
    items = 0
    prev = None
    for p in m["parts"]:
        path = os.path.join(out, p["name"])
        if not os.path.exists(path):
            return _fail(items, f"{path}: missing")
        if lo is None:
            r = emsort.verify(path, format=fmt.spec, reverse=reverse)
            if not r["ok"]:
                return _fail(items + r.get("items", 0), f"{path}: {r['message']}")
            n = r["items"]
        else:
            if header is not None:
                with open(path, "rb") as f:
                    if f.read(len(header)) != header:
                        return _fail(items, f"{path}: does not start with the header the manifest records")
            r = lo.check(path)
            n = r["records"]
            if not r["ok"]:
                d = r["disorder"]
                what = "not after" if lo.unique else "before"
                return _fail(items + n, f"{path}: line {d['line']} comes {what} the line above it in the sort's order")
        if n != p["items"]:
            return _fail(items, f"{path}: {n} items, manifest says {p['items']}")
        items += n
        if lo is not None:
            # The edge records' spans, from the check (CSV records may span lines).
            first = _span(path, r["first_record"], eol)
            last = _span(path, r["last_record"], eol)
        else:
            first = _edge_item(path, fmt, last=False)
            last = None
        if first is not None:
            if prev is not None:
                if lo is not None:
                    c = lo.compare(prev, first)
                    bad = c > 0 or (c == 0 and lo.unique)
                else:
                    bad = emsort.item_key_less(first, prev, fmt.spec, reverse=reverse)
                if bad:
                    return _fail(items, f"{path}: its first item is out of order with the previous part's last")
            prev = last if lo is not None else _edge_item(path, fmt, last=True)
    if items != m["items"]:
        return _fail(items, f"{items} items in the parts, manifest says {m['items']}")
    return {"ok": True, "items": items, "message": "ok"}
