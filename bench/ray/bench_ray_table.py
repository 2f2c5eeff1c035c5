#!/usr/bin/env python3
"""Benchmark: Parquet sorted on a local Ray cluster — `emsort.ray` against Ray Data's own sort.

The input is the mixed-type table of `bench/table/bench_table.py` (seeded, written by DuckDB),
split into files of about `--file-size` bytes (a directory of Parquet files, as Ray Data's users
keep them), sorted by `cat, ts DESC, id` (a total order). One Ray cluster is started
(`ray.init(num_cpus=CPUS)`, the object store at `--object-store` or Ray's default) and warmed up
with a small sort of each engine; then, repetition by repetition (the engines' order rotating),
each on a cold page cache (root) and timed from the call until its output is on disk:

* `emsort-ray`: `emsort.ray.sort(DIR, OUT, key=["cat", "ts:desc", "id"], partitions=P,
  memory_per_task=M)` — sample, range-partition row groups, sort each range with emsort
  within M (spilling beyond it), write `part-NNNNN.parquet`;
* `emsort-dataset`: `emsort.ray.sort_dataset(ray.data.read_parquet(DIR), key=…, partitions=P,
  memory_per_task=M)` — the Dataset written to a staging directory, sorted as above, a
  Dataset over the parts returned;
* `ray-data`: `ray.data.read_parquet(DIR).sort(["cat", "ts", "id"], descending=[False, True,
  False]).write_parquet(OUT)` — Ray Data's sort (sample, shuffle through the object store,
  merge), every block held in the object store or spilled by Ray;
* `single`: the `emsort` binary, `emsort sort DIR/*.parquet -k … -S (CPUS × M) --parallel CPUS`
  (one process, the memory the Ray tasks may use at once).

While a Ray engine runs, a thread polls Ray's object store statistics every 0.2 s
(`memory_summary(stats_only=True)`): the peak of its "Plasma memory usage" and the bytes Ray
spilled to disk during the run are recorded. In the first repetition every output is checked:
the `id` column of its files (parts in order; Ray Data's files in name order) equals the
oracle's (DuckDB's `ORDER BY` with all the memory).

Writes `raw.csv`, `machine.json` (CPU and SIMD level, file system, fio QD 1 latency and QD 32
bandwidth, versions, commit, command) and `README.md` to --out.

    python3 bench/ray/bench_ray_table.py --quick        # 256 MiB, 1 repetition
    python3 bench/ray/bench_ray_table.py --size 1G --partitions 4 --memory-per-task 256M --reps 3 \\
        --workdir target/ray-table-bench --out bench/results/DATE-ray-tables
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "table"))
from bench_table import ORDER_BY, KEYS, ids, lit, make_input, oracle  # noqa: E402
from facts import drop_caches, machine as machine_facts, machine_line, parse_size, rel, run, spread, write_rows  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
ENGINES = ["emsort-ray", "emsort-dataset", "ray-data", "single"]


def split_input(src: str, out_dir: str, file_size: int) -> list:
    """`src` rewritten as Parquet files of about `file_size` bytes in `out_dir` (DuckDB,
    row groups of 122880 rows, snappy); returns their paths in name order."""
    import duckdb

    os.makedirs(out_dir, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET threads=2")
    con.execute(
        f"COPY (SELECT * FROM read_parquet({lit(src)})) TO {lit(out_dir)} (FORMAT parquet, "
        f"ROW_GROUP_SIZE 122880, COMPRESSION snappy, FILE_SIZE_BYTES {file_size}, OVERWRITE_OR_IGNORE)"
    )
    con.close()
    return sorted(glob.glob(os.path.join(out_dir, "*.parquet")))


class StorePeak:
    """Polls the object store's use while a run lasts: peak MiB and MiB spilled."""

    def __init__(self):
        self.peak = 0.0
        self.spilled0 = self.spilled = 0.0
        self._stop = threading.Event()
        self._thread = None

    @staticmethod
    def _stats() -> tuple:
        from ray._private.internal_api import memory_summary

        s = memory_summary(stats_only=True)
        used = re.search(r"Plasma memory usage (\d+) MiB", s)
        spilled = re.search(r"Spilled (\d+) MiB", s)
        return float(used.group(1)) if used else 0.0, float(spilled.group(1)) if spilled else 0.0

    def __enter__(self):
        self.peak, self.spilled0 = self._stats()
        self.spilled = self.spilled0

        def poll():
            while not self._stop.wait(0.2):
                used, spilled = self._stats()
                self.peak, self.spilled = max(self.peak, used), spilled

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        used, spilled = self._stats()
        self.peak, self.spilled = max(self.peak, used), spilled
        return False


