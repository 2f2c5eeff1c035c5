"""Facts and helpers the benchmark drivers share (`bench/table`, `bench/compress`): the machine
a result was measured on (CPU model and SIMD level, the work directory's file system and mount
options, the disk's 1 MiB O_DIRECT QD 1 latency and QD 32 bandwidth from fio, versions, the
commit), a cold page cache, and a child process timed with its peak RSS."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def parse_size(s: str) -> int:
    """`256M`, `1G`, `4096`: bytes (powers of 1024)."""
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMG" else s) * mult)


def write_rows(path: str, rows: list) -> None:
    """`rows` (dicts of the same keys) as a CSV file."""
    import csv

    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def rel(path):
    return None if path is None else os.path.relpath(os.path.abspath(path))


def drop_caches() -> None:
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        print(f"warning: cannot drop caches: {e}", file=sys.stderr)


def run(argv, env) -> dict:
    """Runs a child under GNU time, whose own child's peak RSS is the tool's alone (a child
    forked from this Python process would count the pages it had before its exec)."""
    fd, times = tempfile.mkstemp(prefix="time-", suffix=".txt")
    os.close(fd)
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-o", times, "-f", "%M %U %S"] + argv, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - t0
    with open(times) as f:
        last = f.read().strip().splitlines()[-1].split()
    os.unlink(times)
    # The error itself: its first line naming an error, else the last line.
    lines = [ln.strip() for ln in p.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    err = [ln for ln in lines if "Error" in ln or "Exception" in ln][:1] or lines[-1:]
    return {
        "seconds": seconds,
        "exit": p.returncode,
        "peak_rss_bytes": int(last[0]) * 1024,
        "user_s": float(last[1]),
        "system_s": float(last[2]),
        "error": err[0][:300] if p.returncode and err else "",
    }


def fio_facts(workdir: str) -> dict:
    """1 MiB O_DIRECT requests on the work directory: QD 1 read/write latency, QD 32
    read/write bandwidth (fio, 3 s each)."""
    if not shutil.which("fio"):
        return {"fio": "not installed"}
    out = {}
    f = os.path.join(workdir, "fio.dat")
    try:
        for rw in ("read", "write"):
            for qd in (1, 32):
                r = subprocess.run(
                    ["fio", "--name=p", f"--filename={f}", "--size=1G", "--bs=1M", "--direct=1",
                     "--ioengine=io_uring", f"--iodepth={qd}", f"--rw={rw}", "--runtime=3", "--time_based",
                     "--output-format=json"],
                    capture_output=True, text=True,
                )
                if r.returncode:
                    return {"fio": f"failed: {r.stderr.strip()[:200]}"}
                j = json.loads(r.stdout)["jobs"][0][rw]
                if qd == 1:
                    out[f"qd1_{rw}_latency_ms"] = round(j["lat_ns"]["mean"] / 1e6, 3)
                else:
                    out[f"qd32_{rw}_mib_s"] = round(j["bw_bytes"] / (1 << 20), 1)
    finally:
        if os.path.exists(f):
            os.unlink(f)
    return out


def machine(workdir: str, emsort: str, versions: dict) -> dict:
    """The machine and the tools: `versions` adds the peers' (name → version)."""
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "")
    flags = next((ln.split(":", 1)[1].split() for ln in open("/proc/cpuinfo") if ln.startswith("flags")), [])
    simd = "avx512" if "avx512f" in flags and "avx512bw" in flags else "avx2" if "avx2" in flags else "scalar"
    fam = {k: next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith(k)), None)
           for k in ("cpu family", "model\t")}
    mnt = subprocess.run(["findmnt", "-n", "-T", workdir, "-o", "SOURCE,FSTYPE,OPTIONS"], capture_output=True,
                         text=True).stdout.split()
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpu": cpu,
        "cpu_family": fam["cpu family"],
        "cpu_model": fam["model\t"],
        "simd": simd,
        "nproc": os.cpu_count(),
        "mem_total_kib": int(next(ln.split()[1] for ln in open("/proc/meminfo") if ln.startswith("MemTotal"))),
        "kernel": platform.release(),
        "workdir": rel(workdir),
        "filesystem": {"source": mnt[0] if mnt else None, "type": mnt[1] if len(mnt) > 1 else None,
                       "options": mnt[2] if len(mnt) > 2 else None},
        "device": fio_facts(workdir),
        "emsort": subprocess.run([emsort, "--version"], capture_output=True, text=True).stdout.strip(),
        "emsort_bin": rel(emsort),
        "commit": commit,
        **versions,
        "python": platform.python_version(),
        "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
    }


def machine_line(facts: dict, versions: str) -> str:
    """The README's machine sentence: CPU and SIMD level, memory, the work directory's file system
    and mount options, the disk's fio figures, the commit, then `versions` (the peers')."""
    return (
        f"Machine: {facts['cpu']} (family {facts['cpu_family']}, model {facts['cpu_model']}, "
        f"SIMD {facts['simd']}), {facts['nproc']} CPUs, {facts['mem_total_kib'] // 1024} MiB; work directory on "
        f"{facts['filesystem']['type']} ({facts['filesystem']['options']}); 1 MiB O_DIRECT: "
        + ", ".join(f"{k} {v}" for k, v in facts["device"].items())
        + f"; emsort {facts['commit'][:7]}, {versions}."
    )


def spread(rs: list) -> dict:
    """Of one group's runs (dicts with `seconds`, `exit`, `error`): the median, min and max of the
    runs that finished (None when none did) and the failures as the table's cell (`0`, or their
    count and the first one's message)."""
    import statistics

    ok = [r["seconds"] for r in rs if r["exit"] == 0]
    failed = [r for r in rs if r["exit"] != 0]
    return {
        "median": statistics.median(ok) if ok else None,
        "min": min(ok) if ok else None,
        "max": max(ok) if ok else None,
        "failed": f"{len(failed)}: {failed[0]['error']}" if failed else "0",
    }
