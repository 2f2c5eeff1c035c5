#!/usr/bin/env bash
# am again with 45 rounds per reader at both windows, with the calibrations that
# replay.sh (2026-11-22c-readers) left in $R/xdg-ra128 and $R/xdg-ra8192. Root only.
set -euo pipefail
E=${E:-./target/release/emsort}; R=${R:-target/rw}; O=${OUT:-$R/replay-f}
RA=/sys/block/${DEV:-vda}/queue/read_ahead_kb; ORIG=$(cat $RA); trap 'echo $ORIG > $RA' EXIT
rm -rf $R/gen-am; $E gen-trace --kind am --scale 1 --dir $R/gen-am > /dev/null 2>&1
for ra in 128 8192; do
  echo $ra > $RA
  XDG_CONFIG_HOME=$PWD/$R/xdg-ra$ra $E replay $R/gen-am/trace.csv --reps 45 -q -o $O/ra$ra/replay-am-45.csv > $O/ra$ra/replay-am-45.txt 2>&1
done
rm -rf $R/gen-am
