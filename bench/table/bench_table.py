#!/usr/bin/env python3
"""Benchmark: sorting Parquet tables by columns — `emsort sort` against DuckDB and Polars.

For each size the script writes a seeded Parquet file of mixed column types with DuckDB
(`id` BIGINT, `cat` a low-cardinality VARCHAR, `user` a VARCHAR of 8–24 bytes, `ts`
TIMESTAMP WITH TIME ZONE, `amount` DECIMAL(12,2), `score` DOUBLE, `ok` BOOLEAN, `day`
DATE, `note` a VARCHAR of 0–60 bytes; about 10 % nulls in `user`, `amount` and `score`;
row groups of 122880 rows, snappy), then, repetition by repetition (the tools' order
rotating), on a cold page cache (root), sorts it by `cat, ts DESC, id` (a total order, so
that every tool's output is the same rows in the same order) with:

* `emsort`: `emsort sort IN -k cat -k ts:desc -k id -S M --parallel T -T DIR -o OUT`;
* `duckdb`: `COPY (SELECT * FROM read_parquet(IN) ORDER BY cat, ts DESC, id) TO OUT
  (FORMAT parquet)` after `SET memory_limit = M`, `SET threads = T`, `SET
  temp_directory`;
* `polars`: `pl.scan_parquet(IN).sort(...).sink_parquet(OUT)` with `POLARS_MAX_THREADS =
  T` (Polars has no memory limit to set: its peak RSS is recorded beside the others').

Each run is a child process timed from start to exit, with its peak RSS (`wait4`); a run
that fails (out of memory, killed) is recorded as such with its message. In the first
repetition every output is checked: its `id` column in order equals the oracle's (DuckDB's
`ORDER BY` run with all the memory), and emsort's footer has `sorting_columns`.

Writes `raw.csv` (one row per run), `machine.json` (CPU model and SIMD level, the work
directory's file system and mount options, the disk's 1 MiB O_DIRECT QD 1 latency and
QD 32 bandwidth from fio, versions, the commit) and `README.md` (medians, spread, ratios
to emsort) to --out.

    python3 bench/table/bench_table.py --quick          # 256 MiB, one M, 1 repetition
    python3 bench/table/bench_table.py --sizes 1G,4G --memory 256M,64M --reps 3,1 \
        --workdir target/table-bench --out bench/results/DATE-tables
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from facts import drop_caches, machine as machine_facts, machine_line, parse_size, rel, run, spread, write_rows  # noqa: E402
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
KEYS = ["cat", "ts:desc", "id"]
ORDER_BY = "cat, ts DESC, id"
TOOLS = ["emsort", "duckdb", "polars"]


def lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def make_input(path: str, size: int) -> int:
    """Writes a Parquet file of about ``size`` bytes; returns its rows."""
    import duckdb

    def write(rows: int, to: str) -> None:
        con = duckdb.connect()
        con.execute("SET threads=2")
        con.execute("SELECT setseed(0.42)")
        con.execute(f"""
            COPY (
              SELECT i::BIGINT AS id,
                     'cat-' || (hash(i * 7) % 37)::VARCHAR AS cat,
                     CASE WHEN hash(i * 3) % 10 = 0 THEN NULL
                          ELSE substr(md5(i::VARCHAR), 1, 8 + (hash(i) % 17)::INT) END AS "user",
                     TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds((hash(i * 11) % 31536000)::BIGINT) AS ts,
                     CASE WHEN hash(i * 5) % 10 = 0 THEN NULL
                          ELSE ((hash(i * 13) % 2000000)::DECIMAL(12,2) / 100 - 10000)::DECIMAL(12,2) END AS amount,
                     CASE WHEN hash(i * 17) % 10 = 0 THEN NULL ELSE (hash(i * 19) % 1000003) / 7.0 END AS score,
                     hash(i * 23) % 2 = 0 AS ok,
                     DATE '2020-01-01' + (hash(i * 29) % 2000)::INT AS day,
                     repeat(chr(97 + (hash(i * 31) % 26)::INT), (hash(i * 37) % 61)::INT) AS note
              FROM range({rows}) t(i)
            ) TO {lit(to)} (FORMAT parquet, ROW_GROUP_SIZE 122880, COMPRESSION snappy)
        """)
        con.close()

    probe = path + ".probe"
    write(200_000, probe)
    per_row = os.path.getsize(probe) / 200_000
    os.unlink(probe)
    rows = max(1, int(size / per_row))
    write(rows, path)
    return rows


EMSORT = None  # the binary, set in main


def command(tool: str, inp: str, out: str, memory: int, threads: int, tmp: str) -> tuple:
    """The child's argv and environment."""
    env = dict(os.environ)
    if tool == "emsort":
        # (A bare number is KiB to -S, as to GNU sort's: the bytes say b.)
        argv = [EMSORT, "sort", inp, "-S", f"{memory}b", "--parallel", str(threads), "-T", tmp, "-o", out, "-q"]
        for k in KEYS:
            argv += ["-k", k]
        return argv, env
    if tool == "duckdb":
        code = (
            "import duckdb,sys; c=duckdb.connect(); "
            f"c.execute(\"SET memory_limit='{memory // 1024}KiB'\"); c.execute('SET threads={threads}'); "
            f"c.execute(\"SET temp_directory={lit(tmp)}\"); "
            f"c.execute(\"COPY (SELECT * FROM read_parquet({lit(inp)}) ORDER BY {ORDER_BY}) TO {lit(out)} "
            "(FORMAT parquet)\")"
        )
        return [sys.executable, "-c", code], env
    if tool == "polars":
        env["POLARS_MAX_THREADS"] = str(threads)
        code = (
            "import polars as pl; "
            f"pl.scan_parquet({inp!r}).sort(['cat','ts','id'], descending=[False,True,False], nulls_last=True)"
            f".sink_parquet({out!r})"
        )
        return [sys.executable, "-c", code], env
    raise ValueError(tool)


