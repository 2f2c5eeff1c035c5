#!/usr/bin/env python3
"""Where a sort's CPU time goes, by stage (issue 18).

Runs `emsort sort` under `perf record` on a cold cache, then sorts every
sampled symbol into a stage of the pipeline (the table `STAGES` below: the
first pattern that matches a symbol wins) and writes, per stage, its share
of the samples and the CPU seconds that share is of the sort's user +
system time (from `/usr/bin/time`-style rusage of the child).

    python3 bench/profile/stages.py --emsort target/release/emsort \
        --out DIR --label u32 -- --format u32 -S 256M --parallel 2 -T DIR/tmp IN -o OUT

writes DIR/LABEL-stages.csv (stage, share, cpu_s), DIR/LABEL-symbols.txt
(perf's flat profile, symbols over 0.3 %) and DIR/LABEL-stats.json (the
sort's --stats). Needs perf and root (to drop the page cache).
"""
import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

# (stage, regex on "comm symbol"): the first match wins. Threads: emsort0-N
# is the sort's rayon pool; the others (reader, run writer, write-behind,
# read-ahead) carry the binary's name.
STAGES = [
    ("key parse (split fields, number forms, encode)",
     r"keys::field|keys::encode|LineOrder::encode|Order::normalise|number_form|digits_form|split_fields|encode_key|transform"),
    ("run formation: radix sort", r"rdst::|radix::|sort_index|RadixKey|get_level"),
    ("run formation: line index", r"line_index|count_until|sort_chunk"),
    ("merge: loser trees and rounds",
     r"merge_items::|key_tree::|multiway::|KeyTree|HeadTree|merge_part|loser_tree|Order::cmp|last_resort|compare_equal_forms"),
    ("comparators and tie groups (closures, small sorts)",
     r"call_mut|smallsort|small_sort|quicksort|heapsort|insertion_sort|slice::sort"),
    ("gather and copies (memmove)", r"memmove|memcpy|SortedChunk|gather|copy_from_slice"),
    ("line ends (memchr)", r"memchr"),
    ("comparisons (memcmp)", r"memcmp|bcmp"),
    ("kernel: I/O (read, write, direct I/O, block layer)",
     r"\[k\].*(iomap|blk|bio|dio|vfs_|ksys_|ext4|nvme|virtio|virtqueue|gup|pin_user|io_uring|filemap|copy_to_iter|copy_from_iter|_copy_|rw_verify|fsnotify|submit)"),
    ("kernel: memory (page faults, zeroing, allocation)",
     r"\[k\].*(page_fault|clear_page|alloc_pages|rmqueue|memcg|lru|folio|mm_|do_anonymous|handle_mm|zap|free_|tlb|pte|exc_page|unmap|mmap|vma)"),
    ("kernel: scheduling and other", r"\[k\]"),
    ("threads, channels, allocator", r"rayon|crossbeam|std::sync|std::thread|malloc|free|mpmc|futex|pthread"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--emsort", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--freq", default="999")
    ap.add_argument("sort_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.sort_args if x != "--"]
    os.makedirs(a.out, exist_ok=True)
    data = os.path.join(tempfile.mkdtemp(prefix="emsort-perf-"), "perf.data")
    stats = os.path.join(a.out, f"{a.label}-stats.json")
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["perf", "record", "-q", "-F", a.freq, "-o", data, "--", a.emsort, "sort", *args,
                    "--stats", stats], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # perf's own children are counted too, but perf record itself uses
    # little CPU; the sort's --stats are the timing reference.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm,sym", "--stdio",
                          "-g", "none", "--percent-limit", "0"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in rep.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+(.*)$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3).strip()))
    shares = {s: 0.0 for s, _ in STAGES}
    shares["other"] = 0.0
    for pct, comm, sym in rows:
        key = f"{comm} {sym}"
        for stage, pat in STAGES:
            if re.search(pat, key):
                shares[stage] += pct
                break
        else:
            shares["other"] += pct
    total = sum(shares.values()) or 1.0
    with open(os.path.join(a.out, f"{a.label}-stages.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stage", "share", "cpu_s"])
        for stage, pct in sorted(shares.items(), key=lambda kv: -kv[1]):
            w.writerow([stage, f"{pct / total:.3f}", f"{cpu * pct / total:.2f}"])
    with open(os.path.join(a.out, f"{a.label}-symbols.txt"), "w") as f:
        f.write(f"# emsort sort {' '.join(args)}\n# CPU (user + system) {cpu:.2f} s\n")
        for pct, comm, sym in rows:
            if pct >= 0.3:
                f.write(f"{pct:6.2f}%  {comm:<12} {sym}\n")
    st = json.load(open(stats))
    print(f"{a.label}: {st['total_seconds']:.2f} s wall, {cpu:.2f} s CPU "
          f"(run formation {st['run_formation']['seconds']:.2f} s, merge {st['merge']['seconds']:.2f} s)")
    for stage, pct in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {pct / total * 100:5.1f} %  {cpu * pct / total:6.2f} s  {stage}")
    os.remove(data)


if __name__ == "__main__":
    sys.exit(main())