def ray_data_sort(src_dir: str, out: str) -> None:
    import ray

    ds = ray.data.read_parquet(src_dir)
    ds.sort(["cat", "ts", "id"], descending=[False, True, False]).write_parquet(out)


def output_ids(engine: str, out: str):
    """The `id` column of a finished output, its files in order."""
    import numpy as np

    if engine == "single":
        return ids(out)
    if engine in ("emsort-ray", "emsort-dataset"):
        m = json.load(open(os.path.join(out, "_SUCCESS")))
        files = [os.path.join(out, p["name"]) for p in m["parts"]]
    else:
        files = sorted(glob.glob(os.path.join(out, "*.parquet")))
    return np.concatenate([ids(f) for f in files]) if files else np.array([], dtype="int64")


def run_engine(engine: str, src_dir: str, files: list, out: str, args, tmp: str) -> dict:
    import emsort.ray
    import ray

    mem = parse_size(args.memory_per_task)
    if engine == "single":
        argv = [args.emsort_bin, "sort", *files, "-S", f"{mem * args.cpus}b", "--parallel", str(args.cpus),
                "-T", tmp, "-o", out, "-q"]
        for k in KEYS:
            argv += ["-k", k]
        r = run(argv, dict(os.environ))
        r.update(store_peak_mib="", spilled_mib="")
        return r
    t0 = time.perf_counter()
    err = ""
    with StorePeak() as store:
        try:
            if engine == "emsort-ray":
                emsort.ray.sort(src_dir, out, key=KEYS, partitions=args.partitions,
                                memory_per_task=args.memory_per_task, scratch_dir=tmp)
            elif engine == "emsort-dataset":
                emsort.ray.sort_dataset(ray.data.read_parquet(src_dir), key=KEYS, output_dir=out,
                                        staging_dir=tmp, partitions=args.partitions,
                                        memory_per_task=args.memory_per_task, scratch_dir=tmp)
            else:
                ray_data_sort(src_dir, out)
            os.sync()
        except Exception as e:  # noqa: BLE001 - a failed run is recorded as such
            err = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    return {"seconds": time.perf_counter() - t0, "exit": 1 if err else 0, "peak_rss_bytes": "",
            "user_s": "", "system_s": "", "error": err,
            "store_peak_mib": store.peak, "spilled_mib": store.spilled - store.spilled0}


