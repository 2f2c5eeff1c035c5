#!/usr/bin/env bash
# Calibrate, then replay the four traces with every reader (cold cache, medians).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the work directory
E=./target/release/emsort
R=target/rw
OUT=$R/replay-out
mkdir -p $OUT $R/xdg/emsort
export XDG_CONFIG_HOME=$PWD/$R/xdg
date -u +%FT%TZ > $OUT/started
$E calibrate --dir $R > $OUT/calibrate.txt 2>&1
cp $R/xdg/emsort/calibration $OUT/calibration
for spec in "mixed 1 3" "ct 1 3" "am 1 9" "im 0.5 3"; do
  set -- $spec
  rm -rf $R/gen-$1
  $E gen-trace --kind $1 --scale $2 --dir $R/gen-$1 > $OUT/gen-$1.txt 2>&1
  $E replay $R/gen-$1/trace.csv --reps $3 -o $OUT/replay-$1.csv > $OUT/replay-$1.txt 2>&1
  rm -rf $R/gen-$1
done
date -u +%FT%TZ > $OUT/finished
