#!/usr/bin/env python3
"""Benchmark: emsort.ray.sort on a local Ray cluster against single-node `emsort sort`.

For each data set (format × size) the script generates a seeded input with the `emsort`
binary, then, repetition by repetition (the order of the engines rotating each time),
sorts it on a cold page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`, root) with

* `single`: the `emsort` binary as a child process, `emsort sort -f F -S MEM --parallel
  CPUS` with MEM = memory_per_task × CPUS (the memory the Ray job's tasks may use at once);
* `single-inmem`: the same with `-S` = the input size + 5 % (one in-memory sort: the
  memory the Ray job really had, its object store being RAM);
* `ray-pP`: `emsort.ray.sort(input, outdir, format=F, partitions=P,
  memory_per_task=…)` on a Ray cluster started once by this script
  (`ray.init(num_cpus=CPUS)`), timed from the call to its return (cluster start-up is
  recorded apart).

Outputs are verified in the first repetition (Ray: `emsort.ray.verify` for order within and
across parts, then the parts concatenated and checked with `emsort verify --input` for the
multiset; single: `emsort verify --input`). Writes `raw.csv` (one row per run),
`summary.csv` and `summary.md` (medians, overhead ratio ray ÷ single, MB/s per node) and
`machine.json` (machine facts, versions, commit) to --out.

Example (what bench/results/2026-11-22-ray/ holds):

    python3 bench/ray/bench_ray.py --data u32:2G,u32:4G,rec:100:0:10:2G --partitions 4,8 \
        --memory-per-task 512M --reps 3 --workdir target/ray-bench --out bench/results/2026-11-22-ray
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def parse_size(s: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", s.strip().upper())
    if not m:
        raise ValueError(f"bad size {s}")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2)])


def parse_data(spec: str):
    """'u32:2G' or 'rec:100:0:10:2G' → (format, bytes)."""
    fmt, size = spec.rsplit(":", 1)
    return fmt, parse_size(size)


def item_size(fmt: str) -> int:
    if fmt.startswith("rec:"):
        return int(fmt.split(":")[1])
    return {"u32": 4, "i32": 4, "f32": 4, "u64": 8, "i64": 8, "f64": 8}[fmt]


def wait_quiet() -> None:
    """Pauses while /tmp/emsort-quiet exists (another benchmark on this machine wants it quiet)."""
    while os.path.exists("/tmp/emsort-quiet"):
        time.sleep(10)


def drop_caches() -> None:
    wait_quiet()
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:  # not root: say so in the results
        print(f"warning: cannot drop caches: {e}", file=sys.stderr)


def read_ahead_kb(path: str):
    try:
        dev = os.stat(path).st_dev
        major, minor = os.major(dev), os.minor(dev)
        base = os.path.realpath(f"/sys/dev/block/{major}:{minor}")
        for p in (base, os.path.dirname(base)):
            f = os.path.join(p, "queue", "read_ahead_kb")
            if os.path.exists(f):
                return int(open(f).read())
    except OSError:
        pass
    return None


def machine_facts(workdir: str, emsort_bin: str) -> dict:
    import numpy
    import ray

    mem = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":", 1)
        mem[k] = v.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = None
    try:
        import emsort

        emsort_py = getattr(emsort, "__version__", "installed")
    except ImportError:
        emsort_py = None
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_total": mem.get("MemTotal"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "ray": ray.__version__,
        "numpy": numpy.__version__,
        "emsort_python": emsort_py,
        "emsort_bin": emsort_bin,
        "emsort_bin_version": subprocess.run([emsort_bin, "--version"], capture_output=True, text=True).stdout.strip(),
        "emsort_commit": commit,
        "workdir": os.path.abspath(workdir),
        "read_ahead_kb": read_ahead_kb(workdir),
        "dev_shm": shutil.disk_usage("/dev/shm").total if os.path.exists("/dev/shm") else None,
    }


def spilled_mib() -> float:
    """Bytes Ray has spilled so far (cumulative), from its memory summary."""
    try:
        from ray._private.internal_api import memory_summary

        s = memory_summary(stats_only=True)
        m = re.search(r"Spilled (\d+) MiB", s)
        return float(m.group(1)) if m else 0.0
    except Exception:  # noqa: BLE001 - best effort
        return float("nan")


def run_single(emsort_bin, fmt, inp, out, mem, cpus, tmpdir):
    stats = out + ".stats.json"
    cmd = [emsort_bin, "sort", "-f", fmt, "-S", str(mem), "--parallel", str(cpus), "-T", tmpdir, "-q",
           "--stats", stats, inp, "-o", out]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    os.sync()  # both engines are timed until their output is on disk
    wall = time.perf_counter() - t0
    st = json.load(open(stats))
    os.unlink(stats)
    return wall, st


def verify_single(emsort_bin, fmt, out, inp) -> bool:
    r = subprocess.run([emsort_bin, "verify", "--format", fmt, out, "--input", inp], capture_output=True, text=True)
    if r.returncode:
        print(r.stdout, r.stderr, file=sys.stderr)
    return r.returncode == 0


def verify_ray(emsort_bin, fmt, outdir, inp, scratch) -> bool:
    import emsort.ray as er

    r = er.verify(outdir)
    if not r["ok"]:
        print("ray output:", r, file=sys.stderr)
        return False
    cat = os.path.join(scratch, "concatenated")
    with open(cat, "wb") as w:
        for p in er.part_paths(outdir):
            with open(p, "rb") as f:
                shutil.copyfileobj(f, w, 16 << 20)
    ok = verify_single(emsort_bin, fmt, cat, inp)
    os.unlink(cat)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="u32:2G,u32:4G,rec:100:0:10:2G",
                    help="data sets FORMAT:SIZE, comma-separated (default %(default)s)")
    ap.add_argument("--partitions", default="4,8", help="Ray partition counts to run (default %(default)s)")
    ap.add_argument("--memory-per-task", default="512M", help="emsort.ray memory_per_task (default %(default)s)")
    ap.add_argument("--single-memory", default="tasks,all",
                    help="single-node runs to make: 'tasks' = -S CPUS×memory_per_task (the tasks' memory), "
                         "'all' = -S input size + 5%% (in memory), or a size (default %(default)s)")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster and of the single-node sort")
    ap.add_argument("--object-store", default=None, help="Ray object store size (default Ray's: 30%% of RAM)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workdir", default=os.path.join(REPO, "target", "ray-bench"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", time.strftime("%Y-%m-%d") + "-ray"))
    ap.add_argument("--emsort-bin", default=os.path.join(REPO, "target", "release", "emsort"))
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--keep-data", action="store_true", help="keep the generated inputs")
    args = ap.parse_args()

    import ray

    import emsort.ray as er

    os.makedirs(args.workdir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    mem = parse_size(args.memory_per_task)
    parts = [int(p) for p in args.partitions.split(",") if p]
    facts = machine_facts(args.workdir, args.emsort_bin)
    scratch = os.path.join(args.workdir, "scratch")
    os.makedirs(scratch, exist_ok=True)

    t0 = time.perf_counter()
    init = dict(num_cpus=args.cpus, include_dashboard=False, logging_level="WARNING")
    if args.object_store:
        init["object_store_memory"] = parse_size(args.object_store)
    ray.init(**init)
    facts["ray_start_s"] = time.perf_counter() - t0
    # warm-up: start the worker processes and import emsort in them before anything is timed
    t0 = time.perf_counter()
    warm = os.path.join(scratch, "warmup.u32")
    with open(warm, "wb") as f:
        f.write(os.urandom(4 << 20))
    er.sort([warm], os.path.join(scratch, "warmup-out"), format="u32", partitions=max(parts or [1]),
            memory_per_task="1M", scratch_dir=scratch)
    shutil.rmtree(os.path.join(scratch, "warmup-out"))
    os.unlink(warm)
    facts["ray_warmup_s"] = time.perf_counter() - t0
    facts["ray_object_store_bytes"] = int(ray.cluster_resources().get("object_store_memory", 0))
    facts["args"] = vars(args)
    facts["method"] = (
        "cold page cache before every run (sync; echo 3 > /proc/sys/vm/drop_caches); engines rotate order "
        "each repetition; ray timed around emsort.ray.sort() in a driver connected to a local cluster "
        f"started once (ray.init(num_cpus={args.cpus})); single = emsort binary child process with "
        f"-S {args.cpus}×memory_per_task --parallel {args.cpus} (single-inmem: -S input size + 5%); "
        "every run timed until a final sync() returns (output on disk); medians over reps"
    )
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump(facts, f, indent=1)
    print(json.dumps(facts, indent=1), file=sys.stderr)

    raw_path = os.path.join(args.out, "raw.csv")
    fields = ["dataset", "format", "bytes", "items", "engine", "partitions", "memory_per_task", "rep", "wall_s",
              "mb_s", "mb_s_per_node", "nodes", "sample_s", "map_s", "merge_s", "map_tasks", "external_merges",
              "spilled_mib", "verified"]
    rows = []
    with open(raw_path, "w", newline="") as rawf:
        w = csv.DictWriter(rawf, fieldnames=fields)
        w.writeheader()
        for spec in args.data.split(","):
            fmt, size = parse_data(spec)
            isz = item_size(fmt)
            count = size // isz
            inp = os.path.join(args.workdir, f"input-{fmt.replace(':', '_')}-{size >> 20}M")
            if not os.path.exists(inp) or os.path.getsize(inp) != count * isz:
                print(f"generating {spec} …", file=sys.stderr)
                subprocess.run([args.emsort_bin, "gen", "-f", fmt, "-n", str(count), "--seed", "1", "-q",
                                "-o", inp], check=True)
            singles = {}
            for v in args.single_memory.split(","):
                if v == "tasks":
                    singles["single"] = args.cpus * mem
                elif v == "all":
                    singles["single-inmem"] = int(count * isz * 1.05)
                elif v:
                    singles[f"single-{v}"] = parse_size(v)
            engines = list(singles) + [f"ray-p{p}" for p in parts]
            for rep in range(args.reps):
                order = engines[rep % len(engines):] + engines[: rep % len(engines)]
                for eng in order:
                    out = os.path.join(args.workdir, "out-" + eng)
                    shutil.rmtree(out, ignore_errors=True)
                    if os.path.exists(out):
                        os.unlink(out)
                    drop_caches()
                    row = {"dataset": spec, "format": fmt, "bytes": count * isz, "items": count, "engine": eng,
                           "memory_per_task": mem, "rep": rep + 1, "nodes": 1}
                    if eng in singles:
                        wall, st = run_single(args.emsort_bin, fmt, inp, out, singles[eng], args.cpus, scratch)
                        row.update(partitions=1, map_tasks="", external_merges="", spilled_mib="",
                                   memory_per_task=singles[eng])
                        ok = verify_single(args.emsort_bin, fmt, out, inp) if rep == 0 and not args.no_verify else ""
                        if os.path.exists(out):
                            os.unlink(out)
                    else:
                        p = int(eng.split("-p")[1])
                        sp0 = spilled_mib()
                        t0 = time.perf_counter()
                        m = er.sort([inp], out, format=fmt, partitions=p, memory_per_task=mem, scratch_dir=scratch)
                        os.sync()  # the parts are written through the page cache: count their write-back
                        wall = time.perf_counter() - t0
                        t = m["timings"]
                        row.update(partitions=p, sample_s=round(t["sample_s"], 3), map_s=round(t["map_s"], 3),
                                   merge_s=round(t["merge_s"], 3), map_tasks=m["map_tasks"],
                                   external_merges=m["external_merges"], spilled_mib=spilled_mib() - sp0)
                        ok = verify_ray(args.emsort_bin, fmt, out, inp, scratch) if rep == 0 and not args.no_verify else ""
                        shutil.rmtree(out, ignore_errors=True)
                    row.update(wall_s=round(wall, 3), mb_s=round(count * isz / 1e6 / wall, 1),
                               mb_s_per_node=round(count * isz / 1e6 / wall, 1), verified=ok)
                    print(f"{spec} rep {rep + 1} {eng}: {wall:.2f} s {row['mb_s']} MB/s verified={ok}",
                          file=sys.stderr, flush=True)
                    if ok is False:
                        print("VERIFY FAILED", file=sys.stderr)
                    w.writerow(row)
                    rawf.flush()
                    rows.append(row)
            if not args.keep_data:
                os.unlink(inp)
    ray.shutdown()
    shutil.rmtree(scratch, ignore_errors=True)
    write_summary(rows, args.out)
    return 0


def write_summary(rows, out_dir) -> None:
    groups = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["engine"]), []).append(r)
    single = {ds: statistics.median(float(r["wall_s"]) for r in g) for (ds, e), g in groups.items() if e == "single"}
    inmem = {ds: statistics.median(float(r["wall_s"]) for r in g) for (ds, e), g in groups.items()
             if e == "single-inmem"}
    summary = []
    for (ds, eng), g in groups.items():
        walls = [float(r["wall_s"]) for r in g]
        med = statistics.median(walls)
        b = g[0]["bytes"]

        def med_of(k):
            vals = [float(r[k]) for r in g if r.get(k) not in ("", None)]
            return round(statistics.median(vals), 2) if vals else ""

        summary.append({
            "dataset": ds, "engine": eng, "reps": len(g), "bytes": b,
            "wall_median_s": round(med, 2), "wall_min_s": round(min(walls), 2), "wall_max_s": round(max(walls), 2),
            "mb_s": round(b / 1e6 / med, 1), "mb_s_per_node": round(b / 1e6 / med / int(g[0]["nodes"]), 1),
            "overhead_vs_single": round(med / single[ds], 2) if ds in single else "",
            "overhead_vs_inmem": round(med / inmem[ds], 2) if ds in inmem else "",
            "sample_s": med_of("sample_s"), "map_s": med_of("map_s"), "merge_s": med_of("merge_s"),
            "map_tasks": g[0].get("map_tasks", ""), "external_merges": g[0].get("external_merges", ""),
            "spilled_mib": med_of("spilled_mib"),
            "verified": all(r["verified"] in (True, "") for r in g) and any(r["verified"] is True for r in g),
        })
    with open(os.path.join(out_dir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(summary[0].keys()))
        w.writeheader()
        w.writerows(summary)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write("| data | engine | median s (min–max) | MB/s per node | ÷ single | ÷ single-inmem "
                "| sample / map / merge s | map tasks | external merges | spilled MiB | verified |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|\n")
        for s in summary:
            phases = f"{s['sample_s']} / {s['map_s']} / {s['merge_s']}" if not s["engine"].startswith("single") else "—"
            f.write(f"| {s['dataset']} | {s['engine']} | {s['wall_median_s']} ({s['wall_min_s']}–{s['wall_max_s']}) "
                    f"| {s['mb_s_per_node']} | {s['overhead_vs_single']} | {s['overhead_vs_inmem']} | {phases} | {s['map_tasks'] or '—'} "
                    f"| {s['external_merges'] if s['external_merges'] != '' else '—'} "
                    f"| {s['spilled_mib'] if s['spilled_mib'] != '' else '—'} | {'yes' if s['verified'] else 'no'} |\n")


if __name__ == "__main__":
    sys.exit(main())
