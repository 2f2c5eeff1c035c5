"""emsort: external sorting of files larger than memory, from Python.

The Rust engine of the ``emsort`` command (an external multiway merge sort
with a loser tree, parallel run formation and O_DIRECT/io_uring streams)
behind a small Python API:

Files
    :func:`sort` (``emsort sort``), :func:`merge_files` (merge already
    sorted files), :func:`gen` (``emsort gen``), :func:`verify`
    (``emsort verify``). They release the GIL, report progress to an
    optional callback ``progress(phase, done, total)`` and stop cleanly on
    Ctrl-C (``KeyboardInterrupt``; no output and no temporary file is left).
    As ``emsort sort``, :func:`sort`, :func:`merge_files` and
    :class:`Sorter` sort text lines unless told another ``format``, and
    take GNU sort's ordering options as keywords named after its long
    options (:class:`OrderOptions`): ``key="3,3n"`` (``-k``),
    ``field_separator=","`` (``-t``), ``numeric_sort=True`` (``-n``),
    ``unique=True`` (``-u``) …

Memory
    :func:`sort_array` sorts a numpy array of numbers in place,
    :func:`sort_array_to_file` writes a sorted copy, :func:`read_array`
    reads numbers into an array. :func:`sort_buffer` sorts any writable
    bytes-like object of items of a format in place; :func:`partition_points`,
    :func:`compare`, :func:`item_key_less`, :func:`sort_key` and
    :func:`item_size` search and order items by a format's order.
    :class:`LineOrder` sorts, cuts and compares text lines in memory by the
    ordering options, exactly as the file sort orders them.

Data the program makes
    :class:`Sorter` sorts what the program pushes (numpy arrays, bytes),
    larger than memory: ``push`` it in pieces, ``finish``, then iterate over
    the sorted blocks or ``write`` them to a file. Memory stays within its
    budget, however much is pushed.

Readers
    :class:`Reader` reads byte ranges at any offset with one of emsort's
    readers (``stream``, ``mmap``, ``pread``, ``uring``, ``adaptive``).

Formats are named as on the command line: ``lines`` (newline-terminated
text ordered as ``LC_ALL=C sort``; the default of the sorts), ``u32``,
``i32``, ``u64``, ``i64``, ``f32``, ``f64`` (native byte order; floats in
total order with NaNs last) and ``rec:SIZE:KEY_OFFSET:KEY_LEN`` (fixed-size
records ordered bytewise by a key field).

Errors from the library raise :class:`EmsortError` with the library's
message, which names the file; missing files, directories and permission
problems raise subclasses that are also :class:`FileNotFoundError`,
:class:`IsADirectoryError` and :class:`PermissionError`. Bad arguments raise
:class:`ValueError` or :class:`TypeError`.

Example::

    import numpy as np
    import emsort

    emsort.gen("data.u32", count=10_000_000, seed=1)
    stats = emsort.sort("data.u32", "sorted.u32", format="u32", memory="64M",
                        progress=lambda phase, done, total: print(phase, done, total))
    print(stats["runs"], "runs,", stats["passes"], "passes")
    assert emsort.verify("sorted.u32", input="data.u32")["ok"]

    # Text: a CSV by its third column, numerically (LC_ALL=C sort -t, -k3,3n).
    emsort.sort("sales.csv", "by-amount.csv", key="3,3n", field_separator=",")

    a = emsort.read_array("sorted.u32", dtype="u32", count=1000)
    assert (np.diff(a.astype(np.int64)) >= 0).all()

    x = np.random.default_rng(0).random(1_000_000)
    emsort.sort_array(x)                     # in place, NaNs last

    with emsort.Reader("data.u32", "pread") as r:
        head = r.read(0, 4096)

    # Sort 1 GiB that the program makes, in 64 MiB of memory.
    rng = np.random.default_rng(1)
    with emsort.Sorter("u32", memory="64M") as s:
        for _ in range(256):
            s.push(rng.integers(0, 2**32, 1 << 20, dtype=np.uint32))
        s.finish()
        for block in s:                      # numpy uint32 arrays, ascending
            ...
    print(s.stats["runs"], "runs")
"""

from . import _emsort
from ._emsort import *  # noqa: F403 - the names of its __all__
from ._options import OrderOptions

__all__ = ["OrderOptions"]
__all__ += _emsort.__all__


def sort_arrow(data, **options):
    """Sort Arrow data larger than memory by columns; return a ``pyarrow.RecordBatchReader``
    that streams the sorted batches (or, without pyarrow, an object with
    ``__arrow_c_stream__`` that any Arrow consumer reads).

    ``data`` is anything with ``__arrow_c_stream__``: a ``pyarrow.Table`` or
    ``RecordBatchReader``, a Polars or pandas ``DataFrame``. The options are
    ``emsort.sort``'s for tables (``key``, ``unique``, ``reverse``, ``memory``,
    ``temp_dirs``, ``parallel``, ``io``, ``block_size``, ``progress``)::

        reader = emsort.sort_arrow(table, key=["ts", "user:desc"], memory="256M")
        for batch in reader:
            ...
    """
    sorted_ = _emsort.sort_arrow(data, **options)
    try:
        import pyarrow
    except ImportError:
        return sorted_
    return pyarrow.RecordBatchReader.from_stream(sorted_)
