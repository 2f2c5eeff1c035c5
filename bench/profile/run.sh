#!/bin/bash
# Where each sort's CPU time goes (issue 18): 1 GiB of u32, of 100-byte
# records with 10-byte keys, of text lines and of csv lines, each sorted
# at -S 256M on 2 threads under perf on a cold cache, its samples sorted
# into the pipeline's stages by stages.py.
#
#   bash bench/profile/run.sh OUT_DIR [WORK_DIR] [SIZE]
#
# OUT_DIR gets LABEL-stages.csv, LABEL-symbols.txt and LABEL-stats.json per
# sort and stages.md (one table: the CPU seconds of each stage per sort);
# WORK_DIR (default target/profile-work) holds the generated inputs, runs
# and outputs, removed at the end. SIZE defaults to 1G. Needs root (to
# drop the page cache) and perf; builds emsort in release first.
set -euo pipefail
out=${1:?usage: run.sh OUT_DIR [WORK_DIR] [SIZE]}
work=${2:-target/profile-work}
size=${3:-1G}
here=$(cd "$(dirname "$0")" && pwd)
cargo build --release -q -p emsort
emsort=target/release/emsort
mkdir -p "$out" "$work/tmp"
{
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "emsort: $("$emsort" --version)"
    echo "kernel: $(uname -r)"
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|L1d|L2|L3)'
    grep MemTotal /proc/meminfo
    echo "perf: $(perf --version)"
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
} > "$out/machine.txt"
trap 'rm -rf "$work"' EXIT
count=$(( $(numfmt --from=iec "$size") ))
"$emsort" gen --format u32 --count $((count / 4)) --seed 1 -o "$work/u32.bin" >/dev/null
"$emsort" gen --format rec:100:0:10 --count $((count / 100)) --seed 1 -o "$work/rec.bin" >/dev/null
"$emsort" gen --format lines --bytes "$size" --seed 1 -o "$work/lines.txt" >/dev/null
"$emsort" gen --format csv --bytes "$size" --seed 3 -o "$work/csv.txt" >/dev/null
common=(-S 256M --parallel 2 -T "$work/tmp")
prof() {
    local label=$1; shift
    python3 "$here/stages.py" --emsort "$emsort" --out "$out" --label "$label" -- "$@" "${common[@]}" -o "$work/out"
    rm -f "$work/out"
}
prof u32 --format u32 "$work/u32.bin"
prof rec100 --format rec:100:0:10 "$work/rec.bin"
prof lines "$work/lines.txt"
prof csv-k3n -t, -k3,3n "$work/csv.txt"
prof csv-k2k3 -t, -k2,2 -k3,3nr "$work/csv.txt"
prof csv-u -u "$work/csv.txt"
prof csv-k1u -t, -k1,1n -u "$work/csv.txt"
python3 - "$out" <<'PY'
import csv, glob, json, os, sys
out = sys.argv[1]
labels = ["u32", "rec100", "lines", "csv-k3n", "csv-k2k3", "csv-u", "csv-k1u"]
stages, cells, heads = [], {}, {}
for l in labels:
    for r in csv.DictReader(open(os.path.join(out, f"{l}-stages.csv"))):
        if r["stage"] not in stages:
            stages.append(r["stage"])
        cells[(r["stage"], l)] = float(r["cpu_s"])
    st = json.load(open(os.path.join(out, f"{l}-stats.json")))
    heads[l] = st
with open(os.path.join(out, "stages.md"), "w") as f:
    f.write("| stage (CPU s) | " + " | ".join(labels) + " |\n|---|" + "---:|" * len(labels) + "\n")
    order = sorted(stages, key=lambda s: -sum(cells.get((s, l), 0) for l in labels))
    for s in order:
        f.write(f"| {s} | " + " | ".join(f"{cells.get((s, l), 0):.2f}" for l in labels) + " |\n")
    f.write("| **CPU total** | " + " | ".join(f"{sum(cells.get((s, l), 0) for s in stages):.2f}" for l in labels) + " |\n")
    f.write("| wall (run formation + merge) | " + " | ".join(
        f"{heads[l]['total_seconds']:.2f} ({heads[l]['run_formation']['seconds']:.2f} + {heads[l]['merge']['seconds']:.2f})"
        for l in labels) + " |\n")
    f.write("| runs | " + " | ".join(str(heads[l]['runs']) for l in labels) + " |\n")
print(open(os.path.join(out, "stages.md")).read())
PY
