#!/usr/bin/env bash
# On the GPU machine, carrying .device/run (pack-gpu.sh): unpacks node, builds llama.cpp and the addon
# with CUDA (sm_90a) under $HOME (static, hidden symbols: CMakeLists.txt), stages a runnable package in $HOME/gavel for the calls that follow
# (files under $HOME survive while the machine stays warm), then checks the CUDA build against the
# CPU: hidden states and scores (compare.mjs) and the glance's CUDA max-sim (glance-twins.mjs).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gavel-out}
R=.device/run
G="$HOME/gavel"
mkdir -p "$OUT" "$HOME/bin" "$G"
t0=$(date +%s)
[ -x "$HOME/bin/node" ] || xz -dc $R/node.xz > "$HOME/bin/node"
chmod +x "$HOME/bin/node"
export PATH="$HOME/bin:$PATH"
if [ ! -f "$HOME/lcpp/CMakeLists.txt" ]; then mkdir -p "$HOME/lcpp" && xz -dc $R/llama-src.tar.xz | tar -xf - -C "$HOME/lcpp"; fi
# the addon's build reads node-addon-api through node's resolution from the source tree
rm -rf node_modules && cp -r $R/node_modules node_modules
BUILD="$HOME/gavel-cuda"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGAVEL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90a} \
  -DLLAMA_SRC_DIR="$HOME/lcpp" -DCMAKE_JS_INC="$PWD/$R/node-api-headers" > "$OUT/cmake.log" 2>&1 || { tail -50 "$OUT/cmake.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target gavel_router > "$OUT/build.log" 2>&1 || { grep -B2 -A12 -m3 "error" "$OUT/build.log" | head -80; exit 1; }
t1=$(date +%s)
echo "build: $((t1 - t0)) s"
addon=$(find "$BUILD" -name gavel.node | head -1)
# the static build's guarantee, as the CPU prebuild's: llama.cpp, ggml and the CUDA runtime inside the
# addon (no libllama/libggml/libcudart needed), only N-API's entry points exported
if ldd "$addon" | grep -E "libllama|libggml|libcudart"; then echo "the CUDA addon needs llama.cpp/ggml/cudart as shared libraries"; exit 1; fi
exports=$(nm -D --defined-only "$addon" | awk '$2 ~ /^[TtDdBbWwVvRr]$/ {print $3}' | sort | tr '\n' ' ')
echo "exports: $exports" | tee "$OUT/exports.txt"
[ "$exports" = "napi_register_module_v1 node_api_module_get_api_version_v1 " ] || { echo "the CUDA addon exports more than N-API's entry points"; exit 1; }
ldd "$addon" | tee "$OUT/ldd.txt"
# The built addon and libraries come back (xz, in pieces under 16 MiB), so a later session can skip
# the build: gpu-stage.sh unpacks them instead.
if [ "${PACK_LIBS:-0}" != 0 ]; then   # PACK_LIBS=1: send the build back (gpu-stage.sh restages it); 0 or unset: not
  (cd "$BUILD" && tar -chf - "${addon#$BUILD/}" $(find . -name 'lib*.so' -not -path '*/CMakeFiles/*')) | xz -T0 -6 | split -b 15M - "$OUT/cuda-build.tar.xz.part-"
  ls -la "$OUT"/cuda-build.tar.xz.part-*
fi
# the staged package: what later calls run
rm -rf "$G/dist" "$G/node_modules" "$G/scripts"
cp -r $R/dist "$G/dist"
cp -r $R/node_modules "$G/node_modules"
cp -r scripts "$G/scripts"
cp package.json CMakeLists.txt "$G/"
echo "$addon" > "$G/addon-path"
mkdir -p "$G/.device" && cp $R/cpu-ref.json $R/stories.gguf "$G/.device/"
cd "$G"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
# SKIP_CHECKS=1 leaves the checks out (train-full.sh's build call, short of time)
if [ -z "${SKIP_CHECKS:-}" ]; then
  GAVEL_ADDON="$addon" node scripts/device/compare.mjs check .device | tee "$OUT/compare.txt" || true
  GAVEL_ADDON="$addon" node scripts/device/glance-twins.mjs | tee "$OUT/glance-twins.txt"
fi
echo "total: $(( $(date +%s) - t0 )) s"
