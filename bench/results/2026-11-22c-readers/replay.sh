#!/usr/bin/env bash
# The calibrated adaptive reader against the fixed readers at two readahead windows:
# this VM's read_ahead_kb (8192) and the Linux default (128). For each: calibrate,
# then replay the four traces with every reader (cold cache, paired rounds).
# Root only (it writes /sys/block/DEV/queue/read_ahead_kb and restores it on exit).
set -euo pipefail
cd "$(dirname "$0")/../../.."
E=${E:-./target/release/emsort}
R=${R:-target/rw}
OUT=${OUT:-$R/replay-c}
if [ -z "${DEV:-}" ]; then
  src=$(findmnt -no source --target "$R"); DEV=$(basename "$src")
  [ -e "/sys/block/$DEV" ] || DEV=$(lsblk -no pkname "$src" | head -1)
fi
RA=/sys/block/$DEV/queue/read_ahead_kb
ORIG=$(cat "$RA")
trap 'echo "$ORIG" > "$RA"' EXIT
mkdir -p "$OUT"
date -u +%FT%TZ > "$OUT/started"
for ra in ${RAS:-8192 128}; do
  echo "$ra" > "$RA"
  O=$OUT/ra$ra; X=$R/xdg-ra$ra
  rm -rf "$O" "$X"; mkdir -p "$O" "$X/emsort"
  export XDG_CONFIG_HOME=$PWD/$X
  $E calibrate --dir "$R" > "$O/calibrate.txt" 2>&1
  cp "$X/emsort/calibration" "$O/calibration"
  for spec in ${SPECS:-"mixed 1 9" "ct 1 7" "am 1 15" "im 0.5 7"}; do
    set -- $spec
    rm -rf "$R/gen-$1"
    $E gen-trace --kind "$1" --scale "$2" --dir "$R/gen-$1" > "$O/gen-$1.txt" 2>&1
    $E replay "$R/gen-$1/trace.csv" --reps "$3" -o "$O/replay-$1.csv" > "$O/replay-$1.txt" 2>&1
    rm -rf "$R/gen-$1"
  done
done
date -u +%FT%TZ > "$OUT/finished"
