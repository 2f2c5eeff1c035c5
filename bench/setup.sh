#!/usr/bin/env bash
# Installs the Debian packages emsort's benchmarks use, when they are missing:
#   libstxxl-dev  STXXL, the peer of `emsort bench sort` on u32 (bench/stxxl/)
#   g++           compiles the STXXL driver (bench/stxxl/stxxl_sort.cpp)
#   pkg-config    finds STXXL's compiler flags
#   coreutils     GNU sort, the peer on text lines
#   fio           the device's sequential and random rates (readers benchmark)
# Idempotent: installs nothing when every package is there. Needs root (or
# sudo) and Debian's package archive; the benchmarks run without these
# packages too, leaving out the peers they serve (machine.json says so).
#
#   bash bench/setup.sh
set -euo pipefail

packages=(libstxxl-dev g++ pkg-config coreutils fio)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "bench/setup.sh: all present: ${packages[*]}"
    exit 0
fi
echo "bench/setup.sh: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        sudo="sudo"
    else
        echo "bench/setup.sh: need root (or sudo) to install ${missing[*]}" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "bench/setup.sh: done"
