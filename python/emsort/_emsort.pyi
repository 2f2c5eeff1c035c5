"""Type stubs of emsort's extension module (Rust, PyO3): see ``emsort``."""

import os
import pathlib
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from ._options import OrderOptions

__version__: str

__all__ = [
    "__version__",
    "EmsortError",
    "EmsortFileNotFoundError",
    "EmsortIsADirectoryError",
    "EmsortOSError",
    "EmsortPermissionError",
    "LineOrder",
    "Reader",
    "Sorter",
    "compare",
    "gen",
    "item_key_less",
    "item_size",
    "merge_files",
    "parse_table_key",
    "partition_points",
    "read_array",
    "sort",
    "sort_array",
    "sort_array_to_file",
    "sort_buffer",
    "sort_key",
    "table_keys",
    "table_ranges",
    "verify",
]

_StrPath = Union[str, "os.PathLike[str]"]
#: An ``int`` of bytes or a size string as on the command line: ``"256M"``,
#: ``"1G"``, ``"64K"`` (powers of 1024); memory also takes ``"25%"`` of RAM.
_Size = Union[int, str]
#: A writable bytes-like object: ``bytearray``, writable ``memoryview``,
#: numpy array (any dtype; its bytes are used).
_WritableBuffer = Any
#: Any bytes-like object: ``bytes``, ``bytearray``, ``memoryview``, numpy array.
_ReadableBuffer = Any
#: ``progress(phase, done, total)``: ``phase`` names the work (``"run
#: formation"``, ``"merge"``, ``"gen"`` …), ``done`` counts its units
#: (bytes) so far, ``total`` is the phase's size when known.
_ProgressCallback = Callable[[str, int, Optional[int]], Any]
#: The numbers dtypes: a format name or anything ``numpy.dtype()`` takes.
_DTypeLike = Union[str, "np.dtype[Any]", type]

class EmsortError(Exception):
    """An error reported by the emsort library; the message names the file concerned
    (a file whose size is not a whole number of items, a closed reader …)."""

class EmsortOSError(EmsortError, OSError):
    """An emsort error caused by the operating system (a full disk, a failed system
    call, io_uring unavailable); ``errno`` is set when known."""

class EmsortFileNotFoundError(EmsortOSError, FileNotFoundError):
    """A file emsort needs does not exist (``errno`` ENOENT, ``filename`` the path)."""

class EmsortIsADirectoryError(EmsortOSError, IsADirectoryError):
    """A directory was given where emsort needs a file."""

class EmsortPermissionError(EmsortOSError, PermissionError):
    """emsort may not read or write a path."""

