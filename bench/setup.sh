#!/usr/bin/env bash
# Installs the Debian packages emsort's benchmarks use, when they are missing:
#   libstxxl-dev  STXXL, the peer of `emsort bench sort` on u32 (bench/stxxl/)
#   g++           compiles the STXXL driver (bench/stxxl/stxxl_sort.cpp)
#   pkg-config    finds STXXL's compiler flags
#   coreutils     GNU sort, the peer on text lines
#   fio           the device's sequential and random rates (readers benchmark),
#                 and the machine-profile matrix's I/O bound and device facts
#   xfsprogs      mkfs.xfs: the matrix's xfs profile (emsort bench sort --profiles)
#   btrfs-progs   mkfs.btrfs: the matrix's btrfs profile
# and two peers of `emsort bench sort`'s keys experiment (csv inputs):
#   uutils sort   uutils coreutils' sort, as the multi-call binary `coreutils`
#                 (cargo install coreutils --no-default-features --features sort,
#                 into ~/.cargo/bin; a few minutes of compiling)
#   DuckDB        the Python package duckdb, 2.x (pip, for $EMSORT_BENCH_PYTHON,
#                 default python3)
# and the peers of issue 41's data sets (csv-export, jsonl):
#   Polars        the Python package polars (pip, same interpreter)
#   xan           the CSV toolkit, `xan sort --external` (cargo install xan
#                 --locked, into ~/.cargo/bin). Long to compile: on the
#                 development machine (2 vCPUs shared with other builds) two
#                 15-minute tries of `cargo install xan --locked -j2` did not
#                 finish (its ~290 dependencies built, then the xan crate
#                 alone ran out the second try), so it is tried here with a
#                 40-minute limit and left out of the campaign when missing
# Idempotent: installs nothing when everything is there. Needs root (or
# sudo) and Debian's package archive, crates.io and PyPI; the benchmarks run
# without these too, leaving out the peers they serve (machine.json says so).
#
#   bash bench/setup.sh
set -euo pipefail

packages=(libstxxl-dev g++ pkg-config coreutils fio xfsprogs btrfs-progs)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "bench/setup.sh: all present: ${packages[*]}"
else
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
fi

# uutils sort: `coreutils sort --version` says "uutils" when it is there.
uutils_ok() {
    for exe in coreutils "${CARGO_HOME:-$HOME/.cargo}/bin/coreutils"; do
        if "$exe" sort --version 2>/dev/null | head -n 1 | grep -q uutils; then
            return 0
        fi
    done
    return 1
}
if uutils_ok; then
    echo "bench/setup.sh: uutils sort present"
elif command -v cargo >/dev/null; then
    echo "bench/setup.sh: installing uutils sort (cargo install coreutils --features sort)"
    cargo install --locked coreutils --no-default-features --features sort
else
    echo "bench/setup.sh: no cargo: uutils sort not installed (the keys experiment leaves it out)" >&2
fi

# DuckDB for Python, 2.x.
python="${EMSORT_BENCH_PYTHON:-python3}"
if "$python" -c 'import duckdb' 2>/dev/null; then
    echo "bench/setup.sh: DuckDB present ($("$python" -c 'import duckdb; print(duckdb.__version__)'))"
elif command -v "$python" >/dev/null; then
    echo "bench/setup.sh: installing DuckDB for $python (pip install 'duckdb>=2,<3')"
    "$python" -m pip install --quiet 'duckdb>=2,<3' \
        || "$python" -m pip install --quiet --break-system-packages 'duckdb>=2,<3'
else
    echo "bench/setup.sh: no $python: DuckDB not installed (the keys experiment leaves it out)" >&2
fi
# Polars for Python.
if "$python" -c 'import polars' 2>/dev/null; then
    echo "bench/setup.sh: Polars present ($("$python" -c 'import polars; print(polars.__version__)'))"
elif command -v "$python" >/dev/null; then
    echo "bench/setup.sh: installing Polars for $python (pip install polars)"
    "$python" -m pip install --quiet polars \
        || "$python" -m pip install --quiet --break-system-packages polars
fi

# xan: `xan --version` answers when it is there.
xan_ok() {
    for exe in xan "${CARGO_HOME:-$HOME/.cargo}/bin/xan"; do
        if "$exe" --version >/dev/null 2>&1; then
            return 0
        fi
    done
    return 1
}
if xan_ok; then
    echo "bench/setup.sh: xan present"
elif command -v cargo >/dev/null; then
    echo "bench/setup.sh: installing xan (cargo install xan --locked; may take long)"
    timeout 2400 cargo install --locked xan \
        || echo "bench/setup.sh: xan not installed (the keys experiment leaves it out)" >&2
else
    echo "bench/setup.sh: no cargo: xan not installed (the keys experiment leaves it out)" >&2
fi
echo "bench/setup.sh: done"
