#!/usr/bin/env bash
# The int8 kernels' vector paths against their plain loops (native/test/i8_neon_check.cpp): built for
# arm64 with Debian's aarch64-linux-gnu-g++ (the linux-arm64 build's compiler) and the addon's Release
# flags, and run under qemu-user twice: -cpu cortex-a53 (ARMv8.0-A, no dot product: the NEON copy) and
# -cpu max (with the dot product: the NEON copy and the sdot one); then built and run natively (on
# x86-64: AVX2 and AVX-512 VNNI where the CPU has them). Only the kernels' sources are compiled
# (kivf_i8, i8_glance, i8_neon, kernels_core, settings), no llama.cpp. Speeds under qemu are an
# emulator's: the check reports none.
# Needs g++-aarch64-linux-gnu and qemu-user (Debian); without them the native check still runs, and the
# script says what is missing and exits 1.
# Usage: scripts/check/i8-neon.sh [cases per check (300)] [seed]   (OPT="-O2" for other flags than -O3)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=.cache/i8-neon
OPT=${OPT:--O3 -DNDEBUG}
SOURCES=(native/src/kivf/kivf_i8.cpp native/src/kernels/i8_glance.cpp native/src/kernels/i8_neon.cpp
  native/src/kernels/kernels_core.cpp native/src/common/settings.cpp native/test/i8_neon_check.cpp)

build() {  # build CXX DIR [FLAGS…]: the check, one object per source, two compiles at a time
  local cxx=$1 dir=$2 objs=() pids=()
  shift 2
  mkdir -p "$dir"
  rm -f "$dir"/*.o "$dir/i8_neon_check"
  for s in "${SOURCES[@]}"; do
    local o
    o="$dir/$(basename "$s" .cpp).o"
    objs+=("$o")
    # shellcheck disable=SC2086
    "$cxx" -std=gnu++17 $OPT -fPIC -fexceptions -pthread -Wall -Wextra "$@" -I native/src -c "$s" -o "$o" &
    pids+=($!)
    if [ ${#pids[@]} -ge 2 ]; then
      wait "${pids[0]}"
      pids=("${pids[@]:1}")
    fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  "$cxx" -pthread "${objs[@]}" -o "$dir/i8_neon_check"
}

missing=()
command -v aarch64-linux-gnu-g++ > /dev/null || missing+=("aarch64-linux-gnu-g++ (Debian: g++-aarch64-linux-gnu)")
command -v qemu-aarch64 > /dev/null || missing+=("qemu-aarch64 (Debian: qemu-user)")
if [ ${#missing[@]} -eq 0 ]; then
  echo "== arm64 ($OPT), under qemu-user"
  build aarch64-linux-gnu-g++ "$OUT/arm64"
  for cpu in cortex-a53 max; do
    echo "-- qemu-aarch64 -cpu $cpu"
    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 -cpu "$cpu" "$OUT/arm64/i8_neon_check" "$@"
  done
fi
echo "== native ($(uname -m), $OPT)"
# GCC 12's own _mm512_reduce_max_ps (avx512fintrin.h) draws -Wmaybe-uninitialized in Stage1Vnni, as in
# the addon's build: kept out of this check's output
build "${CXX:-c++}" "$OUT/native" -Wno-maybe-uninitialized
"$OUT/native/i8_neon_check" "$@"
if [ ${#missing[@]} -gt 0 ]; then
  echo "the arm64 check did not run: missing ${missing[*]}; apt-get install g++-aarch64-linux-gnu qemu-user" >&2
  exit 1
fi