def ids(path: str):
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["id"]).column("id").to_numpy()


def oracle(inp: str, out: str, tmp: str) -> None:
    import duckdb

    c = duckdb.connect()
    c.execute(f"SET temp_directory={lit(tmp)}")
    c.execute(f"COPY (SELECT id FROM read_parquet({lit(inp)}) ORDER BY {ORDER_BY}) TO {lit(out)} (FORMAT parquet)")
    c.close()


def fmt_s(x) -> str:
    return "—" if x is None else f"{x:.2f} s"


def report(out_dir: str, rows: list, facts: dict) -> None:
    groups = {}
    for r in rows:
        groups.setdefault((r["size"], r["memory"], r["tool"]), []).append(r)
    lines = [
        "# Parquet sorted by columns: emsort, DuckDB, Polars (issue 42)",
        "",
        f"Command: `{facts['command']}`",
        "",
        machine_line(facts, f"DuckDB {facts['duckdb']}, Polars {facts['polars']}"),
        "",
        f"Sort: `ORDER BY {ORDER_BY}` (emsort `-k {' -k '.join(KEYS)}`), cold cache, medians of the "
        "repetitions; a ratio is the tool's median over emsort's (above 1: emsort is faster). "
        "Polars has no memory limit: its peak RSS says what it took.",
        "",
        "| size | rows | M | tool | median | min–max | peak RSS | ratio to emsort | failed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sorted({r["size"] for r in rows}, key=parse_size):
        for memory in sorted({r["memory"] for r in rows if r["size"] == size}, key=parse_size, reverse=True):
            em = spread(groups.get((size, memory, "emsort"), []))["median"]
            for tool in TOOLS:
                rs = groups.get((size, memory, tool))
                if not rs:
                    continue
                sp = spread(rs)
                med = sp["median"]
                rss = max(r["peak_rss_bytes"] for r in rs) / (1 << 20)
                ratio = f"{med / em:.2f}" if med and em else "—"
                lines.append(
                    f"| {size} | {rs[0]['rows']} | {memory if tool != 'polars' else '(none)'} | {tool} | {fmt_s(med)} | "
                    f"{fmt_s(sp['min'])}–{fmt_s(sp['max'])} | {rss:.0f} MiB | {ratio} | {sp['failed']} |"
                )
    lines += ["", "Files: `raw.csv` (one row per run), `machine.json`.", ""]
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main() -> int:
    global EMSORT
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1G")
    ap.add_argument("--memory", default="256M,64M")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", default="3",
                    help="repetitions: one count, or one per size (--sizes 1G,4G --reps 3,1)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--workdir", default=os.path.join(REPO, "target", "table-bench"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--emsort-bin", default=os.path.join(REPO, "target", "release", "emsort"))
    ap.add_argument("--quick", action="store_true", help="256 MiB, M = 64M, 1 repetition")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.memory, args.reps = "256M", "64M", "1"
    EMSORT = os.path.abspath(args.emsort_bin)
    tools = args.tools.split(",")
    out_dir = args.out or os.path.join(REPO, "target", "table-bench-results")
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(args.workdir, exist_ok=True)
    import duckdb
    import polars
    import pyarrow

    facts = machine_facts(args.workdir, EMSORT, {"duckdb": duckdb.__version__, "polars": polars.__version__,
                                                 "pyarrow": pyarrow.__version__})
    with open(os.path.join(out_dir, "machine.json"), "w") as f:
        json.dump(facts, f, indent=1)
    rows = []
    sizes = args.sizes.split(",")
    reps = [int(r) for r in args.reps.split(",")]
    if len(reps) == 1:
        reps *= len(sizes)
    if len(reps) != len(sizes):
        ap.error(f"--reps: {len(reps)} counts for {len(sizes)} sizes")
    for size, size_reps in zip(sizes, reps):
        inp = os.path.join(args.workdir, f"in-{size}.parquet")
        n = make_input(inp, parse_size(size))
        want = None
        for memory in args.memory.split(","):
            for rep in range(size_reps):
                order = tools[rep % len(tools):] + tools[: rep % len(tools)]
                for tool in order:
                    out = os.path.join(args.workdir, f"out-{tool}.parquet")
                    tmp = tempfile.mkdtemp(prefix="tmp-", dir=args.workdir)
                    drop_caches()
                    r = run(*command(tool, inp, out, parse_size(memory), args.threads, tmp))
                    shutil.rmtree(tmp, ignore_errors=True)
                    r.update(size=size, rows=n, memory=memory, tool=tool, rep=rep, threads=args.threads, verified="")
                    if r["exit"] == 0 and rep == 0:
                        if want is None:
                            o = os.path.join(args.workdir, "oracle.parquet")
                            otmp = tempfile.mkdtemp(prefix="tmp-", dir=args.workdir)
                            oracle(inp, o, otmp)
                            shutil.rmtree(otmp, ignore_errors=True)
                            want = ids(o)
                            os.unlink(o)
                        got = ids(out)
                        r["verified"] = bool(len(got) == len(want) and (got == want).all())
                        if not r["verified"]:
                            print(f"MISMATCH: {tool} {size} {memory}", file=sys.stderr)
                    if os.path.exists(out):
                        os.unlink(out)
                    rows.append(r)
                    print(f"{size} {memory} rep {rep} {tool}: {r['seconds']:.2f} s exit {r['exit']} "
                          f"rss {r['peak_rss_bytes'] >> 20} MiB {r['error']}", file=sys.stderr)
        os.unlink(inp)
    write_rows(os.path.join(out_dir, "raw.csv"), rows)
    report(out_dir, rows, facts)
    print(open(os.path.join(out_dir, "README.md")).read())
    return 1 if any(r["verified"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
