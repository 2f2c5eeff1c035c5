#!/usr/bin/env bash
# Calibrate, then replay the four traces with every reader (cold cache, medians, paired rounds).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the work directory
E=${E:-./target/release/emsort}
R=target/rw
OUT=$R/replay3-out
rm -rf $OUT $R/xdg3; mkdir -p $OUT $R/xdg3/emsort
export XDG_CONFIG_HOME=$PWD/$R/xdg3
date -u +%FT%TZ > $OUT/started
$E calibrate --dir $R > $OUT/calibrate.txt 2>&1
cp $R/xdg3/emsort/calibration $OUT/calibration
for spec in "mixed 1 7" "ct 1 7" "am 1 15" "im 0.5 7"; do
  set -- $spec
  rm -rf $R/gen-$1
  $E gen-trace --kind $1 --scale $2 --dir $R/gen-$1 > $OUT/gen-$1.txt 2>&1
  $E replay $R/gen-$1/trace.csv --reps $3 -o $OUT/replay-$1.csv > $OUT/replay-$1.txt 2>&1
  rm -rf $R/gen-$1
done
date -u +%FT%TZ > $OUT/finished
