#!/usr/bin/env bash
# Runs on the GPU machine (see docs/DEVICE.md): builds llama.cpp with CUDA from the bundled source and
# the addon against it, then compares hiddenStates and score with the CPU results recorded here.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gavel-out}
mkdir -p "$OUT" "$HOME/bin"
t0=$(date +%s)
[ -x "$HOME/bin/node" ] || xz -dc .device/node.xz > "$HOME/bin/node"
chmod +x "$HOME/bin/node"
export PATH="$HOME/bin:$PATH"
if [ ! -f "$HOME/lcpp/CMakeLists.txt" ]; then mkdir -p "$HOME/lcpp" && xz -dc .device/llama-src.tar.xz | tar -xf - -C "$HOME/lcpp"; fi
BUILD="$HOME/gavel-cuda"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGAVEL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90a} \
  -DLLAMA_SRC_DIR="$HOME/lcpp" -DCMAKE_JS_INC="$PWD/.device/node-api-headers" > "$OUT/cmake.log" 2>&1 || { tail -50 "$OUT/cmake.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target gavel_router > "$OUT/build.log" 2>&1 || { tail -80 "$OUT/build.log"; exit 1; }
t1=$(date +%s)
echo "build: $((t1 - t0)) s"
addon=$(find "$BUILD" -name gavel.node | head -1)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
GAVEL_ADDON="$addon" node scripts/device/compare.mjs check .device | tee "$OUT/compare.txt"
