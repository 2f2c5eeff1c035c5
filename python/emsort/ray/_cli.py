"""Command line of ``python -m emsort.ray``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time

import emsort

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT; SIGTERM gives 128 + 15

_SORT_HELP = """\
Sorts INPUT files on a Ray cluster into OUTDIR/part-00000, part-00001, …: the parts in
name order are the sorted output, and OUTDIR/_SUCCESS (JSON: parts, items, boundaries,
timings) is written last.

How: sampling tasks read random items to choose PARTITIONS-1 key boundaries; one map
task per chunk (at most --chunk-size, default --memory-per-task, bytes of whole items)
reads its chunk with emsort's reader, sorts it and cuts it at the boundaries; the blocks
go through Ray's object store; one merge task per key range merges its blocks with
emsort (on disk in --scratch-dir when they exceed --memory-per-task) and writes its part.
A task whose worker dies is retried (--max-retries).

Ctrl-C (SIGINT) or SIGTERM cancels the tasks and removes everything the run made in
OUTDIR and in the scratch directories (parts included: no _SUCCESS, no parts, no
temporary files), then exits with 130 or 143. What a killed run (SIGKILL) leaves is
removed by the next run into the same OUTDIR or with the same --scratch-dir.

Every node must see the INPUT files at the same path; OUTDIR may be shared or local to
each node (the manifest then says which node wrote each part).

Lines (the default format) are ordered as LC_ALL=C sort orders them (--locale NAME: in
that locale), with GNU sort's ordering options (long names as GNU's; -f is --format
here, so --ignore-case has no short form, nor --human-numeric-sort). --csv cuts the
inputs at record ends (a quoted field may hold newlines); with --header every part
starts with the first input's header.