def sort(
    input: _StrPath,
    output: _StrPath,
    *,
    format: str = "lines",
    memory: Optional[_Size] = None,
    fan_in: Optional[int] = None,
    temp_dirs: Union[_StrPath, Sequence[_StrPath], None] = None,
    parallel: Optional[int] = None,
    reverse: bool = False,
    io: str = "auto",
    compress: str = "auto",
    block_size: Optional[_Size] = None,
    policy: str = "optimal",
    progress: Optional[_ProgressCallback] = None,
    **order: Unpack[OrderOptions],
) -> Dict[str, Any]:
    """Sort the file ``input`` into ``output``: ``emsort sort INPUT -o OUTPUT``.

    An external multiway merge sort: run formation reads ``memory`` bytes at a
    time, sorts them on ``parallel`` threads and writes sorted runs to a
    temporary directory under each of ``temp_dirs``; d-way merges (a loser
    tree, ``fan_in`` = d) then combine the runs, following ``policy``. The
    output is written beside its target and renamed when complete, so
    ``output`` may be ``input`` itself; on an error or Ctrl-C neither a
    partial output nor a temporary file is left.

    Lines (the default format, as on the command line) are ordered as
    ``LC_ALL=C sort`` orders them, with GNU sort's ordering options as
    keywords named after its long options (:class:`OrderOptions`)::

        emsort.sort("sales.csv", "by-amount.csv", key="3,3n", field_separator=",")
        # = LC_ALL=C sort -t, -k3,3n sales.csv -o by-amount.csv

    Tables — an ``input`` or ``output`` named ``.parquet`` (``.pq``) or as an Arrow
    IPC file (``.arrow``, ``.feather``, ``.ipc``, ``.arrows``) — are sorted by
    columns: ``key`` names them, each ``NAME[:MODS]`` with MODS from ``asc``,
    ``desc`` (``r``), ``nulls_first``, ``nulls_last`` (the default) separated by
    commas; no key orders by every column. Rows with equal keys keep their
    order (``unique=True``: the first only; ``reverse=True`` reverses every
    key). Keys order as Arrow orders them (floats in total order, decimals,
    timestamps, strings bytewise, dictionaries by their values). A Parquet
    output keeps the input's row group size and codec and names its order in
    the footer (``sorting_columns``); the statistics add ``rows_in`` and
    ``rows_out``::

        emsort.sort("events.parquet", "sorted.parquet", key=["ts", "user:desc"], memory="256M")

    Args:
        input: the file to sort (never modified, unless it is also ``output``).
        output: where the sorted file goes.
        format: ``lines`` (the default: text lines, as ``LC_ALL=C sort``),
            ``u32``, ``i32``, ``u64``, ``i64``, ``f32``, ``f64`` (NaNs last) or
            ``rec:SIZE:KEY_OFFSET:KEY_LEN`` (records by a bytewise key). The
            default was ``u32`` before (``CHANGELOG.md``): numbers need
            ``format="u32"`` now.
        memory: M, bytes or ``"256M"`` / ``"25%"`` (default: a quarter of the
            available RAM, at most twice the input plus 16 MiB, as the CLI).
        fan_in: d, the most runs one merge reads (default: as many as M allows,
            at most 64).
        temp_dirs: directories for the runs (default: ``$TMPDIR`` or ``/tmp``).
        parallel: threads (default: all cores).
        reverse: descending order (``-r``; for lines, the global ``-r`` that keys
            without modifiers of their own inherit).
        io: ``auto`` (default: as ``emsort sort``, ``emsort calibrate``'s
            measurement of the temp dir's device, or a probe of it, picks
            ``uring-direct`` on a device, with its queue depth from
            bandwidth × latency, and ``direct`` on memory or without
            io_uring; the stats' ``plan["io_choice"]`` says which and why) or a stream kind: ``syscall``, ``stdio``,
            ``buffered``, ``mmap``, ``direct`` (O_DIRECT; where the file
            system refuses it, as tmpfs does, buffered I/O with the same
            block size), ``uring`` or ``uring-direct`` (O_DIRECT with Q
            requests in flight).
        block_size: B of every stream (default: M/16 within 4K … 1M).
        policy: ``optimal`` (fewest passes) or ``fifo``.
        progress: called as ``progress(phase, done, total)`` at most ten
            times a second and once at the end of each phase
            (``"run formation"`` and ``"merge"``, in bytes).
        **order: GNU sort's ordering options of lines: :class:`OrderOptions`.

    Returns:
        The statistics ``emsort sort --stats`` writes as JSON: ``plan``,
        ``input_bytes``, ``output_bytes``, ``runs``, ``passes``,
        ``merge_levels``, ``merges``, ``merge_order``, ``run_formation`` and
        ``merge`` (``seconds``, ``bytes_read``, ``bytes_written``),
        ``total_seconds``, ``peak_rss_bytes``, context switches, page faults,
        CPU seconds, and ``bounds`` (``cpu_seconds``: CPU time over threads;
        ``io_seconds``: the bytes at the device's measured bandwidths, or
        ``None``; ``binds``: ``"cpu"`` or ``"io"``; ``ratio``: the time over
        the binding bound) …

    Raises:
        EmsortError: from the library (e.g. ``EmsortFileNotFoundError``).
        ValueError: a bad format, size or kind, a memory too small for
            ``fan_in`` and ``block_size``, or ordering options that GNU sort
            refuses or that the format does not take (:class:`OrderOptions`).
        TypeError: an option of the wrong type (``key=len``) or an unknown keyword.
        KeyboardInterrupt: Ctrl-C (the sort stops; nothing is left behind).
    """

