#!/usr/bin/env bash
# Issue 15's verdict rows on the GPU machine: cold and warm `scoreMany` (9 candidate prefixes of 2,000
# tokens, a 250-token continuation) on a random-weight Qwen3-8B shape at Q8_0, by KV layout
# ("unified" pool, "streams" per sequence) and settings ("exact": f32 KV, no flash attention;
# "fast": f16 KV + flash attention, the CUDA default), llama-bench's pp2048 and pp256 at depth 2048
# with and without flash attention, and the log-prob drift of "fast" against "exact".
#
# Here, before the device calls (git-ignored, under .device/verdict, ~36 MB; gavel-mini travels
# with the tracked tree):
#   bash scripts/device/verdict-bench.sh pack
# Then three device calls back to back (the machine goes back when idle):
#   1. carry [".device/verdict"]:  bash scripts/device/verdict-bench.sh prepare
#        clones llama.cpp's full bundle to $HOME/lcpp-full, builds llama-bench with CUDA and writes
#        the random 8B GGUF to $HOME/work/qwen3-8b.gguf, both at once (~5 min)
#   2. carry [".device/run"]:  SKIP_CHECKS=1 bash scripts/device/gpu-build.sh
#        (after scripts/device/pack.sh and pack-gpu.sh here: the CUDA addon staged in $HOME/gavel)
#   3. carry [".device/verdict"]:  bash scripts/device/verdict-bench.sh run
#        llama-bench, the verdict bench on the 8B and the drift on gavel-mini too (~4 min); figures
#        in $OUT/verdict-*.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
V=.device/verdict
OUT=${OUT:-/tmp/gavel-out}
case "${1:-}" in
  pack)
    mkdir -p "$V"
    bundle=$(node -e 'import("./scripts/llama-source.mjs").then(m => console.log(m.llamaBundlePath()))')
    cp "$bundle" "$V/gitRelease.bundle"
    cp ../shared/device/baselines/make_random_qwen3.py "$V/"
    # the bench, bundled with the package's source; the addon comes from GAVEL_ADDON on the device
    npx esbuild bench/verdict.bench.ts --bundle --platform=node --format=esm --packages=external --outfile="$V/verdict.bench.mjs" --log-level=warning
    du -sh "$V"
    ;;
  prepare)
    mkdir -p "$OUT" "$HOME/work"
    [ -f "$HOME/lcpp-full/CMakeLists.txt" ] || git clone -q "$V/gitRelease.bundle" "$HOME/lcpp-full"
    (
      cmake -S "$HOME/lcpp-full" -B "$HOME/lcpp-full/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90} -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF > "$OUT/llama-bench-cmake.log" 2>&1
      cmake --build "$HOME/lcpp-full/b" -j"$(nproc)" --target llama-bench > "$OUT/llama-bench-build.log" 2>&1
      echo "llama-bench built"
    ) &
    build=$!
    [ -f "$HOME/work/qwen3-8b.gguf" ] || LCPP="$HOME/lcpp-full" python3 "$V/make_random_qwen3.py" "$HOME/work/qwen3-8b.gguf.tmp" 8b
    [ -f "$HOME/work/qwen3-8b.gguf" ] || mv "$HOME/work/qwen3-8b.gguf.tmp" "$HOME/work/qwen3-8b.gguf"
    wait "$build" || { tail -40 "$OUT/llama-bench-build.log"; exit 1; }
    ls -la "$HOME/work/qwen3-8b.gguf" "$HOME/lcpp-full/b/bin/llama-bench"
    ;;
  run)
    source scripts/device/env.sh
    # the bundled bench imports the runtime packages from the tree's node_modules (gpu-build.sh's copy)
    [ -d node_modules/yaml ] || { rm -rf node_modules && cp -r "$G/node_modules" node_modules; }
    M="$HOME/work/qwen3-8b.gguf"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/verdict-gpu.txt"
    B="$HOME/lcpp-full/b/bin/llama-bench"
    # llama-bench on the same card and model: pp2048, and pp256 after a 2,048-token depth, FA off/on
    "$B" -m "$M" -ngl 99 -p 2048 -n 0 -fa off,on -r 3 -o md 2>/dev/null | tee "$OUT/verdict-llama-bench.txt"
    "$B" -m "$M" -ngl 99 -p 256 -n 0 -d 2048 -fa off,on -r 3 -o md 2>/dev/null | tee -a "$OUT/verdict-llama-bench.txt"
    # the verdict: layouts × settings, 3 rounds; batch 2048 (the physical batch now follows it)
    export GGML_CUDA_DISABLE_GRAPHS=1
    node "$V/verdict.bench.mjs" model="$M" n=9 prefix=2000 cont=250 threads=16 rounds=3 gpuLayers=-1 batch=2048 \
      layouts=streams,unified settings=exact,fast drift=1 | tee "$OUT/verdict-8b.txt"
    node "$V/verdict.bench.mjs" model="$M" n=9 prefix=2000 cont=250 threads=16 rounds=3 gpuLayers=-1 batch=512 \
      layouts=streams settings=exact,fast | tee "$OUT/verdict-8b-batch512.txt"
    # where the log-probs are reduced: the host's log-softmax over 152K-wide rows, or in the graph
    # (logprobsInGraph; on gavel-mini's 32K vocabulary it was slower when measured)
    node "$V/verdict.bench.mjs" model="$M" n=9 prefix=2000 cont=250 threads=16 rounds=3 gpuLayers=-1 batch=2048 \
      layouts=streams settings=exact+host,exact+graph,fast+host,fast+graph drift=1 | tee "$OUT/verdict-8b-graph.txt"
    # drift on real weights: gavel-mini, f16 KV + flash attention against f32 KV without it.
    # Tolerance to check: max |Δ L| ≤ 1e-2 nats (L is a mean over the task span; the ruling's α·L
    # moves S by less than the calibrated Δ's resolution), max |Δ log-prob| reported.
    node "$V/verdict.bench.mjs" model=models/gavel-mini.gguf n=9 prefix=1792 cont=256 threads=16 rounds=1 gpuLayers=-1 batch=2048 \
      layouts=streams settings=exact,fast drift=1 | tee "$OUT/verdict-mini-drift.txt"
    ;;
  *)
    echo "usage: bash scripts/device/verdict-bench.sh pack|prepare|run" >&2
    exit 2
    ;;
esac
