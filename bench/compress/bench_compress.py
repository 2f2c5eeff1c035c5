#!/usr/bin/env python3
"""Benchmark: compressed temporary runs (`emsort sort --compress`), issue 43.

For each input — CSV sorted by `-t, -k3,3n` (`emsort gen --format csv`), 60-byte lines
(`--format lines --line-len 59..59`), random u32 — and each place the temporary runs and the
data go — the work directory's disk, and a tmpfs mounted under it (root; the CPU bound) — the
script sorts with `-S M --parallel T`, repetition by repetition on a cold page cache (the
variants' order rotating):

* `emsort sort --compress=none|lz4|zstd|auto`;
* GNU `sort --compress-program=lz4|zstd` (text only; `LC_ALL=C`; `--gnu-reps` repetitions, 1 by
  default; GNU `sort` with no program beside them, on the disk).

Each run is a child timed from start to exit, with its peak RSS; emsort's `--stats` gives the
bytes written to and read from the temporary files and `auto`'s choice. Every output is
checked against the first one of its input (all variants must agree byte for byte).

In the same run, fio measures the disk (1 MiB O_DIRECT, QD 1 latency, QD 32 read and write
bandwidth): the uncompressed two-pass I/O bound of N bytes is N/r + N/w (read the input, write
the runs) + N/r + N/w (read the runs, write the output). The README table gives, per input
and place, the medians and their spread, each variant's time over `none`'s and over the I/O
bound.

    python3 bench/compress/bench_compress.py --quick      # 256 MiB, 1 repetition
    python3 bench/compress/bench_compress.py --size 1G --reps 3 --workdir target/compress-bench \\
        --out bench/results/DATE-compress
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from facts import REPO, drop_caches, machine, parse_size, run, write_rows  # noqa: E402

INPUTS = {
    "csv": (["--format", "csv"], ["-t,", "-k3,3n"]),
    "lines": (["--format", "lines", "--line-len", "59..59"], []),
    "u32": (["--format", "u32"], ["--format", "u32"]),
}
CODECS = ["none", "lz4", "zstd", "auto"]
GNU_PROGRAMS = ["lz4", "zstd"]


def generate(emsort: str, kind: str, size: int, path: str) -> None:
    gen, _ = INPUTS[kind]
    amount = ["--count", str(size // 4)] if kind == "u32" else ["--bytes", str(size)]
    subprocess.run([emsort, "gen", "-q", *gen, *amount, "-o", path], check=True)


def digest(path: str) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def variants(kind: str) -> list:
    v = [("emsort", c) for c in CODECS]
    if kind != "u32":
        v += [("gnu", p) for p in GNU_PROGRAMS] + [("gnu", "none")]
    return v


def command(emsort, tool, codec, kind, inp, out, tmp, memory, threads, stats):
    _, keys = INPUTS[kind]
    if tool == "emsort":
        return [emsort, "sort", "-q", *keys, "-S", f"{memory}b", "--parallel", str(threads),
                f"--compress={codec}", "-T", tmp, "--stats", stats, inp, "-o", out], dict(os.environ)
    env = dict(os.environ, LC_ALL="C")
    prog = [] if codec == "none" else [f"--compress-program={codec}"]
    return ["sort", *keys, "-S", f"{memory}b", f"--parallel={threads}", "-T", tmp, *prog, inp, "-o", out], env


def mount_tmpfs(path: str, size: int) -> bool:
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], capture_output=True, text=True)
    if r.returncode:
        print(f"warning: no tmpfs ({r.stderr.strip()}): the tmpfs place is skipped", file=sys.stderr)
    return r.returncode == 0


def med(xs):
    return statistics.median(xs) if xs else None


def report(out_dir: str, rows: list, facts: dict, size: int) -> None:
    dev = facts["device"]
    r_bw, w_bw = dev.get("qd32_read_mib_s"), dev.get("qd32_write_mib_s")
    io_bound = None
    if r_bw and w_bw:
        mib = size / (1 << 20)
        io_bound = 2 * (mib / r_bw + mib / w_bw)
    groups = {}
    for r in rows:
        groups.setdefault((r["input"], r["place"], r["tool"], r["codec"]), []).append(r)
    lines = [
        "# Compressed temporary runs: `emsort sort --compress` beside GNU sort's `--compress-program` (issue 43)",
        "",
        f"Machine: {facts['cpu']} (family {facts['cpu_family']}, model {facts['cpu_model']}), SIMD {facts['simd']}, "
        f"{facts['nproc']} CPUs; work directory on {facts['filesystem']['type']} "
        f"(`{facts['filesystem']['options']}`); disk, fio 1 MiB O_DIRECT: QD 1 read "
        f"{dev.get('qd1_read_latency_ms')} ms, write {dev.get('qd1_write_latency_ms')} ms; QD 32 read "
        f"{r_bw} MiB/s, write {w_bw} MiB/s (`machine.json`).",
        "",
        f"Inputs of {size >> 20} MiB, `-S {rows[0]['memory']}`, {rows[0]['threads']} threads, cold page cache, "
        f"medians of {max(r['rep'] for r in rows) + 1} (GNU sort: of its repetitions; min–max). Uncompressed two-pass I/O bound on the disk "
        f"(2·(N/r + N/w), fio's QD 32 bandwidths, same run): "
        + (f"**{io_bound:.2f} s**." if io_bound else "not measured.")
        + " `stored` is the bytes the temporary files took over the runs' bytes (emsort's `--stats`).",
        "",
        "| input | place | tool | runs stored | median | min–max | / none | / I/O bound | stored | peak RSS |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (inp, place, tool, codec), rs in groups.items():
        ok = [r for r in rs if r["exit"] == 0]
        if tool == "gnu":
            name = "GNU sort" + (f" --compress-program={codec}" if codec != "none" else "")
        else:
            name = f"emsort --compress={codec}"
        if not ok:
            lines.append(f"| {inp} | {place} | {name} | — | failed | — | — | — | — | — |")
            continue
        secs = [r["seconds"] for r in ok]
        m = med(secs)
        base_m = med([r["seconds"] for r in groups.get((inp, place, "emsort", "none"), []) if r["exit"] == 0])
        chosen = ", ".join(sorted({r["chosen"] for r in ok if r["chosen"]})) or "—"
        stored = [r["stored_ratio"] for r in ok if r["stored_ratio"] != ""]
        cells = [
            inp, place, name, chosen, f"{m:.2f} s", f"{min(secs):.2f}–{max(secs):.2f}",
            f"{m / base_m:.2f}" if base_m else "—",
            f"{m / io_bound:.2f}" if io_bound and place == "disk" else "—",
            f"{med(stored) * 100:.0f} %" if stored else "—",
            f"{med([r['peak_rss_bytes'] for r in ok]) / (1 << 20):.0f} MiB",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Every output agreed with the first of its input: "
              + ("yes." if all(r["verified"] for r in rows if r["exit"] == 0) else "**NO** (see raw.csv).")]
    auto_why = sorted({(r["input"], r["place"], r["why"]) for r in rows if r["codec"] == "auto" and r["why"]})
    if auto_why:
        lines += ["", "`auto`'s reasons (first repetition of each):", ""]
        seen = set()
        for inp, place, why in auto_why:
            if (inp, place) not in seen:
                seen.add((inp, place))
                lines.append(f"- {inp} on {place}: {why}")
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--memory", default="256M")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gnu-reps", type=int, default=1, help="GNU sort's repetitions (it takes minutes per GiB)")
    ap.add_argument("--inputs", default=",".join(INPUTS))
    ap.add_argument("--places", default="disk,tmpfs")
    ap.add_argument("--workdir", default=os.path.join(REPO, "target", "compress-bench"))
    ap.add_argument("--out", default=os.path.join(REPO, "target", "compress-bench-results"))
    ap.add_argument("--emsort-bin", default=os.path.join(REPO, "target", "release", "emsort"))
    ap.add_argument("--quick", action="store_true", help="256 MiB, M = 64M, 1 repetition")
    args = ap.parse_args()
    if args.quick:
        args.size, args.memory, args.reps = "256M", "64M", 1
    emsort = os.path.abspath(args.emsort_bin)
    size, memory = parse_size(args.size), parse_size(args.memory)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.workdir, exist_ok=True)
    gnu = subprocess.run(["sort", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    tools = {t: subprocess.run([t, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
             for t in GNU_PROGRAMS if shutil.which(t)}
    facts = machine(args.workdir, emsort, {"gnu_sort": gnu[0] if gnu else None,
                                           **{t: (v[0] if v else "?") for t, v in tools.items()}})
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump(facts, f, indent=1)
    tmpfs = os.path.join(args.workdir, "tmpfs")
    places = {}
    if "disk" in args.places:
        places["disk"] = args.workdir
    if "tmpfs" in args.places and mount_tmpfs(tmpfs, 4 * size + (512 << 20)):
        places["tmpfs"] = tmpfs
    rows = []
    try:
        for kind in args.inputs.split(","):
            for place, where in places.items():
                inp = os.path.join(where, f"in-{kind}")
                generate(emsort, kind, size, inp)
                want = None
                vs = variants(kind)
                for rep in range(args.reps):
                    order = vs[rep % len(vs):] + vs[: rep % len(vs)]
                    for tool, codec in order:
                        if tool == "gnu" and (rep >= args.gnu_reps or (codec == "none" and place == "tmpfs")):
                            continue  # GNU: --gnu-reps repetitions; without a program, on the disk only
                        out = os.path.join(where, "out")
                        tmp = tempfile.mkdtemp(prefix="tmp-", dir=where)
                        stats = os.path.join(args.workdir, "stats.json")
                        drop_caches()
                        r = run(*command(emsort, tool, codec, kind, inp, out, tmp, memory, args.threads, stats))
                        shutil.rmtree(tmp, ignore_errors=True)
                        r.update(input=kind, place=place, tool=tool, codec=codec, rep=rep, memory=args.memory,
                                 threads=args.threads, chosen="", why="", stored_ratio="", verified="")
                        if tool == "emsort" and r["exit"] == 0:
                            c = json.load(open(stats)).get("compression") or {}
                            r["chosen"] = c.get("chosen", "none")
                            r["why"] = c.get("why", "") if rep == 0 else ""
                            if c.get("raw_written"):
                                r["stored_ratio"] = c["stored_written"] / c["raw_written"]
                        if os.path.exists(stats):
                            os.unlink(stats)
                        if r["exit"] == 0:
                            d = digest(out)
                            want = want or d
                            r["verified"] = d == want
                            if d != want:
                                print(f"MISMATCH: {kind} {place} {tool} {codec}", file=sys.stderr)
                        if os.path.exists(out):
                            os.unlink(out)
                        rows.append(r)
                        print(f"{kind} {place} rep {rep} {tool} {codec}: {r['seconds']:.2f} s exit {r['exit']} "
                              f"{r['chosen']} {r['error']}", file=sys.stderr)
                os.unlink(inp)
    finally:
        if "tmpfs" in places:
            subprocess.run(["umount", tmpfs])
    write_rows(os.path.join(args.out, "raw.csv"), rows)
    report(args.out, rows, facts, size)
    print(open(os.path.join(args.out, "README.md")).read())
    return 1 if any(r["verified"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