def merge_files(
    inputs: Sequence[_StrPath],
    output: _StrPath,
    *,
    format: str = "lines",
    memory: Optional[_Size] = None,
    reverse: bool = False,
    temp_dirs: Union[_StrPath, Sequence[_StrPath], None] = None,
    progress: Optional[_ProgressCallback] = None,
    fan_in: Optional[int] = None,
    parallel: Optional[int] = None,
    io: str = "auto",
    compress: str = "auto",
    block_size: Optional[_Size] = None,
    policy: str = "optimal",
    **order: Unpack[OrderOptions],
) -> Dict[str, Any]:
    """Merge files that are each already sorted into one sorted ``output``.

    The merge phase of :func:`sort` alone (the Rust ``emsort_sort::merge_files``):
    one d-way loser-tree merge when there are at most ``fan_in`` inputs,
    otherwise intermediate merges into ``temp_dirs`` first (removed as they
    are used). Each input must be sorted in the order asked for (ascending,
    or descending with ``reverse``); this is not checked — use :func:`verify`.
    The inputs are never modified; ``output`` is written beside and renamed
    (it may be one of the inputs). No input gives an empty output.

    ``format`` (default ``lines``) and the ordering options
    (:class:`OrderOptions`) are those of :func:`sort`: ``LC_ALL=C sort -m``
    with the same options. With ``unique``, one line of each group of equal
    lines remains, from the earliest input.

    Returns:
        The statistics of :func:`sort`, with ``runs`` = the number of inputs,
        an empty ``run_formation`` and ``passes`` = bytes read by the merges
        over the total input (1.0 for a single merge).
    """

def gen(
    output: _StrPath,
    *,
    format: str = "u32",
    count: Optional[int] = None,
    bytes: Optional[_Size] = None,
    dist: str = "uniform",
    seed: int = 0,
    progress: Optional[_ProgressCallback] = None,
    line_len: Tuple[int, int] = ...,
    io: str = "direct",
    block_size: Optional[_Size] = None,
) -> None:
    """Write a seeded data file: ``emsort gen``. The same seed gives the same bytes.

    Args:
        output: the file to write (written beside and renamed when complete).
        format: any format (default ``u32``, as ``emsort gen``); fixed-size
            formats need ``count`` items, ``lines`` needs ``bytes`` (a total size).
        count: number of items (fixed-size formats).
        bytes: total size of the text (``lines``), an int or ``"64M"``.
        dist: ``uniform``, ``sorted``, ``reverse``, ``few-distinct`` or ``zipf``.
        seed: the generator's seed (note: the CLI's default is 42).
        progress: see :func:`sort` (one ``"gen"`` phase in bytes).
        line_len: the range ``(min, max)`` of line lengths without the newline
            (``lines``; default ``(10, 100)``).
        io: stream kind that writes (default ``direct``, 8 MiB blocks).
        block_size: block size of ``io``.

    Raises:
        ValueError: ``count``/``bytes`` missing or both given, a bad format.
    """

def verify(
    path: _StrPath,
    *,
    format: str = "u32",
    input: Optional[_StrPath] = None,
    reverse: bool = False,
) -> Dict[str, Any]:
    """Check that a file is sorted and, with ``input``, holds the same items: ``emsort verify``.

    Streams the files once in constant memory; the multiset check compares
    order-independent 128-bit fingerprints. ``format`` defaults to ``u32``, as
    ``emsort verify``; lines are checked bytewise (for an order with keys:
    :meth:`LineOrder.check`).

    Returns:
        ``{"ok": bool, "items": int, "path": str, "format": str,
        "reverse": bool, "disorder": None or {"index": int, "offset": int},
        "same_multiset": None (no input) or bool, "message": str}``.
        ``disorder`` is the first item smaller (larger with ``reverse``) than
        the one before it: its 0-based index and byte offset. ``message`` is
        the line ``emsort verify`` prints (``"…: OK, N items in ascending
        order (u32)"`` or ``"…: NOT in ascending order: item 7 (byte offset 28)
        is smaller than item 6"``).
    """