def report(out_dir: str, rows: list, facts: dict) -> None:
    lines = [
        "# Parquet sorted on a local Ray cluster: emsort.ray against Ray Data (issue 42)",
        "",
        f"Command: `{facts['command']}`",
        "",
        machine_line(facts, f"Ray {facts['ray']}, pyarrow {facts['pyarrow']}, DuckDB {facts['duckdb']}")
        + " "
        f"Ray cluster: `ray.init(num_cpus={facts['ray_cpus']})`, object store "
        f"{facts['ray_object_store_bytes'] // (1 << 20)} MiB.",
        "",
        f"Input: {facts['input_rows']} rows, {facts['input_bytes'] / (1 << 20):.0f} MiB of Parquet in "
        f"{facts['input_files']} files. Sort: `ORDER BY {ORDER_BY}`; emsort engines with "
        f"`partitions={facts['partitions']}, memory_per_task={facts['memory_per_task']}` (the single binary with "
        f"`-S` = CPUs × that). Cold cache, medians of the repetitions; a ratio is the engine's median over "
        "`emsort-ray`'s (above 1: emsort.ray is faster). Object store: the peak of Ray's \"Plasma memory usage\" "
        "polled every 0.2 s during the run, and what Ray spilled to disk during it.",
        "",
        "| engine | median | min–max | ratio to emsort-ray | peak object store | spilled | failed | verified |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by = {}
    for r in rows:
        by.setdefault(r["engine"], []).append(r)
    em = spread(by.get("emsort-ray", []))["median"]
    for engine in ENGINES:
        rs = by.get(engine)
        if not rs:
            continue
        sp = spread(rs)
        med, lo, hi = sp["median"], sp["min"], sp["max"]
        store = [r["store_peak_mib"] for r in rs if r["store_peak_mib"] != ""]
        spilled = [r["spilled_mib"] for r in rs if r["spilled_mib"] != ""]
        ver = {str(r["verified"]) for r in rs if r["verified"] != ""}
        lines.append(
            f"| {engine} | {f'{med:.2f} s' if med else '—'} | "
            f"{f'{lo:.2f}–{hi:.2f} s' if med else '—'} | "
            f"{f'{med / em:.2f}' if med and em else '—'} | "
            f"{f'{max(store):.0f} MiB' if store else '(no Ray)'} | {f'{max(spilled):.0f} MiB' if spilled else '—'} | "
            f"{sp['failed']} | {'/'.join(sorted(ver)) or '—'} |"
        )
    lines += ["", "Files: `raw.csv` (one row per run), `machine.json`.", ""]
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--file-size", default="128M", help="bytes per input file (default 128M)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--memory-per-task", default="256M")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--object-store", default=None, help="Ray object store size (default Ray's)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--workdir", default=os.path.join(REPO, "target", "ray-table-bench"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--emsort-bin", default=os.path.join(REPO, "target", "release", "emsort"))
    ap.add_argument("--quick", action="store_true", help="256 MiB, 1 repetition")
    args = ap.parse_args()
    if args.quick:
        args.size, args.file_size, args.reps = "256M", "32M", 1
    args.emsort_bin = os.path.abspath(args.emsort_bin)
    engines = args.engines.split(",")
    out_dir = args.out or os.path.join(REPO, "target", "ray-table-bench-results")
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(args.workdir, exist_ok=True)
    import duckdb
    import pyarrow
    import ray

    one = os.path.join(args.workdir, "in.parquet")
    n = make_input(one, parse_size(args.size))
    src = os.path.join(args.workdir, "in")
    shutil.rmtree(src, ignore_errors=True)
    files = split_input(one, src, parse_size(args.file_size))
    o = os.path.join(args.workdir, "oracle.parquet")
    otmp = tempfile.mkdtemp(prefix="tmp-", dir=args.workdir)
    oracle(one, o, otmp)
    shutil.rmtree(otmp, ignore_errors=True)
    want = ids(o)
    os.unlink(o)
    os.unlink(one)

    init = {"num_cpus": args.cpus, "include_dashboard": False, "logging_level": "ERROR"}
    if args.object_store:
        init["object_store_memory"] = parse_size(args.object_store)
    ray.init(**init)
    ray.data.DataContext.get_current().enable_progress_bars = False
    facts = machine_facts(args.workdir, args.emsort_bin, {"ray": ray.__version__, "pyarrow": pyarrow.__version__,
                                                          "duckdb": duckdb.__version__})
    facts.update(ray_cpus=args.cpus, ray_object_store_bytes=int(ray.cluster_resources().get("object_store_memory", 0)),
                 input_rows=n, input_bytes=sum(os.path.getsize(f) for f in files), input_files=len(files),
                 partitions=args.partitions, memory_per_task=args.memory_per_task, input_dir=rel(src))
    with open(os.path.join(out_dir, "machine.json"), "w") as f:
        json.dump(facts, f, indent=1)

    def clear(engine: str) -> str:
        out = os.path.join(args.workdir, f"out-{engine}" + (".parquet" if engine == "single" else ""))
        if os.path.isdir(out):
            shutil.rmtree(out)
        elif os.path.exists(out):
            os.unlink(out)
        return out

    def fresh(engine: str) -> tuple:
        return clear(engine), tempfile.mkdtemp(prefix="tmp-", dir=args.workdir)

    # Warm-up (not recorded): workers started, modules imported, one small sort each.
    for engine in engines:
        if engine != "single":
            out, tmp = fresh(engine)
            r = run_engine(engine, files[0], files[:1], out, args, tmp)
            shutil.rmtree(tmp, ignore_errors=True)
            print(f"warm-up {engine}: {r['seconds']:.2f} s {r['error']}", file=sys.stderr)

    rows = []
    for rep in range(args.reps):
        order = engines[rep % len(engines):] + engines[: rep % len(engines)]
        for engine in order:
            out, tmp = fresh(engine)
            drop_caches()
            r = run_engine(engine, src, files, out, args, tmp)
            shutil.rmtree(tmp, ignore_errors=True)
            r.update(engine=engine, rep=rep, size=args.size, rows=n, verified="")
            if r["exit"] == 0 and rep == 0:
                got = output_ids(engine, out)
                r["verified"] = bool(len(got) == len(want) and (got == want).all())
                if not r["verified"]:
                    print(f"MISMATCH: {engine}", file=sys.stderr)
            clear(engine)
            rows.append(r)
            print(f"rep {rep} {engine}: {r['seconds']:.2f} s exit {r['exit']} store {r['store_peak_mib']} MiB "
                  f"spilled {r['spilled_mib']} MiB {r['error']}", file=sys.stderr)
    ray.shutdown()
    shutil.rmtree(src, ignore_errors=True)
    write_rows(os.path.join(out_dir, "raw.csv"), rows)
    report(out_dir, rows, facts)
    print(open(os.path.join(out_dir, "README.md")).read())
    return 1 if any(r["verified"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
