"""emsort.ray — a distributed sort on Ray, Exoshuffle-style.

Map tasks read chunks of the input with emsort's readers, sort them and cut them at
sampled key boundaries; the blocks travel through Ray's object store; one merge task per
key range merges its blocks with emsort (externally when they exceed the task's memory)
and writes ``part-NNNNN``. The parts in name order are the sorted output; ``_SUCCESS``
(a JSON manifest) is written last. A failed or interrupted sort (KeyboardInterrupt)
cancels its tasks and removes all it made; the leftovers of a killed one are removed by
the next sort into the same directory; :func:`verify` fails on any file the manifest
does not list.

>>> import ray, emsort.ray
>>> ray.init()                                              # doctest: +SKIP
>>> emsort.ray.sort(["a.u32", "b.u32"], "out", format="u32",
...                 partitions=8, memory_per_task="512M")   # doctest: +SKIP
>>> emsort.ray.sort("sales/*.csv", "by-amount", key="3,3n",
...                 field_separator=",")                    # doctest: +SKIP

Lines are the default format, ordered by the engine as ``LC_ALL=C sort`` orders them, with
GNU sort's ordering options as keywords (those of :func:`emsort.sort`).

Parquet files are sorted as tables, by columns, into ``part-NNNNN.parquet``; a
``ray.data.Dataset`` too, into a Dataset over the sorted parts:

>>> emsort.ray.sort("s3://bucket/events/", "sorted", key=["ts", "user:desc"])  # doctest: +SKIP
>>> ds = emsort.ray.sort_dataset(ray.data.read_parquet("events/"), key="ts")   # doctest: +SKIP

Command line: ``python -m emsort.ray sort --help``. Cluster set-up and limits:
``docs/ray.md``.
"""

from ._formats import Format, parse_size
from ._sort import EmsortRayError, expand_inputs, part_paths, read_manifest, sort, verify
from ._table import read_sorted, sort_dataset

__all__ = [
    "EmsortRayError",
    "Format",
    "expand_inputs",
    "parse_size",
    "part_paths",
    "read_manifest",
    "read_sorted",
    "sort",
    "sort_dataset",
    "verify",
]