class SortedArrow:
    """The sorted batches of :func:`sort_arrow`, given once as an Arrow C stream."""

    def __arrow_c_stream__(self, requested_schema: Optional[Any] = None) -> Any: ...

def sort_arrow(
    data: Any,
    *,
    key: Union[str, Sequence[str], None] = None,
    unique: bool = False,
    reverse: bool = False,
    memory: Optional[_Size] = None,
    temp_dirs: Union[_StrPath, Sequence[_StrPath], None] = None,
    parallel: Optional[int] = None,
    io: str = "auto",
    compress: str = "auto",
    block_size: Optional[_Size] = None,
    progress: Optional[_ProgressCallback] = None,
) -> Any:
    """Sort Arrow data (an object with ``__arrow_c_stream__``) by columns within
    ``memory``; ``emsort.sort_arrow`` returns a ``pyarrow.RecordBatchReader`` of the
    sorted batches (this function, a :class:`SortedArrow`). Keys as ``emsort.sort``
    of a Parquet file takes them."""

def parse_table_key(spec: str) -> Tuple[str, bool, bool]:
    """A table's key ``NAME[:MODS]`` (as :func:`sort_arrow` and :func:`sort` of a Parquet
    file take it) as ``(column, descending, nulls_first)``: MODS are ``asc``, ``desc``
    (or ``r``), ``nulls_first``, ``nulls_last``, separated by commas; nulls go last
    unless asked. ``ValueError`` for an unknown modifier or no name."""

def table_keys(
    data: Any, *, key: Union[str, Sequence[str], None] = None, reverse: bool = False
) -> list[bytes]:
    """The sort key of every row of Arrow data (an object with ``__arrow_c_stream__``):
    bytes that compare (as ``bytes`` do) as :func:`sort_arrow` with the same ``key`` and
    ``reverse`` orders the rows — arrow-row's encoding of the key columns, each with its
    direction and null placement. Rows with equal keys have equal bytes; the same key
    over the same column types encodes alike in every process. For samples, to choose
    the boundaries of key ranges (``emsort.ray`` does)."""

def table_ranges(
    data: Any,
    boundaries: Sequence[bytes],
    *,
    key: Union[str, Sequence[str], None] = None,
    reverse: bool = False,
) -> npt.NDArray[np.uint32]:
    """For each row of Arrow data, the key range it falls in: the number of
    ``boundaries`` (keys from :func:`table_keys`, in order) not after the row's key,
    as ``bisect.bisect_right(boundaries, key)``; rows with equal keys share a range.

    Raises:
        ValueError: boundaries out of order, a key naming no column.
    """

def sort_array(a: npt.NDArray[Any], *, reverse: bool = False) -> None:
    """Sort a 1-D contiguous numpy array of numbers in place, with the GIL released.

    dtypes: ``uint32``, ``int32``, ``uint64``, ``int64``, ``float32``,
    ``float64`` in native byte order. The sort is emsort's in-memory radix
    sort (that of run formation, on all cores); floats are in total order
    (``-inf`` … ``-0.0`` < ``0.0`` … ``inf``) with every NaN last (first with
    ``reverse``), like ``numpy.sort`` for the NaNs.

    Raises:
        TypeError: not a numpy array, or another dtype.
        ValueError: not 1-D, not contiguous (``a[::2]``), or read-only.
    """

def sort_array_to_file(a: npt.NDArray[Any], output: _StrPath, *, reverse: bool = False) -> None:
    """Write a sorted copy of a 1-D numpy array of numbers to ``output``.

    The array is left unchanged (it may be strided). The file holds the
    items in native byte order: the format named by the dtype (``uint32`` →
    ``u32`` …), readable by :func:`read_array` and :func:`verify`. Written
    beside and renamed when complete. Takes memory for one copy of ``a``.
    """