Parquet inputs (.parquet, .pq; -f parquet) are sorted as tables, by columns: -k COLUMN
with :asc, :desc, :nulls_first, :nulls_last (no -k: every column), -r, -u; inputs may be
URIs pyarrow.fs reaches (s3://…); the parts are part-NNNNN.parquet.

examples:
  python -m emsort.ray sort data/*.u32 -o sorted -f u32 --partitions 8 --memory-per-task 512M
  python -m emsort.ray sort sales/*.csv -o by-amount -t , -k 3,3n
  python -m emsort.ray sort export/*.csv -o by-amount --csv --header -k amount:nr
  python -m emsort.ray sort recs/ -o out -f rec:100:0:10 --address auto
  python -m emsort.ray sort events/*.parquet -o by-ts -k ts -k user:desc
  python -m emsort.ray verify sorted
"""


# GNU sort's flags of lines: (short option or None, long option, help).
_ORDER_FLAGS = [
    ("-b", "ignore-leading-blanks", "ignore leading blanks"),
    ("-d", "dictionary-order", "consider only blanks and alphanumeric characters"),
    (None, "ignore-case", "fold lower case to upper case characters"),
    ("-g", "general-numeric-sort", "compare according to general numerical value"),
    (None, "human-numeric-sort", "compare human readable numbers (e.g., 2K 1G)"),
    ("-i", "ignore-nonprinting", "consider only printable characters"),
    ("-M", "month-sort", "compare (unknown) < 'JAN' < ... < 'DEC'"),
    ("-n", "numeric-sort", "compare according to string numerical value"),
    ("-R", "random-sort", "shuffle, but group identical keys (needs --random-source)"),
    ("-V", "version-sort", "natural sort of (version) numbers within text"),
    ("-s", "stable", "stabilize sort by disabling last-resort comparison"),
    ("-u", "unique", "output only the first of an equal run"),
    ("-z", "zero-terminated", "line delimiter is NUL, not newline"),
    (None, "csv", "lines are CSV records (RFC 4180; quoted fields may hold newlines); -t sets the separator"),
    (None, "header", "each input's first line (record) is a header; every part starts with it; "
                     "keys may name columns (-k amount:n)"),
    (None, "jsonl", "lines are JSON values in jq's order; keys are paths (-k .ts:n)"),
]


def _order_kwargs(args) -> dict:
    """The ordering options given on the command line, as ``emsort.ray.sort`` keywords
    (argparse keeps each under the keyword's name: ``--ignore-case`` as ``ignore_case``)."""
    given = {name: getattr(args, name, None) for name in emsort.OrderOptions.__annotations__}
    out = {name: v for name, v in given.items() if v is not None and v is not False}
    if out.get("field_separator") == "\\0":
        out["field_separator"] = "\0"  # GNU's -t '\0'
    return out


def _progress_printer(quiet: bool):
    last = {}
    t0 = time.perf_counter()

    def report(phase: str, done: int, total: int) -> None:
        if quiet or last.get(phase) == done:
            return
        last[phase] = done
        print(f"[{time.perf_counter() - t0:7.1f}s] {phase:6s} {done}/{total}", file=sys.stderr, flush=True)

    return report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m emsort.ray",
        description="Distributed external sort on Ray (Exoshuffle-style map/shuffle/merge) using emsort.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser(
        "sort",
        help="sort files on a Ray cluster into OUTDIR/part-NNNNN",
        description=_SORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, directories or glob patterns")
    s.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory (created if missing)")
    s.add_argument(
        "-f",
        "--format",
        default="lines",
        help="lines, u32, i32, u64, i64, f32, f64, rec:SIZE:KEY_OFFSET:KEY_LEN or parquet (default lines, as emsort "
        "sort; parquet for inputs named .parquet or .pq, sorted by columns: -k COLUMN[:desc,nulls_first])",
    )
    s.add_argument("--compression", default=None, metavar="CODEC",
                   help="Parquet inputs: the parts' codec (zstd, snappy, none …; default the first input's)")
    s.add_argument("--row-group-size", type=int, default=None, metavar="ROWS",
                   help="Parquet inputs: rows per row group of the parts (default the first input's)")
    s.add_argument("-p", "--partitions", type=int, default=None, metavar="P",
                   help="key ranges = merge tasks = output parts (default: the cluster's CPUs, "
                        "more if a range would exceed --memory-per-task)")
    s.add_argument("-m", "--memory-per-task", default="256M", metavar="SIZE",
                   help="memory budget of one task, K/M/G suffixes (default 256M)")
    s.add_argument("--chunk-size", default=None, metavar="SIZE", help="bytes per map task (default --memory-per-task)")
    s.add_argument("-r", "--reverse", action="store_true", help="descending order")
    s.add_argument("--samples", type=int, default=None, metavar="N",
                   help="items sampled to choose the boundaries (default max(2000, 100×P))")
    s.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    s.add_argument("--scratch-dir", default=None, metavar="DIR",
                   help="directory on each node for external merges (default the node's temp dir)")
    s.add_argument("--reader", default="adaptive", help="emsort reader kind for the map reads: stream, mmap, pread, uring, adaptive (default adaptive)")
    s.add_argument("--max-retries", type=int, default=3, help="retries of a task whose worker dies (default 3)")
    s.add_argument("--address", default=None,
                   help="Ray cluster to join ('auto', 'HOST:6379', 'ray://HOST:10001'); "
                        "default: RAY_ADDRESS, else a local cluster started for this run")
    s.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the local cluster when one is started (default all)")
    s.add_argument("--verify", action="store_true", help="check the output afterwards (parts readable here)")
    s.add_argument("--json", action="store_true", help="print the manifest as JSON on standard output")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    o = s.add_argument_group("ordering options of lines (GNU sort's)")
    o.add_argument("-k", "--key", action="append", metavar="KEYDEF", help="sort via a key; KEYDEF gives location and type")
    o.add_argument("-t", "--field-separator", metavar="SEP", help="use SEP instead of non-blank to blank transition")
    for short, name, help_ in _ORDER_FLAGS:
        o.add_argument(*([short] if short else []), f"--{name}", action="store_true", help=help_)
    o.add_argument("--random-source", metavar="FILE", help="get random bytes from FILE (every node reads it)")
    o.add_argument("--locale", metavar="NAME",
                   help="order in locale NAME (en_US.UTF-8; '' for this environment's, as GNU sort) "
                        "instead of bytewise (C); every node must have it generated")

    v = sub.add_parser(
        "verify",
        help="check a finished sort's output (manifest, no stray files, order within and across parts, counts)",
    )
    v.add_argument("output", metavar="OUTDIR")
    v.add_argument("-f", "--format", default=None, help="format (default: the manifest's)")
    return p


def _init_ray(address, num_cpus):
    import ray

    kwargs = {"logging_level": "WARNING", "log_to_driver": True}
    if address is None and not os.environ.get("RAY_ADDRESS"):
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        kwargs["include_dashboard"] = False
        ray.init(**kwargs)
    else:
        ray.init(address=address, **kwargs)


@contextlib.contextmanager
def _signals_interrupt():
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, the first one only:
    the sort then cancels its tasks and removes its partial output, a cleanup bounded in
    time that a second signal must not cut short. Yields the list that receives the
    signal number. (It replaces Ray's SIGTERM handler, which would stop a local cluster
    and exit before the cleanup; Ray still stops its cluster at exit.)"""
    received = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum, frame):
        if received:
            return
        received.append(signum)
        # os.write: a signal may come in the middle of a print to stderr
        os.write(2, b"emsort.ray: interrupted: cancelling the tasks and removing the partial output\n")
        raise KeyboardInterrupt

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        from . import _sort
    except ImportError as e:  # ray or emsort missing
        print(f"emsort.ray: {e}", file=sys.stderr)
        return EXIT_FAILURE

    if args.command == "verify":
        try:
            r = _sort.verify(args.output, format=args.format)
        except _sort.EmsortRayError as e:
            print(f"emsort.ray: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"{'ok' if r['ok'] else 'FAILED'}: {r['items']} items — {r['message']}")
        return 0 if r["ok"] else 1

    # Check the inputs before starting or joining a cluster: errors come fast.
    order = _order_kwargs(args)
    table = {}
    try:
        from . import _table

        if args.format == "parquet" or (args.format == "lines" and _table.is_table_input(args.inputs)):
            # Tables: keys name columns; the sort checks the rest before any task runs.
            _table.check_tables(args.inputs, args.output, args.key)  # before Ray starts
            files = args.inputs
            table = {"compression": args.compression, "row_group_size": args.row_group_size}
        else:
            if args.compression is not None or args.row_group_size is not None:
                raise _sort.EmsortRayError("--compression and --row-group-size apply to Parquet inputs only")
            fmt, _, _, checked = _sort.check_settings(
                args.format, args.reverse, order, args.memory_per_task, args.chunk_size
            )
            files = _sort.check_inputs(args.inputs, args.output, fmt, checked)[0]
    except _sort.EmsortRayError as e:
        print(f"emsort.ray: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    received = []
    try:
        _init_ray(args.address, args.num_cpus)
        with _signals_interrupt() as received:
            m = _sort.sort(
                files,
                args.output,
                format=args.format,
                partitions=args.partitions,
                memory_per_task=args.memory_per_task,
                chunk_size=args.chunk_size,
                reverse=args.reverse,
                samples=args.samples,
                seed=args.seed,
                scratch_dir=args.scratch_dir,
                reader=args.reader,
                max_retries=args.max_retries,
                progress=_progress_printer(args.quiet),
                **table,
                **order,
            )
    except KeyboardInterrupt:
        print("emsort.ray: interrupted", file=sys.stderr)
        return 128 + received[0] if received else EXIT_INTERRUPTED
    except _sort.EmsortRayError as e:
        print(f"emsort.ray: {e}", file=sys.stderr)
        return EXIT_FAILURE  # the inputs were checked above: this is a task or cluster failure
    except Exception as e:  # noqa: BLE001 - a CLI reports, it does not trace back
        print(f"emsort.ray: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILURE

    t = m["timings"]
    if args.json:
        print(json.dumps(m, indent=1))
    if not args.quiet:
        mb = m["bytes"] / 1e6
        print(
            f"sorted {m['items']} items ({mb:.1f} MB) into {m['partitions']} parts in {args.output}: "
            f"{t['total_s']:.2f} s (sample {t['sample_s']:.2f}, map {t['map_s']:.2f}, merge {t['merge_s']:.2f}; "
            f"{m['map_tasks']} map tasks, {m['external_merges']} external merges), "
            f"{mb / t['total_s']:.1f} MB/s",
            file=sys.stderr,
        )
    if args.verify:
        r = _sort.verify(args.output)
        if not r["ok"]:
            print(f"emsort.ray: verify failed: {r['message']}", file=sys.stderr)
            return 1
        if not args.quiet:
            print(f"verified: {r['items']} items in order", file=sys.stderr)
    return 0
