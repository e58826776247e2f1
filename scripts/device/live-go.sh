#!/usr/bin/env bash
# The live context's cost per token against the decode step, measured in the same process
# (bench/live-overhead.bench.ts, bundled into .cache/bench/live-overhead.bench.mjs and carried),
# appending 1, 4 and 16 tokens per call: on gavel-mini with its projections ("mini", the default
# mode), and on a random-weight Qwen3-8B-shaped GGUF with random projections of its width ("8b").
# On the GPU machine, after gpu-build.sh built and staged the CUDA addon (with the native live
# accumulator, native/src/live) under $HOME/gavel (same warm machine).
#   here:    bash scripts/device/pack.sh && bash scripts/device/pack-gpu.sh   (.device/run: node, llama.cpp's
#              source, the runtime packages; once per checkout)
#            bash scripts/device/live-go.sh pack
#              (the bench bundled from the tree's src/ in .cache/bench; gavel-mini's projections in
#              .device/lib; for "8b", .device/live8b: ../shared/device/baselines/make_random_qwen3.py and
#              the two parts of llama.cpp it reads, gguf-py and models/ggml-vocab-qwen2.gguf, ~7 MB)
#   device, back to back on one warm machine:
#     1. carry [".device/run"]:  SKIP_CHECKS=1 bash scripts/device/gpu-build.sh
#     2. carry [".device/lib", ".device/stage-b", ".cache/bench"]:  bash scripts/device/live-go.sh mini
#     2b. (before/after in one call) carry [".device/lib", ".device/stage-b", ".cache/bench"]:
#          bash scripts/device/live-go.sh before
#          rebuilds the addon in gpu-build.sh's build folder with native/src/live as of $BEFORE (pack
#          copied it into .cache/bench/live-before), then the tree's again, and runs the bench with
#          each addon in turn, old first, into $OUT/live-overhead-before.txt and -after.txt (the
#          bench's TypeScript is this tree's for both; with the old addon a no-wait read waits)
#     3. carry [".device/live8b", ".cache/bench"]:  bash scripts/device/live-go.sh 8b
#          writes $HOME/work/qwen3-8b.gguf once (numpy, ~4 min; kept while the machine stays warm,
#          the same file verdict-bench.sh prepare writes), then the bench on it at SIZES8 (30000)
# Knobs: BEFORE (pack: the commit whose native/src/live "before" builds; default d959f26, the native
# accumulator before the no-wait read), SIZES (default 1000,10000,30000), SIZES8 (30000), KEYS (16), TOKENS (256), THREADS (8), REPEATS (3),
# PER_APPEND (1,4,16). Figures in $OUT/live-overhead.txt and $OUT/live-overhead-8b.txt; "mini" first runs
# scripts/device/live-twins.mjs (device accumulators against the CPU's, from $G/dist: pack-gpu.sh's tsup
# of this tree) into $OUT/live-twins.txt and prints its verdict line.
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-mini}
# llama.cpp's load chatter off the output (the bench's own lines stay)
quiet() { grep -v "^llama\|^~llama\|^load\|^print_info\|^graph_\|^ggml\|^common_\|^sched_\|^set_abort" ; }
case "$mode" in
  pack)
    set -e
    npx esbuild bench/live-overhead.bench.ts --bundle --platform=node --format=esm --packages=external \
      --outfile=.cache/bench/live-overhead.bench.mjs --log-level=warning
    mkdir -p .device/lib && cp models/gavel-mini.projections.gguf .device/lib/default.projections.gguf
    src=$(node -e 'import("./scripts/llama-source.mjs").then(m => console.log(m.llamaSourceDir()))')
    rm -rf .device/live8b && mkdir -p .device/live8b/lcpp/models
    cp ../shared/device/baselines/make_random_qwen3.py .device/live8b/
    cp -r "$src/gguf-py" .device/live8b/lcpp/gguf-py
    cp "$src/models/ggml-vocab-qwen2.gguf" .device/live8b/lcpp/models/
    rm -rf .cache/bench/live-before && mkdir -p .cache/bench/live-before
    for f in $(git ls-tree --name-only "${BEFORE:-d959f26}" native/src/live/); do
      git show "${BEFORE:-d959f26}:$f" > ".cache/bench/live-before/$(basename "$f")"
    done
    du -sh .cache/bench .device/live8b
    ;;
  before)
    source scripts/device/env.sh
    BUILD="$HOME/gavel-cuda"
    [ -d .cache/bench/live-before ] && [ -f "$BUILD/build.ninja" ] || { echo "needs live-go.sh pack's .cache/bench/live-before and gpu-build.sh's build"; exit 2; }
    addon="$GAVEL_ADDON"
    rm -rf "$HOME/live-src" && cp -r native/src/live "$HOME/live-src"
    rm -f native/src/live/* && cp .cache/bench/live-before/* native/src/live/
    cmake --build "$BUILD" --target gavel_router > "$OUT/before-build.log" 2>&1 || { tail -30 "$OUT/before-build.log"; exit 1; }
    cp "$addon" "$HOME/live-before.node"
    rm -f native/src/live/* && cp "$HOME/live-src"/* native/src/live/
    cmake --build "$BUILD" --target gavel_router >> "$OUT/before-build.log" 2>&1 || { tail -30 "$OUT/before-build.log"; exit 1; }
    cp "$addon" "$HOME/live-after.node"
    mkdir -p "$G/bench" "$G/models"
    cp .cache/bench/live-overhead.bench.mjs "$G/bench/"
    cp "$W/gavel-mini.gguf" "$G/models/gavel-mini.gguf"
    cp .device/lib/default.projections.gguf "$G/models/gavel-mini.projections.gguf"
    cd "$G"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/live-gpu.txt"
    for which in before after; do
      echo "== $which"
      GAVEL_ADDON="$HOME/live-$which.node" node bench/live-overhead.bench.mjs "${SIZES:-1000,10000,30000}" "${KEYS:-16}" "${TOKENS:-256}" \
        "${THREADS:-8}" "${PER_APPEND:-1,4,16}" "" "${REPEATS:-3}" 2>&1 | quiet | tee "$OUT/live-overhead-$which.txt"
    done
    ;;
  mini)
    source scripts/device/env.sh
    mkdir -p "$G/bench" "$G/models"
    cp .cache/bench/live-overhead.bench.mjs "$G/bench/"
    # the embedded pair where the package root's models/ folder is looked up (src/defaults.ts)
    cp "$W/gavel-mini.gguf" "$G/models/gavel-mini.gguf"
    cp .device/lib/default.projections.gguf "$G/models/gavel-mini.projections.gguf"
    mkdir -p "$G/scripts/device" && cp scripts/device/live-twins.mjs "$G/scripts/device/"
    cd "$G"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/live-gpu.txt"
    # the device accumulators against the CPU's (bank changes, renormalisation): PASS/FAIL and a line a check
    node scripts/device/live-twins.mjs > "$OUT/live-twins.txt" 2>&1; tail -1 "$OUT/live-twins.txt"
    node bench/live-overhead.bench.mjs "${SIZES:-1000,10000,30000}" "${KEYS:-16}" "${TOKENS:-256}" "${THREADS:-8}" "${PER_APPEND:-1,4,16}" "" "${REPEATS:-3}" 2>&1 \
      | quiet | tee "$OUT/live-overhead.txt"
    ;;
  8b)
    source scripts/device/env.sh
    M="$HOME/work/qwen3-8b.gguf"
    if [ ! -f "$M" ]; then
      t0=$(date +%s)
      LCPP="$PWD/.device/live8b/lcpp" python3 .device/live8b/make_random_qwen3.py "$M.tmp" 8b > "$OUT/make-8b.log" 2>&1 \
        || { tail -20 "$OUT/make-8b.log"; exit 1; }
      mv "$M.tmp" "$M"
      echo "random Qwen3-8B written in $(( $(date +%s) - t0 )) s: $(stat -c %s "$M") bytes"
    fi
    mkdir -p "$G/bench"
    cp .cache/bench/live-overhead.bench.mjs "$G/bench/"
    cd "$G"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/live-gpu.txt"
    node bench/live-overhead.bench.mjs "${SIZES8:-30000}" "${KEYS:-16}" "${TOKENS:-256}" "${THREADS:-8}" "${PER_APPEND:-1,4,16}" "$M" "${REPEATS:-3}" 2>&1 \
      | quiet | tee "$OUT/live-overhead-8b.txt"
    ;;
  *)
    echo "usage: bash scripts/device/live-go.sh pack|mini|before|8b" >&2
    exit 2
    ;;
esac