def read_array(
    path: _StrPath,
    *,
    dtype: Optional[_DTypeLike] = None,
    offset: int = 0,
    count: Optional[int] = None,
    kind: str = "adaptive",
) -> npt.NDArray[Any]:
    """Read numbers from a file into a new 1-D numpy array with emsort's readers.

    Like ``numpy.fromfile(path, dtype, count, offset=offset)``: ``offset`` is
    in bytes, ``count`` in items (default: every item to the end of the file,
    which must then be a whole number of items).

    Args:
        dtype: ``"u32"`` (the default), ``"i32"``, ``"u64"``, ``"i64"``,
            ``"f32"``, ``"f64"``, or the numpy dtype (``np.uint32``,
            ``"float64"`` …).
        kind: the reader: ``stream``, ``mmap``, ``pread``, ``uring`` or
            ``adaptive``.

    Raises:
        ValueError: the range goes past the end of the file.
        EmsortError: the file cannot be read (e.g. ``EmsortFileNotFoundError``).
    """

def sort_buffer(buf: _WritableBuffer, format: str, *, reverse: bool = False) -> None:
    """Sort, in place, a writable bytes-like object of whole items of a fixed-size format.

    ``buf`` is taken as plain bytes (a ``bytearray``, a writable
    ``memoryview``, a numpy array of any dtype), its length a multiple of the
    item size. Numbers (``u32`` … ``f64``, native byte order) are sorted by
    emsort's radix sort (floats NaNs last); records ``rec:SIZE:KEY_OFFSET:KEY_LEN``
    by their key bytewise with a *stable* sort: records with equal keys keep
    their order in ``buf`` (``emsort.sort`` makes no such promise for files)
    and take, while sorting, a second buffer as large as ``buf`` plus an
    index of 16 bytes per record; numbers sort in place (an unaligned
    ``buf`` through an aligned copy). The GIL is released.

    Raises:
        ValueError: ``lines``, a bad format, or a length that is not whole items.
        TypeError: a read-only or non-buffer object.
    """

def partition_points(
    sorted_buf: _ReadableBuffer,
    format: str,
    boundaries: Iterable[_ReadableBuffer],
    *,
    reverse: bool = False,
) -> List[int]:
    """For each boundary, the index (in items) of the first item of ``sorted_buf`` not less than it.

    A lower bound by binary search in the format's order (descending with
    ``reverse``; ``sorted_buf`` must be sorted that way): item ``i`` of the
    result is like ``bisect.bisect_left(keys, key(boundaries[i]))``. Items
    ``[p[j-1], p[j])`` thus fall between boundary ``j-1`` (included) and
    boundary ``j`` (excluded) — the partitions of a distributed sort.

    Args:
        sorted_buf: bytes-like, whole items of a fixed-size format, sorted.
        boundaries: each exactly one item of the format (``item_size`` bytes),
            normally in ascending order.

    Raises:
        ValueError: a boundary of the wrong size, ``lines``, a buffer that is
            not whole items.
    """

def compare(a: _ReadableBuffer, b: _ReadableBuffer, format: str, *, reverse: bool = False) -> int:
    """Compare two items by the format's order: -1 if ``a`` comes first, 0 if equal, 1 otherwise.

    Items are exactly one item of the format (``item_size`` bytes); for
    ``lines``, a line without its newline. ``functools.cmp_to_key`` turns it
    into a sort key; :func:`sort_key` is faster.
    """

def item_key_less(a: _ReadableBuffer, b: _ReadableBuffer, format: str, *, reverse: bool = False) -> bool:
    """Whether item ``a`` comes strictly before item ``b`` in the format's order."""

def sort_key(item: _ReadableBuffer, format: str) -> bytes:
    """Bytes whose plain bytewise order is the format's order of the items.

    ``sorted(items, key=lambda x: emsort.sort_key(x, fmt))`` sorts items as
    emsort does: numbers become their normalised key big-endian (floats in
    total order, NaNs last), records their key field, lines themselves.
    """

def item_size(format: str) -> int:
    """The size in bytes of one item of a fixed-size format (``rec:16:4:4`` → 16).

    Raises:
        ValueError: ``lines`` (items of any length) or a bad format.
    """

