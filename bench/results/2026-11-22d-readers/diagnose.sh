#!/usr/bin/env bash
# The diagnosis in README.md, steps 3-4: single cold runs of `uring` then `adaptive` on the
# mixed trace, with the VM's free page reporting as it is and then paused; per run the
# replay time, the process's CPU times (/usr/bin/time), the disk's reads (/proc/diskstats)
# and the memory the guest reported to the host. Root only; restores page_reporting_order.
# Needs the trace (emsort gen-trace --kind mixed --dir target/rw/gen-mixed) and a calibration
# in $XDG_CONFIG_HOME/emsort/calibration (e.g. ra8192/calibration of this directory).
set -euo pipefail
cd "$(dirname "$0")/../../.."
E=${E:-./target/release/emsort}
T=${T:-target/rw/gen-mixed/trace.csv}
N=${N:-6}
PR=/sys/module/page_reporting/parameters
ORIG=$(cat $PR/page_reporting_order)
trap 'echo "$ORIG" > $PR/page_reporting_order' EXIT
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
disk() { awk '$3=="vda"{print $4, $6}' /proc/diskstats; }
for order in "$ORIG" 11; do
  echo "$order" > $PR/page_reporting_order
  r0=$(cat $PR/reported_kib)
  echo "== page_reporting_order $order"
  for i in $(seq 1 "$N"); do
    cold; $E replay "$T" --readers uring --cache none -q > /dev/null
    cold; d0=($(disk))
    /usr/bin/time -f "cpu: user %U s, sys %S s" $E replay "$T" --readers adaptive --cache none -q 2>&1 \
      | grep -E "^adaptive +-|^cpu:" | tr '\n' ' '
    d1=($(disk)); echo "disk: $((d1[0]-d0[0])) reads, $(( (d1[1]-d0[1]) / 2048 )) MiB"
  done
  echo "reported to the host meanwhile: $(( $(cat $PR/reported_kib) - r0 )) KiB"
done
