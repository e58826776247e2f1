#!/usr/bin/env bash
# Issue 15's whole speed table on one GPU machine, in four device calls back to back (the machine goes
# back 30 s after a call ends). The two slow preparations (the CUDA addon, and llama-bench with the
# random Qwen3-8B) run detached in the background of calls 1 and 2, side by side, so the machine is
# never held only to wait for one of them.
#
# Here (git-ignored carry folders):
#   bash scripts/device/speed-table.sh pack        # .device/g15 (node, this tree's source, dist, runtime
#                                                   # packages, llama.cpp's source, the torch baseline)
#   bash scripts/device/verdict-bench.sh pack      # .device/verdict (llama.cpp's full bundle, …)
# Device calls (each runs from the carried tree's root; the work happens under $HOME/src15):
#   1. carry [".device/g15"]:     bash .device/g15/speed-table.sh boot     (starts the CUDA build, ~4 min)
#   2. carry [".device/verdict"]: bash .device/g15/speed-table.sh prepare  … or, since .device/g15 is not
#                                 carried then: bash $HOME/src15/scripts/device/speed-table.sh prepare
#   3. (nothing carried)          bash $HOME/src15/scripts/device/speed-table.sh glance
#        waits for the build; the CUDA glance against its CPU twins, then issue 15's six glance shapes
#        through node and kernel-only, and the naive PyTorch glance (bf16 and fp32) at the same shapes,
#        in this one call so that the ratios compare like with like
#   4. (nothing carried)          bash $HOME/src15/scripts/device/speed-table.sh verdict
#        waits for llama-bench; llama-bench pp2048 / pp256@2048 (FA off, on), the verdict by KV layout
#        and settings on the 8B, the drift on gavel-mini, and the install rate on the 8B, in one call
# Figures land in $OUT (come back) and in $HOME/src15/out (for a later call of the same machine).
set -euo pipefail
OUT=${OUT:-/tmp/gavel-out}
S="$HOME/src15"
mkdir -p "$OUT" "$HOME/bin"
export PATH="$HOME/bin:$PATH"
wait_for() { # marker, what, seconds
  local i=0
  while [ ! -f "$1" ]; do
    sleep 5; i=$((i + 5))
    if [ $i -ge "$3" ]; then echo "gave up waiting for $2 after $3 s"; return 1; fi
  done
  echo "$2 ready after ${i} s more"
}
case "${1:-}" in
  pack)
    cd "$(dirname "$0")/../.."
    P=.device/g15
    rm -rf "$P" && mkdir -p "$P"
    [ -f /work/main/.device/node.xz ] && cp /work/main/.device/node.xz "$P/"
    # the source of this tree (what the device builds and runs), without the large tracked files
    git archive --format=tar HEAD -- native src scripts bench ':(exclude)bench/results' package.json CMakeLists.txt tsconfig.json tsup.config.ts | xz -T2 -6 > "$P/src.tar.xz"
    # uncommitted edits of the scripts and benches ride along on top
    tar --exclude=bench/results -cf - scripts/device bench | xz -T2 -6 > "$P/overlay.tar.xz"
    npx tsup >/dev/null
    R=$P/run
    mkdir -p $R/node_modules/@huggingface
    cp /work/main/.device/llama-src.tar.xz /work/main/.device/cpu-ref.json /work/main/.device/stories.gguf $R/
    cp -r node_modules/node-api-headers/include $R/node-api-headers
    for p in yaml node-addon-api; do cp -r "node_modules/$p" $R/node_modules/; done
    cp -r node_modules/@huggingface/jinja $R/node_modules/@huggingface/
    cp -r dist $R/dist && find $R/dist -name '*.map' -delete
    cp ../shared/device/baselines/glance_torch_bench.py "$P/"
    npx esbuild bench/install-model.bench.ts --bundle --platform=node --format=esm --packages=external --outfile="$P/install-model.bench.mjs" --log-level=warning
    cp scripts/device/speed-table.sh "$P/"
    du -sh "$P"
    ;;
  boot)
    P=$PWD/.device/g15
    [ -x "$HOME/bin/node" ] || xz -dc "$P/node.xz" > "$HOME/bin/node"
    chmod +x "$HOME/bin/node"
    rm -rf "$S" && mkdir -p "$S/out" "$S/models"
    xz -dc "$P/src.tar.xz" | tar -xf - -C "$S"
    xz -dc "$P/overlay.tar.xz" | tar -xf - -C "$S"
    mkdir -p "$S/.device" && cp -r "$P/run" "$S/.device/run"
    cp "$P/glance_torch_bench.py" "$P/install-model.bench.mjs" "$S/out/"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt" "$S/out/gpu.txt"
    cd "$S"
    # detached: it outlives this call (the machine stays warm while the next calls follow)
    setsid nohup bash -c "OUT=$S/out SKIP_CHECKS=1 PACK_LIBS=1 bash scripts/device/gpu-build.sh > $S/out/gpu-build.txt 2>&1; echo \$? > $S/out/build.done" </dev/null >/dev/null 2>&1 &
    echo "build started"
    ;;
  prepare)
    cp -r .device/verdict "$S/.device/verdict"
    cd "$S"
    setsid nohup bash -c "OUT=$S/out bash scripts/device/verdict-bench.sh prepare > $S/out/prepare.txt 2>&1; echo \$? > $S/out/prepare.done" </dev/null >/dev/null 2>&1 &
    echo "llama-bench build and the random 8B started"
    ;;
  glance)
    [ -f models/gavel-mini.gguf ] && cp models/gavel-mini.gguf "$S/models/"
    wait_for "$S/out/build.done" "CUDA build" 540
    cat "$S/out/gpu-build.txt" | tail -5
    [ "$(cat "$S/out/build.done")" = 0 ] || { tail -60 "$S/out/gpu-build.txt"; exit 1; }
    cp "$S"/out/cuda-build.tar.xz.part-* "$OUT/" 2>/dev/null || true
    cd "$HOME/gavel"
    export GAVEL_ADDON=$(cat addon-path)
    export LD_LIBRARY_PATH="$HOME/gavel-cuda/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    cp "$S/out/gpu.txt" "$OUT/" 2>/dev/null || true
    node scripts/device/glance-twins.mjs --twins-only 2>&1 | tee "$OUT/glance-twins.txt"
    node scripts/device/glance-twins.mjs --timings-only 2>&1 | tee "$OUT/glance-timings.txt"
    python3 "$S/out/glance_torch_bench.py" bf16 10000,200,256,1300 30000,200,256,1300 100000,200,256,1300 1000,235,768,239 10000,235,768,239 30000,235,768,239 2>&1 | tee "$OUT/glance-torch-bf16.txt"
    python3 "$S/out/glance_torch_bench.py" fp32 10000,200,256,1300 30000,200,256,1300 100000,200,256,1300 1000,235,768,239 10000,235,768,239 30000,235,768,239 2>&1 | tee "$OUT/glance-torch-fp32.txt"
    ;;
  verdict)
    wait_for "$S/out/prepare.done" "llama-bench and the 8B" 400
    [ "$(cat "$S/out/prepare.done")" = 0 ] || { tail -40 "$S/out/prepare.txt"; exit 1; }
    cd "$S"
    [ -f models/gavel-mini.gguf ] || { echo "gavel-mini missing"; exit 1; }
    bash scripts/device/verdict-bench.sh run
    source scripts/device/env.sh
    M="$HOME/work/qwen3-8b.gguf"
    # the install rate on the 8B, random projections (dim 768, layer 25), default attention (CUDA: FA + f16 KV)
    node "$S/out/install-model.bench.mjs" model="$M" skills=${SKILLS:-400} tokens=2048 dim=768 layer=25 context=4096 batch=2048 jobs=8 threads=16 fa=auto 2>&1 | tee "$OUT/install-8b.txt"
    node "$S/out/install-model.bench.mjs" model="$M" skills=${SKILLS_OFF:-200} tokens=2048 dim=768 layer=25 context=4096 batch=2048 jobs=8 threads=16 fa=off 2>&1 | tee -a "$OUT/install-8b.txt"
    ;;
  *)
    echo "usage: speed-table.sh pack|boot|prepare|glance|verdict" >&2
    exit 2
    ;;
esac