@final
class LineOrder:
    """GNU sort's order of text lines, for sorting, cutting and comparing lines in memory.

    The ordering options of :func:`sort` (``reverse`` and
    :class:`OrderOptions`), compiled once by the engine that sorts files:
    what a program that sorts or partitions lines itself (``emsort.ray``'s
    tasks) needs to agree with :func:`sort` and ``LC_ALL=C sort`` byte for
    byte::

        order = emsort.LineOrder(key="3,3n", field_separator=",")
        data = order.sort(b"a,x,10\nb,y,9\n")            # b"b,y,9\na,x,10\n"
        cuts = order.partition_points(data, [b"c,z,10"])   # [6]: before a,x,10

    With ``header=True``, ``columns`` is the header record (bytes, its
    terminator optional) whose columns keys may name (``key="amount:n"``):
    the lines given to :meth:`sort` are the records after it, and
    :meth:`check` skips a file's first record. ``header`` without
    ``columns`` (or ``columns`` without ``header``) is a ``ValueError``.

    Raises (on creation): ``ValueError`` / ``TypeError`` as :func:`sort` for
    bad options (``ValueError`` for a ``locale`` that cannot be loaded).
    """

    def __new__(
        cls,
        *,
        reverse: bool = False,
        columns: Optional[_ReadableBuffer] = None,
        **order: Unpack[OrderOptions],
    ) -> "LineOrder": ...
    def sort(self, data: _ReadableBuffer) -> bytes:
        """The lines of ``data`` sorted, each ended by the terminator (a last line may
        lack it in ``data``); with ``unique``, the first of each group of equal lines.

        Stable: lines equal by the order keep their order in ``data`` (which matters
        with ``stable`` or ``unique``, as for GNU sort's input order). On all cores,
        with the GIL released; takes, besides ``data`` and the result, each line's
        normalised key and about 50 bytes per line.
        """
    def partition_points(self, sorted_data: _ReadableBuffer, boundaries: Iterable[_ReadableBuffer]) -> List[int]:
        """For each boundary line, the byte offset in ``sorted_data`` (sorted by this
        order) of the first line not before it, as ``bisect.bisect_left``: bytes
        ``[p[j-1], p[j])`` hold the lines from boundary ``j-1`` (included) to boundary
        ``j`` (excluded); lines equal by the order never straddle a cut."""
    def compare(self, a: _ReadableBuffer, b: _ReadableBuffer) -> int:
        """-1 if line ``a`` comes first, 0 if they are equal by the order, 1 otherwise
        (lines without their terminator)."""
    def check(self, path: _StrPath) -> Dict[str, Any]:
        """Whether the file at ``path`` is sorted by this order (strictly, with
        ``unique``), as ``sort -c``, read once in constant memory:
        ``{"ok": bool, "lines": int, "records": int, "first_record": None or (start, end),
        "last_record": None or (start, end), "disorder": None or {"line": int, "text": bytes}}``
        (``line`` 1-based; ``lines`` counts to the end, or to the disorder; ``records``
        counts the records after the header, a CSV record spanning lines once;
        ``first_record``/``last_record`` are the byte spans of the first record after
        the header and of the last, terminators included). With ``header``, the file's
        first record is its header, not compared."""
    def count(self, data: _ReadableBuffer) -> int:
        """The lines in ``data`` (records, with ``csv``: one may span lines); a last one
        may lack its terminator."""
    def record_spans(self, path: _StrPath, offsets: Sequence[int]) -> List[Tuple[int, int]]:
        """For each offset, ``(start, end)``: where the first record of the file at
        ``path`` that starts at or after it starts, and the offset after its terminator
        (or the file's end); ``(size, size)`` when none does. A CSV record (``csv``) may
        hold newlines in quotes, so the file is read from its start up to the last
        record asked for (blocks of 1 MiB, constant memory, the GIL released): one
        sequential read answers all the offsets."""
    @property
    def locale(self) -> Optional[str]:
        """The locale the order compares in (its ``LC_COLLATE`` name), ``None`` for C:
        ``LineOrder(locale="").locale`` names the environment's."""
    @property
    def random(self) -> bool:
        """Whether a key shuffles (``random_sort``, or ``R`` in a key): two orders agree
        only when they read the same ``random_source``."""
    @property
    def unique(self) -> bool:
        """``unique``."""
    @property
    def terminator(self) -> bytes:
        """``b"\n"``, or ``b"\0"`` with ``zero_terminated``."""

