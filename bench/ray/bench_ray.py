#!/usr/bin/env python3
"""Benchmark: emsort.ray.sort on a local Ray cluster against single-node `emsort sort`.

For each data set (format × size) the script generates a seeded input with the `emsort`
binary, then, repetition by repetition (the order of the engines rotating each time),
runs on a cold page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`, root):

* `single`: the `emsort` binary as a child process, `emsort sort --format F -S MEM --parallel
  CPUS` with MEM = memory_per_task × CPUS (the memory the Ray job's tasks may use at once);
* `single-inmem`: the same with `-S` = the input size + 5 % (one in-memory sort: the
  memory the Ray job really had, its object store being RAM);
* `ray-pP`: `emsort.ray.sort(input, outdir, format=F, partitions=P,
  memory_per_task=…)` on a Ray cluster started once by this script
  (`ray.init(num_cpus=CPUS)`), timed from the call to its return (cluster start-up is
  recorded apart);
* `io-bound`: the input copied twice with O_DIRECT, 8 MiB at a time (input → copy →
  second copy, each synced): the disk traffic of a sort larger than memory (one
  run-formation pass, one merge pass) with no sorting.

Outputs are verified in the first repetition (Ray: `emsort.ray.verify` for order within and
across parts, then the parts concatenated and checked with `emsort verify --input` for the
multiset; single: `emsort verify --input`). Writes `raw.csv` (one row per run) and
`machine.json` (machine facts, versions, commit, the command, paths relative to the current
directory) to --out, then runs `emsort bench ray --plot-only OUT`, which makes `summary.csv`,
`plots/ray_time.svg` and `README.md` (the results beside Exoshuffle's published ones) from
them; `--plot-only DIR` does only that.

Examples:

    python3 bench/ray/bench_ray.py --quick       # u32 256 MiB, P = 2 and 4, 3 reps: minutes
    python3 bench/ray/bench_ray.py --data u32:2G,u32:4G,rec:100:0:10:2G --partitions 4,8 \
        --memory-per-task 512M --reps 3 --workdir target/ray-bench --out bench/results/2026-11-22-ray
"""

from __future__ import annotations

import argparse
import csv
import json
import mmap
import os
import platform
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
IO_BLOCK = 8 << 20


def rel(path):
    """A path as recorded: relative to the current directory (with `..` steps when
    outside it), so that the results name no absolute path of the machine."""
    return None if path is None else os.path.relpath(os.path.abspath(path))


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
        "emsort_bin": rel(emsort_bin),
        "emsort_bin_version": subprocess.run([emsort_bin, "--version"], capture_output=True, text=True).stdout.strip(),
        "emsort_commit": commit,
        "workdir": rel(workdir),
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
    # `-S` in bytes: a bare number is KiB for GNU sort's options (as `-f` is fold-case there).
    cmd = [emsort_bin, "sort", "--format", fmt, "-S", f"{mem}b", "--parallel", str(cpus), "-T", tmpdir, "-q",
           "--stats", stats, inp, "-o", out]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    os.sync()  # both engines are timed until their output is on disk
    wall = time.perf_counter() - t0
    st = json.load(open(stats))
    os.unlink(stats)
    return wall, st


def copy_direct(src: str, dst: str) -> None:
    """Copies src to dst with O_DIRECT reads and writes of IO_BLOCK bytes (the last block is
    written whole, then the file cut to size), synced."""
    size = os.path.getsize(src)
    buf = mmap.mmap(-1, IO_BLOCK)  # page-aligned, as O_DIRECT wants
    fi = os.open(src, os.O_RDONLY | os.O_DIRECT)
    try:
        fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        try:
            off = 0
            while off < size:
                n = os.preadv(fi, [buf], off)
                if n <= 0:
                    raise OSError(f"{src}: short read at {off}")
                os.pwritev(fo, [memoryview(buf)[: (n + 4095) & ~4095]], off)
                off += n
            os.ftruncate(fo, size)
            os.fsync(fo)
        finally:
            os.close(fo)
    finally:
        os.close(fi)
        buf.close()


def run_io_bound(inp: str, scratch: str) -> float:
    """Seconds to copy inp twice with O_DIRECT (inp → a → b): a sort's two passes of disk
    traffic with no sorting."""
    a, b = os.path.join(scratch, "io-bound-1"), os.path.join(scratch, "io-bound-2")
    t0 = time.perf_counter()
    copy_direct(inp, a)
    copy_direct(a, b)
    wall = time.perf_counter() - t0
    os.unlink(a)
    os.unlink(b)
    return wall


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
    ap.add_argument("--no-io-bound", action="store_true", help="leave out the I/O bound (the O_DIRECT copies)")
    ap.add_argument("--quick", action="store_true",
                    help="a small campaign in minutes: --data u32:256M --partitions 2,4 --memory-per-task 64M "
                         "(flags given as well win)")
    ap.add_argument("--plot-only", metavar="DIR",
                    help="measure nothing: remake DIR's summary.csv, plot and README from its raw.csv "
                         "(runs `emsort bench ray --plot-only DIR`)")
    args = ap.parse_args()
    if args.plot_only:
        return reports(args.emsort_bin, args.plot_only)
    if args.quick:
        given = set(a.split("=")[0] for a in sys.argv[1:])
        for flag, value in (("--data", "u32:256M"), ("--partitions", "2,4"), ("--memory-per-task", "64M")):
            if flag not in given:
                setattr(args, flag[2:].replace("-", "_"), value)
        if "--out" not in given:
            args.out = os.path.join(REPO, "target", "ray-quick")

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
    facts["args"] = {k: (rel(v) if k in ("workdir", "out", "emsort_bin") else v) for k, v in vars(args).items()}
    facts["command"] = " ".join(["python3", rel(os.path.abspath(sys.argv[0]))] + [rel(a) if os.path.isabs(a) else a for a in sys.argv[1:]])
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
            engines = list(singles) + [f"ray-p{p}" for p in parts] + ([] if args.no_io_bound else ["io-bound"])
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
                    if eng == "io-bound":
                        wall = run_io_bound(inp, scratch)
                        row.update(partitions="", memory_per_task="", map_tasks="", external_merges="",
                                   spilled_mib="")
                        ok = ""
                    elif eng in singles:
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
            if not args.keep_data:
                os.unlink(inp)
    ray.shutdown()
    shutil.rmtree(scratch, ignore_errors=True)
    return reports(args.emsort_bin, args.out)


def reports(emsort_bin: str, out_dir: str) -> int:
    """summary.csv, the plot and README.md from out_dir/raw.csv, by the emsort binary."""
    return subprocess.run([emsort_bin, "bench", "ray", "--plot-only", out_dir]).returncode


if __name__ == "__main__":
    sys.exit(main())