@final
class Reader:
    """Read byte ranges of a file at any offset with one of emsort's readers.

    Kinds: ``stream`` (buffered reader with seek), ``mmap`` (the file mapped,
    reads copy out), ``pread`` (pieces of at most ``block_size``), ``uring``
    (io_uring, up to ``queue_depth`` pieces in flight) and ``adaptive`` (per
    request, the technique the calibration or the thesis' guidelines pick).
    Reads of 64 KiB or more release the GIL. A context manager::

        with emsort.Reader("data.bin", "pread") as r:
            head = r.read(0, 4096)
            r.readinto(1 << 20, buf)

    Raises (on open): ``EmsortFileNotFoundError`` …, ``ValueError`` for a
    bad kind.
    """

    def __new__(
        cls,
        path: _StrPath,
        kind: str = "adaptive",
        *,
        block_size: Optional[_Size] = None,
        queue_depth: Optional[int] = None,
    ) -> "Reader": ...
    def read(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at byte ``offset``: fewer at the end of the file, ``b""`` at or past it."""
    def readinto(self, offset: int, buffer: _WritableBuffer) -> int:
        """Read ``len(buffer)`` bytes (as bytes) at ``offset`` straight into a writable buffer; return how many were read."""
    @property
    def name(self) -> str:
        """The file's path, as a string."""
    @property
    def path(self) -> "pathlib.Path":
        """The file's path."""
    @property
    def kind(self) -> str:
        """``stream``, ``mmap``, ``pread``, ``uring`` or ``adaptive``."""
    @property
    def size(self) -> int:
        """The file's size in bytes when it was opened (also ``len(reader)``)."""
    @property
    def last_choice(self) -> Optional[str]:
        """For ``adaptive``: the technique of the last read (``mmap``, ``pread`` or ``uring``)."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called; reading a closed reader raises ``ValueError``."""
    def close(self) -> None:
        """Close the file (closing again does nothing)."""
    def __len__(self) -> int: ...
    def __enter__(self) -> "Reader": ...
    def __exit__(self, *exc: object) -> bool:
        """Closes (see :meth:`close`); the exception, if any, propagates."""

@final
class Sorter:
    """Sort data the program pushes, larger than memory: push, finish, then
    iterate or write.

    For data a program makes itself and that need not fit in memory: no
    input file is needed. The sort runs as :func:`sort` does (run formation
    of ``memory`` bytes at a time on ``parallel`` threads, runs under
    ``temp_dirs``, d-way merges) on a thread of its own, and memory stays
    within the budget however much is pushed: the peak is about ``memory``
    plus the overhead of ``sort`` (8 MiB + 1 MiB per thread) plus two
    blocks in flight, besides the caller's own data.

    ::

        with emsort.Sorter("f64", memory="256M") as s:
            for _ in range(100):
                s.push(np.random.default_rng().random(10_000_000))
            s.finish()
            for block in s:          # float64 arrays in ascending order
                ...
        print(s.stats["runs"])

        s = emsort.Sorter(memory="64M")             # lines, the default format
        s.push(b"pear\napple\n"); s.push(b"fig")   # cut anywhere; a last \n is added
        s.finish().write("sorted.txt")             # or: for lines in s: ...

    Phases: :meth:`push` any number of times, :meth:`finish` once, then
    either iterate (once) or :meth:`write` (once). Calling them out of order
    raises ``RuntimeError``; any call on a closed sorter ``ValueError``.

    Each call releases the GIL while it waits and stops on Ctrl-C
    (``KeyboardInterrupt``). An exception from ``push``, ``finish``,
    ``write`` or the iteration — Ctrl-C, an error of the library, one
    raised by ``progress`` — cancels the sort: its temporary files are
    removed and the sorter is failed (further calls raise
    ``RuntimeError``). :meth:`close`, leaving a ``with`` block or dropping
    the sorter before its result is taken cancels it the same way.

    Args:
        format: as :func:`sort` (default ``lines``).
        memory: M, bytes or ``"256M"`` / ``"25%"`` (default: a quarter of
            the available RAM, as ``emsort sort`` reading a pipe).
        temp_dirs, parallel, reverse, io, block_size, policy, fan_in,
            progress: as :func:`sort` (the phases reported are
            ``"run formation"`` and ``"merge"``).
        **order: the ordering options of lines (:class:`OrderOptions`), as
            :func:`sort`::

                s = emsort.Sorter(key="2,2n", field_separator=",", memory="64M")
                s.push(b"b,10\na,9\n"); s.finish()
                [line for block in s for line in block]    # [b"a,9", b"b,10"]

    Raises (on creation): ``ValueError`` for a bad option or a memory too
    small for ``fan_in`` and ``block_size``.
    """

    def __new__(
        cls,
        format: str = "lines",
        *,
        memory: Optional[_Size] = None,
        temp_dirs: Union[_StrPath, Sequence[_StrPath], None] = None,
        parallel: Optional[int] = None,
        reverse: bool = False,
        io: str = "auto",
        compress: str = "auto",
        block_size: Optional[_Size] = None,
        policy: str = "optimal",
        fan_in: Optional[int] = None,
        progress: Optional[_ProgressCallback] = None,
        **order: Unpack[OrderOptions],
    ) -> "Sorter": ...
    def push(self, data: _ReadableBuffer) -> None:
        """Add the bytes of ``data`` to the input: items of the format, cut anywhere
        (a push may end in the middle of an item or a line; the next one goes on).

        Any bytes-like object: a numpy array of the format's dtype (``uint32`` for
        ``u32`` …; an array of another number dtype raises ``TypeError``, its
        bytes ``a.view(np.uint8)`` are taken), ``bytes``, ``bytearray``,
        ``memoryview``, a ``uint8`` array of records, text with ``\n`` after each
        line. The data is copied; the call waits while run formation is busy.

        Raises:
            RuntimeError: after :meth:`finish`.
            TypeError: not a bytes-like object, or a numpy array of another dtype.
            ValueError: a non-contiguous buffer.
        """
    def finish(self) -> "Sorter":
        """End the input. Returns the sorter itself once every run is formed and
        every merge but the last is done (the last runs as the items are taken).

        Raises:
            EmsortError: e.g. the pushed bytes are not a whole number of items.
            RuntimeError: called twice.
        """
    def write(self, path: _StrPath) -> Dict[str, Any]:
        """Write the sorted items to ``path`` (written beside it and renamed when
        complete, as :func:`sort`'s output) and return the statistics of
        :func:`sort`.

        Raises:
            RuntimeError: before :meth:`finish`, or once the items were taken.
            EmsortError: from the library (a missing directory …); the sort is lost.
        """
    def __iter__(self) -> "Sorter":
        """Start taking the sorted items, block by block (after :meth:`finish`, once)."""
    def __next__(self) -> Any:
        """The next block of sorted items, as the last merge makes them:

        - numbers: a 1-D numpy array of the format's dtype (``uint32`` …);
        - ``rec:SIZE:…``: a 2-D ``uint8`` array of shape ``(n, SIZE)``;
        - ``lines``: a ``list`` of ``bytes``, the lines without their ``\n``
          (NUL with ``zero_terminated``).

        Arrays own their memory (no copy is made) and are writable.
        """
    @property
    def stats(self) -> Optional[Dict[str, Any]]:
        """The statistics of :func:`sort` once the sorted items were all taken
        (iterated to the end or written); ``None`` before."""
    @property
    def format(self) -> str:
        """The format's name."""
    @property
    def memory(self) -> int:
        """The memory budget M in bytes."""
    @property
    def pushed(self) -> int:
        """Bytes pushed so far."""
    @property
    def state(self) -> str:
        """``pushing``, ``finished``, ``iterating``, ``done``, ``closed``, ``failed``, or ``busy``
        while a call of another thread is under way."""
    def close(self) -> None:
        """Cancel the sort unless its result was taken: its thread stops and its
        temporary files are removed. Closing again does nothing; ``stats`` stays."""
    def __enter__(self) -> "Sorter": ...
    def __exit__(self, *exc: object) -> bool:
        """Closes (see :meth:`close`); the exception, if any, propagates."""
